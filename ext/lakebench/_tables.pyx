# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""In-memory tables of the store core: the term table (an open-addressing
hash table of encoded terms -> ids, kept in one arena), the hash table of
ids (term hash -> id, without the terms), a Bloom filter of hashes and
UTF-8 encoding into a growable buffer.  Declarations and the inline buffer and quad array
operations are in ``_tables.pxd``.  One Python function, ``sort_by_hash``,
lets tests check the sweeps' sort against Python's.
"""
from libc.stdint cimport uint8_t, uint32_t, uint64_t
from libc.string cimport memcmp, memcpy, memset
from libc.stdlib cimport calloc, malloc, realloc, free, qsort

from lakebench._codec cimport E_NOMEM, hash_bytes, id_seq, utf8_put


cdef int buf_utf8(Buf* b, uint32_t cp) noexcept nogil:
    """Append code point ``cp`` as UTF-8."""
    cdef uint8_t t[4]
    return buf_put(b, t, utf8_put(t, cp))


cdef int realloc_pair(void** a, size_t a_size, void** b, size_t b_size, size_t cap) noexcept nogil:
    """Grow two arrays kept side by side to ``cap`` elements (of ``a_size``
    and ``b_size`` bytes); 0 or E_NOMEM, each keeping its contents and
    staying valid whichever realloc failed."""
    cdef void* p = realloc(a[0], cap * a_size)
    if p == NULL:
        return E_NOMEM
    a[0] = p
    p = realloc(b[0], cap * b_size)
    if p == NULL:
        return E_NOMEM
    b[0] = p
    return 0

cdef int sf_set(StoredForms* f, size_t index, const uint8_t* p, size_t n) noexcept nogil:
    """Record the stored form of term ``index`` (a new term: ``index`` is
    at least the count so far; the terms between get none)."""
    cdef size_t cap
    if index < f.n:
        return 0
    if index >= f.cap:
        cap = f.cap * 2 if f.cap else 256
        while cap <= index:
            cap *= 2
        if realloc_pair(<void**>&f.off, sizeof(size_t), <void**>&f.len, sizeof(uint32_t), cap):
            return E_NOMEM
        f.cap = cap
    while f.n < index:
        f.len[f.n] = 0
        f.n += 1
    if n > 0xFFFFFFFFU:   # beyond what a length here holds: none (create_id makes it)
        n = 0
    f.off[index] = f.bytes.n
    f.len[index] = <uint32_t>n
    f.n = index + 1
    return buf_put(&f.bytes, p, n) if n else 0

cdef void sf_free(StoredForms* f) noexcept nogil:
    buf_free(&f.bytes)
    free(f.off)
    free(f.len)
    memset(f, 0, sizeof(StoredForms))


cdef void tt_free(TTable* t) noexcept nogil:
    buf_free(&t.arena)
    free(t.ents)
    free(t.slots)
    memset(t, 0, sizeof(TTable))

cdef size_t tt_bytes(TTable* t) noexcept nogil:
    """What the table holds allocated: its terms' bytes, entries and slots."""
    return t.arena.cap + t.ecap * sizeof(TEntry) + t.nslots * sizeof(uint32_t)

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
    cdef size_t k
    if t.parts != NULL:
        for k in range(HT_PARTS):
            free(t.parts[k].slots)
        free(t.parts)
    memset(t, 0, sizeof(HTable))

cdef size_t ht_bytes(HTable* t) noexcept nogil:
    """What the table holds allocated: its parts' slots.  A part only grows (a reset
    keeps its memory), so this is the most the table held since it was freed."""
    cdef size_t k, n = 0
    if t.parts != NULL:
        n = HT_PARTS * sizeof(HPart)
        for k in range(HT_PARTS):
            n += t.parts[k].nslots * sizeof(HSlot)
    return n

cdef void ht_reset(HTable* t, uint32_t lo) noexcept nogil:
    """Empty, holding the (empty) range of ids (lo, lo]; keeps its memory."""
    cdef size_t k
    if t.parts != NULL:
        for k in range(HT_PARTS):
            if t.parts[k].slots != NULL:
                memset(t.parts[k].slots, 0, t.parts[k].nslots * sizeof(HSlot))
            t.parts[k].n = 0
    t.n = 0
    t.lo = lo
    t.hi = lo
    t.cut_upto = 0
    t.cut_pos = 0
    t.holds_filed = False
    t.valid = True

cdef int hp_grow(HPart* p, size_t nslots) noexcept nogil:
    """Move a part's entries into ``nslots`` slots (a power of two).  Taken in
    slot order, they are nearly in hash order, and so is the new array: its
    slots are written front to back."""
    cdef HPart q
    cdef size_t k, i, mask = nslots - 1
    q.slots = <HSlot*>calloc(nslots, sizeof(HSlot))
    if q.slots == NULL:
        return E_NOMEM
    q.nslots = nslots
    q.shift = 64
    while (<size_t>1 << (64 - q.shift)) < nslots:
        q.shift -= 1
    q.n = p.n
    for k in range(p.nslots):
        if p.slots[k].id != 0:
            i = hp_home(&q, p.slots[k].h)
            while q.slots[i].id != 0:
                i = (i + 1) & mask
            q.slots[i] = p.slots[k]
    free(p.slots)
    p[0] = q
    return 0

cdef void hp_keep_above(HPart* p, uint32_t lo) noexcept nogil:
    """Keep the part's ids numbered above ``lo`` only, in place.

    In the part's own memory: a table built anew grew from nothing into
    fresh pages, and first touching them was most of the cost (about 10 µs a
    4 KiB page on the test machines' VMs).  The kept entries are moved up
    their probe runs: the walk starts after a slot that was empty before
    anything was dropped, so no run crosses its start, and each entry is
    taken out and put back at the first empty slot from its home, which
    every slot before it in its run has already settled."""
    cdef size_t k, i, start, j, mask
    cdef HSlot e
    if p.n == 0:
        return
    mask = p.nslots - 1
    start = 0
    while p.slots[start].id != 0:   # at most three quarters of the slots are used: one is empty
        start += 1
    for k in range(p.nslots):
        if p.slots[k].id != 0 and id_seq(p.slots[k].id) <= lo:
            p.slots[k].id = 0
            p.slots[k].h = 0
            p.n -= 1
    for j in range(1, p.nslots + 1):
        k = (start + j) & mask
        if p.slots[k].id == 0:
            continue
        e = p.slots[k]
        p.slots[k].id = 0
        i = hp_home(p, e.h)
        while p.slots[i].id != 0:
            i = (i + 1) & mask
        p.slots[i] = e

cdef void ht_keep_above(HTable* t, uint32_t lo) noexcept nogil:
    """Keep the ids numbered above ``lo`` only (the table then holds (lo,
    hi]: sequence numbers, the literal bit aside)."""
    cdef size_t k
    t.lo = lo
    t.cut_upto = 0
    t.cut_pos = 0
    t.holds_filed = False
    if t.parts == NULL:
        return
    t.n = 0
    for k in range(HT_PARTS):
        hp_keep_above(&t.parts[k], lo)
        t.n += t.parts[k].n

cdef int cmp_hslot(const void* a, const void* b) noexcept nogil:
    cdef const HSlot* x = <const HSlot*>a
    cdef const HSlot* y = <const HSlot*>b
    if x.h != y.h:
        return -1 if x.h < y.h else 1
    return (x.id > y.id) - (x.id < y.id)

cdef enum:
    HS_RADIX_BITS = 16
    HS_SMALL = 4096          # fewer entries: qsort
    HS_SMALL_BUCKET = 32     # a bucket of more: a second counting pass, else insertion sort

cdef inline void hs_insertion_sort(HSlot* a, size_t n) noexcept nogil:
    cdef size_t i, j
    cdef HSlot e
    for i in range(1, n):
        e = a[i]
        j = i
        while j > 0 and cmp_hslot(&a[j - 1], &e) > 0:
            a[j] = a[j - 1]
            j -= 1
        a[j] = e

cdef void hs_sort_bucket(HSlot* a, HSlot* tmp, size_t n) noexcept nogil:
    """Sort ``a[:n]``, whose hashes share their top HS_RADIX_BITS bits, by a
    counting pass on the next 8 bits into ``tmp`` and back (no allocation)."""
    cdef size_t start[257]
    cdef size_t k, b, lo, hi
    cdef int shift = 64 - HS_RADIX_BITS - 8
    memset(start, 0, sizeof(start))
    for k in range(n):
        start[((a[k].h >> shift) & 255) + 1] += 1
    for b in range(256):
        start[b + 1] += start[b]
    for k in range(n):
        b = (a[k].h >> shift) & 255
        tmp[start[b]] = a[k]
        start[b] += 1
    lo = 0
    for b in range(256):
        hi = start[b]
        if hi - lo > HS_SMALL_BUCKET:   # not seen with uniform hashes
            qsort(tmp + lo, hi - lo, sizeof(HSlot), cmp_hslot)
        else:
            hs_insertion_sort(tmp + lo, hi - lo)
        lo = hi
    memcpy(a, tmp, n * sizeof(HSlot))

cdef int hs_sort(HSlot** ents, HSlot** spare, size_t n) noexcept nogil:
    """Sort ``ents[0][:n]`` by hash then id, using ``spare[0]`` (as large):
    the sorted entries end in ``ents[0]`` (the two buffers may be swapped);
    0 or E_NOMEM.

    Term hashes are uniform, so one counting pass on their top 16 bits
    leaves buckets of a few entries each, finished by insertion sort; a
    bucket of more than HS_SMALL_BUCKET (a sweep of 3 million ids leaves
    about 45 in each) gets a second counting pass on the next 8 bits
    (``hs_sort_bucket``).  A sweep's millions of entries so sort in a
    fraction of qsort's time, and without the scratch buffer glibc's qsort
    allocates (fresh pages, slow to touch first on the test machines' VMs)
    at each call."""
    cdef size_t* start
    cdef size_t k, b, lo, hi
    cdef HSlot* src = ents[0]
    cdef HSlot* dst = spare[0]
    if n < HS_SMALL:
        qsort(src, n, sizeof(HSlot), cmp_hslot)
        return 0
    start = <size_t*>calloc((1 << HS_RADIX_BITS) + 1, sizeof(size_t))
    if start == NULL:
        return E_NOMEM
    for k in range(n):
        start[(src[k].h >> (64 - HS_RADIX_BITS)) + 1] += 1
    for b in range(1 << HS_RADIX_BITS):
        start[b + 1] += start[b]
    for k in range(n):   # start[b] moves to the end of bucket b
        b = src[k].h >> (64 - HS_RADIX_BITS)
        dst[start[b]] = src[k]
        start[b] += 1
    lo = 0
    for b in range(1 << HS_RADIX_BITS):
        hi = start[b]
        if hi - lo > HS_SMALL_BUCKET:   # a sweep's millions: the next 8 bits, through src
            hs_sort_bucket(dst + lo, src + lo, hi - lo)
        else:
            hs_insertion_sort(dst + lo, hi - lo)
        lo = hi
    free(start)
    spare[0] = src
    ents[0] = dst
    return 0

cdef int ht_add(HTable* t, uint64_t h, uint32_t id) noexcept nogil:
    """File ``id`` under ``h`` (at most three quarters of a part's slots are
    used: a part that would hold more doubles, alone); 0 or E_NOMEM."""
    cdef HPart* p
    cdef size_t mask, i
    if t.parts == NULL:
        t.parts = <HPart*>calloc(HT_PARTS, sizeof(HPart))
        if t.parts == NULL:
            return E_NOMEM
    p = &t.parts[ht_part_of(h)]
    if (p.n + 1) * 4 > p.nslots * 3:
        if hp_grow(p, p.nslots * 2 if p.nslots else HT_PART_MIN):
            return E_NOMEM
    mask = p.nslots - 1
    i = hp_home(p, h)
    while p.slots[i].id != 0:
        i = (i + 1) & mask
    p.slots[i].h = h
    p.slots[i].id = id
    p.n += 1
    t.n += 1
    return 0

cdef bint ht_del(HTable* t, uint64_t h, uint32_t id) noexcept nogil:
    """Take ``id`` (filed under ``h``) out of the table; whether it was there.
    The entries after it in its probe run move back into the gap when their
    home is not between the gap and them (backward-shift deletion: no
    tombstones, so lookups never slow down)."""
    cdef HPart* p
    cdef size_t mask, i, j, home
    if t.parts == NULL:
        return False
    p = &t.parts[ht_part_of(h)]
    if p.nslots == 0:
        return False
    mask = p.nslots - 1
    i = hp_home(p, h)
    while p.slots[i].id != id or p.slots[i].h != h:
        if p.slots[i].id == 0:
            return False
        i = (i + 1) & mask
    j = i
    while True:
        j = (j + 1) & mask
        if p.slots[j].id == 0:
            break
        home = hp_home(p, p.slots[j].h)
        # stays where it is when its home lies cyclically in (i, j]
        if (i <= j and i < home and home <= j) or (i > j and (i < home or home <= j)):
            continue
        p.slots[i] = p.slots[j]
        i = j
    p.slots[i].id = 0
    p.slots[i].h = 0
    p.n -= 1
    t.n -= 1
    return True

cdef int hslots_reserve(HSlots* s, size_t n) noexcept nogil:
    """Room for ``n`` entries in both buffers, keeping the first ``s.n``."""
    cdef size_t cap = s.cap if s.cap else 4096
    if n <= s.cap:
        return 0
    while cap < n:
        cap *= 2
    if realloc_pair(<void**>&s.ents, sizeof(HSlot), <void**>&s.spare, sizeof(HSlot), cap):
        return E_NOMEM
    s.cap = cap
    return 0

cdef void hslots_free(HSlots* s) noexcept nogil:
    free(s.ents)
    free(s.spare)
    memset(s, 0, sizeof(HSlots))

cdef size_t hslots_bytes(HSlots* s) noexcept nogil:
    """What the buffers hold allocated (both have ``cap`` entries)."""
    return 2 * s.cap * sizeof(HSlot)

cdef int hp_gather(HPart* p, size_t first, size_t last, uint64_t lo, uint64_t hi, bint to_end,
                   uint32_t after, uint32_t upto, HSlots* out) noexcept nogil:
    """Append to ``out`` the part's entries in range (see ``ht_gather``)
    whose home is a slot from ``first`` to ``last``: they lie from there to
    the first free slot after ``last``, wrapping round at the part's end."""
    cdef size_t mask = p.nslots - 1, i = first, steps = 0
    cdef bint past = False
    cdef uint32_t seq
    cdef uint64_t h
    while steps < p.nslots:
        if p.slots[i].id == 0:
            if past or i == last:
                break
        else:
            h = p.slots[i].h
            seq = id_seq(p.slots[i].id)
            if h >= lo and (to_end or h < hi) and seq > after and seq <= upto:
                if out.n == out.cap and hslots_reserve(out, out.n + 1):
                    return E_NOMEM
                out.ents[out.n] = p.slots[i]
                out.n += 1
        if i == last:
            past = True
        i = (i + 1) & mask
        steps += 1
    return 0

cdef int ht_gather(HTable* t, uint64_t lo, uint64_t hi, bint to_end, uint32_t after, uint32_t upto,
                   HSlots* out) noexcept nogil:
    """Put into ``out`` (emptied first) the entries whose hash is in [lo, hi)
    ([lo, 2^64) when ``to_end``) and whose id's sequence number is in
    (after, upto]; 0 or E_NOMEM.

    The parts that hold such hashes are walked over the slots where they
    lie, and no others: a slice costs what it holds, not what the table does."""
    cdef size_t k, k_last
    cdef HPart* p
    cdef size_t first, last
    cdef int rc
    out.n = 0
    if t.parts == NULL or t.n == 0 or (not to_end and hi <= lo):
        return 0
    k_last = HT_PARTS - 1 if to_end else ht_part_of(hi - 1)
    for k in range(ht_part_of(lo), k_last + 1):
        p = &t.parts[k]
        if p.n == 0:
            continue
        first = hp_home(p, lo) if k == ht_part_of(lo) else 0
        last = hp_home(p, hi - 1) if (k == k_last and not to_end) else p.nslots - 1
        rc = hp_gather(p, first, last, lo, hi, to_end, after, upto, out)
        if rc:
            return rc
    return 0

cdef void bloom_free(Bloom* b) noexcept nogil:
    free(b.words)
    memset(b, 0, sizeof(Bloom))

cdef size_t bloom_bytes(Bloom* b) noexcept nogil:
    """What the filter holds allocated (0 before it is sized)."""
    return b.nblocks * BLOOM_BLOCK_BYTES if b.words != NULL else 0

cdef int bloom_size(Bloom* b, size_t capacity) noexcept nogil:
    """Empty, sized for ``capacity`` hashes (10 bits each, at least two blocks)."""
    cdef size_t nblocks = 2
    cdef int bits = 1
    while nblocks * 512 < capacity * 10:
        nblocks *= 2
        bits += 1
    free(b.words)
    b.words = <uint64_t*>calloc(nblocks, BLOOM_BLOCK_BYTES)
    if b.words == NULL:
        memset(b, 0, sizeof(Bloom))
        return E_NOMEM
    b.nblocks = nblocks
    b.shift = 64 - bits
    b.n = 0
    b.capacity = capacity
    b.valid = True
    return 0


def sort_by_hash(pairs):
    """The ``(hash, id)`` pairs in the order a sweep files them: by hash,
    then id (the core's radix sort, ``hs_sort``).

    >>> sort_by_hash([(3, 1), (1 << 63, 2), (3, 0), (0, 9)])
    [(0, 9), (3, 0), (3, 1), (9223372036854775808, 2)]
    """
    cdef size_t n = len(pairs), i
    cdef HSlot* ents = <HSlot*>malloc((n if n else 1) * sizeof(HSlot))
    cdef HSlot* spare = <HSlot*>malloc((n if n else 1) * sizeof(HSlot))
    cdef int rc
    try:
        if ents == NULL or spare == NULL:
            raise MemoryError()
        for i in range(n):
            ents[i].h = pairs[i][0]
            ents[i].id = pairs[i][1]
        with nogil:
            rc = hs_sort(&ents, &spare, n)
        if rc:
            raise MemoryError()
        return [(ents[i].h, ents[i].id) for i in range(n)]
    finally:
        free(ents)
        free(spare)


def gather_by_hash(pairs, uint64_t lo, uint64_t hi, bint to_end=False, uint32_t after=0, uint32_t upto=0xFFFFFFFF):
    """The ``(hash, id)`` pairs a sweep takes from the table of unfiled ids
    for the hashes [lo, hi) ([lo, 2^64) when ``to_end``) and the ids in
    (after, upto], sorted (the core's ``ht_gather``, then ``hs_sort``).
    Ids must be non-zero (0 marks a free slot).

    >>> gather_by_hash([(5, 1), (1 << 63, 2), (7, 3), (2, 4)], 3, 8)
    [(5, 1), (7, 3)]
    """
    cdef HTable t
    cdef HSlots s
    cdef int rc = 0
    memset(&t, 0, sizeof(HTable))
    memset(&s, 0, sizeof(HSlots))
    try:
        for h, i in pairs:
            if not i:
                raise ValueError("id 0 marks a free slot")
            if ht_add(&t, h, i):
                raise MemoryError()
        with nogil:
            rc = ht_gather(&t, lo, hi, to_end, after, upto, &s)
            if rc == 0:
                rc = hs_sort(&s.ents, &s.spare, s.n)
        if rc:
            raise MemoryError()
        return [(s.ents[i].h, s.ents[i].id) for i in range(s.n)]
    finally:
        hslots_free(&s)
        ht_free(&t)
