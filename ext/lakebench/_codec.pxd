# The store's byte layout, shared by every module of the core: which
# sub-database holds what, how ids are packed into keys and values, how a
# quad is ordered in each index, the kinds of encoded terms, the term hash,
# and the core's own error codes.  Everything hot is `cdef inline`, so each
# module compiles its own copy and no call crosses a module boundary.
from libc.stdint cimport uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy, memchr

from liblmdb cimport (MDB_txn, MDB_dbi, MDB_val, MDB_cursor, mdb_get, mdb_cursor_get, mdb_cursor_count,
                     MDB_SET_KEY, MDB_NEXT_DUP, MDB_NOTFOUND)

# Sub-databases, in the order of an environment's ``dbi`` array (DB_NAMES).
cdef enum:
    DB_META = 0
    DB_T2I = 1
    DB_I2T = 2
    DB_SPOC = 3     # quad index ix = db - DB_SPOC
    DB_POSC = 4
    DB_OSPC = 5
    DB_CS = 6       # graph -> its subjects (a graph's quads are read from spoc)
    DB_NS = 7
    DB_GRAPHS = 8
    DB_I2L = 9      # literals' ids -> terms (i2t holds the other kinds)
    N_DBS = 10

# The three quad indices.
cdef enum:
    IX_SPOC = 0
    IX_POSC = 1
    IX_OSPC = 2
    N_INDEXES = 3

# The core's error codes (LMDB's are -30799 .. -30780; 0 is success).
cdef enum:
    E_NOMEM = -1
    E_PARSE = -2
    E_IDS = -3
    E_CORRUPT = -4
    E_TERM = -5
    E_DANGLING = -6     # a quad names an id that no term has (damage)

# The kind byte that starts an encoded term (its ASCII letter).
cdef enum TermKind:
    TERM_IRI = 73            # I  + IRI
    TERM_BLANK = 66          # B  + label
    TERM_LITERAL = 76        # L  + lexical form
    TERM_LANG_LITERAL = 71   # G  + language tag NUL lexical form
    TERM_TYPED_LITERAL = 68  # D  + datatype IRI NUL lexical form
    # never stored: the parser's placeholder for a document's blank node,
    # followed by its ordinal (big-endian), relabelled by the transaction
    TERM_DOC_BLANK = 1

# Sizes of the packed forms.
cdef enum:
    ID_SIZE = 4              # a term id
    ENTRY_VALUE_SIZE = 12    # the three other ids of a quad index entry
    HASH_SIZE = 8            # a t2i key


# A term id is a sequence number (1, 2, ... one counter for every kind)
# with the top bit set for a literal.  Literals live in i2l, the other kinds
# in i2t, each appended in id order: a resource's IRIs are so packed
# together instead of one per page between the literals (a container's
# listing reads far fewer pages), and the literals, all new and greater
# than every stored id, are appended in ospc too (full pages).
cdef enum:
    ID_LITERAL = 0x80000000  # the literal bit of an id
    ID_SEQ_MASK = 0x7FFFFFFF

cdef inline uint32_t id_seq(uint32_t tid) noexcept nogil:
    """An id's sequence number (its order of creation)."""
    return tid & ID_SEQ_MASK

cdef inline bint is_literal_term(const uint8_t* t) noexcept nogil:
    """Whether an encoded term is a literal (stored in i2l)."""
    return t[0] == TERM_LITERAL or t[0] == TERM_LANG_LITERAL or t[0] == TERM_TYPED_LITERAL


# ---------------------------------------------------------------- integers
# Big-endian everywhere (byte order is numeric order), except the keys of i2t and i2l.
cdef inline void put_be32(uint8_t* b, uint32_t v) noexcept nogil:
    b[0] = <uint8_t>(v >> 24)
    b[1] = <uint8_t>(v >> 16)
    b[2] = <uint8_t>(v >> 8)
    b[3] = <uint8_t>v

cdef inline uint32_t get_be32(const uint8_t* b) noexcept nogil:
    return (<uint32_t>b[0] << 24) | (<uint32_t>b[1] << 16) | (<uint32_t>b[2] << 8) | <uint32_t>b[3]

cdef inline uint32_t ld32(const void* p) noexcept nogil:
    """A native-endian uint32 (the keys of i2t and i2l, MDB_INTEGERKEY databases)."""
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


# ---------------------------------------------------------------- quad index entries
# A quad (s, p, o, c) and an index entry (key, three values) share this
# struct: a quad holds s, p, o, c in k, a, b, c.
cdef struct Quad:
    uint32_t k
    uint32_t a
    uint32_t b
    uint32_t c

cdef inline void to_entry(int ix, const Quad* q, Quad* e) noexcept nogil:
    """The entry of quad ``q`` in index ``ix``."""
    if ix == IX_SPOC:
        e.k = q.k; e.a = q.a; e.b = q.b; e.c = q.c
    elif ix == IX_POSC:
        e.k = q.a; e.a = q.b; e.b = q.k; e.c = q.c
    else:
        e.k = q.b; e.a = q.k; e.b = q.a; e.c = q.c

cdef inline void from_entry(int ix, uint32_t k, uint32_t a, uint32_t b, uint32_t c, uint32_t* q) noexcept nogil:
    """The quad ``q[4]`` (s, p, o, c) of an entry of index ``ix``."""
    if ix == IX_SPOC:
        q[0] = k; q[1] = a; q[2] = b; q[3] = c
    elif ix == IX_POSC:
        q[1] = k; q[2] = a; q[0] = b; q[3] = c
    else:
        q[2] = k; q[0] = a; q[1] = b; q[3] = c

cdef inline void pack_entry(const Quad* e, uint8_t* key, uint8_t* value, MDB_val* k, MDB_val* v) noexcept nogil:
    """An entry as its 4-byte key and 12-byte value in ``key`` and ``value``,
    pointed at by ``k`` and ``v``."""
    put_be32(key, e.k)
    put_be32(value, e.a)
    put_be32(value + 4, e.b)
    put_be32(value + 8, e.c)
    k.mv_data = key
    k.mv_size = ID_SIZE
    v.mv_data = value
    v.mv_size = ENTRY_VALUE_SIZE

cdef inline void unpack_entry(int ix, const MDB_val* key, const MDB_val* value, uint32_t* q) noexcept nogil:
    """The quad ``q[4]`` of a stored entry of index ``ix`` (sizes checked by the caller)."""
    cdef const uint8_t* v = <const uint8_t*>value.mv_data
    from_entry(ix, get_be32(<const uint8_t*>key.mv_data), get_be32(v), get_be32(v + 4), get_be32(v + 8), q)

cdef inline int cmp_quad(const void* x, const void* y) noexcept nogil:
    """Order of entries (key, then values): the order of an index, for qsort."""
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


cdef inline void pack_pair(uint32_t graph, uint32_t subject, uint8_t* kb, uint8_t* vb,
                           MDB_val* k, MDB_val* v) noexcept nogil:
    """An entry of cs (graph -> subject, 4-byte big-endian each) in ``kb`` and
    ``vb``, pointed at by ``k`` and ``v``."""
    put_be32(kb, graph)
    put_be32(vb, subject)
    k.mv_data = kb
    k.mv_size = ID_SIZE
    v.mv_data = vb
    v.mv_size = ID_SIZE

cdef inline int spoc_holds(MDB_cursor* spoc, uint32_t subject, uint32_t graph) noexcept nogil:
    """0 when ``spoc`` (a cursor on it) holds a quad of ``subject`` in
    ``graph``, MDB_NOTFOUND when not, E_CORRUPT for a wrong-sized value: a
    walk of the subject's entries (``c`` is last in each) up to the first in
    the graph, never more than LMDB counts (damaged pages may loop)."""
    cdef MDB_val k, v
    cdef uint8_t kb[ID_SIZE]
    cdef size_t n = 0, seen = 0
    cdef int rc
    put_be32(kb, subject)
    k.mv_data = kb
    k.mv_size = ID_SIZE
    rc = mdb_cursor_get(spoc, &k, &v, MDB_SET_KEY)
    if rc == 0:
        rc = mdb_cursor_count(spoc, &n)
    while rc == 0 and seen < n:
        seen += 1
        if v.mv_size != ENTRY_VALUE_SIZE:
            return E_CORRUPT
        if get_be32(<uint8_t*>v.mv_data + 8) == graph:
            return 0
        rc = mdb_cursor_get(spoc, &k, &v, MDB_NEXT_DUP)
    return MDB_NOTFOUND if rc == 0 else rc


# ---------------------------------------------------------------- terms
cdef inline bint valid_term(const uint8_t* t, size_t n) noexcept nogil:
    """Whether ``t`` is a well-formed encoded term (kind byte, NUL separator)."""
    if n == 0:
        return False
    if t[0] == TERM_IRI or t[0] == TERM_BLANK or t[0] == TERM_LITERAL:
        return True
    if t[0] == TERM_LANG_LITERAL or t[0] == TERM_TYPED_LITERAL:
        return memchr(t + 1, 0, n - 1) != NULL
    return False

cdef int check_term(object term) except -1

cdef inline int get_term(MDB_txn* txn, const MDB_dbi* dbi, uint32_t tid, MDB_val* out) noexcept nogil:
    """The encoded term of an id, from i2l (a literal's) or i2t (keys are
    the whole id, native uint32, MDB_INTEGERKEY).  ``dbi`` is the
    environment's array of database handles."""
    cdef MDB_val k
    k.mv_data = &tid
    k.mv_size = ID_SIZE
    return mdb_get(txn, dbi[DB_I2L] if tid & ID_LITERAL else dbi[DB_I2T], &k, out)


# ---------------------------------------------------------------- the term hash
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

cdef inline uint64_t hash_bytes(const uint8_t* p, size_t n) noexcept nogil:
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


# ---------------------------------------------------------------- N-Triples character classes
# Shared by the parser (what it accepts) and the writer (what it escapes).
cdef inline bint iri_forbidden(uint32_t c) noexcept nogil:
    # IRIREF excludes 0x00-0x20 and <>"{}|^`\
    return c <= 0x20 or c == 60 or c == 62 or c == 34 or c == 123 or c == 125 or c == 124 \
        or c == 94 or c == 96 or c == 92

cdef inline bint is_alpha(uint8_t c) noexcept nogil:
    return (65 <= c <= 90) or (97 <= c <= 122)

cdef inline bint is_digit(uint8_t c) noexcept nogil:
    return 48 <= c <= 57
