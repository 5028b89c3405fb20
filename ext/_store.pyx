# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The compiled core of the lakebench triple store: LMDB through its C API.

Layout of one environment (a directory holding ``data.mdb`` / ``lock.mdb``),
every integer big-endian so that byte order is numeric order (except the
keys of ``i2t``):

``meta``  name -> value (``format`` = FORMAT_VERSION, ``bnode_docs`` counter)
``ns``    prefix (UTF-8) -> namespace IRI (UTF-8)
``graphs`` graph id (4 bytes) -> empty: graphs declared even while empty
``t2i``   64-bit term hash (8 bytes) -> term id (4 bytes), DUPSORT|DUPFIXED:
          several ids under one hash are collisions, told apart by comparing
          the stored terms.
``i2t``   term id (native-endian uint32, MDB_INTEGERKEY: the fastest
          compare for the hot id -> term lookups) -> encoded term; ids are
          sequential from 1 and appended, so pages are full.
``spoc``  s -> (p, o, c)  \
``posc``  p -> (o, s, c)   | 4-byte key, 12-byte values, DUPSORT|DUPFIXED:
``ospc``  o -> (s, p, c)   | one entry per quad in each index.
``cspo``  c -> (s, p, o)  /

An encoded term is one kind byte and UTF-8 text:
``I`` + IRI, ``B`` + blank node label, ``L`` + lexical form (simple literal),
``G`` + language tag + NUL + lexical form, ``D`` + datatype IRI + NUL +
lexical form.  Terms are never deleted, so an id, once committed, names the
same term forever.

All LMDB calls run without the GIL.
"""
from libc.stdint cimport uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy, memcmp, memset, memchr
from libc.stdlib cimport malloc, calloc, realloc, free, qsort
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.pythread cimport (PyThread_type_lock, PyThread_allocate_lock, PyThread_free_lock,
                               PyThread_acquire_lock, PyThread_release_lock, WAIT_LOCK,
                               PyThread_get_thread_ident)

from liblmdb cimport *

import os

FORMAT_VERSION = 1
#: Sub-database names, in the order of the ``dbi`` array.
DB_NAMES = ("meta", "t2i", "i2t", "spoc", "posc", "ospc", "cspo", "ns", "graphs")
#: Order of the four quad indices: which quad position is the key, which the values.
INDEX_ORDER = {"spoc": "s:poc", "posc": "p:osc", "ospc": "o:spc", "cspo": "c:spo"}

cdef enum:
    DB_META = 0
    DB_T2I = 1
    DB_I2T = 2
    DB_SPOC = 3     # quad index ix = db - DB_SPOC
    DB_POSC = 4
    DB_OSPC = 5
    DB_CSPO = 6
    DB_NS = 7
    DB_GRAPHS = 8
    N_DBS = 9

cdef enum:
    IX_SPOC = 0
    IX_POSC = 1
    IX_OSPC = 2
    IX_CSPO = 3

# Internal error codes (LMDB's are -30799 .. -30780).
cdef enum:
    E_NOMEM = -1
    E_PARSE = -2
    E_IDS = -3
    E_CORRUPT = -4
    E_TERM = -5

# Parse error kinds (index into PARSE_MESSAGES).
cdef enum:
    P_SUBJECT = 1
    P_PREDICATE
    P_OBJECT
    P_DOT
    P_EOL
    P_IRI_CHAR
    P_IRI_EOF
    P_IRI_RELATIVE
    P_ESCAPE
    P_UCHAR
    P_UTF8
    P_STRING_EOF
    P_STRING_NL
    P_LANG
    P_DATATYPE
    P_BNODE

PARSE_MESSAGES = {
    P_SUBJECT: "expected a subject (IRI or blank node)",
    P_PREDICATE: "expected a predicate (IRI)",
    P_OBJECT: "expected an object (IRI, blank node or literal)",
    P_DOT: "expected '.' at the end of the triple",
    P_EOL: "expected end of line after '.'",
    P_IRI_CHAR: "invalid character in IRI",
    P_IRI_EOF: "unterminated IRI",
    P_IRI_RELATIVE: "relative IRI (N-Triples needs absolute IRIs)",
    P_ESCAPE: "invalid escape sequence",
    P_UCHAR: "invalid \\u or \\U escape (surrogate, out of range or not allowed here)",
    P_UTF8: "invalid UTF-8",
    P_STRING_EOF: "unterminated string literal",
    P_STRING_NL: "line break inside a string literal",
    P_LANG: "invalid language tag",
    P_DATATYPE: "expected a datatype IRI after '^^'",
    P_BNODE: "invalid blank node label",
}

# Terms of the kinds worth remembering across transactions (see Environment).
cdef size_t CACHE_MAX_ENTRIES = 1 << 18
cdef size_t CACHE_MAX_BYTES = 32 << 20
cdef size_t CACHE_MAX_LITERAL = 48


class StoreError(Exception):
    """Base class of the store's errors."""


class LmdbError(StoreError):
    """An LMDB call failed; ``code`` is LMDB's return code."""

    def __init__(self, code, what):
        self.code = code
        super().__init__(f"{what}: {_strerror(code)}")


class MapFullError(LmdbError):
    """The memory map is full; the transaction was aborted, nothing written."""


class ParseError(StoreError, ValueError):
    """Malformed RDF: ``position`` (byte offset), ``line`` and ``column`` (1-based)."""

    def __init__(self, message, position=None, line=None, column=None):
        self.message = message
        self.position = position
        self.line = line
        self.column = column
        where = "" if line is None else f" at line {line}, column {column}"
        if position is not None:
            where += f" (byte {position})"
        super().__init__(f"{message}{where}")


def _strerror(int code):
    if code == E_NOMEM:
        return "out of memory"
    if code == E_IDS:
        return "term id space exhausted (2**32 - 2 terms)"
    if code == E_CORRUPT:
        return "corrupted entry (unexpected key or value size)"
    if code == E_TERM:
        return "invalid encoded term"
    return mdb_strerror(code).decode("utf-8", "replace") + f" ({code})"


cdef int raise_rc(int rc, str what) except -1:
    if rc == MDB_MAP_FULL:
        raise MapFullError(rc, what)
    if rc == E_NOMEM:
        raise MemoryError(what)
    raise LmdbError(rc, what)


def lmdb_version():
    """The linked LMDB's version string."""
    return mdb_version(NULL, NULL, NULL).decode()


# ---------------------------------------------------------------- byte helpers
cdef inline void put_be32(uint8_t* b, uint32_t v) noexcept nogil:
    b[0] = <uint8_t>(v >> 24)
    b[1] = <uint8_t>(v >> 16)
    b[2] = <uint8_t>(v >> 8)
    b[3] = <uint8_t>v

cdef inline uint32_t get_be32(const uint8_t* b) noexcept nogil:
    return (<uint32_t>b[0] << 24) | (<uint32_t>b[1] << 16) | (<uint32_t>b[2] << 8) | <uint32_t>b[3]

cdef inline uint32_t ld32(const void* p) noexcept nogil:
    """A native-endian uint32 (the keys of i2t, an MDB_INTEGERKEY database)."""
    cdef uint32_t v
    memcpy(&v, p, 4)
    return v

cdef inline void put_be64(uint8_t* b, uint64_t v) noexcept nogil:
    cdef int i
    for i in range(8):
        b[i] = <uint8_t>(v >> (56 - 8 * i))

cdef inline uint64_t get_be64(const uint8_t* b) noexcept nogil:
    cdef uint64_t v = 0
    cdef int i
    for i in range(8):
        v = (v << 8) | b[i]
    return v

cdef inline uint64_t load_le64(const uint8_t* p) noexcept nogil:
    return ((<uint64_t>p[0]) | (<uint64_t>p[1] << 8) | (<uint64_t>p[2] << 16) | (<uint64_t>p[3] << 24)
            | (<uint64_t>p[4] << 32) | (<uint64_t>p[5] << 40) | (<uint64_t>p[6] << 48) | (<uint64_t>p[7] << 56))

cdef inline uint64_t fmix64(uint64_t h) noexcept nogil:
    h ^= h >> 33
    h *= 0xff51afd7ed558ccdULL
    h ^= h >> 33
    h *= 0xc4ceb9fe1a85ec53ULL
    h ^= h >> 33
    return h

cdef uint64_t hash_bytes(const uint8_t* p, size_t n) noexcept nogil:
    """64-bit hash of an encoded term (stable on disk: reads bytes little-endian)."""
    cdef uint64_t h = 0x9E3779B97F4A7C15ULL ^ (<uint64_t>n * 0x87c37b91114253d5ULL)
    cdef uint64_t w
    cdef size_t i
    while n >= 8:
        w = load_le64(p) * 0x87c37b91114253d5ULL
        w = (w << 31) | (w >> 33)
        h ^= w * 0x4cf5ad432745937fULL
        h = ((h << 27) | (h >> 37)) * 5 + 0x52dce729ULL
        p += 8
        n -= 8
    w = 0
    for i in range(n):
        w |= (<uint64_t>p[i]) << (8 * i)
    h ^= fmix64(w ^ 0x2545F4914F6CDD1DULL)
    return fmix64(h)


def hash_term(bytes term):
    """The 64-bit hash under which ``term`` (encoded) is filed in ``t2i``."""
    return hash_bytes(<const uint8_t*>PyBytes_AS_STRING(term), PyBytes_GET_SIZE(term))


# ---------------------------------------------------------------- growable buffer
cdef struct Buf:
    char* p
    size_t n
    size_t cap

cdef inline int buf_reserve(Buf* b, size_t extra) noexcept nogil:
    cdef size_t need = b.n + extra
    cdef size_t cap
    cdef char* q
    if need <= b.cap:
        return 0
    cap = b.cap * 2 if b.cap else 256
    while cap < need:
        cap *= 2
    q = <char*>realloc(b.p, cap)
    if q == NULL:
        return E_NOMEM
    b.p = q
    b.cap = cap
    return 0

cdef inline int buf_put(Buf* b, const void* p, size_t n) noexcept nogil:
    if b.n + n > b.cap:
        if buf_reserve(b, n):
            return E_NOMEM
    memcpy(b.p + b.n, p, n)
    b.n += n
    return 0

cdef inline int buf_byte(Buf* b, char c) noexcept nogil:
    if b.n + 1 > b.cap:
        if buf_reserve(b, 1):
            return E_NOMEM
    b.p[b.n] = c
    b.n += 1
    return 0

cdef inline void buf_free(Buf* b) noexcept nogil:
    free(b.p)
    b.p = NULL
    b.n = 0
    b.cap = 0

cdef int buf_utf8(Buf* b, uint32_t cp) noexcept nogil:
    cdef uint8_t t[4]
    cdef int n
    if cp < 0x80:
        t[0] = <uint8_t>cp
        n = 1
    elif cp < 0x800:
        t[0] = <uint8_t>(0xC0 | (cp >> 6))
        t[1] = <uint8_t>(0x80 | (cp & 0x3F))
        n = 2
    elif cp < 0x10000:
        t[0] = <uint8_t>(0xE0 | (cp >> 12))
        t[1] = <uint8_t>(0x80 | ((cp >> 6) & 0x3F))
        t[2] = <uint8_t>(0x80 | (cp & 0x3F))
        n = 3
    else:
        t[0] = <uint8_t>(0xF0 | (cp >> 18))
        t[1] = <uint8_t>(0x80 | ((cp >> 12) & 0x3F))
        t[2] = <uint8_t>(0x80 | ((cp >> 6) & 0x3F))
        t[3] = <uint8_t>(0x80 | (cp & 0x3F))
        n = 4
    return buf_put(b, t, n)


# ---------------------------------------------------------------- term table
# An open-addressing hash table of encoded terms -> ids: the per-document
# table of the parser, the per-transaction table and the environment's cache.
cdef struct TEntry:
    uint64_t h
    size_t off
    uint32_t len
    uint32_t id
    uint32_t flags

cdef enum:
    TF_BLANK = 1      # a document blank node, relabelled when resolved

cdef struct TTable:
    Buf arena
    TEntry* ents
    size_t n
    size_t ecap
    uint32_t* slots
    size_t nslots

cdef void tt_free(TTable* t) noexcept nogil:
    buf_free(&t.arena)
    free(t.ents)
    free(t.slots)
    memset(t, 0, sizeof(TTable))

cdef void tt_clear(TTable* t) noexcept nogil:
    t.arena.n = 0
    t.n = 0
    if t.slots != NULL:
        memset(t.slots, 0, t.nslots * sizeof(uint32_t))

cdef inline const uint8_t* tt_term(TTable* t, size_t i) noexcept nogil:
    return <const uint8_t*>t.arena.p + t.ents[i].off

cdef Py_ssize_t tt_find(TTable* t, const void* p, size_t n, uint64_t h) noexcept nogil:
    cdef size_t mask, i
    cdef uint32_t s
    cdef TEntry* e
    if t.nslots == 0:
        return -1
    mask = t.nslots - 1
    i = h & mask
    while True:
        s = t.slots[i]
        if s == 0:
            return -1
        e = &t.ents[s - 1]
        if e.h == h and e.len == n and memcmp(t.arena.p + e.off, p, n) == 0:
            return s - 1
        i = (i + 1) & mask

cdef int tt_rehash(TTable* t, size_t nslots) noexcept nogil:
    cdef uint32_t* slots = <uint32_t*>calloc(nslots, sizeof(uint32_t))
    cdef size_t k, i, mask = nslots - 1
    if slots == NULL:
        return E_NOMEM
    for k in range(t.n):
        i = t.ents[k].h & mask
        while slots[i] != 0:
            i = (i + 1) & mask
        slots[i] = <uint32_t>(k + 1)
    free(t.slots)
    t.slots = slots
    t.nslots = nslots
    return 0

cdef Py_ssize_t tt_add(TTable* t, const void* p, size_t n, uint64_t h, uint32_t id, uint32_t flags) noexcept nogil:
    """Add a term known to be absent; its index, or -1 when out of memory."""
    cdef size_t mask, i, ecap
    cdef TEntry* ents
    if (t.n + 1) * 2 > t.nslots:
        if tt_rehash(t, t.nslots * 2 if t.nslots else 64):
            return -1
    if t.n == t.ecap:
        ecap = t.ecap * 2 if t.ecap else 64
        ents = <TEntry*>realloc(t.ents, ecap * sizeof(TEntry))
        if ents == NULL:
            return -1
        t.ents = ents
        t.ecap = ecap
    if n > 0xFFFFFFFFUL:
        return -1
    t.ents[t.n].h = h
    t.ents[t.n].off = t.arena.n
    t.ents[t.n].len = <uint32_t>n
    t.ents[t.n].id = id
    t.ents[t.n].flags = flags
    if buf_put(&t.arena, p, n):
        return -1
    mask = t.nslots - 1
    i = h & mask
    while t.slots[i] != 0:
        i = (i + 1) & mask
    t.slots[i] = <uint32_t>(t.n + 1)
    t.n += 1
    return t.n - 1

cdef Py_ssize_t tt_intern(TTable* t, const void* p, size_t n, uint32_t flags) noexcept nogil:
    cdef uint64_t h = hash_bytes(<const uint8_t*>p, n)
    cdef Py_ssize_t i = tt_find(t, p, n, h)
    if i >= 0:
        return i
    return tt_add(t, p, n, h, 0, flags)


# ---------------------------------------------------------------- quad arrays
cdef struct Quad:
    uint32_t k
    uint32_t a
    uint32_t b
    uint32_t c

cdef int cmp_quad(const void* x, const void* y) noexcept nogil:
    cdef const Quad* q = <const Quad*>x
    cdef const Quad* r = <const Quad*>y
    if q.k != r.k:
        return -1 if q.k < r.k else 1
    if q.a != r.a:
        return -1 if q.a < r.a else 1
    if q.b != r.b:
        return -1 if q.b < r.b else 1
    if q.c != r.c:
        return -1 if q.c < r.c else 1
    return 0

cdef struct QBuf:
    Quad* q
    size_t n
    size_t cap

cdef inline int qb_push(QBuf* b, uint32_t k, uint32_t a, uint32_t x, uint32_t c) noexcept nogil:
    cdef size_t cap
    cdef Quad* q
    if b.n == b.cap:
        cap = b.cap * 2 if b.cap else 256
        q = <Quad*>realloc(b.q, cap * sizeof(Quad))
        if q == NULL:
            return E_NOMEM
        b.q = q
        b.cap = cap
    b.q[b.n].k = k
    b.q[b.n].a = a
    b.q[b.n].b = x
    b.q[b.n].c = c
    b.n += 1
    return 0

cdef inline void qb_free(QBuf* b) noexcept nogil:
    free(b.q)
    b.q = NULL
    b.n = 0
    b.cap = 0

# quad (s, p, o, c) -> index entry (k, a, b, c) for index ix, and back
cdef inline void to_entry(int ix, const Quad* q, Quad* e) noexcept nogil:
    # q holds s, p, o, c in k, a, b, c
    if ix == IX_SPOC:
        e.k = q.k; e.a = q.a; e.b = q.b; e.c = q.c
    elif ix == IX_POSC:
        e.k = q.a; e.a = q.b; e.b = q.k; e.c = q.c
    elif ix == IX_OSPC:
        e.k = q.b; e.a = q.k; e.b = q.a; e.c = q.c
    else:
        e.k = q.c; e.a = q.k; e.b = q.a; e.c = q.b

cdef inline void from_entry(int ix, uint32_t k, uint32_t a, uint32_t b, uint32_t c, uint32_t* q) noexcept nogil:
    if ix == IX_SPOC:
        q[0] = k; q[1] = a; q[2] = b; q[3] = c
    elif ix == IX_POSC:
        q[1] = k; q[2] = a; q[0] = b; q[3] = c
    elif ix == IX_OSPC:
        q[2] = k; q[0] = a; q[1] = b; q[3] = c
    else:
        q[3] = k; q[0] = a; q[1] = b; q[2] = c


# ---------------------------------------------------------------- UTF-8 and N-Triples lexing
cdef inline int utf8_seq(const uint8_t* p, size_t avail) noexcept nogil:
    """Length of the valid UTF-8 sequence starting at p (lead byte >= 0x80), 0 if invalid."""
    cdef uint8_t c = p[0]
    cdef uint32_t cp
    if c < 0xC2:
        return 0
    if c < 0xE0:
        if avail < 2 or (p[1] & 0xC0) != 0x80:
            return 0
        return 2
    if c < 0xF0:
        if avail < 3 or (p[1] & 0xC0) != 0x80 or (p[2] & 0xC0) != 0x80:
            return 0
        cp = ((c & 0x0F) << 12) | ((p[1] & 0x3F) << 6) | (p[2] & 0x3F)
        if cp < 0x800 or (0xD800 <= cp <= 0xDFFF):
            return 0
        return 3
    if c < 0xF5:
        if avail < 4 or (p[1] & 0xC0) != 0x80 or (p[2] & 0xC0) != 0x80 or (p[3] & 0xC0) != 0x80:
            return 0
        cp = ((c & 0x07) << 18) | ((p[1] & 0x3F) << 12) | ((p[2] & 0x3F) << 6) | (p[3] & 0x3F)
        if cp < 0x10000 or cp > 0x10FFFF:
            return 0
        return 4
    return 0

cdef inline int hexval(uint8_t c) noexcept nogil:
    if 48 <= c <= 57:
        return c - 48
    if 65 <= c <= 70:
        return c - 55
    if 97 <= c <= 102:
        return c - 87
    return -1

cdef inline bint iri_forbidden(uint32_t c) noexcept nogil:
    # IRIREF excludes 0x00-0x20 and <>"{}|^`\
    return c <= 0x20 or c == 60 or c == 62 or c == 34 or c == 123 or c == 125 or c == 124 \
        or c == 94 or c == 96 or c == 92

cdef inline bint is_alpha(uint8_t c) noexcept nogil:
    return (65 <= c <= 90) or (97 <= c <= 122)

cdef inline bint is_digit(uint8_t c) noexcept nogil:
    return 48 <= c <= 57

cdef struct Parser:
    const uint8_t* src
    size_t n
    size_t pos
    int err
    size_t err_pos
    Buf tb          # the encoded term being built
    Buf lex         # a literal's lexical form
    TTable* terms   # document terms -> local index
    TTable blanks   # document blank node labels -> ordinal

cdef inline int perr(Parser* P, int kind, size_t pos) noexcept nogil:
    P.err = kind
    P.err_pos = pos
    return E_PARSE

cdef int read_uchar(Parser* P, uint32_t* out) noexcept nogil:
    """At a backslash followed by u or U: decode, advance; E_PARSE on error."""
    cdef size_t start = P.pos
    cdef int digits, i, v
    cdef uint32_t cp = 0
    if P.pos + 1 >= P.n:
        return perr(P, P_ESCAPE, start)
    if P.src[P.pos + 1] == 117:      # u
        digits = 4
    elif P.src[P.pos + 1] == 85:     # U
        digits = 8
    else:
        return perr(P, P_ESCAPE, start)
    if P.pos + 2 + digits > P.n:
        return perr(P, P_UCHAR, start)
    for i in range(digits):
        v = hexval(P.src[P.pos + 2 + i])
        if v < 0:
            return perr(P, P_UCHAR, start)
        cp = (cp << 4) | <uint32_t>v
    if cp > 0x10FFFF or (0xD800 <= cp <= 0xDFFF):
        return perr(P, P_UCHAR, start)
    P.pos += 2 + digits
    out[0] = cp
    return 0

cdef int read_iri(Parser* P, Buf* b) noexcept nogil:
    """At '<': append the IRI's characters to b (unescaped), advance past '>'."""
    cdef size_t start = P.pos
    cdef size_t b0 = b.n
    cdef size_t run
    cdef uint8_t c
    cdef uint32_t cp
    cdef int k
    cdef size_t i
    cdef bint scheme
    P.pos += 1
    while True:
        run = P.pos
        while P.pos < P.n:
            c = P.src[P.pos]
            if c == 62 or c == 92 or c >= 0x80 or iri_forbidden(c):
                break
            P.pos += 1
        if P.pos > run and buf_put(b, P.src + run, P.pos - run):
            return E_NOMEM
        if P.pos >= P.n:
            return perr(P, P_IRI_EOF, start)
        c = P.src[P.pos]
        if c == 62:
            P.pos += 1
            break
        if c == 92:
            if read_uchar(P, &cp):
                return E_PARSE
            if iri_forbidden(cp):
                return perr(P, P_UCHAR, P.pos)
            if buf_utf8(b, cp):
                return E_NOMEM
        elif c >= 0x80:
            k = utf8_seq(P.src + P.pos, P.n - P.pos)
            if k == 0:
                return perr(P, P_UTF8, P.pos)
            if buf_put(b, P.src + P.pos, k):
                return E_NOMEM
            P.pos += k
        else:
            return perr(P, P_IRI_CHAR, P.pos)
    # absolute: scheme ":" with scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )
    scheme = False
    if b.n > b0 and is_alpha(<uint8_t>b.p[b0]):
        for i in range(b0 + 1, b.n):
            c = <uint8_t>b.p[i]
            if c == 58:
                scheme = True
                break
            if not (is_alpha(c) or is_digit(c) or c == 43 or c == 45 or c == 46):
                break
    if not scheme:
        return perr(P, P_IRI_RELATIVE, start)
    return 0

cdef inline bint pn_ascii(uint8_t c) noexcept nogil:
    return is_alpha(c) or is_digit(c) or c == 95 or c == 58 or c == 45 or c == 46

cdef int read_bnode(Parser* P, Py_ssize_t* local) noexcept nogil:
    """At '_': read _:label, intern it as a document blank node."""
    cdef size_t start = P.pos
    cdef size_t lstart, lend
    cdef uint8_t c
    cdef int k
    cdef Py_ssize_t ordinal
    cdef uint8_t tag[5]
    if P.pos + 2 >= P.n or P.src[P.pos + 1] != 58:
        return perr(P, P_BNODE, start)
    P.pos += 2
    lstart = P.pos
    c = P.src[P.pos]
    if c == 45 or c == 46 or not (pn_ascii(c) or c >= 0x80):
        return perr(P, P_BNODE, start)
    while P.pos < P.n:
        c = P.src[P.pos]
        if c < 0x80:
            if not pn_ascii(c):
                break
            P.pos += 1
        else:
            k = utf8_seq(P.src + P.pos, P.n - P.pos)
            if k == 0:
                return perr(P, P_UTF8, P.pos)
            P.pos += k
    while P.src[P.pos - 1] == 46:   # a label never ends with '.'
        P.pos -= 1
    lend = P.pos
    ordinal = tt_intern(&P.blanks, P.src + lstart, lend - lstart, 0)
    if ordinal < 0:
        return E_NOMEM
    tag[0] = 1   # placeholder kind: document blank node number `ordinal`
    put_be32(tag + 1, <uint32_t>ordinal)
    local[0] = tt_intern(P.terms, tag, 5, TF_BLANK)
    if local[0] < 0:
        return E_NOMEM
    return 0

cdef int read_literal(Parser* P, Py_ssize_t* local) noexcept nogil:
    """At '"': read a literal with optional language tag or datatype."""
    cdef size_t start = P.pos
    cdef size_t run, lang0
    cdef uint8_t c, e
    cdef uint32_t cp
    cdef int k
    P.lex.n = 0
    P.pos += 1
    while True:
        run = P.pos
        while P.pos < P.n:
            c = P.src[P.pos]
            if c == 34 or c == 92 or c == 10 or c == 13 or c >= 0x80:
                break
            P.pos += 1
        if P.pos > run and buf_put(&P.lex, P.src + run, P.pos - run):
            return E_NOMEM
        if P.pos >= P.n:
            return perr(P, P_STRING_EOF, start)
        c = P.src[P.pos]
        if c == 34:
            P.pos += 1
            break
        if c == 10 or c == 13:
            return perr(P, P_STRING_NL, P.pos)
        if c >= 0x80:
            k = utf8_seq(P.src + P.pos, P.n - P.pos)
            if k == 0:
                return perr(P, P_UTF8, P.pos)
            if buf_put(&P.lex, P.src + P.pos, k):
                return E_NOMEM
            P.pos += k
            continue
        # backslash
        if P.pos + 1 >= P.n:
            return perr(P, P_ESCAPE, P.pos)
        e = P.src[P.pos + 1]
        if e == 117 or e == 85:
            if read_uchar(P, &cp):
                return E_PARSE
            if buf_utf8(&P.lex, cp):
                return E_NOMEM
            continue
        if e == 116:
            c = 9
        elif e == 98:
            c = 8
        elif e == 110:
            c = 10
        elif e == 114:
            c = 13
        elif e == 102:
            c = 12
        elif e == 34 or e == 39 or e == 92:
            c = e
        else:
            return perr(P, P_ESCAPE, P.pos)
        if buf_byte(&P.lex, <char>c):
            return E_NOMEM
        P.pos += 2
    P.tb.n = 0
    if P.pos < P.n and P.src[P.pos] == 64:         # @lang
        if buf_byte(&P.tb, 71):
            return E_NOMEM
        P.pos += 1
        lang0 = P.pos
        while P.pos < P.n and is_alpha(P.src[P.pos]):
            P.pos += 1
        if P.pos == lang0:
            return perr(P, P_LANG, lang0 - 1)
        while P.pos + 1 < P.n and P.src[P.pos] == 45 and (is_alpha(P.src[P.pos + 1]) or is_digit(P.src[P.pos + 1])):
            P.pos += 1
            while P.pos < P.n and (is_alpha(P.src[P.pos]) or is_digit(P.src[P.pos])):
                P.pos += 1
        if P.pos < P.n and P.src[P.pos] == 45:
            return perr(P, P_LANG, lang0 - 1)
        if buf_put(&P.tb, P.src + lang0, P.pos - lang0) or buf_byte(&P.tb, 0):
            return E_NOMEM
    elif P.pos + 1 < P.n and P.src[P.pos] == 94 and P.src[P.pos + 1] == 94:   # ^^<dt>
        P.pos += 2
        if P.pos >= P.n or P.src[P.pos] != 60:
            return perr(P, P_DATATYPE, P.pos)
        if buf_byte(&P.tb, 68):
            return E_NOMEM
        if read_iri(P, &P.tb):
            return E_PARSE
        if buf_byte(&P.tb, 0):
            return E_NOMEM
    else:
        if buf_byte(&P.tb, 76):
            return E_NOMEM
    if buf_put(&P.tb, P.lex.p, P.lex.n):
        return E_NOMEM
    local[0] = tt_intern(P.terms, P.tb.p, P.tb.n, 0)
    return E_NOMEM if local[0] < 0 else 0

cdef inline void skip_ws(Parser* P) noexcept nogil:
    while P.pos < P.n and (P.src[P.pos] == 32 or P.src[P.pos] == 9):
        P.pos += 1

cdef inline int read_iri_term(Parser* P, Py_ssize_t* local) noexcept nogil:
    P.tb.n = 0
    if buf_byte(&P.tb, 73):
        return E_NOMEM
    if read_iri(P, &P.tb):
        return E_PARSE
    local[0] = tt_intern(P.terms, P.tb.p, P.tb.n, 0)
    return E_NOMEM if local[0] < 0 else 0

cdef int parse_ntriples(Parser* P, QBuf* out, uint32_t graph) noexcept nogil:
    """Parse the whole document into out (local term indices); nothing is written."""
    cdef Py_ssize_t s, p, o
    cdef uint8_t c
    cdef int rc
    while True:
        # blank lines, comments, line ends
        while P.pos < P.n:
            c = P.src[P.pos]
            if c == 32 or c == 9 or c == 10 or c == 13:
                P.pos += 1
            elif c == 35:
                while P.pos < P.n and P.src[P.pos] != 10 and P.src[P.pos] != 13:
                    P.pos += 1
            else:
                break
        if P.pos >= P.n:
            return 0
        c = P.src[P.pos]
        if c == 60:
            rc = read_iri_term(P, &s)
        elif c == 95:
            rc = read_bnode(P, &s)
        else:
            return perr(P, P_SUBJECT, P.pos)
        if rc:
            return rc
        skip_ws(P)
        if P.pos >= P.n or P.src[P.pos] != 60:
            return perr(P, P_PREDICATE, P.pos)
        rc = read_iri_term(P, &p)
        if rc:
            return rc
        skip_ws(P)
        if P.pos >= P.n:
            return perr(P, P_OBJECT, P.pos)
        c = P.src[P.pos]
        if c == 60:
            rc = read_iri_term(P, &o)
        elif c == 95:
            rc = read_bnode(P, &o)
        elif c == 34:
            rc = read_literal(P, &o)
        else:
            return perr(P, P_OBJECT, P.pos)
        if rc:
            return rc
        skip_ws(P)
        if P.pos >= P.n or P.src[P.pos] != 46:
            return perr(P, P_DOT, P.pos)
        P.pos += 1
        skip_ws(P)
        if P.pos < P.n and P.src[P.pos] == 35:
            while P.pos < P.n and P.src[P.pos] != 10 and P.src[P.pos] != 13:
                P.pos += 1
        if P.pos < P.n and P.src[P.pos] != 10 and P.src[P.pos] != 13:
            return perr(P, P_EOL, P.pos)
        if qb_push(out, <uint32_t>s, <uint32_t>p, <uint32_t>o, graph):
            return E_NOMEM


# ---------------------------------------------------------------- term validation
cdef bint valid_term(const uint8_t* t, size_t n) noexcept nogil:
    if n == 0:
        return False
    if t[0] == 73 or t[0] == 66 or t[0] == 76:   # I B L
        return True
    if t[0] == 71 or t[0] == 68:                 # G D: need the NUL separator
        return memchr(t + 1, 0, n - 1) != NULL
    return False


def _check_term(term):
    if type(term) is not bytes:
        raise TypeError(f"an encoded term must be bytes, got {type(term).__name__}")
    if not valid_term(<const uint8_t*>PyBytes_AS_STRING(term), PyBytes_GET_SIZE(term)):
        raise ValueError(f"invalid encoded term {term[:60]!r}")


# ---------------------------------------------------------------- rendering
cdef struct Prefixes:
    size_t n
    const char** ns
    size_t* ns_len
    const char** name
    size_t* name_len

cdef const char* RDF_TYPE = b"http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
cdef size_t RDF_TYPE_LEN = 47

cdef int put_hex4(Buf* b, uint32_t c) noexcept nogil:
    cdef char t[6]
    cdef const char* digits = b"0123456789ABCDEF"
    t[0] = 92
    t[1] = 117
    t[2] = digits[(c >> 12) & 15]
    t[3] = digits[(c >> 8) & 15]
    t[4] = digits[(c >> 4) & 15]
    t[5] = digits[c & 15]
    return buf_put(b, t, 6)

cdef int put_string(Buf* out, const uint8_t* p, size_t n) noexcept nogil:
    """p as the inside of a "..." literal (N-Triples and Turtle escapes)."""
    cdef size_t i = 0, run
    cdef uint8_t c
    cdef const char* esc
    if buf_reserve(out, n + 2):
        return E_NOMEM
    while i < n:
        run = i
        while i < n:
            c = p[i]
            if c < 0x20 or c == 34 or c == 92 or c == 0x7F:
                break
            i += 1
        if i > run and buf_put(out, p + run, i - run):
            return E_NOMEM
        if i >= n:
            break
        c = p[i]
        if c == 34:
            esc = b'\\"'
        elif c == 92:
            esc = b"\\\\"
        elif c == 10:
            esc = b"\\n"
        elif c == 13:
            esc = b"\\r"
        elif c == 9:
            esc = b"\\t"
        elif c == 8:
            esc = b"\\b"
        elif c == 12:
            esc = b"\\f"
        else:
            esc = NULL
        if esc != NULL:
            if buf_put(out, esc, 2):
                return E_NOMEM
        elif put_hex4(out, c):
            return E_NOMEM
        i += 1
    return 0

cdef int put_iri(Buf* out, const uint8_t* p, size_t n, Prefixes* px, bint predicate) noexcept nogil:
    cdef size_t i, j, ln
    cdef uint8_t c
    cdef bint ok
    if px != NULL:
        if predicate and n == RDF_TYPE_LEN and memcmp(p, RDF_TYPE, n) == 0:
            return buf_byte(out, 97)
        for i in range(px.n):
            ln = px.ns_len[i]
            if n >= ln and memcmp(p, px.ns[i], ln) == 0:
                ok = True
                for j in range(ln, n):
                    c = p[j]
                    if not (is_alpha(c) or is_digit(c) or c == 95 or (c == 45 and j > ln)):
                        ok = False
                        break
                if ok:
                    if buf_put(out, px.name[i], px.name_len[i]) or buf_byte(out, 58) \
                            or buf_put(out, p + ln, n - ln):
                        return E_NOMEM
                    return 0
    if buf_byte(out, 60):
        return E_NOMEM
    i = 0
    while i < n:
        j = i
        while j < n and not iri_forbidden(p[j]):
            j += 1
        if j > i and buf_put(out, p + i, j - i):
            return E_NOMEM
        if j < n:
            if put_hex4(out, p[j]):
                return E_NOMEM
            j += 1
        i = j
    return buf_byte(out, 62)

cdef int render_term(Buf* out, const uint8_t* t, size_t n, Prefixes* px, bint predicate) noexcept nogil:
    """Append the N-Triples (px NULL) or Turtle form of an encoded term."""
    cdef const uint8_t* sep
    cdef size_t k
    if n == 0:
        return E_TERM
    if t[0] == 73:
        return put_iri(out, t + 1, n - 1, px, predicate)
    if t[0] == 66:
        if buf_put(out, b"_:", 2) or buf_put(out, t + 1, n - 1):
            return E_NOMEM
        return 0
    if t[0] == 76:
        if buf_byte(out, 34) or put_string(out, t + 1, n - 1) or buf_byte(out, 34):
            return E_NOMEM
        return 0
    if t[0] == 71 or t[0] == 68:
        sep = <const uint8_t*>memchr(t + 1, 0, n - 1)
        if sep == NULL:
            return E_TERM
        k = sep - t
        if buf_byte(out, 34) or put_string(out, sep + 1, n - k - 1) or buf_byte(out, 34):
            return E_NOMEM
        if t[0] == 71:
            if buf_byte(out, 64) or buf_put(out, t + 1, k - 1):
                return E_NOMEM
            return 0
        if buf_put(out, b"^^", 2):
            return E_NOMEM
        return put_iri(out, t + 1, k - 1, px, False)
    return E_TERM


def render_ntriples_term(bytes term):
    """The N-Triples form of an encoded term.

    >>> render_ntriples_term(b'Gen\\x00say "hi"\\n')
    b'"say \\\\"hi\\\\"\\\\n"@en'
    """
    cdef Buf b
    cdef int rc
    memset(&b, 0, sizeof(Buf))
    rc = render_term(&b, <const uint8_t*>PyBytes_AS_STRING(term), PyBytes_GET_SIZE(term), NULL, False)
    try:
        if rc == E_TERM:
            raise ValueError(f"invalid encoded term {term[:60]!r}")
        if rc:
            raise MemoryError()
        return PyBytes_FromStringAndSize(b.p, b.n)
    finally:
        buf_free(&b)


cdef inline int hex_digits(char* out, uint64_t x) noexcept nogil:
    cdef char tmp[16]
    cdef int n = 0, i
    cdef const char* digits = b"0123456789abcdef"
    while True:
        tmp[n] = digits[x & 15]
        n += 1
        x >>= 4
        if x == 0:
            break
    for i in range(n):
        out[i] = tmp[n - 1 - i]
    return n

cdef inline int dec_digits(char* out, uint32_t x) noexcept nogil:
    cdef char tmp[12]
    cdef int n = 0, i
    while True:
        tmp[n] = <char>(48 + x % 10)
        n += 1
        x //= 10
        if x == 0:
            break
    for i in range(n):
        out[i] = tmp[n - 1 - i]
    return n


# ---------------------------------------------------------------- scans
cdef struct ScanState:
    MDB_cursor* cur
    int ix
    uint32_t key          # 0: every key
    uint32_t pre[3]       # leading value components that must match
    int npre
    uint32_t want[4]      # s, p, o, c filters (0 = any)
    int started

cdef int scan_next(ScanState* st, uint32_t* q) noexcept nogil:
    """Next matching quad into q[4]; MDB_NOTFOUND at the end."""
    cdef MDB_val k, v
    cdef uint8_t kb[4]
    cdef uint8_t vb[12]
    cdef int rc, i
    cdef uint32_t kk, a, b, c
    while True:
        if not st.started:
            st.started = 1
            if st.key:
                put_be32(kb, st.key)
                k.mv_data = kb
                k.mv_size = 4
                if st.npre:
                    memset(vb, 0, 12)
                    for i in range(st.npre):
                        put_be32(vb + 4 * i, st.pre[i])
                    v.mv_data = vb
                    v.mv_size = 12
                    rc = mdb_cursor_get(st.cur, &k, &v, MDB_GET_BOTH_RANGE)
                else:
                    rc = mdb_cursor_get(st.cur, &k, &v, MDB_SET_KEY)
            else:
                rc = mdb_cursor_get(st.cur, &k, &v, MDB_FIRST)
        else:
            rc = mdb_cursor_get(st.cur, &k, &v, MDB_NEXT_DUP if st.key else MDB_NEXT)
        if rc:
            return rc
        if k.mv_size != 4 or v.mv_size != 12:
            return E_CORRUPT
        kk = get_be32(<uint8_t*>k.mv_data)
        a = get_be32(<uint8_t*>v.mv_data)
        b = get_be32(<uint8_t*>v.mv_data + 4)
        c = get_be32(<uint8_t*>v.mv_data + 8)
        if st.npre >= 1 and a != st.pre[0]:
            return MDB_NOTFOUND
        if st.npre >= 2 and b != st.pre[1]:
            return MDB_NOTFOUND
        if st.npre >= 3 and c != st.pre[2]:
            return MDB_NOTFOUND
        from_entry(st.ix, kk, a, b, c, q)
        if (st.want[0] and q[0] != st.want[0]) or (st.want[1] and q[1] != st.want[1]) \
                or (st.want[2] and q[2] != st.want[2]) or (st.want[3] and q[3] != st.want[3]):
            continue
        return 0

cdef int get_term(MDB_txn* txn, MDB_dbi i2t, uint32_t tid, MDB_val* out) noexcept nogil:
    """The encoded term of an id (i2t keys are native uint32, MDB_INTEGERKEY)."""
    cdef MDB_val k
    k.mv_data = &tid
    k.mv_size = 4
    return mdb_get(txn, i2t, &k, out)

# ---------------------------------------------------------------- check
cdef struct Problem:
    int code
    uint32_t a
    uint32_t b
    uint32_t c
    uint32_t d
    int ix

cdef struct Check:
    uint8_t* bitmap
    uint32_t max_id
    size_t terms
    size_t hash_entries
    size_t collisions
    size_t entries[4]
    size_t triples
    size_t graphs
    size_t subjects
    Problem* probs
    size_t nprobs
    size_t max_problems
    size_t total_problems

cdef enum:
    K_BAD_TERM = 1
    K_TERM_NOT_HASHED
    K_HASH_DANGLING
    K_HASH_WRONG
    K_DUPLICATE_TERM
    K_COUNT_TERMS
    K_MISSING_ENTRY
    K_UNKNOWN_ID
    K_COUNT_INDEX
    K_BAD_ENTRY

cdef void problem(Check* ck, int code, uint32_t a, uint32_t b, uint32_t c, uint32_t d, int ix) noexcept nogil:
    ck.total_problems += 1
    if ck.nprobs < ck.max_problems:
        ck.probs[ck.nprobs].code = code
        ck.probs[ck.nprobs].a = a
        ck.probs[ck.nprobs].b = b
        ck.probs[ck.nprobs].c = c
        ck.probs[ck.nprobs].d = d
        ck.probs[ck.nprobs].ix = ix
        ck.nprobs += 1

cdef str _problem_text(Problem* p):
    names = ("spoc", "posc", "ospc", "cspo")
    quad = f"(s={p.a}, p={p.b}, o={p.c}, c={p.d})"
    if p.code == K_BAD_TERM:
        return f"term {p.a}: invalid encoding"
    if p.code == K_TERM_NOT_HASHED:
        return f"term {p.a}: missing from the hash index t2i"
    if p.code == K_HASH_DANGLING:
        return f"t2i: an entry points to term id {p.a}, which does not exist"
    if p.code == K_HASH_WRONG:
        return f"t2i: term {p.a} is filed under a hash that is not its own"
    if p.code == K_DUPLICATE_TERM:
        return f"terms {p.a} and {p.b} are the same term stored twice"
    if p.code == K_COUNT_TERMS:
        return f"t2i holds {p.a} entries but i2t holds {p.b} terms"
    if p.code == K_MISSING_ENTRY:
        return f"quad {quad} is in spoc but missing from {names[p.ix]}"
    if p.code == K_UNKNOWN_ID:
        return f"quad {quad} uses an id that names no term"
    if p.code == K_COUNT_INDEX:
        return f"{names[p.ix]} holds {p.a} entries but spoc holds {p.b}"
    if p.code == K_BAD_ENTRY:
        return f"{names[p.ix]}: an entry has the wrong key or value size"
    return f"problem {p.code}"

cdef inline bint has_id(Check* ck, uint32_t i) noexcept nogil:
    return i != 0 and i <= ck.max_id and (ck.bitmap[i >> 3] & (1 << (i & 7))) != 0

cdef int run_check(MDB_txn* txn, MDB_dbi* dbi, Check* ck) noexcept nogil:
    cdef MDB_cursor* cur = NULL
    cdef MDB_cursor* c2 = NULL
    cdef MDB_val k, v, k2, v2
    cdef MDB_stat stat
    cdef int rc, ix
    cdef uint32_t tid, q[4], prev_s = 0
    cdef uint64_t h
    cdef uint8_t hk[8]
    cdef uint8_t kb[4]
    cdef uint8_t vb[12]
    cdef uint8_t prev[12]
    cdef uint8_t idb[4]
    cdef bint have = False
    cdef Quad e, qq
    cdef size_t ndups
    # 1. terms: i2t ids -> bitmap; each term valid and filed under its hash
    rc = mdb_cursor_open(txn, dbi[DB_I2T], &cur)
    if rc:
        return rc
    rc = mdb_cursor_get(cur, &k, &v, MDB_LAST)
    if rc == 0:
        ck.max_id = ld32(k.mv_data) if k.mv_size == 4 else 0
    ck.bitmap = <uint8_t*>calloc((<size_t>ck.max_id >> 3) + 1, 1)
    if ck.bitmap == NULL:
        mdb_cursor_close(cur)
        return E_NOMEM
    rc = mdb_cursor_open(txn, dbi[DB_T2I], &c2)
    if rc:
        mdb_cursor_close(cur)
        return rc
    rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST)
    while rc == 0:
        ck.terms += 1
        if k.mv_size != 4:
            problem(ck, K_BAD_ENTRY, 0, 0, 0, 0, 0)
        else:
            tid = ld32(k.mv_data)
            ck.bitmap[tid >> 3] |= <uint8_t>(1 << (tid & 7))
            if not valid_term(<uint8_t*>v.mv_data, v.mv_size):
                problem(ck, K_BAD_TERM, tid, 0, 0, 0, 0)
            h = hash_bytes(<uint8_t*>v.mv_data, v.mv_size)
            put_be64(hk, h)
            k2.mv_data = hk
            k2.mv_size = 8
            put_be32(idb, tid)
            v2.mv_data = idb
            v2.mv_size = 4
            rc = mdb_cursor_get(c2, &k2, &v2, MDB_GET_BOTH)
            if rc == MDB_NOTFOUND:
                problem(ck, K_TERM_NOT_HASHED, tid, 0, 0, 0, 0)
            elif rc:
                break
        rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)
    if rc != MDB_NOTFOUND:
        mdb_cursor_close(cur)
        mdb_cursor_close(c2)
        return rc
    # 2. the hash index: every entry points to an existing term with that hash;
    #    ids sharing a hash are distinct terms (collisions, told apart)
    rc = mdb_cursor_get(c2, &k, &v, MDB_FIRST)
    while rc == 0:
        ck.hash_entries += 1
        if k.mv_size != 8 or v.mv_size != 4:
            problem(ck, K_BAD_ENTRY, 0, 0, 0, 0, 0)
        else:
            tid = get_be32(<uint8_t*>v.mv_data)
            if not has_id(ck, tid):
                problem(ck, K_HASH_DANGLING, tid, 0, 0, 0, 0)
            else:
                if get_term(txn, dbi[DB_I2T], tid, &v2) == 0:
                    if hash_bytes(<uint8_t*>v2.mv_data, v2.mv_size) != get_be64(<uint8_t*>k.mv_data):
                        problem(ck, K_HASH_WRONG, tid, 0, 0, 0, 0)
            if not have or memcmp(prev, k.mv_data, 8) != 0:   # first id under this hash
                memcpy(prev, k.mv_data, 8)
                have = True
                mdb_cursor_count(c2, &ndups)
                if ndups > 1:
                    ck.collisions += 1
                    rc = check_collisions(txn, dbi, &k, ck)
                    if rc:
                        break
        rc = mdb_cursor_get(c2, &k, &v, MDB_NEXT)
    mdb_cursor_close(c2)
    c2 = NULL
    mdb_cursor_close(cur)
    cur = NULL
    if rc != MDB_NOTFOUND:
        return rc
    if ck.hash_entries != ck.terms:
        problem(ck, K_COUNT_TERMS, <uint32_t>ck.hash_entries, <uint32_t>ck.terms, 0, 0, 0)
    have = False
    # 3. every spoc quad is in the three other indices, with known ids
    for ix in range(4):
        mdb_stat(txn, dbi[DB_SPOC + ix], &stat)
        ck.entries[ix] = stat.ms_entries
    for ix in range(1, 4):
        if ck.entries[ix] != ck.entries[0]:
            problem(ck, K_COUNT_INDEX, <uint32_t>ck.entries[ix], <uint32_t>ck.entries[0], 0, 0, ix)
    rc = mdb_cursor_open(txn, dbi[DB_SPOC], &cur)
    if rc:
        return rc
    rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST)
    while rc == 0:
        if k.mv_size != 4 or v.mv_size != 12:
            problem(ck, K_BAD_ENTRY, 0, 0, 0, 0, 0)
            rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)
            continue
        from_entry(IX_SPOC, get_be32(<uint8_t*>k.mv_data), get_be32(<uint8_t*>v.mv_data),
                   get_be32(<uint8_t*>v.mv_data + 4), get_be32(<uint8_t*>v.mv_data + 8), q)
        if not have or memcmp(prev, k.mv_data, 4) != 0 or memcmp(prev + 4, v.mv_data, 8) != 0:
            ck.triples += 1
            if not have or q[0] != prev_s:
                ck.subjects += 1
            memcpy(prev, k.mv_data, 4)
            memcpy(prev + 4, v.mv_data, 8)
            prev_s = q[0]
            have = True
        if not (has_id(ck, q[0]) and has_id(ck, q[1]) and has_id(ck, q[2]) and has_id(ck, q[3])):
            problem(ck, K_UNKNOWN_ID, q[0], q[1], q[2], q[3], 0)
        qq.k = q[0]
        qq.a = q[1]
        qq.b = q[2]
        qq.c = q[3]
        for ix in range(1, 4):
            to_entry(ix, &qq, &e)
            put_be32(kb, e.k)
            put_be32(vb, e.a)
            put_be32(vb + 4, e.b)
            put_be32(vb + 8, e.c)
            k2.mv_data = kb
            k2.mv_size = 4
            v2.mv_data = vb
            v2.mv_size = 12
            if c2 != NULL:
                mdb_cursor_close(c2)
                c2 = NULL
            rc = mdb_cursor_open(txn, dbi[DB_SPOC + ix], &c2)
            if rc:
                mdb_cursor_close(cur)
                return rc
            rc = mdb_cursor_get(c2, &k2, &v2, MDB_GET_BOTH)
            if rc == MDB_NOTFOUND:
                problem(ck, K_MISSING_ENTRY, q[0], q[1], q[2], q[3], ix)
            elif rc:
                mdb_cursor_close(cur)
                mdb_cursor_close(c2)
                return rc
        rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)
    if c2 != NULL:
        mdb_cursor_close(c2)
    mdb_cursor_close(cur)
    if rc != MDB_NOTFOUND:
        return rc
    # 4. graphs: distinct keys of cspo
    rc = mdb_cursor_open(txn, dbi[DB_CSPO], &cur)
    if rc:
        return rc
    rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST)
    while rc == 0:
        ck.graphs += 1
        rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT_NODUP)
    mdb_cursor_close(cur)
    return 0 if rc == MDB_NOTFOUND else rc

cdef int check_collisions(MDB_txn* txn, MDB_dbi* dbi, MDB_val* key, Check* ck) noexcept nogil:
    """Several ids share a hash: no two may name equal terms."""
    cdef uint32_t ids[64]
    cdef int n = 0, i, j, rc
    cdef MDB_val k, v, ka, va, kb_, vb_
    cdef uint8_t ba[4]
    cdef uint8_t bb[4]
    cdef MDB_cursor* c2
    rc = mdb_cursor_open(txn, dbi[DB_T2I], &c2)
    if rc:
        return rc
    k = key[0]
    rc = mdb_cursor_get(c2, &k, &v, MDB_SET_KEY)
    while rc == 0 and n < 64:
        ids[n] = get_be32(<uint8_t*>v.mv_data)
        n += 1
        rc = mdb_cursor_get(c2, &k, &v, MDB_NEXT_DUP)
    if rc and rc != MDB_NOTFOUND:
        mdb_cursor_close(c2)
        return rc
    for i in range(n):
        for j in range(i + 1, n):
            if get_term(txn, dbi[DB_I2T], ids[i], &va) == 0 and get_term(txn, dbi[DB_I2T], ids[j], &vb_) == 0:
                if va.mv_size == vb_.mv_size and memcmp(va.mv_data, vb_.mv_data, va.mv_size) == 0:
                    problem(ck, K_DUPLICATE_TERM, ids[i], ids[j], 0, 0, 0)
    mdb_cursor_close(c2)
    return 0

# ---------------------------------------------------------------- the environment
cdef class Environment:
    """One LMDB environment (a directory) holding one store.

    ``durable``: each commit is fsynced (default).  ``durable=False`` opens
    with MDB_NOSYNC: a commit is written to the OS but not fsynced, so a
    power loss can lose the last commits (never corrupt the store), while a
    process crash loses nothing committed.
    """
    cdef MDB_env* env
    cdef MDB_dbi dbi[N_DBS]
    cdef readonly object path
    cdef readonly bint durable
    cdef readonly bint readonly
    cdef public int open_txns
    cdef PyThread_type_lock wlock
    cdef long writer_thread
    cdef TTable cache          # committed terms -> ids (IRIs and short literals)

    def __cinit__(self):
        self.env = NULL
        self.wlock = PyThread_allocate_lock()
        self.writer_thread = -1
        memset(&self.cache, 0, sizeof(TTable))

    def __init__(self, path, *, size_t map_size=1 << 28, bint durable=True, bint readonly=False,
                 unsigned int max_readers=126, bint writemap=False):
        cdef int rc
        cdef unsigned int flags = MDB_NOTLS | MDB_NORDAHEAD
        cdef bytes bpath = os.fsencode(os.fspath(path))
        self.path = os.fspath(path)
        self.durable = durable
        self.readonly = readonly
        if not durable:
            flags |= MDB_NOSYNC
        if readonly:
            flags |= MDB_RDONLY
        elif writemap:
            flags |= MDB_WRITEMAP
        rc = mdb_env_create(&self.env)
        if rc:
            raise_rc(rc, "mdb_env_create")
        mdb_env_set_maxdbs(self.env, N_DBS + 2)
        mdb_env_set_maxreaders(self.env, max_readers)
        mdb_env_set_mapsize(self.env, map_size)
        cdef const char* cpath = bpath
        with nogil:
            rc = mdb_env_open(self.env, cpath, flags, 0o644)
        if rc:
            mdb_env_close(self.env)
            self.env = NULL
            raise_rc(rc, f"cannot open LMDB environment {self.path!r}")
        try:
            self._open_dbs()
        except BaseException:
            mdb_env_close(self.env)
            self.env = NULL
            raise

    cdef _open_dbs(self):
        cdef MDB_txn* txn
        cdef int rc, i
        cdef unsigned int f
        cdef MDB_val k, v
        cdef bytes name
        cdef uint8_t ver[4]
        rc = mdb_txn_begin(self.env, NULL, MDB_RDONLY if self.readonly else 0, &txn)
        if rc:
            raise_rc(rc, "mdb_txn_begin")
        try:
            for i, n in enumerate(DB_NAMES):
                name = n.encode()
                f = MDB_DUPSORT | MDB_DUPFIXED if n in ("t2i", "spoc", "posc", "ospc", "cspo") else 0
                if n == "i2t":
                    f = MDB_INTEGERKEY
                if not self.readonly:
                    f |= MDB_CREATE
                rc = mdb_dbi_open(txn, name, f, &self.dbi[i])
                if rc == MDB_NOTFOUND:
                    raise StoreError(f"{self.path!r} is not a lakebench store (no {n!r} database)")
                if rc:
                    raise_rc(rc, f"opening database {n!r}")
            k.mv_data = <char*>b"format"
            k.mv_size = 6
            rc = mdb_get(txn, self.dbi[DB_META], &k, &v)
            if rc == MDB_NOTFOUND and not self.readonly:
                put_be32(ver, FORMAT_VERSION)
                v.mv_data = ver
                v.mv_size = 4
                rc = mdb_put(txn, self.dbi[DB_META], &k, &v, 0)
                if rc:
                    raise_rc(rc, "writing the format version")
            elif rc:
                raise_rc(rc, "reading the format version")
            elif v.mv_size != 4 or get_be32(<uint8_t*>v.mv_data) != FORMAT_VERSION:
                raise StoreError(f"{self.path!r}: unsupported store format")
        except BaseException:
            mdb_txn_abort(txn)
            raise
        # committing (even a read-only transaction) keeps the database handles
        rc = mdb_txn_commit(txn)
        if rc:
            raise_rc(rc, "mdb_txn_commit")

    def __dealloc__(self):
        if self.env != NULL:
            mdb_env_close(self.env)
            self.env = NULL
        tt_free(&self.cache)
        if self.wlock != NULL:
            PyThread_free_lock(self.wlock)

    cdef int _live(self) except -1:
        if self.env == NULL:
            raise StoreError("the environment is closed")
        return 0

    def close(self):
        """Close the environment (every transaction must be finished)."""
        if self.env != NULL:
            if self.open_txns:
                raise StoreError(f"{self.open_txns} transaction(s) still open")
            mdb_env_close(self.env)
            self.env = NULL
        tt_clear(&self.cache)

    @property
    def closed(self):
        return self.env == NULL

    def begin(self, bint write=False):
        """A new transaction; at most one writer per environment and thread."""
        self._live()
        return Txn._begin(self, write)

    def info(self):
        """Map size, pages used, page size and reader slots."""
        cdef MDB_envinfo info
        cdef MDB_stat st
        self._live()
        mdb_env_info(self.env, &info)
        mdb_env_stat(self.env, &st)
        return {
            "map_size": info.me_mapsize,
            "last_pgno": info.me_last_pgno,
            "page_size": st.ms_psize,
            "used_bytes": (info.me_last_pgno + 1) * st.ms_psize,
            "last_txnid": info.me_last_txnid,
            "max_readers": info.me_maxreaders,
            "num_readers": info.me_numreaders,
        }

    def grow(self, size_t min_size=0):
        """Double the map (at least ``min_size``); no transaction may be open here."""
        cdef MDB_envinfo info
        cdef size_t size
        cdef int rc
        self._live()
        if self.open_txns:
            raise StoreError(f"cannot grow the map while {self.open_txns} transaction(s) are open")
        mdb_env_info(self.env, &info)
        size = max(info.me_mapsize * 2, min_size)
        rc = mdb_env_set_mapsize(self.env, size)
        if rc:
            raise_rc(rc, "mdb_env_set_mapsize")
        return size

    def sync(self, bint force=True):
        """Flush written data to disk (what a ``nosync`` commit skips)."""
        cdef int rc
        self._live()
        with nogil:
            rc = mdb_env_sync(self.env, force)
        if rc:
            raise_rc(rc, "mdb_env_sync")

    def reader_check(self):
        """Clear reader slots left by dead processes; how many were cleared."""
        cdef int dead = 0
        self._live()
        mdb_reader_check(self.env, &dead)
        return dead

    def cache_size(self):
        return self.cache.n


# ---------------------------------------------------------------- transactions
cdef class Txn:
    """A read or write transaction; every store operation runs inside one.

    A write transaction that fails inside LMDB is aborted at once and the
    error raised (MapFullError when the map is full); a ParseError leaves it
    untouched, since parsing happens before any write.
    """
    cdef Environment env
    cdef MDB_txn* txn
    cdef readonly bint write
    cdef MDB_cursor* cur[N_DBS]
    cdef uint32_t next_id
    cdef uint32_t last_key[4]
    cdef bint last_known[4]
    cdef TTable seen           # terms resolved in this (write) transaction
    cdef uint64_t generation

    def __cinit__(self):
        self.txn = NULL
        memset(self.cur, 0, sizeof(self.cur))
        memset(&self.seen, 0, sizeof(TTable))

    @staticmethod
    cdef Txn _begin(Environment env, bint write):
        cdef Txn t = Txn.__new__(Txn)
        cdef int rc
        cdef long me
        t.env = env
        t.write = write
        if write:
            if env.readonly:
                raise StoreError("the environment is read-only")
            me = <long>PyThread_get_thread_ident()
            if env.writer_thread == me:
                raise StoreError("a write transaction is already open in this thread")
            with nogil:
                PyThread_acquire_lock(env.wlock, WAIT_LOCK)
            env.writer_thread = me
        with nogil:
            rc = mdb_txn_begin(env.env, NULL, 0 if write else MDB_RDONLY, &t.txn)
        if rc == MDB_MAP_RESIZED and env.open_txns == 0:
            mdb_env_set_mapsize(env.env, 0)
            with nogil:
                rc = mdb_txn_begin(env.env, NULL, 0 if write else MDB_RDONLY, &t.txn)
        if rc:
            t.txn = NULL
            if write:
                env.writer_thread = -1
                PyThread_release_lock(env.wlock)
            raise_rc(rc, "mdb_txn_begin")
        env.open_txns += 1
        return t

    def __dealloc__(self):
        if self.txn != NULL:
            self._end(False)
        tt_free(&self.seen)

    cdef int _live(self) except -1:
        if self.txn == NULL:
            raise StoreError("the transaction is finished")
        return 0

    cdef int _end(self, bint commit) except? -1:
        """Commit or abort; release the writer lock; 0 or the commit's error code."""
        cdef int rc = 0, i
        cdef MDB_txn* txn = self.txn
        if txn == NULL:
            return 0
        for i in range(N_DBS):
            if self.cur[i] != NULL:
                mdb_cursor_close(self.cur[i])
                self.cur[i] = NULL
        self.txn = NULL
        self.generation += 1
        if commit:
            if self.write:
                self._merge_cache()
            with nogil:
                rc = mdb_txn_commit(txn)
            if rc and self.write:
                tt_clear(&self.env.cache)   # it may hold ids that were never committed
        else:
            mdb_txn_abort(txn)
        self.env.open_txns -= 1
        if self.write:
            self.env.writer_thread = -1
            PyThread_release_lock(self.env.wlock)
        return rc

    cdef void _merge_cache(self) noexcept:
        cdef TTable* c = &self.env.cache
        cdef TTable* s = &self.seen
        cdef size_t i
        cdef const uint8_t* t
        cdef TEntry* e
        if c.n + s.n > CACHE_MAX_ENTRIES or c.arena.n + s.arena.n > CACHE_MAX_BYTES:
            tt_clear(c)
        for i in range(s.n):
            e = &s.ents[i]
            t = tt_term(s, i)
            if t[0] == 76 or t[0] == 71 or t[0] == 68:
                if e.len > CACHE_MAX_LITERAL:
                    continue
            elif t[0] != 73:
                continue
            if tt_find(c, t, e.len, e.h) < 0:
                if tt_add(c, t, e.len, e.h, e.id, 0) < 0:
                    tt_clear(c)
                    return

    def commit(self):
        """Make the transaction's writes durable (per the environment's mode)."""
        cdef int rc
        self._live()
        rc = self._end(True)
        if rc:
            raise_rc(rc, "mdb_txn_commit")

    def abort(self):
        """Discard the transaction (a no-op when already finished)."""
        self._end(False)

    @property
    def active(self):
        return self.txn != NULL

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if self.txn != NULL:
            if exc_type is None and self.write:
                self.commit()
            else:
                self._end(False)
        return False

    cdef inline int _cursor(self, int db, MDB_cursor** out) noexcept nogil:
        cdef int rc
        if self.cur[db] == NULL:
            rc = mdb_cursor_open(self.txn, self.env.dbi[db], &self.cur[db])
            if rc:
                return rc
        out[0] = self.cur[db]
        return 0

    cdef int _fail(self, int rc, str what) except -1:
        """Abort (a failed LMDB write leaves the transaction unusable) and raise."""
        if self.write:
            self._end(False)
        raise_rc(rc, what)

    # -------------------------------------------------------- term ids
    cdef int _lookup(self, const uint8_t* p, size_t n, uint64_t h, uint32_t* out) noexcept nogil:
        """The id of a stored term, or 0; compares stored bytes (collision check)."""
        cdef MDB_cursor* c
        cdef MDB_val k, v, k2, v2
        cdef uint8_t hk[8]
        cdef int rc
        out[0] = 0
        rc = self._cursor(DB_T2I, &c)
        if rc:
            return rc
        put_be64(hk, h)
        k.mv_data = hk
        k.mv_size = 8
        rc = mdb_cursor_get(c, &k, &v, MDB_SET_KEY)
        while rc == 0:
            if v.mv_size != 4:
                return E_CORRUPT
            rc = get_term(self.txn, self.env.dbi[DB_I2T], get_be32(<uint8_t*>v.mv_data), &v2)
            if rc == 0:
                if v2.mv_size == n and memcmp(v2.mv_data, p, n) == 0:
                    out[0] = get_be32(<uint8_t*>v.mv_data)
                    return 0
            elif rc != MDB_NOTFOUND:
                return rc
            rc = mdb_cursor_get(c, &k, &v, MDB_NEXT_DUP)
        return 0 if rc == MDB_NOTFOUND else rc

    cdef int _create(self, const uint8_t* p, size_t n, uint64_t h, uint32_t* out) noexcept nogil:
        cdef MDB_cursor* c
        cdef MDB_val k, v
        cdef uint8_t kb[8]
        cdef uint8_t ib[4]
        cdef int rc
        if self.next_id == 0:
            rc = self._cursor(DB_I2T, &c)
            if rc:
                return rc
            rc = mdb_cursor_get(c, &k, &v, MDB_LAST)
            if rc == MDB_NOTFOUND:
                self.next_id = 1
            elif rc:
                return rc
            elif k.mv_size != 4:
                return E_CORRUPT
            else:
                self.next_id = ld32(k.mv_data) + 1
        if self.next_id == 0xFFFFFFFFU:
            return E_IDS
        put_be32(ib, self.next_id)
        k.mv_data = &self.next_id
        k.mv_size = 4
        v.mv_data = <void*>p
        v.mv_size = n
        rc = self._cursor(DB_I2T, &c)
        if rc:
            return rc
        rc = mdb_cursor_put(c, &k, &v, MDB_APPEND)
        if rc:
            return rc
        put_be64(kb, h)
        k.mv_data = kb
        k.mv_size = 8
        v.mv_data = ib
        v.mv_size = 4
        rc = self._cursor(DB_T2I, &c)
        if rc:
            return rc
        rc = mdb_cursor_put(c, &k, &v, MDB_NODUPDATA)
        if rc:
            return rc
        out[0] = self.next_id
        self.next_id += 1
        return 0

    cdef int _resolve(self, const uint8_t* p, size_t n, uint64_t h, bint create, uint32_t* out) noexcept nogil:
        """Term -> id through the transaction's table, the cache, then LMDB."""
        cdef Py_ssize_t i
        cdef int rc
        i = tt_find(&self.seen, p, n, h)
        if i >= 0:
            out[0] = self.seen.ents[i].id
            return 0
        i = tt_find(&self.env.cache, p, n, h)   # safe: we hold the writer lock
        if i >= 0:
            out[0] = self.env.cache.ents[i].id
        else:
            rc = self._lookup(p, n, h, out)
            if rc:
                return rc
            if out[0] == 0:
                if not create:
                    return 0
                rc = self._create(p, n, h, out)
                if rc:
                    return rc
        if tt_add(&self.seen, p, n, h, out[0], 0) < 0:
            return E_NOMEM
        return 0

    cdef int _bnode_doc(self, uint64_t* out) noexcept nogil:
        """Next number of the per-document blank node counter (in ``meta``)."""
        cdef MDB_val k, v
        cdef uint8_t b[8]
        cdef uint64_t doc = 0
        cdef int rc
        k.mv_data = <char*>b"bnode_docs"
        k.mv_size = 10
        rc = mdb_get(self.txn, self.env.dbi[DB_META], &k, &v)
        if rc == 0 and v.mv_size == 8:
            doc = get_be64(<uint8_t*>v.mv_data)
        elif rc and rc != MDB_NOTFOUND:
            return rc
        doc += 1
        put_be64(b, doc)
        v.mv_data = b
        v.mv_size = 8
        rc = mdb_put(self.txn, self.env.dbi[DB_META], &k, &v, 0)
        out[0] = doc
        return rc

    cdef int _resolve_table(self, TTable* t, uint32_t* ids) noexcept nogil:
        """Resolve (creating) every term of a document table into ids[]."""
        cdef size_t i
        cdef int rc, k
        cdef uint64_t doc = 0
        cdef Buf lab
        cdef const uint8_t* p
        cdef char num[48]
        cdef uint64_t x
        cdef uint32_t ordinal
        for i in range(t.n):
            p = tt_term(t, i)
            if t.ents[i].flags & TF_BLANK:
                if doc == 0:
                    rc = self._bnode_doc(&doc)
                    if rc:
                        return rc
                # label "lb<doc hex>n<ordinal>"
                ordinal = get_be32(p + 1)
                k = 0
                num[k] = 66; k += 1
                num[k] = 108; k += 1
                num[k] = 98; k += 1
                x = doc
                k += hex_digits(num + k, x)
                num[k] = 110; k += 1
                k += dec_digits(num + k, ordinal)
                rc = self._resolve(<const uint8_t*>num, k, hash_bytes(<const uint8_t*>num, k), True, &ids[i])
            else:
                rc = self._resolve(p, t.ents[i].len, t.ents[i].h, True, &ids[i])
            if rc:
                return rc
        return 0

    # -------------------------------------------------------- index writes
    cdef int _idx_put(self, int ix, const Quad* e) noexcept nogil:
        """Insert one entry; 0 when new, MDB_KEYEXIST when already there.

        Appends when the key or the value sorts last, which keeps pages full
        (LMDB splits a page in the middle otherwise)."""
        cdef MDB_cursor* c
        cdef MDB_val k, v
        cdef uint8_t kb[4]
        cdef uint8_t vb[12]
        cdef int rc
        rc = self._cursor(DB_SPOC + ix, &c)
        if rc:
            return rc
        if not self.last_known[ix]:
            rc = mdb_cursor_get(c, &k, &v, MDB_LAST)
            if rc == MDB_NOTFOUND:
                self.last_key[ix] = 0
            elif rc:
                return rc
            else:
                self.last_key[ix] = get_be32(<uint8_t*>k.mv_data)
            self.last_known[ix] = True
        put_be32(kb, e.k)
        put_be32(vb, e.a)
        put_be32(vb + 4, e.b)
        put_be32(vb + 8, e.c)
        k.mv_data = kb
        k.mv_size = 4
        v.mv_data = vb
        v.mv_size = 12
        if e.k > self.last_key[ix]:
            rc = mdb_cursor_put(c, &k, &v, MDB_APPEND)
            if rc == 0:
                self.last_key[ix] = e.k
                return 0
            if rc != MDB_KEYEXIST:
                return rc
        rc = mdb_cursor_put(c, &k, &v, MDB_APPENDDUP | MDB_NODUPDATA)
        if rc != MDB_KEYEXIST:
            return rc
        return mdb_cursor_put(c, &k, &v, MDB_NODUPDATA)

    cdef int _insert(self, QBuf* q, size_t* added) noexcept nogil:
        """Insert id quads (s, p, o, c in k, a, b, c) into the four indices."""
        cdef size_t i, n, m = 0
        cdef int rc, ix
        cdef QBuf e
        added[0] = 0
        if q.n == 0:
            return 0
        qsort(q.q, q.n, sizeof(Quad), cmp_quad)
        n = q.n
        # spoc first: it tells which quads are new (duplicates are skipped)
        for i in range(n):
            if i > 0 and cmp_quad(&q.q[i], &q.q[i - 1]) == 0:
                continue
            rc = self._idx_put(IX_SPOC, &q.q[i])
            if rc == MDB_KEYEXIST:
                continue
            if rc:
                return rc
            q.q[m] = q.q[i]
            m += 1
        q.n = m
        added[0] = m
        if m == 0:
            return 0
        memset(&e, 0, sizeof(QBuf))
        e.q = <Quad*>malloc(m * sizeof(Quad))
        if e.q == NULL:
            return E_NOMEM
        e.n = m
        e.cap = m
        try:
            for ix in range(1, 4):
                for i in range(m):
                    to_entry(ix, &q.q[i], &e.q[i])
                qsort(e.q, m, sizeof(Quad), cmp_quad)
                for i in range(m):
                    rc = self._idx_put(ix, &e.q[i])
                    if rc == MDB_KEYEXIST:
                        return E_CORRUPT   # spoc and this index disagree
                    if rc:
                        return rc
        finally:
            qb_free(&e)
        return 0

    cdef int _delete(self, QBuf* q) noexcept nogil:
        cdef size_t i
        cdef int ix, rc
        cdef Quad e
        cdef MDB_val k, v
        cdef uint8_t kb[4]
        cdef uint8_t vb[12]
        for i in range(q.n):
            for ix in range(4):
                to_entry(ix, &q.q[i], &e)
                put_be32(kb, e.k)
                put_be32(vb, e.a)
                put_be32(vb + 4, e.b)
                put_be32(vb + 8, e.c)
                k.mv_data = kb
                k.mv_size = 4
                v.mv_data = vb
                v.mv_size = 12
                rc = mdb_del(self.txn, self.env.dbi[DB_SPOC + ix], &k, &v)
                if rc and rc != MDB_NOTFOUND:
                    return rc
        return 0

    # -------------------------------------------------------- writes (Python API)
    cdef int _require_write(self) except -1:
        self._live()
        if not self.write:
            raise StoreError("not a write transaction")
        return 0

    def ingest_ntriples(self, data, bytes graph not None, extra=()):
        """Parse N-Triples ``data`` into graph ``graph`` (an encoded term), plus
        ``extra`` quads of encoded terms, and insert them; the number of new quads.

        Blank node labels are scoped to the document: each document's blank
        nodes become fresh ones.  On a ParseError nothing is written.
        """
        cdef Parser P
        cdef TTable terms
        cdef QBuf q
        cdef Py_ssize_t g
        cdef int rc = 0
        cdef const unsigned char[::1] view = data
        self._require_write()
        _check_term(graph)
        memset(&P, 0, sizeof(Parser))
        memset(&terms, 0, sizeof(TTable))
        memset(&q, 0, sizeof(QBuf))
        P.terms = &terms
        P.src = &view[0] if view.shape[0] else <const uint8_t*>b""
        P.n = view.shape[0]
        try:
            g = tt_intern(&terms, PyBytes_AS_STRING(graph), PyBytes_GET_SIZE(graph), 0)
            if g < 0:
                raise MemoryError()
            with nogil:
                rc = parse_ntriples(&P, &q, <uint32_t>g)
            if rc == E_PARSE:
                raise _parse_error(P.err, P.err_pos, data)
            if rc:
                raise MemoryError()
            self._intern_quads(&terms, &q, extra)
            return self._resolve_and_insert(&terms, &q, "ingest")
        finally:
            qb_free(&q)
            tt_free(&terms)
            tt_free(&P.blanks)
            buf_free(&P.tb)
            buf_free(&P.lex)

    def add(self, quads):
        """Insert quads of encoded terms ``(s, p, o, c)``; the number new."""
        cdef TTable terms
        cdef QBuf q
        self._require_write()
        memset(&terms, 0, sizeof(TTable))
        memset(&q, 0, sizeof(QBuf))
        try:
            self._intern_quads(&terms, &q, quads)
            return self._resolve_and_insert(&terms, &q, "add")
        finally:
            qb_free(&q)
            tt_free(&terms)

    cdef int _intern_quads(self, TTable* terms, QBuf* q, quads) except -1:
        """Append ``quads`` (4 encoded terms each) to ``q``, their terms to ``terms``."""
        cdef Py_ssize_t loc[4]
        cdef int j
        for quad in quads:
            if len(quad) != 4:
                raise ValueError("a quad needs 4 terms")
            for j in range(4):
                t = quad[j]
                _check_term(t)
                loc[j] = tt_intern(terms, PyBytes_AS_STRING(t), PyBytes_GET_SIZE(t), 0)
                if loc[j] < 0:
                    raise MemoryError()
            if qb_push(q, <uint32_t>loc[0], <uint32_t>loc[1], <uint32_t>loc[2], <uint32_t>loc[3]):
                raise MemoryError()
        return 0

    cdef size_t _resolve_and_insert(self, TTable* terms, QBuf* q, str what) except? 0:
        """Give every term of ``terms`` an id, rewrite ``q`` to ids, insert it; the number new."""
        cdef uint32_t* ids = <uint32_t*>malloc((terms.n + 1) * sizeof(uint32_t))
        cdef size_t i, added = 0
        cdef int rc
        if ids == NULL:
            raise MemoryError()
        try:
            with nogil:
                rc = self._resolve_table(terms, ids)
                if rc == 0:
                    for i in range(q.n):
                        q.q[i].k = ids[q.q[i].k]
                        q.q[i].a = ids[q.q[i].a]
                        q.q[i].b = ids[q.q[i].b]
                        q.q[i].c = ids[q.q[i].c]
                    rc = self._insert(q, &added)
            if rc:
                self._fail(rc, what)
            return added
        finally:
            free(ids)

    def remove(self, s=None, p=None, o=None, c=None):
        """Delete every quad matching the pattern (None = any); the number deleted."""
        cdef ScanState st
        cdef QBuf q
        cdef uint32_t quad[4]
        cdef int rc
        self._require_write()
        if not self._plan(&st, s, p, o, c):
            return 0
        memset(&q, 0, sizeof(QBuf))
        try:
            rc = mdb_cursor_open(self.txn, self.env.dbi[DB_SPOC + st.ix], &st.cur)
            if rc:
                self._fail(rc, "mdb_cursor_open")
            with nogil:
                while True:
                    rc = scan_next(&st, quad)
                    if rc:
                        break
                    rc = qb_push(&q, quad[0], quad[1], quad[2], quad[3])
                    if rc:
                        break
                mdb_cursor_close(st.cur)
                st.cur = NULL
                if rc == MDB_NOTFOUND:
                    rc = self._delete(&q)
            if rc:
                self._fail(rc, "remove")
            return q.n
        finally:
            qb_free(&q)

    # -------------------------------------------------------- reads
    cdef uint32_t _id(self, term) except? 0xFFFFFFFF:
        """The id of an encoded term (0 when unknown); never writes."""
        cdef uint32_t out = 0
        cdef int rc
        cdef const uint8_t* p
        cdef size_t n
        cdef uint64_t h
        _check_term(term)
        p = <const uint8_t*>PyBytes_AS_STRING(term)
        n = PyBytes_GET_SIZE(term)
        h = hash_bytes(p, n)
        with nogil:
            if self.write:
                rc = self._resolve(p, n, h, False, &out)
            else:
                rc = self._lookup(p, n, h, &out)
        if rc:
            raise_rc(rc, "term lookup")
        return out

    def term_id(self, term):
        """The id of an encoded term, 0 when the store does not know it."""
        self._live()
        return self._id(term)

    def term(self, uint32_t tid):
        """The encoded term of an id, or None."""
        cdef MDB_val k, v
        cdef uint8_t kb[4]
        cdef int rc
        self._live()
        with nogil:
            rc = get_term(self.txn, self.env.dbi[DB_I2T], tid, &v)
        if rc == MDB_NOTFOUND:
            return None
        if rc:
            raise_rc(rc, "mdb_get")
        return PyBytes_FromStringAndSize(<char*>v.mv_data, v.mv_size)

    cdef bint _plan(self, ScanState* st, s, p, o, c) except -1:
        """Fill st for a pattern; False when a bound term is unknown (empty result)."""
        cdef uint32_t ids[4]
        cdef int i
        memset(st, 0, sizeof(ScanState))
        for i, t in enumerate((s, p, o, c)):
            if t is None:
                ids[i] = 0
            else:
                ids[i] = self._id(t)
                if ids[i] == 0:
                    return False
            st.want[i] = ids[i]
        if ids[3] and (ids[0] or not (ids[1] or ids[2])):
            st.ix = IX_CSPO
            st.key = ids[3]
            for i in range(3):
                if not ids[i]:
                    break
                st.pre[i] = ids[i]
                st.npre += 1
        elif ids[0]:
            st.ix = IX_SPOC
            st.key = ids[0]
            if ids[1]:
                st.pre[0] = ids[1]
                st.npre = 1
                if ids[2]:
                    st.pre[1] = ids[2]
                    st.npre = 2
                    if ids[3]:
                        st.pre[2] = ids[3]
                        st.npre = 3
        elif ids[1]:
            st.ix = IX_POSC
            st.key = ids[1]
            if ids[2]:
                st.pre[0] = ids[2]
                st.npre = 1
        elif ids[2]:
            st.ix = IX_OSPC
            st.key = ids[2]
        else:
            st.ix = IX_SPOC
            st.key = 0
        return True

    def quads(self, s=None, p=None, o=None, c=None):
        """Iterate the quads matching a pattern, as 4-tuples of encoded terms."""
        self._live()
        return _iter_batches(_Scan._make(self, s, p, o, c, 0, None, 0))

    def quad_ids(self, s=None, p=None, o=None, c=None):
        """Iterate matching quads as 4-tuples of ids (for tests and tools)."""
        self._live()
        return _iter_batches(_Scan._make(self, s, p, o, c, 3, None, 0))

    def serialize(self, s=None, p=None, o=None, c=None, format="nt", prefixes=None, Py_ssize_t chunk_size=1 << 16):
        """Stream the triples matching a pattern as N-Triples (``"nt"``) or
        Turtle (``"turtle"``) bytes chunks, straight from the indices.

        A triple stored in several graphs is written once.  Turtle groups
        by subject and predicate when the pattern scans an index in subject
        order (a graph or a subject); ``prefixes`` maps names to namespaces.
        """
        self._live()
        if format in ("nt", "ntriples", "n-triples"):
            mode = 1
        elif format in ("turtle", "ttl"):
            mode = 2
        else:
            raise ValueError(f"unknown format {format!r}")
        return _Scan._make(self, s, p, o, c, mode, prefixes, chunk_size)

    def count(self, s=None, p=None, o=None, c=None):
        """Number of quads matching the pattern."""
        cdef ScanState st
        cdef size_t n = 0
        cdef uint32_t quad[4]
        cdef int rc
        cdef MDB_val k, v
        cdef uint8_t kb[4]
        self._live()
        if not self._plan(&st, s, p, o, c):
            return 0
        rc = mdb_cursor_open(self.txn, self.env.dbi[DB_SPOC + st.ix], &st.cur)
        if rc:
            raise_rc(rc, "mdb_cursor_open")
        with nogil:
            if st.key and st.npre == 0 and (st.want[0] != 0) + (st.want[1] != 0) + (st.want[2] != 0) + (st.want[3] != 0) == 1:
                put_be32(kb, st.key)
                k.mv_data = kb
                k.mv_size = 4
                rc = mdb_cursor_get(st.cur, &k, &v, MDB_SET_KEY)
                if rc == 0:
                    rc = mdb_cursor_count(st.cur, &n)
                    if rc == 0:
                        rc = MDB_NOTFOUND
            else:
                while True:
                    rc = scan_next(&st, quad)
                    if rc:
                        break
                    n += 1
            mdb_cursor_close(st.cur)
        if rc != MDB_NOTFOUND:
            raise_rc(rc, "count")
        return n

    def quad_count(self):
        """Number of quads (entries of ``spoc``)."""
        cdef MDB_stat st
        self._live()
        mdb_stat(self.txn, self.env.dbi[DB_SPOC], &st)
        return st.ms_entries

    def term_count(self):
        cdef MDB_stat st
        self._live()
        mdb_stat(self.txn, self.env.dbi[DB_I2T], &st)
        return st.ms_entries

    def triple_count(self):
        """Number of distinct triples (a triple in several graphs counts once)."""
        cdef MDB_cursor* cur
        cdef MDB_val k, v
        cdef size_t n = 0
        cdef int rc
        cdef uint8_t prev[12]
        cdef bint have = False
        self._live()
        rc = mdb_cursor_open(self.txn, self.env.dbi[DB_SPOC], &cur)
        if rc:
            raise_rc(rc, "mdb_cursor_open")
        with nogil:
            rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST)
            while rc == 0:
                if k.mv_size != 4 or v.mv_size != 12:
                    rc = E_CORRUPT
                    break
                # consecutive entries differing only in c are one triple
                if not have or memcmp(prev, k.mv_data, 4) != 0 or memcmp(prev + 4, v.mv_data, 8) != 0:
                    n += 1
                    memcpy(prev, k.mv_data, 4)
                    memcpy(prev + 4, v.mv_data, 8)
                    have = True
                rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)
            mdb_cursor_close(cur)
        if rc != MDB_NOTFOUND:
            raise_rc(rc, "triple_count")
        return n

    def contexts(self, s=None, p=None, o=None):
        """Encoded terms of the graphs holding a triple matching the pattern,
        each once, in id order; with no pattern, every graph that holds a
        triple or was declared with add_graph()."""
        cdef MDB_cursor* cur
        cdef MDB_val k, v, v2
        cdef int rc, db
        cdef set ids = set()
        self._live()
        if s is None and p is None and o is None:
            for db in (DB_CSPO, DB_GRAPHS):
                rc = mdb_cursor_open(self.txn, self.env.dbi[db], &cur)
                if rc:
                    raise_rc(rc, "mdb_cursor_open")
                rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST)
                while rc == 0:
                    if k.mv_size == 4:
                        ids.add(get_be32(<uint8_t*>k.mv_data))
                    rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT_NODUP if db == DB_CSPO else MDB_NEXT)
                mdb_cursor_close(cur)
                if rc != MDB_NOTFOUND:
                    raise_rc(rc, "contexts")
        else:
            for quad in _iter_batches(_Scan._make(self, s, p, o, None, 3, None, 0)):
                ids.add(quad[3])
        return [self.term(i) for i in sorted(ids)]

    def add_graph(self, term):
        """Declare a graph (kept even while it holds no triple)."""
        cdef uint32_t tid = 0
        cdef MDB_val k, v
        cdef uint8_t kb[4]
        cdef int rc
        cdef const uint8_t* p
        cdef size_t n
        self._require_write()
        _check_term(term)
        p = <const uint8_t*>PyBytes_AS_STRING(term)
        n = PyBytes_GET_SIZE(term)
        with nogil:
            rc = self._resolve(p, n, hash_bytes(p, n), True, &tid)
            if rc == 0:
                put_be32(kb, tid)
                k.mv_data = kb
                k.mv_size = 4
                v.mv_data = kb
                v.mv_size = 0
                rc = mdb_put(self.txn, self.env.dbi[DB_GRAPHS], &k, &v, 0)
        if rc:
            self._fail(rc, "add_graph")

    def remove_graph(self, term):
        """Delete a graph's quads and its declaration; the number of quads deleted."""
        cdef uint32_t tid
        cdef MDB_val k
        cdef uint8_t kb[4]
        cdef int rc
        self._require_write()
        removed = self.remove(None, None, None, term)
        tid = self._id(term)
        if tid:
            put_be32(kb, tid)
            k.mv_data = kb
            k.mv_size = 4
            rc = mdb_del(self.txn, self.env.dbi[DB_GRAPHS], &k, NULL)
            if rc and rc != MDB_NOTFOUND:
                self._fail(rc, "remove_graph")
        return removed

    # -------------------------------------------------------- namespaces
    def namespaces(self):
        """(prefix, namespace) pairs, sorted by prefix."""
        cdef MDB_cursor* cur
        cdef MDB_val k, v
        cdef int rc
        cdef list out = []
        self._live()
        rc = mdb_cursor_open(self.txn, self.env.dbi[DB_NS], &cur)
        if rc:
            raise_rc(rc, "mdb_cursor_open")
        rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST)
        while rc == 0:
            prefix = PyBytes_FromStringAndSize(<char*>k.mv_data, k.mv_size)
            out.append(("" if prefix == b"\x00" else prefix.decode(),
                        PyBytes_FromStringAndSize(<char*>v.mv_data, v.mv_size).decode()))
            rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)
        mdb_cursor_close(cur)
        if rc != MDB_NOTFOUND:
            raise_rc(rc, "namespaces")
        return out

    def set_namespace(self, str prefix, str namespace):
        cdef MDB_val k, v
        cdef int rc
        cdef bytes bp = prefix.encode(), bn = namespace.encode()
        self._require_write()
        if not bp:
            bp = b"\x00"   # LMDB keys cannot be empty: the empty prefix is stored as NUL
        k.mv_data = <char*>bp
        k.mv_size = len(bp)
        v.mv_data = <char*>bn
        v.mv_size = len(bn)
        rc = mdb_put(self.txn, self.env.dbi[DB_NS], &k, &v, 0)
        if rc:
            self._fail(rc, "set_namespace")

    def del_namespace(self, str prefix):
        cdef MDB_val k
        cdef int rc
        cdef bytes bp = prefix.encode() or b"\x00"
        self._require_write()
        k.mv_data = <char*>bp
        k.mv_size = len(bp)
        rc = mdb_del(self.txn, self.env.dbi[DB_NS], &k, NULL)
        if rc and rc != MDB_NOTFOUND:
            self._fail(rc, "del_namespace")

    # -------------------------------------------------------- the facade's own values
    def get_meta(self, str name):
        """The value stored under ``name`` in ``meta``, or None (e.g. the log position
        the facade's write-ahead log has applied)."""
        cdef MDB_val k, v
        cdef int rc
        cdef bytes key = name.encode()
        self._live()
        k.mv_data = <char*>key
        k.mv_size = len(key)
        rc = mdb_get(self.txn, self.env.dbi[DB_META], &k, &v)
        if rc == MDB_NOTFOUND:
            return None
        if rc:
            raise_rc(rc, "get_meta")
        return PyBytes_FromStringAndSize(<char*>v.mv_data, v.mv_size)

    def set_meta(self, str name, bytes value not None):
        """Store ``value`` under ``name`` in ``meta`` (``format`` and ``bnode_docs``
        belong to the core and cannot be set)."""
        cdef MDB_val k, v
        cdef int rc
        cdef bytes key = name.encode()
        self._require_write()
        if name in ("format", "bnode_docs") or not key:
            raise ValueError(f"meta key {name!r} is reserved")
        k.mv_data = <char*>key
        k.mv_size = len(key)
        v.mv_data = <char*>value
        v.mv_size = len(value)
        rc = mdb_put(self.txn, self.env.dbi[DB_META], &k, &v, 0)
        if rc:
            self._fail(rc, "set_meta")

    # -------------------------------------------------------- statistics and check
    def db_stats(self):
        """Per sub-database: entries and pages (branch, leaf, overflow)."""
        cdef MDB_stat st
        cdef int i
        self._live()
        out = {}
        for i, name in enumerate(DB_NAMES):
            mdb_stat(self.txn, self.env.dbi[i], &st)
            out[name] = {"entries": st.ms_entries, "depth": st.ms_depth, "branch_pages": st.ms_branch_pages,
                         "leaf_pages": st.ms_leaf_pages, "overflow_pages": st.ms_overflow_pages}
        return out

    def check(self, size_t max_problems=100):
        """Verify the store: ``(problems, summary)``, problems empty when consistent.

        Every term is filed under its hash and every hash entry points to a
        term with that hash; no term is stored twice; every quad of ``spoc``
        is in the three other indices, which hold as many entries; every id
        in a quad names a stored term.
        """
        cdef Check ck
        cdef int rc
        self._live()
        memset(&ck, 0, sizeof(Check))
        ck.max_problems = max_problems
        ck.probs = <Problem*>calloc(max_problems + 1, sizeof(Problem))
        if ck.probs == NULL:
            raise MemoryError()
        try:
            with nogil:
                rc = run_check(self.txn, self.env.dbi, &ck)
            if rc:
                raise_rc(rc, "check")
            problems = [_problem_text(&ck.probs[i]) for i in range(ck.nprobs)]
            if ck.total_problems > ck.nprobs:
                problems.append(f"... and {ck.total_problems - ck.nprobs} more problems")
            summary = {
                "quads": ck.entries[0],
                "triples": ck.triples,
                "terms": ck.terms,
                "graphs": ck.graphs,
                "subjects": ck.subjects,
                "index_entries": {"spoc": ck.entries[0], "posc": ck.entries[1],
                                  "ospc": ck.entries[2], "cspo": ck.entries[3]},
                "hash_entries": ck.hash_entries,
                "hash_collisions": ck.collisions,
            }
            return problems, summary
        finally:
            free(ck.bitmap)
            free(ck.probs)


def _parse_error(int kind, size_t pos, data):
    data = bytes(data[:pos])
    line = data.count(b"\n") + 1
    column = pos - (data.rfind(b"\n") + 1) + 1
    return ParseError(PARSE_MESSAGES.get(kind, "syntax error"), pos, line, column)




cdef enum:
    BATCH = 256

cdef class _Scan:
    """Iterator over a pattern: quads of encoded terms (mode 0), id quads
    (mode 3), or N-Triples (1) / Turtle (2) chunks."""
    cdef Txn t
    cdef uint64_t generation
    cdef ScanState st
    cdef int mode
    cdef bint done
    cdef bint empty
    cdef Py_ssize_t chunk_size
    cdef uint32_t batch[BATCH][4]
    cdef MDB_val terms[BATCH][4]
    cdef Buf out
    cdef Buf sp
    cdef Prefixes px
    cdef bint use_px
    cdef list px_keep
    cdef uint32_t prev[3]
    cdef bint have_prev
    cdef bint header_done
    cdef dict cache

    def __cinit__(self):
        memset(&self.st, 0, sizeof(ScanState))
        memset(&self.out, 0, sizeof(Buf))
        memset(&self.sp, 0, sizeof(Buf))
        memset(&self.px, 0, sizeof(Prefixes))

    @staticmethod
    cdef _Scan _make(Txn t, s, p, o, c, int mode, prefixes, Py_ssize_t chunk_size):
        cdef _Scan it = _Scan.__new__(_Scan)
        cdef int rc, i
        it.t = t
        it.generation = t.generation
        it.mode = mode
        it.chunk_size = chunk_size if chunk_size > 0 else 1 << 16
        it.cache = {}
        it.empty = not t._plan(&it.st, s, p, o, c)
        if not it.empty:
            rc = mdb_cursor_open(t.txn, t.env.dbi[DB_SPOC + it.st.ix], &it.st.cur)
            if rc:
                raise_rc(rc, "mdb_cursor_open")
        if mode == 2:
            it.px_keep = []
            pairs = sorted((prefixes or {}).items(), key=lambda kv: -len(kv[1]))
            it.px.n = len(pairs)
            it.px.ns = <const char**>calloc(len(pairs) + 1, sizeof(char*))
            it.px.ns_len = <size_t*>calloc(len(pairs) + 1, sizeof(size_t))
            it.px.name = <const char**>calloc(len(pairs) + 1, sizeof(char*))
            it.px.name_len = <size_t*>calloc(len(pairs) + 1, sizeof(size_t))
            if it.px.ns == NULL or it.px.ns_len == NULL or it.px.name == NULL or it.px.name_len == NULL:
                raise MemoryError()
            for i, (name, ns) in enumerate(pairs):
                bname = str(name).encode()
                bns = str(ns).encode()
                it.px_keep.append(bname)
                it.px_keep.append(bns)
                it.px.name[i] = PyBytes_AS_STRING(bname)
                it.px.name_len[i] = len(bname)
                it.px.ns[i] = PyBytes_AS_STRING(bns)
                it.px.ns_len[i] = len(bns)
            it.use_px = True
        return it

    def __dealloc__(self):
        self._close()
        buf_free(&self.out)
        buf_free(&self.sp)
        free(self.px.ns)
        free(self.px.ns_len)
        free(self.px.name)
        free(self.px.name_len)

    cdef void _close(self) noexcept:
        if self.st.cur != NULL:
            # a read cursor is ours to free; a write transaction frees its
            # cursors itself when it ends
            if self.t is not None and (not self.t.write or
                                       (self.t.txn != NULL and self.generation == self.t.generation)):
                mdb_cursor_close(self.st.cur)
            self.st.cur = NULL
        self.done = True

    def close(self):
        self._close()

    def __iter__(self):
        return self

    cdef int _check_live(self) except -1:
        if self.t.txn == NULL or self.generation != self.t.generation:
            self._close()
            raise StoreError("the transaction of this iterator is finished")
        return 0

    def __next__(self):
        if self.mode == 0 or self.mode == 3:
            raise TypeError("iterate quads through next_batch()")
        return self._next_text()

    cdef _next_text(self):
        cdef int rc = 0
        cdef uint32_t q[4]
        cdef MDB_val ts, tp, to
        cdef bint turtle = self.mode == 2
        cdef Prefixes* px = &self.px if self.use_px else NULL
        cdef size_t i
        if self.done and self.out.n == 0 and (self.header_done or not turtle):
            raise StopIteration
        if turtle and not self.header_done:
            self.header_done = True
            for i in range(self.px.n):
                if buf_put(&self.out, b"@prefix ", 8) or buf_put(&self.out, self.px.name[i], self.px.name_len[i]) \
                        or buf_put(&self.out, b": <", 3) or buf_put(&self.out, self.px.ns[i], self.px.ns_len[i]) \
                        or buf_put(&self.out, b"> .\n", 4):
                    raise MemoryError()
            if self.px.n and buf_byte(&self.out, 10):
                raise MemoryError()
        if not self.done and not self.empty:
            self._check_live()
            with nogil:
                while self.out.n < <size_t>self.chunk_size:
                    rc = scan_next(&self.st, q)
                    if rc:
                        break
                    if self.have_prev and q[0] == self.prev[0] and q[1] == self.prev[1] and q[2] == self.prev[2]:
                        continue   # the same triple in another graph
                    rc = get_term(self.t.txn, self.t.env.dbi[DB_I2T], q[2], &to)
                    if rc:
                        break
                    if turtle and self.have_prev and q[0] == self.prev[0]:
                        if q[1] == self.prev[1]:
                            rc = buf_put(&self.out, b", ", 2)
                        else:
                            rc = get_term(self.t.txn, self.t.env.dbi[DB_I2T], q[1], &tp)
                            if rc == 0:
                                rc = buf_put(&self.out, b" ;\n    ", 7)
                            if rc == 0:
                                rc = render_term(&self.out, <uint8_t*>tp.mv_data, tp.mv_size, px, True)
                            if rc == 0:
                                rc = buf_byte(&self.out, 32)
                    elif not turtle:
                        # N-Triples: "s p " rendered once per (s, p) run
                        if not (self.have_prev and q[0] == self.prev[0] and q[1] == self.prev[1]):
                            self.sp.n = 0
                            rc = get_term(self.t.txn, self.t.env.dbi[DB_I2T], q[0], &ts)
                            if rc == 0:
                                rc = get_term(self.t.txn, self.t.env.dbi[DB_I2T], q[1], &tp)
                            if rc == 0:
                                rc = render_term(&self.sp, <uint8_t*>ts.mv_data, ts.mv_size, px, False)
                            if rc == 0:
                                rc = buf_byte(&self.sp, 32)
                            if rc == 0:
                                rc = render_term(&self.sp, <uint8_t*>tp.mv_data, tp.mv_size, px, True)
                            if rc == 0:
                                rc = buf_byte(&self.sp, 32)
                        if rc == 0:
                            rc = buf_put(&self.out, self.sp.p, self.sp.n)
                    else:
                        if self.have_prev:
                            rc = buf_put(&self.out, b" .\n", 3)
                        if rc == 0:
                            rc = get_term(self.t.txn, self.t.env.dbi[DB_I2T], q[0], &ts)
                        if rc == 0:
                            rc = get_term(self.t.txn, self.t.env.dbi[DB_I2T], q[1], &tp)
                        if rc == 0:
                            rc = render_term(&self.out, <uint8_t*>ts.mv_data, ts.mv_size, px, False)
                        if rc == 0:
                            rc = buf_byte(&self.out, 32)
                        if rc == 0:
                            rc = render_term(&self.out, <uint8_t*>tp.mv_data, tp.mv_size, px, True)
                        if rc == 0:
                            rc = buf_byte(&self.out, 32)
                    if rc == 0:
                        rc = render_term(&self.out, <uint8_t*>to.mv_data, to.mv_size, px, False)
                    if rc == 0 and not turtle:
                        rc = buf_put(&self.out, b" .\n", 3)
                    if rc:
                        break
                    self.prev[0] = q[0]
                    self.prev[1] = q[1]
                    self.prev[2] = q[2]
                    self.have_prev = True
            if rc == MDB_NOTFOUND:
                self._close()
                if turtle and self.have_prev:
                    if buf_put(&self.out, b" .\n", 3):
                        raise MemoryError()
            elif rc:
                self._close()
                raise_rc(rc, "serialize")
        elif not self.done:
            self._close()
        chunk = PyBytes_FromStringAndSize(self.out.p, self.out.n)
        self.out.n = 0
        if not chunk:
            raise StopIteration
        return chunk

    cdef _fill(self):
        """Up to BATCH matching quads in self.batch (terms resolved for mode 0)."""
        cdef int rc = 0, j
        cdef Py_ssize_t n = 0
        if self.done or self.empty:
            self._close()
            return 0
        self._check_live()
        with nogil:
            while n < BATCH:
                rc = scan_next(&self.st, self.batch[n])
                if rc:
                    break
                if self.mode == 0:
                    for j in range(4):
                        rc = get_term(self.t.txn, self.t.env.dbi[DB_I2T], self.batch[n][j], &self.terms[n][j])
                        if rc:
                            break
                    if rc:
                        break
                n += 1
        if rc == MDB_NOTFOUND:
            self._close()
        elif rc:
            self._close()
            raise_rc(rc, "scan")
        return n

    def next_batch(self):
        """The next list of up to 256 results (empty at the end)."""
        cdef Py_ssize_t n, i
        cdef int j
        cdef list out = []
        cdef dict cache = self.cache
        cdef uint32_t tid
        if self.mode == 1 or self.mode == 2:
            raise TypeError("a serializer yields chunks")
        n = self._fill()
        for i in range(n):
            if self.mode == 3:
                out.append((self.batch[i][0], self.batch[i][1], self.batch[i][2], self.batch[i][3]))
                continue
            row = []
            for j in range(4):
                tid = self.batch[i][j]
                term = cache.get(tid)
                if term is None:
                    term = PyBytes_FromStringAndSize(<char*>self.terms[i][j].mv_data, self.terms[i][j].mv_size)
                    if len(cache) < 4096:
                        cache[tid] = term
                row.append(term)
            out.append(tuple(row))
        return out


# the quads iterator proper: a generator over batches
def _iter_batches(_Scan it):
    try:
        while True:
            batch = it.next_batch()
            if not batch:
                return
            yield from batch
    finally:
        it.close()


