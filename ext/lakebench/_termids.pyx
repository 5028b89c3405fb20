# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Term ids, the half of a transaction (``TxnCore``, in ``_txncore.pxd``)
that turns encoded terms into ids, without the GIL:

* lookup: an encoded term's id through the transaction's table, the
  environment's cache of committed terms, then ``t2i`` (comparing the stored
  bytes, so hash collisions are told apart) and the ids not yet filed there;
  new terms get the next id, appended to ``i2l`` (literals, whose ids carry
  the literal bit) or ``i2t``; a document's blank nodes are relabelled per
  document;
* filing ids late: a store with one writer (the write-ahead log's owner)
  leaves new ids out of ``t2i``, whose keys are hashes (random), so that a
  batch does not rewrite most of its leaves.  ``meta`` says up to which id
  (sequence number, whatever the kind) ``t2i`` is complete
  (``terms_filed``); the ids above are looked up in a hash table rebuilt
  from ``i2t`` and ``i2l`` when needed.  Once they are due (2^20 or
  more, and a quarter of the filed ones) a sweep files them, a slice of
  the hash space at each commit (``terms_filing``), in step with the new
  ids: each t2i leaf is rewritten a bounded number of times per id filed,
  spread over the commits.  A Bloom filter of t2i's hashes spares a new
  term the descent into t2i.
* t2i's young level: with it (``TxnCore.young``), the sweeps file into
  the current one of two young trees, whose leaves are few, while a merge
  pass copies the other into t2i a hash range at each write and, at its
  end, empties it (``merge_step``); then the two swap.  Filed into t2i,
  each generation would rewrite every leaf of a t2i that grows with the
  store (at a million children the whole of the growth of a write:
  docs/store.rst); so each leaf of t2i is rewritten once a pass, and a
  generation rewrites the current young tree's.  A pass copies without
  deleting (a delete a key costs more than the pages it spares) and the
  young trees are not DUPSORT, so that emptying one frees its branch pages
  without reading a leaf.  Lookups try the young trees, then t2i.
"""
from libc.stdint cimport uint8_t, uint32_t, uint64_t
from libc.string cimport memset
from libc.stdlib cimport malloc, free

from liblmdb cimport *
from lakebench._codec cimport (E_NOMEM, E_IDS, E_CORRUPT, DB_META, DB_T2I, DB_T2Y0, DB_T2Y1, DB_I2T, DB_I2L, ID_SIZE, HASH_SIZE,
                               ID_LITERAL, ID_SEQ_MASK, id_seq, is_literal_term,
                               TERM_IRI, TERM_BLANK,
                               put_be32, get_be32, put_be64, get_be64, ld32, get_stored, read_term, stored_equals,
                               compact_literal, TermBuf, termbuf_free, hash_bytes, pack_hash_entry,
                               pack_young_entry)
from lakebench._tables cimport (TEntry, TF_BLANK, TTable, HTable, HSlot, Bloom, StoredForms, sf_get, tt_term,
                               tt_find, tt_add,
                               tt_clear, ht_reset, ht_add, ht_del, ht_home, ht_next, ht_free, ht_keep_above, HSlots, ht_gather,
                               hslots_free, hs_sort, bloom_size,
                               bloom_add, bloom_may_hold)
from lakebench._txncore cimport TxnCore, FILED_ALL, core_cursor

# Terms of the kinds worth remembering across transactions (the cache).
cdef size_t CACHE_MAX_ENTRIES = 1 << 18
cdef size_t CACHE_MAX_BYTES = 32 << 20
cdef size_t CACHE_MAX_LITERAL = 48
# The Bloom filter of t2i's hashes: its size, fixed, so that it is never
# built again as the store grows (a scan of t2i, seconds at a million
# children, in some write's time).  64 MiB hold 10 bits for each of 54
# million hashes (about 1% of new terms pass); past that, more pass, each
# costing one descent into t2i, and the memory stays the same.
cdef size_t BLOOM_BYTES = 64 << 20
# The meta entry holding the last id filed in t2i or its young level (absent: every id is).
cdef char* FILED_KEY = b"terms_filed"
cdef size_t FILED_KEY_LEN = 11


# ---------------------------------------------------------------- term ids
cdef int filed_upto(TxnCore* c, uint32_t* w) noexcept nogil:
    """The last id filed in t2i (FILED_ALL when every id is)."""
    cdef MDB_val k, v
    cdef int rc
    if not c.filed_known:
        k.mv_data = FILED_KEY
        k.mv_size = FILED_KEY_LEN
        rc = mdb_get(c.txn, c.dbi[DB_META], &k, &v)
        if rc == MDB_NOTFOUND:
            c.filed = FILED_ALL
        elif rc:
            return rc
        elif v.mv_size != ID_SIZE:
            return E_CORRUPT
        else:
            c.filed = get_be32(<uint8_t*>v.mv_data)
        c.filed_known = True
    w[0] = c.filed
    return 0

cdef int put_meta(TxnCore* c, char* key, size_t key_len, uint8_t* value, size_t n) noexcept nogil:
    """Store ``value`` (``n`` bytes) under ``key`` in meta; ``value`` NULL:
    remove the entry (absent already is no error)."""
    cdef MDB_val k, v
    cdef int rc
    k.mv_data = key
    k.mv_size = key_len
    if value == NULL:
        rc = mdb_del(c.txn, c.dbi[DB_META], &k, NULL)
        return 0 if rc == MDB_NOTFOUND else rc
    v.mv_data = value
    v.mv_size = n
    return mdb_put(c.txn, c.dbi[DB_META], &k, &v, 0)

cdef int set_filed(TxnCore* c, uint32_t w) noexcept nogil:
    """Record that ids up to ``w`` are filed (FILED_ALL: remove the entry)."""
    cdef uint8_t b[ID_SIZE]
    cdef int rc
    put_be32(b, w)
    rc = put_meta(c, FILED_KEY, FILED_KEY_LEN, NULL if w == FILED_ALL else b, ID_SIZE)
    if rc == 0:
        c.filed = w
        c.filed_known = True
    return rc

cdef int last_seq(TxnCore* c, int db, uint32_t* m) noexcept nogil:
    """The highest sequence number of the ids in i2t or i2l (0: none)."""
    cdef MDB_cursor* cur
    cdef MDB_val k, v
    cdef int rc
    m[0] = 0
    rc = core_cursor(c, db, &cur)
    if rc:
        return rc
    rc = mdb_cursor_get(cur, &k, &v, MDB_LAST)
    if rc == MDB_NOTFOUND:
        return 0
    if rc:
        return rc
    if k.mv_size != ID_SIZE:
        return E_CORRUPT
    m[0] = id_seq(ld32(k.mv_data))
    return 0

cdef int last_id(TxnCore* c, uint32_t* m) noexcept nogil:
    """The highest sequence number of a term id in this transaction (0 when
    there is none): ids of every kind share one counter."""
    cdef uint32_t a, b
    cdef int rc
    if c.next_id == 0:
        rc = last_seq(c, DB_I2T, &a)
        if rc == 0:
            rc = last_seq(c, DB_I2L, &b)
        if rc:
            return rc
        c.next_id = (a if a > b else b) + 1
    m[0] = c.next_id - 1
    return 0

cdef int unfiled_span(TxnCore* c, uint32_t* w, uint32_t* m) noexcept nogil:
    """The ids that are not all filed: (w, m]; ``w`` is FILED_ALL (and ``m``
    0) when every id is."""
    cdef int rc = filed_upto(c, w)
    m[0] = 0
    if rc == 0 and w[0] != FILED_ALL:
        rc = last_id(c, m)
    return rc

cdef int hash_db_range(TxnCore* c, HTable* t, int db, uint32_t first, uint32_t last) noexcept nogil:
    """File the hashes of the ids [first, last] of i2t or i2l in ``t``."""
    cdef MDB_cursor* cur
    cdef MDB_val k, v, term
    cdef TermBuf b
    cdef uint32_t key = first, tid
    cdef int rc
    rc = core_cursor(c, db, &cur)
    if rc:
        return rc
    memset(&b, 0, sizeof(TermBuf))
    k.mv_data = &key
    k.mv_size = ID_SIZE
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE)
    while rc == 0:
        if k.mv_size != ID_SIZE:
            rc = E_CORRUPT
            break
        tid = ld32(k.mv_data)
        if tid > last:
            break
        rc = read_term(&v, &b, &term)   # the hash is the encoded term's
        if rc:
            break
        if ht_add(t, hash_bytes(<uint8_t*>term.mv_data, term.mv_size), tid):
            rc = E_NOMEM
            break
        rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)
    termbuf_free(&b)
    if rc and rc != MDB_NOTFOUND:
        return rc
    return 0

cdef int hash_range(TxnCore* c, HTable* t, uint32_t after, uint32_t upto) noexcept nogil:
    """File the hashes of the ids numbered (after, upto] in ``t``, read from
    i2t and i2l."""
    cdef int rc
    if upto <= after:
        return 0
    rc = hash_db_range(c, t, DB_I2T, after + 1, upto)
    if rc == 0:
        rc = hash_db_range(c, t, DB_I2L, ID_LITERAL | (after + 1), ID_LITERAL | upto)
    return rc

cdef int unfiled_table(TxnCore* c, uint32_t w, uint32_t m, HTable** out) noexcept nogil:
    """The table holding every id in (w, m], brought up to date from i2t and i2l.

    Its entries are facts that change only when a term is removed (an id
    names one term for as long as the term exists, and the removal takes it
    out of the table, _termgc), so a table built by one transaction serves
    the next ones too; an id of this transaction's that was never committed
    only makes a candidate that the comparison with the stored term turns
    down.  A snapshot older than the last removal builds its own.
    """
    cdef HTable* t = c.unfiled
    cdef int rc
    if t == NULL or (c.removals != NULL and c.snapshot < c.removals[0]):
        # a commit after this snapshot removed terms, which the writer's table
        # forgot and this snapshot still holds (nor may it fill that table)
        t = &c.own
    elif t.valid and t.cut_upto and w < t.cut_upto:
        # the writer took out of its table the ids a sweep filed: this
        # snapshot must find them in its t2i (or its young level)
        rc = read_sweep(c)
        if rc:
            return rc
        if c.sweep_upto != t.cut_upto or c.sweep_pos < t.cut_pos:
            t = &c.own
    cdef bint rebuilt = not t.valid or t.lo > w
    if rebuilt:
        ht_reset(t, w)
    if t.hi < m:
        rc = hash_range(c, t, t.hi, m)
        if rc:
            t.valid = False
            return rc
        t.hi = m
    if rebuilt and t.n:
        # every id (w, m] of this snapshot, some a sweep filed (here or in
        # the writer's newer view): the sweep's end drops them
        t.holds_filed = True
    out[0] = t
    return 0

cdef int lookup_unfiled(TxnCore* c, const uint8_t* p, size_t n, uint64_t h, uint32_t* out) noexcept nogil:
    """The id of a stored term that is not filed in t2i, or 0."""
    cdef uint32_t w, m, tid
    cdef HTable* t
    cdef MDB_val v
    cdef size_t pos
    cdef int rc
    rc = unfiled_span(c, &w, &m)
    if rc or w == FILED_ALL or m <= w:
        return rc
    rc = unfiled_table(c, w, m, &t)
    if rc:
        return rc
    pos = ht_home(t, h)
    while True:
        tid = ht_next(t, h, &pos)
        if tid == 0:
            return 0
        if id_seq(tid) > m:
            continue
        rc = get_stored(c.txn, c.dbi, tid, &v)
        if rc == 0:
            if stored_equals(<const uint8_t*>v.mv_data, v.mv_size, p, n):
                out[0] = tid
                return 0
        elif rc != MDB_NOTFOUND:
            return rc

cdef int build_bloom(TxnCore* c, Bloom* b) noexcept nogil:
    """Fill ``b`` (BLOOM_BYTES) with every hash in t2i and its young level:
    once per process, unless a failed write leaves it in doubt."""
    cdef MDB_cursor* cur
    cdef MDB_val k, v
    cdef int rc
    cdef int db, i
    rc = bloom_size(b, BLOOM_BYTES * 8 // 10)
    if rc:
        return rc
    cdef int trees[3]
    trees[0] = DB_T2I   # t2i, then its young level
    trees[1] = DB_T2Y0
    trees[2] = DB_T2Y1
    for i in range(3 if has_young_level(c) else 1):
        db = trees[i]
        rc = core_cursor(c, db, &cur)
        if rc == 0:
            rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST)
            while rc == 0:
                if k.mv_size != (HASH_SIZE if db == DB_T2I else HASH_SIZE + ID_SIZE):
                    rc = E_CORRUPT
                    break
                bloom_add(b, get_be64(<uint8_t*>k.mv_data))
                rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT_NODUP if db == DB_T2I else MDB_NEXT)
            if rc == MDB_NOTFOUND:
                rc = 0
        if rc:
            break
    if rc:
        b.valid = False
    return rc

cdef bint surely_not_filed(TxnCore* c, uint64_t h) noexcept nogil:
    """Whether the Bloom filter says no id is filed under ``h``.  Only the
    writer builds it: its transaction holds the newest t2i, a superset of
    every snapshot's in the process, and ids filed later are added to it."""
    if c.bloom == NULL:
        return False
    if not c.bloom.valid:
        if not c.defer or build_bloom(c, c.bloom):
            return False
    return not bloom_may_hold(c.bloom, h)

cdef int lookup_id(TxnCore* c, const uint8_t* p, size_t n, uint64_t h, uint32_t* out) noexcept nogil:
    """The id of a stored term, or 0; compares stored bytes (collision check)."""
    cdef int rc
    out[0] = 0
    if surely_not_filed(c, h):
        return lookup_unfiled(c, p, n, h, out)
    if has_young_level(c):
        rc = lookup_young(c, DB_T2Y0, p, n, h, out)
        if rc == 0 and out[0] == 0:
            rc = lookup_young(c, DB_T2Y1, p, n, h, out)
        if rc or out[0]:
            return rc
    rc = lookup_filed(c, p, n, h, out)
    if rc or out[0]:
        return rc
    return lookup_unfiled(c, p, n, h, out)

cdef int lookup_filed(TxnCore* c, const uint8_t* p, size_t n, uint64_t h, uint32_t* out) noexcept nogil:
    """The id of a stored term filed in t2i, or 0."""
    cdef MDB_cursor* cur
    cdef MDB_val k, v, v2
    cdef uint8_t hk[HASH_SIZE]
    cdef int rc
    rc = core_cursor(c, DB_T2I, &cur)
    if rc:
        return rc
    put_be64(hk, h)
    k.mv_data = hk
    k.mv_size = HASH_SIZE
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_KEY)
    while rc == 0:
        if v.mv_size != ID_SIZE:
            return E_CORRUPT
        rc = get_stored(c.txn, c.dbi, get_be32(<uint8_t*>v.mv_data), &v2)
        if rc == 0:
            if stored_equals(<const uint8_t*>v2.mv_data, v2.mv_size, p, n):
                out[0] = get_be32(<uint8_t*>v.mv_data)
                return 0
        elif rc != MDB_NOTFOUND:
            return rc
        rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT_DUP)
    return 0 if rc == MDB_NOTFOUND else rc

cdef int young_seek(TxnCore* c, int db, uint64_t h, MDB_cursor** cur, MDB_val* k, MDB_val* v) noexcept nogil:
    """Put ``cur`` (the transaction's cursor of the young tree ``db``) on its
    first entry whose hash is ``h`` or above, into ``k`` and ``v``."""
    cdef uint8_t hk[HASH_SIZE]
    cdef int rc = core_cursor(c, db, cur)
    if rc:
        return rc
    put_be64(hk, h)
    k.mv_data = hk
    k.mv_size = HASH_SIZE   # the hash alone sorts before every key of it (hash and id)
    # found, ``k`` points at the tree's key, no longer at ``hk``; not found, callers read nothing
    return mdb_cursor_get(cur[0], k, v, MDB_SET_RANGE)

cdef int lookup_young(TxnCore* c, int db, const uint8_t* p, size_t n, uint64_t h, uint32_t* out) noexcept nogil:
    """The id of a stored term filed in the young tree ``db``, or 0."""
    cdef MDB_cursor* cur
    cdef MDB_val k, v, v2
    cdef uint32_t tid
    cdef int rc = young_seek(c, db, h, &cur, &k, &v)
    while rc == 0:
        if k.mv_size != HASH_SIZE + ID_SIZE:
            return E_CORRUPT
        if get_be64(<uint8_t*>k.mv_data) != h:
            return 0
        tid = get_be32(<uint8_t*>k.mv_data + HASH_SIZE)
        rc = get_stored(c.txn, c.dbi, tid, &v2)
        if rc == 0:
            if stored_equals(<const uint8_t*>v2.mv_data, v2.mv_size, p, n):
                out[0] = tid
                return 0
        elif rc != MDB_NOTFOUND:
            return rc
        rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)
    return 0 if rc == MDB_NOTFOUND else rc

cdef int put_hash(TxnCore* c, uint64_t h, uint32_t tid) noexcept nogil:
    """File ``tid`` under hash ``h`` in t2i; MDB_KEYEXIST when it is there."""
    cdef MDB_cursor* cur
    cdef MDB_val k, v
    cdef uint8_t kb[HASH_SIZE]
    cdef uint8_t ib[ID_SIZE]
    cdef int rc
    pack_hash_entry(h, tid, kb, ib, &k, &v)
    rc = core_cursor(c, DB_T2I, &cur)
    if rc:
        return rc
    return mdb_cursor_put(cur, &k, &v, MDB_NODUPDATA)

cdef int put_young(TxnCore* c, int db, uint64_t h, uint32_t tid) noexcept nogil:
    """File ``tid`` under hash ``h`` in the young tree ``db``; MDB_KEYEXIST when it is there."""
    cdef MDB_cursor* cur
    cdef MDB_val k, v
    cdef uint8_t kb[HASH_SIZE + ID_SIZE]
    cdef int rc
    pack_young_entry(h, tid, kb, &k, &v)
    rc = core_cursor(c, db, &cur)
    if rc:
        return rc
    return mdb_cursor_put(cur, &k, &v, MDB_NOOVERWRITE)

# A sweep files the ids (w, upto] of a generation hash range by hash range,
# [0, pos) first, a slice at each commit: so t2i's leaves are rewritten a
# slice at a time, in step with the new ids, instead of all at once.
cdef char* SWEEP_KEY = b"terms_filing"
cdef size_t SWEEP_KEY_LEN = 12

cdef int read_sweep(TxnCore* c) noexcept nogil:
    """The sweep in progress into c.sweep_upto (0: none) and c.sweep_pos."""
    cdef MDB_val k, v
    cdef int rc
    if c.sweep_known:
        return 0
    k.mv_data = SWEEP_KEY
    k.mv_size = SWEEP_KEY_LEN
    rc = mdb_get(c.txn, c.dbi[DB_META], &k, &v)
    if rc == MDB_NOTFOUND:
        c.sweep_upto = 0
        c.sweep_pos = 0
    elif rc:
        return rc
    elif v.mv_size != ID_SIZE + 8:
        return E_CORRUPT
    else:
        c.sweep_upto = get_be32(<uint8_t*>v.mv_data)
        c.sweep_pos = get_be64(<uint8_t*>v.mv_data + ID_SIZE)
    c.sweep_known = True
    return 0

cdef int set_sweep(TxnCore* c, uint32_t upto, uint64_t pos) noexcept nogil:
    """Record the sweep (``upto`` 0: none)."""
    cdef uint8_t b[ID_SIZE + 8]
    cdef int rc
    put_be32(b, upto)
    put_be64(b + ID_SIZE, pos)
    rc = put_meta(c, SWEEP_KEY, SWEEP_KEY_LEN, NULL if upto == 0 else b, ID_SIZE + 8)
    if rc == 0:
        c.sweep_upto = upto
        c.sweep_pos = pos
        c.sweep_known = True
    return rc

cdef int file_slice(TxnCore* c, uint32_t w, uint32_t upto, uint64_t lo, uint64_t hi, bint to_end) noexcept nogil:
    """File in t2i (or the current young tree), sorted, the ids in (w, upto]
    whose hash is in [lo, hi) ([lo, 2^64) when ``to_end``) and that no sweep
    has filed yet.

    They are taken from the table of unfiled ids by their slots
    (``ht_gather``): only the slice is gathered and sorted, and the buffers
    it is sorted in (the writer's, kept from write to write) hold a slice,
    not the generation.  The writer's table then lets them go (its
    ``cut_upto`` and ``cut_pos`` say which): it holds about one generation,
    and the sweep's end has nothing left to drop."""
    cdef uint32_t m
    cdef HTable t
    cdef HTable* src = &t
    cdef HSlots own
    cdef HSlots* buf = c.slice if c.slice != NULL else &own
    cdef size_t i, n = 0
    cdef int rc
    rc = last_id(c, &m)
    if rc == 0:
        rc = read_sweep(c)
    if rc:
        return rc
    memset(&t, 0, sizeof(HTable))
    memset(&own, 0, sizeof(HSlots))
    if c.unfiled != NULL:   # the writer's table already holds their hashes
        rc = unfiled_table(c, w, m, &src)
    else:
        rc = hash_range(c, &t, w, upto)
    if rc == 0:
        rc = ht_gather(src, lo, hi, to_end, w, upto, buf)
    if rc == 0:
        for i in range(buf.n):
            if src == c.unfiled:   # an abort or a failed commit invalidates the table
                ht_del(src, buf.ents[i].h, buf.ents[i].id)
            if c.sweep_upto and id_seq(buf.ents[i].id) <= c.sweep_upto and buf.ents[i].h < c.sweep_pos:
                continue   # filed by the sweep
            buf.ents[n] = buf.ents[i]
            n += 1
        if src == c.unfiled:
            src.cut_upto = upto
            src.cut_pos = 0xFFFFFFFFFFFFFFFFULL if to_end else hi
        rc = hs_sort(&buf.ents, &buf.spare, n)
    if rc == 0:
        rc = file_sorted(c, buf.ents, n)
    buf.n = 0
    hslots_free(&own)
    ht_free(&t)
    return rc

cdef int file_sorted(TxnCore* c, HSlot* ents, size_t n) noexcept nogil:
    """Put ``n`` (hash, id) entries, sorted, into t2i (or the current tree
    of its young level) and the Bloom filter."""
    cdef size_t i
    cdef int rc = 0
    if c.young:
        rc = read_merge(c)
        if rc:
            return rc
    for i in range(n):
        if c.young:
            rc = put_young(c, DB_T2Y0 + c.young_cur, ents[i].h, ents[i].id)
        else:
            rc = put_hash(c, ents[i].h, ents[i].id)
        if rc == MDB_KEYEXIST:
            rc = 0   # filed already (a filing undone and done again, or damage check names)
        if rc:
            return rc
        if c.bloom != NULL and c.bloom.valid:
            bloom_add(c.bloom, ents[i].h)
    return 0

cdef int all_filed_upto(TxnCore* c, uint32_t upto) noexcept nogil:
    """Every id up to ``upto`` is filed now: say so, end the sweep, and drop
    them from the writer's table."""
    cdef int rc
    rc = set_filed(c, upto if c.defer else FILED_ALL)
    if rc == 0:
        rc = set_sweep(c, 0, 0)
    if rc == 0 and c.unfiled != NULL and c.unfiled.valid:
        if c.unfiled.holds_filed:
            ht_keep_above(c.unfiled, upto)   # built again mid-sweep: a pass drops what the slices did not
        else:
            c.unfiled.lo = upto
            c.unfiled.cut_upto = 0
            c.unfiled.cut_pos = 0
    return rc

cdef int file_terms(TxnCore* c) noexcept nogil:
    """File every unfiled id in t2i (or the current young tree) now, in hash
    order (each leaf is then written once however many ids land in it)."""
    cdef uint32_t w, m
    cdef int rc
    rc = unfiled_span(c, &w, &m)
    if rc or w == FILED_ALL:
        return rc
    rc = file_slice(c, w, m, 0, 0, True)
    if rc == 0:
        rc = all_filed_upto(c, m)
    return rc

cdef inline uint32_t generation_due(uint32_t filed, uint32_t lag, uint32_t most) noexcept nogil:
    """How many unfiled ids make a generation: a quarter of the filed ones,
    at most ``most`` (the table of unfiled ids holds about one generation:
    its memory), at least ``lag`` (and 1)."""
    cdef uint32_t due = filed // 4
    if due > most:
        due = most
    if due < lag:
        due = lag
    return due if due else 1

cdef int file_terms_step(TxnCore* c, uint32_t lag, uint32_t most) noexcept nogil:
    """At a deferring write or commit: the sweep's share (``sweep_step``),
    then, with t2i's young level, the merge's (``merge_step``)."""
    cdef int rc = sweep_step(c, lag, most)
    if rc == 0 and c.young:
        rc = merge_step(c, lag, most)
    return rc

cdef int sweep_step(TxnCore* c, uint32_t lag, uint32_t most) noexcept nogil:
    """At a deferring write or commit: once the unfiled ids make a generation
    (``due``: ``generation_due``), a sweep starts for them; each write then
    files the slice of the hash space that keeps the sweep in step with the
    new ids, so that it ends when ``due`` more exist.  Each leaf of the tree
    filed into (t2i, or the current young tree) is so rewritten a bounded
    number of times per id filed (for t2i, about 3 pages per 100 ids while
    a generation is a quarter of it; more once ``most`` caps it: the price
    of a bounded table, which the young level takes away), spread over the
    writes."""
    cdef uint32_t w, m, upto, due
    cdef uint64_t target = 0
    cdef bint done
    cdef int rc
    rc = unfiled_span(c, &w, &m)
    if rc or w == FILED_ALL:
        return rc
    rc = read_sweep(c)
    if rc:
        return rc
    due = generation_due(w, lag, most)
    if c.sweep_upto == 0:
        if m - w < due:
            return 0
        return set_sweep(c, m, 0)
    upto = c.sweep_upto
    done = m - upto >= due
    if not done:
        target = ((<uint64_t>(m - upto) << 32) // due) << 32
        if target <= c.sweep_pos:
            return 0
    rc = file_slice(c, w, upto, c.sweep_pos, target, done)
    if rc:
        return rc
    if not done:
        return set_sweep(c, upto, target)
    rc = all_filed_upto(c, upto)
    if rc == 0 and m - upto >= generation_due(upto, lag, most):
        rc = set_sweep(c, m, 0)   # the next generation is due already
    return rc

cdef inline bint has_young_level(const TxnCore* c) noexcept nogil:
    """Whether the store has t2i's young level (a store of format 6 or
    older, read as it is, has none: its young trees' handles are t2i's)."""
    return c.dbi[DB_T2Y0] != c.dbi[DB_T2I]

# The young level's state: which tree the sweeps file into, and the merge
# pass that copies the other into t2i hash range by hash range, [0, pos)
# first, a slice at each deferring write, in step with the new ids: it ends
# once ``merge_len`` ids have been made since it began (``merge_from``).
cdef char* MERGE_KEY = b"terms_merging"
cdef size_t MERGE_KEY_LEN = 13
cdef size_t MERGE_SIZE = 3 * ID_SIZE + 8

cdef int read_merge(TxnCore* c) noexcept nogil:
    """The young level's state into c.young_cur, c.merge_from (0: no pass),
    c.merge_len and c.merge_pos."""
    cdef MDB_val k, v
    cdef int rc
    if c.merge_known:
        return 0
    k.mv_data = MERGE_KEY
    k.mv_size = MERGE_KEY_LEN
    rc = mdb_get(c.txn, c.dbi[DB_META], &k, &v)
    if rc == MDB_NOTFOUND:
        c.young_cur = 0
        c.merge_from = 0
        c.merge_len = 0
        c.merge_pos = 0
    elif rc:
        return rc
    elif v.mv_size != MERGE_SIZE or get_be32(<uint8_t*>v.mv_data) > 1:
        return E_CORRUPT
    else:
        c.young_cur = get_be32(<uint8_t*>v.mv_data)
        c.merge_from = get_be32(<uint8_t*>v.mv_data + ID_SIZE)
        c.merge_len = get_be32(<uint8_t*>v.mv_data + 2 * ID_SIZE)
        c.merge_pos = get_be64(<uint8_t*>v.mv_data + 3 * ID_SIZE)
    c.merge_known = True
    return 0

cdef int set_merge(TxnCore* c, int cur, uint32_t start, uint32_t length, uint64_t pos) noexcept nogil:
    """Record the young level's state (the first tree and no pass: no entry)."""
    cdef uint8_t b[3 * ID_SIZE + 8]
    cdef int rc
    put_be32(b, cur)
    put_be32(b + ID_SIZE, start)
    put_be32(b + 2 * ID_SIZE, length)
    put_be64(b + 3 * ID_SIZE, pos)
    rc = put_meta(c, MERGE_KEY, MERGE_KEY_LEN, NULL if cur == 0 and start == 0 else b, MERGE_SIZE)
    if rc == 0:
        c.young_cur = cur
        c.merge_from = start
        c.merge_len = length
        c.merge_pos = pos
        c.merge_known = True
    return rc

cdef inline uint64_t isqrt(uint64_t x) noexcept nogil:
    cdef uint64_t r = 0, bit = 1ULL << 62
    while bit > x:
        bit >>= 2
    while bit:
        if x >= r + bit:
            x -= r + bit
            r = (r >> 1) + bit
        else:
            r >>= 1
        bit >>= 2
    return r

cdef int merge_step(TxnCore* c, uint32_t lag, uint32_t most) noexcept nogil:
    """A deferring write's share of the merge of the young level into t2i.
    With no pass under way, once the current young tree holds ids the two
    swap (the other is empty: the last pass emptied it) and a pass begins
    over the full one.  It lasts ``k`` generations of new ids, ``k`` the
    square root of how many generations t2i holds, which is where a
    generation's cost is least: it rewrites the current young tree's leaves
    (about ``k`` generations' worth) and a ``k``-th of t2i's (a pass
    rewrites each t2i leaf once).  At its end the copied tree is emptied
    whole (``mdb_drop``: its branch pages freed, no leaf read)."""
    cdef uint32_t m, w, due
    cdef uint64_t target = 0, k
    cdef MDB_stat st
    cdef int cur, old
    cdef bint done
    cdef int rc
    rc = read_merge(c)
    if rc == 0:
        rc = last_id(c, &m)
    if rc:
        return rc
    cur = c.young_cur
    old = 1 - cur
    if c.merge_from == 0:
        rc = mdb_stat(c.txn, c.dbi[DB_T2Y0 + cur], &st)
        if rc or st.ms_entries == 0 or m == 0:
            return rc
        rc = filed_upto(c, &w)
        if rc:
            return rc
        due = generation_due(m if w == FILED_ALL else w, lag, most)
        rc = mdb_stat(c.txn, c.dbi[DB_T2I], &st)
        if rc:
            return rc
        k = isqrt(st.ms_entries // due) if due else 1
        if k < 1:
            k = 1
        if k * due > ID_SEQ_MASK - m:   # a pass must end before the ids do
            k = (ID_SEQ_MASK - m) // due
        if k < 1:
            k = 1
        return set_merge(c, old, m, <uint32_t>(k * due), 0)   # swap: the full tree is copied
    done = m - c.merge_from >= c.merge_len
    if not done:
        target = ((<uint64_t>(m - c.merge_from) << 32) // c.merge_len) << 32
        if target <= c.merge_pos:
            return 0
    rc = copy_range(c, DB_T2Y0 + old, c.merge_pos, target, done)
    if rc:
        return rc
    if done:
        rc = mdb_drop(c.txn, c.dbi[DB_T2Y0 + old], 0)   # every id of it is in t2i now
        if rc:
            return rc
        return set_merge(c, cur, 0, 0, 0)
    return set_merge(c, cur, c.merge_from, c.merge_len, target)

cdef int copy_range(TxnCore* c, int db, uint64_t lo, uint64_t hi, bint to_end) noexcept nogil:
    """Copy the young tree ``db``'s entries whose hash is in [lo, hi) ([lo,
    2^64) when ``to_end``) into t2i, in hash order."""
    cdef MDB_cursor* young
    cdef MDB_val k, v
    cdef uint64_t h
    cdef int rc = young_seek(c, db, lo, &young, &k, &v)
    while rc == 0:
        if k.mv_size != HASH_SIZE + ID_SIZE:
            return E_CORRUPT
        h = get_be64(<uint8_t*>k.mv_data)
        if not to_end and h >= hi:
            return 0
        rc = put_hash(c, h, get_be32(<uint8_t*>k.mv_data + HASH_SIZE))
        if rc == MDB_KEYEXIST:
            rc = 0   # in t2i already (damage that check names: the copy ends it)
        if rc:
            return rc
        rc = mdb_cursor_get(young, &k, &v, MDB_NEXT)
    return 0 if rc == MDB_NOTFOUND else rc

cdef int create_id(TxnCore* c, const uint8_t* p, size_t n, uint64_t h, uint32_t* out,
                   const uint8_t* sp, size_t sn) noexcept nogil:
    """Store a new term under the next id (appended to i2l or i2t) and file
    its hash: in t2i, or, when this transaction defers, in the unfiled table.
    ``sp`` (``sn`` bytes): its stored form when the parser made it, or NULL."""
    cdef MDB_cursor* cur
    cdef MDB_val k, v
    cdef uint32_t w, m, tid
    cdef bint literal = is_literal_term(p)
    cdef size_t stored
    cdef uint8_t small[1024]
    cdef uint8_t* buf
    cdef HTable* t = NULL
    cdef int rc
    rc = last_id(c, &m)
    if rc:
        return rc
    rc = filed_upto(c, &w)
    if rc:
        return rc
    if c.defer:
        if w == FILED_ALL:   # the first id left unfiled
            rc = set_filed(c, m)
            if rc:
                return rc
            w = m
        rc = unfiled_table(c, w, m, &t)
        if rc:
            return rc
    elif w != FILED_ALL:     # a writer that does not defer files the others' first
        rc = file_terms(c)
        if rc:
            return rc
    if c.next_id > ID_SEQ_MASK:
        return E_IDS
    tid = c.next_id | ID_LITERAL if literal else c.next_id
    k.mv_data = &tid
    k.mv_size = ID_SIZE
    v.mv_data = <void*>p
    v.mv_size = n
    rc = core_cursor(c, DB_I2L if literal else DB_I2T, &cur)
    if rc:
        return rc
    buf = &small[0]
    if literal and sp != NULL:   # the compact form the parser made
        v.mv_data = <void*>sp
        v.mv_size = sn
    elif literal:   # in its compact form, when it has one (see _codec)
        if n > sizeof(small):
            buf = <uint8_t*>malloc(n)
            if buf == NULL:
                return E_NOMEM
        stored = compact_literal(p, n, buf)
        if stored:
            v.mv_data = buf
            v.mv_size = stored
    rc = mdb_cursor_put(cur, &k, &v, MDB_APPEND)
    if buf != &small[0]:
        free(buf)
    if rc:
        return rc
    if t != NULL:
        if ht_add(t, h, tid):
            return E_NOMEM
        t.hi = c.next_id
    else:
        rc = put_hash(c, h, tid)
        if rc:
            return rc
    out[0] = tid
    c.next_id += 1
    return 0

cdef int resolve_id(TxnCore* c, const uint8_t* p, size_t n, uint64_t h, bint create, uint32_t* out,
                    const uint8_t* sp=NULL, size_t sn=0) noexcept nogil:
    """Term -> id through the transaction's table, the cache, then LMDB
    (write transactions); ``sp``: its stored form, if known (create_id)."""
    cdef Py_ssize_t i
    cdef int rc
    i = tt_find(&c.seen, p, n, h)
    if i >= 0:
        out[0] = c.seen.ents[i].id
        return 0
    i = -1
    if n <= CACHE_MAX_LITERAL or not is_literal_term(p):   # the cache holds no literal this long
        i = tt_find(c.cache, p, n, h)   # safe: we hold the writer lock
    if i >= 0 and c.cache.ents[i].id != 0:   # 0: a removed term (see _termgc)
        out[0] = c.cache.ents[i].id
    else:
        rc = lookup_id(c, p, n, h, out)
        if rc:
            return rc
        if out[0] == 0:
            if not create:
                return 0
            rc = create_id(c, p, n, h, out, sp, sn)
            if rc:
                return rc
    if tt_add(&c.seen, p, n, h, out[0], 0) < 0:
        return E_NOMEM
    return 0

cdef int next_bnode_doc(TxnCore* c, uint64_t* out) noexcept nogil:
    """Next number of the per-document blank node counter (in ``meta``)."""
    cdef MDB_val k, v
    cdef uint8_t b[8]
    cdef uint64_t doc = 0
    cdef int rc
    k.mv_data = <char*>b"bnode_docs"
    k.mv_size = 10
    rc = mdb_get(c.txn, c.dbi[DB_META], &k, &v)
    if rc == 0 and v.mv_size == 8:
        doc = get_be64(<uint8_t*>v.mv_data)
    elif rc and rc != MDB_NOTFOUND:
        return rc
    doc += 1
    put_be64(b, doc)
    v.mv_data = b
    v.mv_size = 8
    rc = mdb_put(c.txn, c.dbi[DB_META], &k, &v, 0)
    out[0] = doc
    return rc

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

cdef int resolve_table(TxnCore* c, TTable* t, uint32_t* ids, const StoredForms* forms) noexcept nogil:
    """Resolve (creating) every term of a document table into ids[];
    ``forms``: the stored forms the parser made, or NULL."""
    cdef size_t i, sn
    cdef const uint8_t* sp
    cdef int rc, k
    cdef uint64_t doc = 0
    cdef const uint8_t* p
    cdef char num[48]
    cdef uint32_t ordinal
    for i in range(t.n):
        p = tt_term(t, i)
        if t.ents[i].flags & TF_BLANK:
            if doc == 0:
                rc = next_bnode_doc(c, &doc)
                if rc:
                    return rc
            # label "lb<doc hex>n<ordinal>"
            ordinal = get_be32(p + 1)
            k = 0
            num[k] = TERM_BLANK; k += 1
            num[k] = 108; k += 1
            num[k] = 98; k += 1
            k += hex_digits(num + k, doc)
            num[k] = 110; k += 1
            k += dec_digits(num + k, ordinal)
            rc = resolve_id(c, <const uint8_t*>num, k, hash_bytes(<const uint8_t*>num, k), True, &ids[i])
        else:
            sp = sf_get(forms, i, &sn)
            rc = resolve_id(c, p, t.ents[i].len, t.ents[i].h, True, &ids[i], sp, sn)
        if rc:
            return rc
    return 0

cdef void merge_cache(TxnCore* c) noexcept nogil:
    """Remember this transaction's IRIs and short literals in the environment
    (called just before a write commits; the cache is cleared if it fails)."""
    cdef TTable* cache = c.cache
    cdef TTable* s = &c.seen
    cdef size_t i
    cdef const uint8_t* t
    cdef TEntry* e
    cdef Py_ssize_t j
    if cache.n + s.n > CACHE_MAX_ENTRIES or cache.arena.n + s.arena.n > CACHE_MAX_BYTES:
        tt_clear(cache)
    for i in range(s.n):
        e = &s.ents[i]
        if e.id == 0:
            continue   # removed at this commit (see _termgc)
        t = tt_term(s, i)
        if is_literal_term(t):
            if e.len > CACHE_MAX_LITERAL:
                continue
        elif t[0] != TERM_IRI:
            continue
        j = tt_find(cache, t, e.len, e.h)
        if j >= 0:
            cache.ents[j].id = e.id   # the same id, or a removed term's new one
        elif tt_add(cache, t, e.len, e.h, e.id, 0) < 0:
            tt_clear(cache)
            return


