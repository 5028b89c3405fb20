# The store's byte layout, shared by every module of the core: which
# sub-database holds what, how ids are packed into keys and values, how a
# quad is ordered in each index, the kinds of encoded terms, the term hash,
# and the core's own error codes.  Everything hot is `cdef inline`, so each
# module compiles its own copy and no call crosses a module boundary.
from libc.stdint cimport uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy, memchr, memcmp
from libc.stdlib cimport realloc, free

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
    DB_T2Y0 = 10    # t2i's young level, two trees in turn: the sweeps file into one ...
    DB_T2Y1 = 11    # ... while a merge pass copies the other into t2i and then empties it
    N_DBS = 12

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


cdef inline void pack_hash_entry(uint64_t h, uint32_t tid, uint8_t* kb, uint8_t* vb,
                                 MDB_val* k, MDB_val* v) noexcept nogil:
    """An entry of t2i (term hash -> id, 8 and 4 bytes big-endian) in ``kb`` and ``vb``,
    pointed at by ``k`` and ``v``."""
    put_be64(kb, h)
    put_be32(vb, tid)
    k.mv_data = kb
    k.mv_size = HASH_SIZE
    v.mv_data = vb
    v.mv_size = ID_SIZE

cdef inline void pack_young_entry(uint64_t h, uint32_t tid, uint8_t* kb, MDB_val* k, MDB_val* v) noexcept nogil:
    """An entry of t2i's young level (term hash and id, 8 and 4 bytes big-endian,
    as the key; no value) in ``kb``, pointed at by ``k`` and ``v``."""
    put_be64(kb, h)
    put_be32(kb + HASH_SIZE, tid)
    k.mv_data = kb
    k.mv_size = HASH_SIZE + ID_SIZE
    v.mv_data = kb
    v.mv_size = 0

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

# ---------------------------------------------------------------- literals as stored
# i2l holds a literal whose lexical form is UTF-8 (as every term the parser
# or Python makes) in a compact form: its kind letter in lower case, the
# language tag or datatype IRI and the NUL as they are, then each code point
# of the lexical form in 7-bit groups, the lowest first, the high bit set on
# every byte of a code point but its last.  A code point takes 1 byte below
# U+0080, 2 below U+4000, 3 up to U+10FFFF: never more than in UTF-8 (1, 2, 3
# or 4 bytes from U+0000, U+0080, U+0800, U+10000), and 14% less over the seed
# workload's alphabet (2.22 against 2.58 bytes a character).  Any other
# stored value is the encoded term itself.  Hashes, comparisons and every
# term the core hands out are of the encoded term: the compact form exists
# in i2l only (create_id writes it, get_term reads it back).
cdef enum:
    STORED_LITERAL = 108         # l
    STORED_LANG_LITERAL = 103    # g
    STORED_TYPED_LITERAL = 100   # d
    CASE_BIT = 32                # upper-case kind letter | CASE_BIT = its stored letter

cdef inline bint is_compact(const uint8_t* s, size_t n) noexcept nogil:
    return n > 0 and (s[0] == STORED_LITERAL or s[0] == STORED_LANG_LITERAL or s[0] == STORED_TYPED_LITERAL)

cdef inline size_t lexical_offset(const uint8_t* t, size_t n) noexcept nogil:
    """Where a literal's lexical form starts (after its kind byte, and its
    NUL for a tagged or typed one), encoded or stored; 0 for anything else."""
    cdef const uint8_t* nul
    if n == 0:
        return 0
    if t[0] == TERM_LITERAL or t[0] == STORED_LITERAL:
        return 1
    if (t[0] == TERM_LANG_LITERAL or t[0] == TERM_TYPED_LITERAL or t[0] == STORED_LANG_LITERAL
            or t[0] == STORED_TYPED_LITERAL):
        nul = <const uint8_t*>memchr(t + 1, 0, n - 1)
        return 0 if nul == NULL else <size_t>(nul - t) + 1
    return 0

cdef inline size_t utf8_put(uint8_t* out, uint32_t c) noexcept nogil:
    """Write code point c as UTF-8; its size."""
    if c < 0x80:
        out[0] = c
        return 1
    if c < 0x800:
        out[0] = 0xC0 | (c >> 6)
        out[1] = 0x80 | (c & 0x3F)
        return 2
    if c < 0x10000:
        out[0] = 0xE0 | (c >> 12)
        out[1] = 0x80 | ((c >> 6) & 0x3F)
        out[2] = 0x80 | (c & 0x3F)
        return 3
    out[0] = 0xF0 | (c >> 18)
    out[1] = 0x80 | ((c >> 12) & 0x3F)
    out[2] = 0x80 | ((c >> 6) & 0x3F)
    out[3] = 0x80 | (c & 0x3F)
    return 4

cdef inline size_t put_groups(uint8_t* out, uint32_t c) noexcept nogil:
    """Write code point c (at least U+0080) in 7-bit groups; their count (2 or 3)."""
    out[0] = (c & 0x7F) | 0x80
    if c < 0x4000:
        out[1] = c >> 7
        return 2
    out[1] = ((c >> 7) & 0x7F) | 0x80
    out[2] = c >> 14
    return 3

cdef inline bint group_next(const uint8_t* s, size_t n, size_t* i, uint32_t* cp) noexcept nogil:
    """Decode the code point in 7-bit groups at s[i[0]] (advancing i): False
    unless it is one that compact_literal writes."""
    cdef size_t j = i[0]
    cdef uint32_t c = s[j]
    if c < 0x80:
        i[0] = j + 1
        cp[0] = c
        return True
    if j + 1 >= n:
        return False
    if s[j + 1] < 0x80:
        if s[j + 1] == 0:   # not its shortest form
            return False
        cp[0] = (c & 0x7F) | (<uint32_t>s[j + 1] << 7)
        i[0] = j + 2
        return True
    if j + 2 >= n or s[j + 2] >= 0x80 or s[j + 2] == 0:
        return False
    c = (c & 0x7F) | ((<uint32_t>s[j + 1] & 0x7F) << 7) | (<uint32_t>s[j + 2] << 14)
    if c > 0x10FFFF or 0xD800 <= c <= 0xDFFF:
        return False
    cp[0] = c
    i[0] = j + 3
    return True

cdef inline size_t compact_literal(const uint8_t* t, size_t n, uint8_t* out) noexcept nogil:
    """The stored form of encoded term ``t`` (``n`` bytes), written to
    ``out`` (room for ``n`` bytes): its size; 0 when the term is stored as
    it is (not a literal, or its lexical form is not well-formed UTF-8).
    One pass, the UTF-8 decoded in line: it runs for each new literal.  (A
    branch-free decoding, tried, took more time than the mispredicted
    branches on the length of characters drawn from several scripts.)"""
    cdef size_t off, i, j
    cdef uint32_t c, cp
    if n == 0 or not (t[0] == TERM_LITERAL or t[0] == TERM_LANG_LITERAL or t[0] == TERM_TYPED_LITERAL):
        return 0
    off = lexical_offset(t, n)
    if off == 0:
        return 0
    out[0] = t[0] | CASE_BIT
    memcpy(out + 1, t + 1, off - 1)
    i = j = off
    while i < n:
        c = t[i]
        if c < 0x80:
            out[j] = c
            i += 1
            j += 1
            continue
        if c < 0xE0:
            if c < 0xC2 or i + 1 >= n or t[i + 1] & 0xC0 != 0x80:
                return 0
            cp = ((c & 0x1F) << 6) | (t[i + 1] & 0x3F)
            i += 2
        elif c < 0xF0:
            if i + 2 >= n or t[i + 1] & 0xC0 != 0x80 or t[i + 2] & 0xC0 != 0x80:
                return 0
            cp = ((c & 0x0F) << 12) | ((t[i + 1] & 0x3F) << 6) | (t[i + 2] & 0x3F)
            if cp < 0x800 or 0xD800 <= cp <= 0xDFFF:
                return 0
            i += 3
        elif c <= 0xF4:
            if i + 3 >= n or t[i + 1] & 0xC0 != 0x80 or t[i + 2] & 0xC0 != 0x80 or t[i + 3] & 0xC0 != 0x80:
                return 0
            cp = (((c & 0x07) << 18) | ((t[i + 1] & 0x3F) << 12) | ((t[i + 2] & 0x3F) << 6)
                  | (t[i + 3] & 0x3F))
            if cp < 0x10000 or cp > 0x10FFFF:
                return 0
            i += 4
        else:
            return 0
        j += put_groups(out + j, cp)
    return j

cdef inline Py_ssize_t expanded_size(const uint8_t* s, size_t n) noexcept nogil:
    """The size of the encoded term a stored value stands for (``n`` when
    it is stored as it is), or -1 when a compact one is malformed."""
    cdef size_t off, i, size
    cdef uint32_t c
    if not is_compact(s, n):
        return n
    off = lexical_offset(s, n)
    if off == 0:
        return -1
    i = size = off
    while i < n:
        if not group_next(s, n, &i, &c):
            return -1
        size += 1 if c < 0x80 else 2 if c < 0x800 else 3 if c < 0x10000 else 4
    return size

cdef inline void expand_into(const uint8_t* s, size_t n, uint8_t* out) noexcept nogil:
    """Write the encoded term of a well-formed compact value (expanded_size bytes)."""
    cdef size_t off = lexical_offset(s, n), i, j
    cdef uint32_t c
    out[0] = s[0] & ~CASE_BIT
    memcpy(out + 1, s + 1, off - 1)
    i = j = off
    while i < n:
        group_next(s, n, &i, &c)
        j += utf8_put(out + j, c)

cdef inline bint stored_equals(const uint8_t* s, size_t sn, const uint8_t* t, size_t tn) noexcept nogil:
    """Whether the stored value ``s`` stands for the encoded term ``t``
    (compared as it decodes: no buffer)."""
    cdef size_t off, i, j
    cdef uint32_t c
    cdef uint8_t u[4]
    cdef size_t k
    if not is_compact(s, sn):
        return sn == tn and memcmp(s, t, sn) == 0
    off = lexical_offset(s, sn)
    if off == 0 or tn < off or t[0] != (s[0] & ~CASE_BIT) or memcmp(s + 1, t + 1, off - 1) != 0:
        return False
    i = j = off
    while i < sn:
        if not group_next(s, sn, &i, &c):
            return False
        k = utf8_put(u, c)
        if j + k > tn or memcmp(u, t + j, k) != 0:
            return False
        j += k
    return j == tn

# A growable buffer a caller lends to get_term for the terms it expands.
cdef struct TermBuf:
    uint8_t* p
    size_t cap

cdef inline void termbuf_free(TermBuf* b) noexcept nogil:
    free(b.p)
    b.p = NULL
    b.cap = 0

cdef inline int read_term(const MDB_val* stored, TermBuf* b, MDB_val* out) noexcept nogil:
    """The encoded term of a stored value: ``out`` is ``stored`` itself, or
    the term expanded into ``b`` (valid until ``b``'s next use); E_CORRUPT
    when a compact value is malformed, E_NOMEM."""
    cdef Py_ssize_t size
    cdef uint8_t* p
    if not is_compact(<const uint8_t*>stored.mv_data, stored.mv_size):
        out[0] = stored[0]
        return 0
    size = expanded_size(<const uint8_t*>stored.mv_data, stored.mv_size)
    if size < 0:
        return E_CORRUPT
    if <size_t>size > b.cap:
        p = <uint8_t*>realloc(b.p, size)
        if p == NULL:
            return E_NOMEM
        b.p = p
        b.cap = size
    expand_into(<const uint8_t*>stored.mv_data, stored.mv_size, b.p)
    out.mv_data = b.p
    out.mv_size = size
    return 0

cdef inline int get_stored(MDB_txn* txn, const MDB_dbi* dbi, uint32_t tid, MDB_val* out) noexcept nogil:
    """The stored value of an id, from i2l (a literal's) or i2t (keys are
    the whole id, native uint32, MDB_INTEGERKEY): the encoded term, or a
    literal's compact form (above).  ``dbi`` is the environment's array of
    database handles."""
    cdef MDB_val k
    k.mv_data = &tid
    k.mv_size = ID_SIZE
    return mdb_get(txn, dbi[DB_I2L] if tid & ID_LITERAL else dbi[DB_I2T], &k, out)

cdef inline int get_term(MDB_txn* txn, const MDB_dbi* dbi, uint32_t tid, MDB_val* out, TermBuf* b) noexcept nogil:
    """The encoded term of an id (expanded into ``b`` when stored compact)."""
    cdef MDB_val v
    cdef int rc = get_stored(txn, dbi, tid, &v)
    if rc:
        return rc
    return read_term(&v, b, out)


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
