# In-memory tables of the core, all plain C: a growable byte buffer, an
# open-addressing table of encoded terms, and a growable array of quads.
# The buffer and quad array operations are `cdef inline` (the parser and the
# writer call them per byte run); the term table's live in _tables.pyx.
from libc.stdint cimport uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy
from libc.stdlib cimport realloc, free

from lakebench._codec cimport E_NOMEM, Quad, put_groups


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

cdef int buf_utf8(Buf* b, uint32_t cp) noexcept nogil

cdef inline int buf_groups(Buf* b, uint32_t cp) noexcept nogil:
    """Append code point ``cp`` in 7-bit groups, the compact form of
    literals in i2l (see _codec)."""
    if cp < 0x80:
        return buf_byte(b, <char>cp)
    if b.n + 3 > b.cap:
        if buf_reserve(b, 3):
            return E_NOMEM
    b.n += put_groups(<uint8_t*>b.p + b.n, cp)
    return 0


# ---------------------------------------------------------------- stored forms
# The form each term of a document's table is stored in, made by the parser
# as it decodes the document (a literal's compact form costs nothing more
# than a second buffer then; decoding it again when the id is created cost
# about a tenth of an ingest).  Indexed like the table; a length of 0: none
# (not a literal, or a term the parser did not make).
cdef struct StoredForms:
    Buf bytes
    size_t* off
    uint32_t* len
    size_t n
    size_t cap

cdef int sf_set(StoredForms* f, size_t index, const uint8_t* p, size_t n) noexcept nogil
cdef void sf_free(StoredForms* f) noexcept nogil

cdef inline const uint8_t* sf_get(const StoredForms* f, size_t index, size_t* n) noexcept nogil:
    """The stored form of term ``index``, or NULL."""
    if f == NULL or index >= f.n or f.len[index] == 0:
        return NULL
    n[0] = f.len[index]
    return <const uint8_t*>f.bytes.p + f.off[index]


# ---------------------------------------------------------------- term table
# Encoded terms -> ids: the per-document table of the parser, the
# per-transaction table and the environment's cache.
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

cdef inline const uint8_t* tt_term(TTable* t, size_t i) noexcept nogil:
    return <const uint8_t*>t.arena.p + t.ents[i].off

cdef void tt_free(TTable* t) noexcept nogil
cdef size_t tt_bytes(TTable* t) noexcept nogil
cdef void tt_clear(TTable* t) noexcept nogil
cdef Py_ssize_t tt_find(TTable* t, const void* p, size_t n, uint64_t h) noexcept nogil
cdef Py_ssize_t tt_add(TTable* t, const void* p, size_t n, uint64_t h, uint32_t id, uint32_t flags) noexcept nogil
cdef Py_ssize_t tt_intern(TTable* t, const void* p, size_t n, uint32_t flags) noexcept nogil


# ---------------------------------------------------------------- hash table of ids
# Term hash -> term id, without the terms: the ids a store has not yet filed
# in ``t2i`` (see _termids).  A hit is a candidate, confirmed by comparing
# the term stored in ``i2t`` or ``i2l``.  Open addressing with linear
# probing; an id of 0 marks a free slot.  The table is split into parts by
# the hashes' top bits, and a hash's home slot in its part is the next bits,
# so the slots hold the entries in hash order but for the short runs of
# probing: the entries of a range of hashes lie in a range of slots
# (``ht_gather``), which is how a sweep takes its slice of the hash space
# without sorting, or keeping, the whole generation.
cdef packed struct HSlot:   # 12 bytes, not 16: the table's memory is most of what a store keeps
    uint64_t h
    uint32_t id

cdef enum:
    HT_PART_BITS = 10           # a hash's part is its top 10 bits ...
    HT_PARTS = 1 << HT_PART_BITS
    HT_PART_MIN = 16            # ... and a part's first array this many slots

cdef struct HPart:
    # One part's slots: it grows alone (doubling one part costs a
    # thousandth of doubling the table: no write waits long for it).
    HSlot* slots
    size_t nslots         # a power of two (or 0)
    int shift             # 64 - log2(nslots): a hash's home is the bits below the part's, h << 10 >> shift
    size_t n

cdef struct HTable:
    HPart* parts          # HT_PARTS of them (NULL: none yet)
    size_t n
    uint32_t lo           # it holds every id numbered (lo, hi] ...
    uint32_t hi
    bint valid            # ... when valid, but for those a sweep filed and took out:
    uint32_t cut_upto     # ids up to cut_upto whose hash is below cut_pos (0: none)
    uint64_t cut_pos
    bint holds_filed      # built again mid-sweep: it may hold ids a sweep filed (the sweep's end drops them)

cdef void ht_free(HTable* t) noexcept nogil
cdef size_t ht_bytes(HTable* t) noexcept nogil
cdef void ht_reset(HTable* t, uint32_t lo) noexcept nogil
cdef int ht_add(HTable* t, uint64_t h, uint32_t id) noexcept nogil
cdef void ht_keep_above(HTable* t, uint32_t lo) noexcept nogil
cdef bint ht_del(HTable* t, uint64_t h, uint32_t id) noexcept nogil
cdef int hs_sort(HSlot** ents, HSlot** spare, size_t n) noexcept nogil

cdef struct HSlots:
    # Entries taken out of a table (ht_gather) and the sort's second buffer;
    # both kept from use to use, grown, never shrunk.
    HSlot* ents
    HSlot* spare
    size_t n
    size_t cap

cdef int ht_gather(HTable* t, uint64_t lo, uint64_t hi, bint to_end, uint32_t after, uint32_t upto,
                   HSlots* out) noexcept nogil
cdef void hslots_free(HSlots* s) noexcept nogil
cdef size_t hslots_bytes(HSlots* s) noexcept nogil

cdef inline size_t ht_part_of(uint64_t h) noexcept nogil:
    """The number of the part that holds ``h``: its top HT_PART_BITS bits."""
    return <size_t>(h >> (64 - HT_PART_BITS))

cdef inline size_t hp_home(HPart* p, uint64_t h) noexcept nogil:
    """The slot of its part that ``h`` is looked up from (0 in an empty part)."""
    return <size_t>((h << HT_PART_BITS) >> p.shift) if p.nslots else 0

cdef inline size_t ht_home(HTable* t, uint64_t h) noexcept nogil:
    """The slot of its part that ``h`` is looked up from."""
    return hp_home(&t.parts[ht_part_of(h)], h) if t.parts != NULL else 0

cdef inline uint32_t ht_next(HTable* t, uint64_t h, size_t* pos) noexcept nogil:
    """The next id filed under ``h`` from slot ``pos[0]`` of its part on
    (start with ``pos[0] = ht_home(t, h)``), or 0 when there is none."""
    cdef HPart* p
    cdef size_t mask, i
    if t.parts == NULL:
        return 0
    p = &t.parts[ht_part_of(h)]
    if p.nslots == 0:
        return 0
    mask = p.nslots - 1
    i = pos[0] & mask
    while p.slots[i].id != 0:
        if p.slots[i].h == h:
            pos[0] = i + 1
            return p.slots[i].id
        i = (i + 1) & mask
    return 0


# ---------------------------------------------------------------- Bloom filter of hashes
# Term hashes that may be in t2i: a miss there means the term is not, and
# saves the B-tree descent that a new term's lookup would otherwise make.
# Blocked (one 64-byte block per hash: one cache line), 6 bits per hash,
# sized once (_termids' BLOOM_BYTES): about 1% of absent hashes pass while
# it holds no more than its capacity (10 bits a hash), more after that.  The
# block is the hash's top bits: hashes added in order (a sweep's, a build
# from t2i) walk the words in order instead of missing the cache each time.
cdef enum:
    BLOOM_BLOCK_BYTES = 64      # a block: 8 words, one cache line

cdef struct Bloom:
    uint64_t* words
    size_t nblocks        # blocks of 8 words, a power of two, 2 or more
    int shift             # 64 - log2(nblocks): a hash's block is h >> shift
    size_t n              # hashes added
    size_t capacity       # hashes it was sized for
    bint valid

cdef void bloom_free(Bloom* b) noexcept nogil
cdef size_t bloom_bytes(Bloom* b) noexcept nogil
cdef int bloom_size(Bloom* b, size_t capacity) noexcept nogil

cdef inline void bloom_add(Bloom* b, uint64_t h) noexcept nogil:
    cdef uint64_t* block = b.words + 8 * (h >> b.shift)
    cdef uint64_t x = h * 0x9E3779B97F4A7C15ULL
    cdef int i
    for i in range(6):
        block[(x >> 61) & 7] |= (<uint64_t>1) << ((x >> 55) & 63)
        x *= 0x9E3779B97F4A7C15ULL
    b.n += 1

cdef inline bint bloom_may_hold(Bloom* b, uint64_t h) noexcept nogil:
    cdef uint64_t* block = b.words + 8 * (h >> b.shift)
    cdef uint64_t x = h * 0x9E3779B97F4A7C15ULL
    cdef int i
    for i in range(6):
        if not (block[(x >> 61) & 7] & ((<uint64_t>1) << ((x >> 55) & 63))):
            return False
        x *= 0x9E3779B97F4A7C15ULL
    return True


# ---------------------------------------------------------------- quad array
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
