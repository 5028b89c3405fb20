# cython: boundscheck=False, wraparound=False, cdivision=True
"""The random literals of the data set, drawn in C (lakebench/dataset.py is the facade).

A child's literals are defined (docs/workload.rst) by Python's ``random``:
``random.Random(f"lakebench:{seed}:{index}")`` and, for each literal,
``"".join(rng.choices(ALPHABET, k=length))``, drawn again while equal to an
earlier literal of the child.  Drawing them that way costs about 0.5 µs
per character in the interpreter; this module draws the very same stream
in C, ~100 times faster:

* the generator is CPython's own Mersenne Twister (``Modules/_randommodule.c``:
  ``init_genrand``, ``init_by_array``, ``genrand_uint32``, ``random()``'s
  53-bit double), the same arithmetic arranged to vectorize (see the C
  below), seeded with the same 32-bit key words as ``random.seed`` (the
  facade computes them: ``seed_key``);
* ``choices`` without weights takes ``population[floor(random() * n)]``
  per character, as here;
* the re-draw rule compares symbol sequences, which is comparing strings
  since the alphabet's characters are distinct (checked at construction).

Each literal comes out as its serialized bytes (every symbol's escaped UTF-8
concatenated, precomputed once per alphabet) or, on demand, as a ``str``.
The drawing and encoding run without the GIL.
"""
from libc.stdint cimport uint8_t, uint16_t, uint32_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcmp, memcpy
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize


cdef extern from *:
    """
    /* CPython 3.11 Modules/_randommodule.c, the Mersenne Twister of
       Matsumoto and Nishimura: the same arithmetic, arranged for speed.
       genrand_uint32 refills the 624-word state every 624 numbers and
       tempers one word per call; here the refill tempers all 624 at once
       into `out`, and `mag01[y & 1]` is written `-(y & 1) & MATRIX_A`
       (the same value, without a table lookup), so that both loops
       vectorize: half the time per number.  The tests check the stream
       against Python's random. */
    #define LB_MT_N 624
    #define LB_MT_M 397
    #define LB_MATRIX_A 0x9908b0dfU
    #define LB_UPPER_MASK 0x80000000U
    #define LB_LOWER_MASK 0x7fffffffU
    #define LB_MAG(y) ((0U - ((y) & 0x1U)) & LB_MATRIX_A)

    typedef struct { uint32_t state[LB_MT_N]; uint32_t out[LB_MT_N]; int index; } lb_mt;

    static void lb_refill(lb_mt *self)
    {
        uint32_t y;
        uint32_t *mt = self->state;
        int kk;
        for (kk = 0; kk < LB_MT_N - LB_MT_M; kk++) {
            y = (mt[kk] & LB_UPPER_MASK) | (mt[kk+1] & LB_LOWER_MASK);
            mt[kk] = mt[kk+LB_MT_M] ^ (y >> 1) ^ LB_MAG(y);
        }
        for (; kk < LB_MT_N - 1; kk++) {
            y = (mt[kk] & LB_UPPER_MASK) | (mt[kk+1] & LB_LOWER_MASK);
            mt[kk] = mt[kk+(LB_MT_M-LB_MT_N)] ^ (y >> 1) ^ LB_MAG(y);
        }
        y = (mt[LB_MT_N-1] & LB_UPPER_MASK) | (mt[0] & LB_LOWER_MASK);
        mt[LB_MT_N-1] = mt[LB_MT_M-1] ^ (y >> 1) ^ LB_MAG(y);
        for (kk = 0; kk < LB_MT_N; kk++) {  /* the tempering of genrand_uint32 */
            y = mt[kk];
            y ^= (y >> 11);
            y ^= (y << 7) & 0x9d2c5680U;
            y ^= (y << 15) & 0xefc60000U;
            y ^= (y >> 18);
            self->out[kk] = y;
        }
        self->index = 0;
    }

    static inline uint32_t lb_genrand_uint32(lb_mt *self)
    {
        if (self->index >= LB_MT_N)
            lb_refill(self);
        return self->out[self->index++];
    }

    /* random.random(): a double in [0, 1) from 53 random bits. */
    static inline double lb_random(lb_mt *self)
    {
        uint32_t a = lb_genrand_uint32(self) >> 5, b = lb_genrand_uint32(self) >> 6;
        return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
    }

    static void lb_init_genrand(lb_mt *self, uint32_t s)
    {
        int mti;
        uint32_t *mt = self->state;
        mt[0] = s;
        for (mti = 1; mti < LB_MT_N; mti++) {
            mt[mti] = (1812433253U * (mt[mti-1] ^ (mt[mti-1] >> 30)) + mti);
        }
        self->index = mti;
    }

    static void lb_init_by_array(lb_mt *self, const uint32_t init_key[], size_t key_length)
    {
        size_t i, j, k;
        uint32_t *mt = self->state;
        lb_init_genrand(self, 19650218U);
        i = 1; j = 0;
        k = (LB_MT_N > key_length ? LB_MT_N : key_length);
        for (; k; k--) {
            mt[i] = (mt[i] ^ ((mt[i-1] ^ (mt[i-1] >> 30)) * 1664525U)) + init_key[j] + (uint32_t)j;
            i++; j++;
            if (i >= LB_MT_N) { mt[0] = mt[LB_MT_N-1]; i = 1; }
            if (j >= key_length) j = 0;
        }
        for (k = LB_MT_N - 1; k; k--) {
            mt[i] = (mt[i] ^ ((mt[i-1] ^ (mt[i-1] >> 30)) * 1566083941U)) - (uint32_t)i;
            i++;
            if (i >= LB_MT_N) { mt[0] = mt[LB_MT_N-1]; i = 1; }
        }
        mt[0] = 0x80000000U;
    }
    """
    ctypedef struct lb_mt:
        pass
    double lb_random(lb_mt* self) noexcept nogil
    void lb_init_by_array(lb_mt* self, const uint32_t* init_key, size_t key_length) noexcept nogil


cdef extern from "Python.h":
    object PyUnicode_FromKindAndData(int kind, const void* buffer, Py_ssize_t size)
    int PyUnicode_4BYTE_KIND


#: Longest escaped UTF-8 form of one symbol (4 bytes of UTF-8, or a 2-byte escape).
cdef enum:
    MAX_ENCODED = 4


cdef int seed_from_key(lb_mt* mt, bytes key) except -1:
    """Seed ``mt`` as ``random.seed`` does from an int: ``key`` is its 32-bit words, least significant first."""
    cdef Py_ssize_t n_words = len(key) // 4, i
    cdef const uint8_t* p = <const uint8_t*>PyBytes_AS_STRING(key)
    if n_words < 1 or len(key) % 4:
        raise ValueError(f"a seed key is a positive number of 32-bit words, got {len(key)} bytes")
    cdef uint32_t* words = <uint32_t*>malloc(n_words * sizeof(uint32_t))
    if words == NULL:
        raise MemoryError()
    for i in range(n_words):  # little-endian bytes to words, on any machine
        words[i] = p[4 * i] | (<uint32_t>p[4 * i + 1] << 8) | (<uint32_t>p[4 * i + 2] << 16) | (<uint32_t>p[4 * i + 3] << 24)
    lb_init_by_array(mt, words, n_words)
    free(words)
    return 0


def random_floats(bytes key, Py_ssize_t n):
    """The first ``n`` values of ``random.random()`` for a generator seeded with ``key`` (for tests).

    >>> import random
    >>> python = random.Random(12345)
    >>> random_floats((12345).to_bytes(4, "little"), 3) == [python.random() for _ in range(3)]
    True
    """
    cdef lb_mt mt
    seed_from_key(&mt, key)
    return [lb_random(&mt) for _ in range(n)]


cdef class LiteralDrawer:
    """Draws a child's literals from one alphabet, as ``random.Random.choices`` would.

    ``alphabet``: the symbols, all distinct; ``encodings``: each symbol's
    bytes in a serialization (escaped UTF-8), at most 4 bytes.
    """

    cdef readonly str alphabet
    cdef Py_ssize_t size
    cdef uint32_t* code_points
    cdef uint8_t* encoded  # MAX_ENCODED bytes per symbol
    cdef uint8_t* encoded_length

    def __cinit__(self, str alphabet, list encodings):
        if len(set(alphabet)) != len(alphabet) or not 0 < len(alphabet) <= 65535:
            raise ValueError("the alphabet must hold 1 to 65535 distinct characters")
        if len(encodings) != len(alphabet):
            raise ValueError(f"{len(encodings)} encodings for {len(alphabet)} symbols")
        self.alphabet = alphabet
        self.size = len(alphabet)
        self.code_points = <uint32_t*>malloc(self.size * sizeof(uint32_t))
        self.encoded = <uint8_t*>malloc(self.size * MAX_ENCODED)
        self.encoded_length = <uint8_t*>malloc(self.size)
        if self.code_points == NULL or self.encoded == NULL or self.encoded_length == NULL:
            raise MemoryError()
        cdef Py_ssize_t i
        cdef bytes encoding
        for i in range(self.size):
            encoding = encodings[i]
            if not 0 < len(encoding) <= MAX_ENCODED:
                raise ValueError(f"symbol {i} is encoded in {len(encoding)} bytes; 1 to {MAX_ENCODED} supported")
            self.code_points[i] = ord(alphabet[i])
            self.encoded_length[i] = len(encoding)
            memcpy(&self.encoded[i * MAX_ENCODED], PyBytes_AS_STRING(encoding), len(encoding))

    def __dealloc__(self):
        free(self.code_points)
        free(self.encoded)
        free(self.encoded_length)

    cdef uint16_t* draw(self, bytes key, Py_ssize_t count, Py_ssize_t length) except NULL:
        """``count`` distinct symbol sequences of ``length``, one after the other (caller frees)."""
        if count < 0 or length < 1:
            raise ValueError(f"count must not be negative and length must be positive, got {count}, {length}")
        cdef lb_mt mt
        seed_from_key(&mt, key)
        cdef uint16_t* symbols = <uint16_t*>malloc(max(1, count * length) * sizeof(uint16_t))
        if symbols == NULL:
            raise MemoryError()
        cdef double n = <double>self.size
        cdef Py_ssize_t i, j, earlier, symbol
        cdef uint16_t* current
        cdef bint repeated
        cdef bint out_of_range = False
        with nogil:
            for i in range(count):
                current = symbols + i * length
                repeated = True
                while repeated:  # the re-draw rule: again while equal to an earlier literal
                    for j in range(length):
                        # floor() of a non-negative double is its truncation
                        symbol = <Py_ssize_t>(lb_random(&mt) * n)
                        if symbol >= self.size:  # random() * n rounded up to n: Python's choices fails too
                            out_of_range = True
                            symbol = 0
                        current[j] = <uint16_t>symbol
                    repeated = False
                    for earlier in range(i):
                        if (symbols[earlier * length] == current[0]  # most differ at once
                                and memcmp(symbols + earlier * length, current, length * sizeof(uint16_t)) == 0):
                            repeated = True
                            break
        if out_of_range:
            free(symbols)
            raise IndexError("random() * len(alphabet) rounded up to len(alphabet), as in random.choices")
        return symbols

    def encoded_literals(self, bytes key, Py_ssize_t count, Py_ssize_t length) -> list:
        """The ``count`` literals drawn with ``key``, each as its symbols' encodings concatenated."""
        cdef uint16_t* symbols = self.draw(key, count, length)
        cdef uint8_t** starts = <uint8_t**>malloc(max(1, count) * sizeof(uint8_t*))
        cdef Py_ssize_t* sizes = <Py_ssize_t*>malloc(max(1, count) * sizeof(Py_ssize_t))
        cdef list out = []
        cdef Py_ssize_t i, j
        cdef uint16_t symbol
        cdef uint8_t* p
        cdef uint8_t* end
        cdef bytes encoded
        try:
            if starts == NULL or sizes == NULL:
                raise MemoryError()
            with nogil:
                for i in range(count):
                    sizes[i] = 0
                    for j in range(i * length, (i + 1) * length):
                        sizes[i] += self.encoded_length[symbols[j]]
            for i in range(count):
                encoded = PyBytes_FromStringAndSize(NULL, sizes[i])
                starts[i] = <uint8_t*>PyBytes_AS_STRING(encoded)
                out.append(encoded)
            with nogil:
                for i in range(count):
                    p, end = starts[i], starts[i] + sizes[i]
                    for j in range(i * length, (i + 1) * length):
                        symbol = symbols[j]
                        if end - p >= MAX_ENCODED:  # a fixed-size copy is one move
                            memcpy(p, &self.encoded[symbol * MAX_ENCODED], MAX_ENCODED)
                        else:  # the last symbols: exactly their bytes
                            memcpy(p, &self.encoded[symbol * MAX_ENCODED], self.encoded_length[symbol])
                        p += self.encoded_length[symbol]
        finally:
            free(symbols)
            free(starts)
            free(sizes)
        return out

    def literals(self, bytes key, Py_ssize_t count, Py_ssize_t length) -> list:
        """The ``count`` literals drawn with ``key``, as strings."""
        cdef uint16_t* symbols = self.draw(key, count, length)
        cdef uint32_t* chars = <uint32_t*>malloc(length * sizeof(uint32_t))
        cdef list out = []
        cdef Py_ssize_t i, j
        try:
            if chars == NULL:
                raise MemoryError()
            for i in range(count):
                for j in range(length):
                    chars[j] = self.code_points[symbols[i * length + j]]
                out.append(PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, chars, length))
        finally:
            free(symbols)
            free(chars)
        return out
