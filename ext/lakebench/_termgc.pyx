# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Removing the terms no quad uses any more, at a write's commit.

A deleted quad notes its four ids in its transaction (``release_id``).
Before the commit, each noted id that no index names any more (looked for
in ospc first, where most terms are named, then in spoc, posc, cs and the
declared graphs: the store takes a literal as a subject or a graph too) is
removed: from ``i2t`` or
``i2l``, from ``t2i`` and its young level when it is filed there, from the writer's table of
unfiled ids, and from the process's cache.  So a store
whose resources are rewritten keeps the terms it uses, not every term it
ever held.

Ids are not reused: the highest one is never removed (the next id is read
from it), and every other number stays taken.

Other processes' writers cache terms' ids; a commit that removed terms
bumps ``meta``'s ``terms_removed`` count, and a write transaction that sees
it changed clears its process's cache first (_store).  A read transaction
whose snapshot is older than the last commit that removed terms here no
longer uses the writer's table, which has forgotten them (_termids).
"""
from libc.stdint cimport uint8_t, uint32_t, uint64_t
from libc.stdlib cimport qsort

from liblmdb cimport *
from lakebench._codec cimport (E_CORRUPT, DB_META, DB_T2I, DB_T2Y0, DB_T2Y1, DB_I2T, DB_I2L, DB_SPOC, DB_POSC, DB_OSPC, DB_CS,
                               DB_GRAPHS, ID_LITERAL, ID_SIZE, HASH_SIZE, id_seq, put_be32, put_be64, get_be64,
                               get_term, TermBuf, termbuf_free, hash_bytes, pack_hash_entry, pack_young_entry)
from lakebench._tables cimport tt_find, ht_del
from lakebench._txncore cimport TxnCore, FILED_ALL
from lakebench._termids cimport filed_upto, last_id, read_sweep

cdef char* GENERATION_KEY = b"terms_removed"
cdef size_t GENERATION_KEY_LEN = 13


cdef int cmp_u32(const void* a, const void* b) noexcept nogil:
    cdef uint32_t x = (<const uint32_t*>a)[0]
    cdef uint32_t y = (<const uint32_t*>b)[0]
    return (x > y) - (x < y)

cdef int named_in(TxnCore* c, int db, uint32_t tid, bint* found) noexcept nogil:
    """Whether sub-database ``db`` (keys: 4-byte big-endian ids) has key ``tid``."""
    cdef MDB_val k, v
    cdef uint8_t kb[ID_SIZE]
    cdef int rc
    put_be32(kb, tid)
    k.mv_data = kb
    k.mv_size = ID_SIZE
    rc = mdb_get(c.txn, c.dbi[db], &k, &v)
    found[0] = rc == 0
    return 0 if rc == MDB_NOTFOUND else rc

cdef int in_use(TxnCore* c, uint32_t tid, bint* used) noexcept nogil:
    """Whether a quad (or a graph's declaration) still names ``tid``."""
    cdef int dbs[4]
    cdef int i
    cdef int rc = named_in(c, DB_OSPC, tid, used)
    if rc or used[0]:   # an object, most often; a literal may be any part of a quad all the same
        return rc
    dbs[0] = DB_SPOC
    dbs[1] = DB_POSC
    dbs[2] = DB_CS
    dbs[3] = DB_GRAPHS
    for i in range(4):
        rc = named_in(c, dbs[i], tid, used)
        if rc or used[0]:
            return rc
    return 0

cdef int unfile(TxnCore* c, uint32_t tid, uint64_t h, uint32_t w) noexcept nogil:
    """Take ``tid`` (of hash ``h``) out of t2i and its young level where it is filed there, and
    out of the writer's tables of ids not yet filed.  ``w``: the last id
    filed in t2i (FILED_ALL: every one)."""
    cdef MDB_val k, v
    cdef uint8_t kb[HASH_SIZE]
    cdef uint8_t ib[ID_SIZE]
    cdef uint8_t yb[HASH_SIZE + ID_SIZE]
    cdef int db
    cdef uint32_t seq = id_seq(tid)
    cdef bint filed = w == FILED_ALL or seq <= w or (seq <= c.sweep_upto and h < c.sweep_pos)
    cdef int rc
    if filed:   # in t2i, or in a tree of its young level, or (a merge pass copied it) in two
        pack_hash_entry(h, tid, kb, ib, &k, &v)
        rc = mdb_del(c.txn, c.dbi[DB_T2I], &k, &v)
        if c.dbi[DB_T2Y0] != c.dbi[DB_T2I]:   # a store of format 6 or older, read as it is, has none
            for db in range(DB_T2Y0, DB_T2Y1 + 1):
                if rc and rc != MDB_NOTFOUND:
                    break
                pack_young_entry(h, tid, yb, &k, &v)
                rc = mdb_del(c.txn, c.dbi[db], &k, NULL)
        if rc and rc != MDB_NOTFOUND:
            return rc
    if w != FILED_ALL and seq > w:
        if c.unfiled != NULL and c.unfiled.valid:
            ht_del(c.unfiled, h, tid)
    return 0

cdef int bump_generation(TxnCore* c) noexcept nogil:
    cdef MDB_val k, v
    cdef uint8_t b[8]
    cdef uint64_t n = 0
    cdef int rc = terms_generation(c.txn, c.dbi, &n)
    if rc:
        return rc
    put_be64(b, n + 1)
    k.mv_data = GENERATION_KEY
    k.mv_size = GENERATION_KEY_LEN
    v.mv_data = b
    v.mv_size = 8
    return mdb_put(c.txn, c.dbi[DB_META], &k, &v, 0)

cdef int terms_generation(MDB_txn* txn, const MDB_dbi* dbi, uint64_t* out) noexcept nogil:
    """How many commits have removed terms (``meta``'s count; 0 when none has)."""
    cdef MDB_val k, v
    cdef int rc
    k.mv_data = GENERATION_KEY
    k.mv_size = GENERATION_KEY_LEN
    rc = mdb_get(txn, dbi[DB_META], &k, &v)
    out[0] = 0
    if rc == MDB_NOTFOUND:
        return 0
    if rc:
        return rc
    if v.mv_size != 8:
        return E_CORRUPT
    out[0] = get_be64(<uint8_t*>v.mv_data)
    return 0

cdef int drop_unused_terms(TxnCore* c, size_t* dropped) noexcept nogil:
    """Remove the noted terms that nothing names any more (see above);
    ``dropped``: how many.  The notes are consumed."""
    cdef uint32_t* ids = <uint32_t*>c.released.p
    cdef size_t n = c.released.n // sizeof(uint32_t), i
    cdef uint32_t tid, prev = 0, w, m
    cdef bint used
    cdef MDB_val term, k
    cdef TermBuf b
    cdef uint64_t h
    cdef Py_ssize_t j
    cdef int rc = 0
    dropped[0] = 0
    c.released.n = 0
    if n == 0:
        return 0
    qsort(ids, n, sizeof(uint32_t), cmp_u32)
    rc = last_id(c, &m)
    if rc == 0:
        rc = filed_upto(c, &w)
    if rc == 0:
        rc = read_sweep(c)
    if rc:
        return rc
    b.p = NULL
    b.cap = 0
    for i in range(n):
        tid = ids[i]
        if tid == prev:
            continue
        prev = tid
        if id_seq(tid) >= m:
            continue   # the highest id stays: the next one is numbered from it
        rc = in_use(c, tid, &used)
        if rc:
            break
        if used:
            continue
        rc = get_term(c.txn, c.dbi, tid, &term, &b)
        if rc == MDB_NOTFOUND:
            rc = 0
            continue
        if rc:
            break
        h = hash_bytes(<const uint8_t*>term.mv_data, term.mv_size)
        # the process's tables: neither the cache nor this commit's merge may keep its id
        j = tt_find(c.cache, term.mv_data, term.mv_size, h)
        if j >= 0:
            c.cache.ents[j].id = 0
        j = tt_find(&c.seen, term.mv_data, term.mv_size, h)
        if j >= 0:
            c.seen.ents[j].id = 0
        rc = unfile(c, tid, h, w)
        if rc:
            break
        k.mv_data = &tid
        k.mv_size = ID_SIZE
        rc = mdb_del(c.txn, c.dbi[DB_I2L] if tid & ID_LITERAL else c.dbi[DB_I2T], &k, NULL)
        if rc:
            break
        dropped[0] += 1
    termbuf_free(&b)
    if rc == 0 and dropped[0]:
        rc = bump_generation(c)
    return rc
