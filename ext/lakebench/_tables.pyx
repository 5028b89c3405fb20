# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""In-memory tables of the store core: the term table (an open-addressing
hash table of encoded terms -> ids, kept in one arena), the hash table of
ids (term hash -> id, without the terms), a Bloom filter of hashes and
UTF-8 encoding into a growable buffer.  Declarations and the inline buffer and quad array
operations are in ``_tables.pxd``.  No Python API.
"""
from libc.stdint cimport uint8_t, uint32_t, uint64_t
from libc.string cimport memcmp, memset
from libc.stdlib cimport calloc, realloc, free

from lakebench._codec cimport E_NOMEM, hash_bytes, id_seq


cdef int buf_utf8(Buf* b, uint32_t cp) noexcept nogil:
    """Append code point ``cp`` as UTF-8."""
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

cdef Py_ssize_t tt_find(TTable* t, const void* p, size_t n, uint64_t h) noexcept nogil:
    """The index of a term, or -1."""
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
    """The index of a term, added when absent; -1 when out of memory."""
    cdef uint64_t h = hash_bytes(<const uint8_t*>p, n)
    cdef Py_ssize_t i = tt_find(t, p, n, h)
    if i >= 0:
        return i
    return tt_add(t, p, n, h, 0, flags)


cdef void ht_free(HTable* t) noexcept nogil:
    free(t.slots)
    memset(t, 0, sizeof(HTable))

cdef void ht_reset(HTable* t, uint32_t lo) noexcept nogil:
    """Empty, holding the (empty) range of ids (lo, lo]; keeps its memory."""
    if t.slots != NULL:
        memset(t.slots, 0, t.nslots * sizeof(HSlot))
    t.n = 0
    t.lo = lo
    t.hi = lo
    t.valid = True

cdef int ht_grow(HTable* t, size_t nslots) noexcept nogil:
    cdef HSlot* slots = <HSlot*>calloc(nslots, sizeof(HSlot))
    cdef size_t k, i, mask = nslots - 1
    if slots == NULL:
        return E_NOMEM
    for k in range(t.nslots):
        if t.slots[k].id != 0:
            i = t.slots[k].h & mask
            while slots[i].id != 0:
                i = (i + 1) & mask
            slots[i] = t.slots[k]
    free(t.slots)
    t.slots = slots
    t.nslots = nslots
    return 0

cdef int ht_keep_above(HTable* t, uint32_t lo) noexcept nogil:
    """Keep the ids numbered above ``lo`` only (the table then holds (lo,
    hi]: sequence numbers, the literal bit aside); 0 or E_NOMEM."""
    cdef HSlot* old = t.slots
    cdef size_t k, nslots = t.nslots
    t.slots = NULL
    t.nslots = 0
    t.n = 0
    for k in range(nslots):
        if id_seq(old[k].id) > lo and ht_add(t, old[k].h, old[k].id):
            free(old)
            return E_NOMEM
    free(old)
    t.lo = lo
    return 0

cdef int ht_add(HTable* t, uint64_t h, uint32_t id) noexcept nogil:
    """File ``id`` under ``h`` (at most half the slots are used); 0 or E_NOMEM."""
    cdef size_t mask, i
    if (t.n + 1) * 2 > t.nslots:
        if ht_grow(t, t.nslots * 2 if t.nslots else 1024):
            return E_NOMEM
    mask = t.nslots - 1
    i = h & mask
    while t.slots[i].id != 0:
        i = (i + 1) & mask
    t.slots[i].h = h
    t.slots[i].id = id
    t.n += 1
    return 0


cdef void bloom_free(Bloom* b) noexcept nogil:
    free(b.words)
    memset(b, 0, sizeof(Bloom))

cdef int bloom_size(Bloom* b, size_t capacity) noexcept nogil:
    """Empty, sized for ``capacity`` hashes (10 bits each, at least one block)."""
    cdef size_t nblocks = 1
    while nblocks * 512 < capacity * 10:
        nblocks *= 2
    free(b.words)
    b.words = <uint64_t*>calloc(nblocks * 8, sizeof(uint64_t))
    if b.words == NULL:
        memset(b, 0, sizeof(Bloom))
        return E_NOMEM
    b.nblocks = nblocks
    b.n = 0
    b.capacity = capacity
    b.valid = True
    return 0
