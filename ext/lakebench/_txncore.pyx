# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The C half of a transaction (``TxnCore``), without the GIL, but for its
term ids (``_termids``):

* index writes: quads sorted and inserted index by index, appending
  whenever the key or value sorts last (LMDB splits a full page in the
  middle otherwise), and deletes; the entries of posc and ospc, when the
  environment asks for it, staged, sorted several writes' at a time and
  put a share at each write (``stage_entries``); ``cs`` (graph ->
  subjects) kept exactly the pairs of the quads;
* scans: a pattern's plan (which index, which key, which leading values)
  and the one cursor walk that every read of quads goes through; a graph's
  quads are its subjects' in spoc, filtered by the graph.
"""
from libc.stdint cimport uint8_t, uint32_t, uint64_t
from libc.string cimport memcmp, memset
from libc.stdlib cimport malloc, free, qsort

from liblmdb cimport *
from lakebench._codec cimport (E_NOMEM, E_CORRUPT, DB_SPOC, DB_CS, IX_SPOC, IX_POSC, IX_OSPC, ID_SIZE,
                               ENTRY_VALUE_SIZE, Quad, put_be32, get_be32, ld32, to_entry, pack_entry, spoc_holds,
                               pack_pair,
                               cmp_quad)
from lakebench._tables cimport qb_free, qb_push


cdef void core_close_cursors(TxnCore* c) noexcept nogil:
    cdef int i
    for i in range(N_DBS):
        if c.cur[i] != NULL:
            mdb_cursor_close(c.cur[i])
            c.cur[i] = NULL


# ---------------------------------------------------------------- index writes
cdef int put_appending(TxnCore* c, int slot, int db, MDB_val* k, MDB_val* v) noexcept nogil:
    """Insert one pair (a 4-byte big-endian key) into a DUPSORT database;
    0 when new, MDB_KEYEXIST when already there.  ``slot`` is the
    database's last key's place in ``c.last_key``.

    Appends when the key or the value sorts last, which keeps pages full
    (LMDB splits a page in the middle otherwise)."""
    cdef MDB_cursor* cur
    cdef MDB_val lk, lv
    cdef uint32_t key = get_be32(<uint8_t*>k.mv_data)
    cdef int rc
    rc = core_cursor(c, db, &cur)
    if rc:
        return rc
    if not c.last_known[slot]:
        rc = mdb_cursor_get(cur, &lk, &lv, MDB_LAST)
        if rc == MDB_NOTFOUND:
            c.last_key[slot] = 0
        elif rc:
            return rc
        else:
            c.last_key[slot] = get_be32(<uint8_t*>lk.mv_data)
        c.last_known[slot] = True
    if key > c.last_key[slot]:
        rc = mdb_cursor_put(cur, k, v, MDB_APPEND)
        if rc == 0:
            c.last_key[slot] = key
            return 0
        if rc != MDB_KEYEXIST:
            return rc
    rc = mdb_cursor_put(cur, k, v, MDB_APPENDDUP | MDB_NODUPDATA)
    if rc != MDB_KEYEXIST:
        return rc
    return mdb_cursor_put(cur, k, v, MDB_NODUPDATA)

cdef int put_entry(TxnCore* c, int ix, const Quad* e) noexcept nogil:
    """Insert one entry of quad index ``ix``; 0 when new, MDB_KEYEXIST when already there."""
    cdef MDB_val k, v
    cdef uint8_t kb[ID_SIZE]
    cdef uint8_t vb[ENTRY_VALUE_SIZE]
    pack_entry(e, kb, vb, &k, &v)
    return put_appending(c, ix, DB_SPOC + ix, &k, &v)

cdef int put_graph_subject(TxnCore* c, uint32_t graph, uint32_t subject) noexcept nogil:
    """File ``subject`` under ``graph`` in cs (nothing when it is there)."""
    cdef MDB_val k, v
    cdef uint8_t kb[ID_SIZE]
    cdef uint8_t vb[ID_SIZE]
    cdef int rc
    pack_pair(graph, subject, kb, vb, &k, &v)
    rc = put_appending(c, N_INDEXES, DB_CS, &k, &v)
    return 0 if rc == MDB_KEYEXIST else rc

cdef int graph_pairs(const QBuf* q, QBuf* out) noexcept nogil:
    """The distinct (graph, subject) pairs of quads ``q``, sorted, into ``out``
    (k = graph, a = subject)."""
    cdef size_t i, m = 0
    out.q = <Quad*>malloc((q.n if q.n else 1) * sizeof(Quad))
    if out.q == NULL:
        return E_NOMEM
    out.cap = q.n
    for i in range(q.n):
        out.q[i].k = q.q[i].c
        out.q[i].a = q.q[i].k
        out.q[i].b = 0
        out.q[i].c = 0
    qsort(out.q, q.n, sizeof(Quad), cmp_quad)
    for i in range(q.n):
        if m == 0 or cmp_quad(&out.q[i], &out.q[m - 1]) != 0:
            out.q[m] = out.q[i]
            m += 1
    out.n = m
    return 0

cdef void sort_entries(QBuf* e) noexcept nogil:
    qsort(e.q, e.n, sizeof(Quad), cmp_quad)

cdef int put_run(TxnCore* c, int ix, const QBuf* e, size_t start, size_t end) noexcept nogil:
    """Put entries ``e.q[start:end]`` of index ``ix``, every one new."""
    cdef size_t i
    cdef int rc
    for i in range(start, end):
        rc = put_entry(c, ix, &e.q[i])
        if rc == MDB_KEYEXIST:
            return E_CORRUPT   # spoc and this index disagree
        if rc:
            return rc
    return 0

cdef int put_entries(TxnCore* c, const QBuf* q) noexcept nogil:
    """Put the posc and ospc entries of new quads ``q`` now, sorted."""
    cdef size_t i
    cdef int rc = 0, ix
    cdef QBuf e
    memset(&e, 0, sizeof(QBuf))
    e.q = <Quad*>malloc(q.n * sizeof(Quad))
    if e.q == NULL:
        return E_NOMEM
    e.n = q.n
    e.cap = q.n
    for ix in range(1, N_INDEXES):
        for i in range(q.n):
            to_entry(ix, &q.q[i], &e.q[i])
        sort_entries(&e)
        rc = put_run(c, ix, &e, 0, e.n)
        if rc:
            break
    qb_free(&e)
    return rc

cdef int stage_entries(TxnCore* c, const QBuf* q) noexcept nogil:
    """Stage the posc and ospc entries of new quads ``q`` (put them now when
    the stage is closed, or when they alone fill it), then drain a share of
    the stage.

    Why: a write's entries go to many keys of posc and ospc (a predicate's
    values, an object's), each put a descent from the root of its key's
    tree; the entries of several writes put in order meet the same pages
    one after the other, from the cache, where one write's meet each page
    once, from memory.  Why a share at each write: put at once, a stage
    made the write that filled it wait for twenty children's puts (p99.9
    from under 5 ms to 13 ms at a million children, docs/store.rst)."""
    cdef size_t i
    cdef int ix, rc
    cdef Quad e
    if c.stage_closed or q.n >= c.stage_max:
        rc = put_entries(c, q)
        if rc:
            return rc
    else:
        for ix in range(1, N_INDEXES):
            for i in range(q.n):
                to_entry(ix, &q.q[i], &e)
                if qb_push(&c.staged[ix], e.k, e.a, e.b, e.c):
                    return E_NOMEM
    return drain_stage(c, max(2 * q.n, c.stage_max // STAGE_SHARES))

cdef int drain_stage(TxnCore* c, size_t share) noexcept nogil:
    """Put up to ``share`` entries of each staged index, in order; a full
    stage (or a closed one) becomes the draining one, sorted, once the last
    has been put."""
    cdef int ix, rc
    cdef size_t end
    cdef QBuf full
    if c.drained >= c.draining[1].n:
        if c.staged[1].n == 0 or (c.staged[1].n < c.stage_max and not c.stage_closed):
            return 0
        for ix in range(1, N_INDEXES):   # swap the buffers: no copy, no allocation
            full = c.staged[ix]
            c.staged[ix] = c.draining[ix]
            c.staged[ix].n = 0
            c.draining[ix] = full
            sort_entries(&c.draining[ix])
        c.drained = 0
    end = min(c.draining[1].n, c.drained + share)
    for ix in range(1, N_INDEXES):
        rc = put_run(c, ix, &c.draining[ix], c.drained, end)
        if rc:
            return rc
    c.drained = end
    return 0

cdef size_t staged_quads(const TxnCore* c) noexcept nogil:
    """The quads whose posc and ospc entries are staged or draining, not yet put."""
    return c.staged[1].n + (c.draining[1].n - c.drained)

cdef int put_staged(TxnCore* c) noexcept nogil:
    """Put every staged entry (see TxnCore.staged): what is draining, then
    the rest, sorted; 0 when none are."""
    cdef int ix, rc
    for ix in range(1, N_INDEXES):
        rc = put_run(c, ix, &c.draining[ix], c.drained, c.draining[ix].n)
        if rc == 0 and c.staged[ix].n:
            sort_entries(&c.staged[ix])
            rc = put_run(c, ix, &c.staged[ix], 0, c.staged[ix].n)
        c.staged[ix].n = 0
        if rc:
            return rc
    c.drained = c.draining[1].n
    return 0

cdef void free_staged(TxnCore* c) noexcept nogil:
    """Drop the staged entries and their buffers (the transaction ended)."""
    cdef int ix
    for ix in range(N_INDEXES):
        qb_free(&c.staged[ix])
        qb_free(&c.draining[ix])
    c.drained = 0

cdef int insert_quads(TxnCore* c, QBuf* q, size_t* added) noexcept nogil:
    """Insert id quads (s, p, o, c in k, a, b, c) into the three indices
    and their (graph, subject) pairs into cs; ``q`` is left holding the new
    ones, ``added`` their number."""
    cdef size_t i, n, m = 0
    cdef int rc
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
        rc = put_entry(c, IX_SPOC, &q.q[i])
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
    if c.stage_max:
        rc = stage_entries(c, q)
    else:
        rc = put_entries(c, q)
    if rc:
        return rc
    rc = graph_pairs(q, &e)
    if rc == 0:
        for i in range(e.n):
            rc = put_graph_subject(c, e.q[i].k, e.q[i].a)
            if rc:
                break
    qb_free(&e)
    return rc

cdef int delete_quads(TxnCore* c, QBuf* q) noexcept nogil:
    """Delete id quads from the three indices (absent entries are skipped),
    and from cs each (graph, subject) pair that no quad left holds; their
    terms are noted for the commit's removal of unused terms."""
    cdef size_t i
    cdef int ix, rc
    cdef bint left
    cdef Quad e
    cdef QBuf pairs
    cdef MDB_val k, v
    cdef uint8_t kb[ID_SIZE]
    cdef uint8_t vb[ENTRY_VALUE_SIZE]
    rc = put_staged(c)
    if rc:
        return rc
    for i in range(q.n):
        for ix in range(N_INDEXES):
            to_entry(ix, &q.q[i], &e)
            pack_entry(&e, kb, vb, &k, &v)
            rc = mdb_del(c.txn, c.dbi[DB_SPOC + ix], &k, &v)
            if rc and rc != MDB_NOTFOUND:
                return rc
        if release_id(c, q.q[i].k) or release_id(c, q.q[i].a) or release_id(c, q.q[i].b) \
                or release_id(c, q.q[i].c):
            return E_NOMEM
    memset(&pairs, 0, sizeof(QBuf))
    rc = graph_pairs(q, &pairs)
    for i in range(pairs.n):
        if rc:
            break
        rc = subject_in_graph(c, pairs.q[i].a, pairs.q[i].k, &left)
        if rc == 0 and not left:
            pack_pair(pairs.q[i].k, pairs.q[i].a, kb, vb, &k, &v)
            rc = mdb_del(c.txn, c.dbi[DB_CS], &k, &v)
            if rc == MDB_NOTFOUND:
                rc = 0
    qb_free(&pairs)
    return rc

cdef int subject_in_graph(TxnCore* c, uint32_t subject, uint32_t graph, bint* found) noexcept nogil:
    """Whether spoc holds a quad of ``subject`` in ``graph``."""
    cdef MDB_cursor* cur
    cdef int rc = core_cursor(c, DB_SPOC, &cur)
    if rc == 0:
        rc = spoc_holds(cur, subject, graph)
    found[0] = rc == 0
    return 0 if rc == MDB_NOTFOUND else rc


# ---------------------------------------------------------------- scans
cdef void plan_scan(ScanState* st, const uint32_t* ids) noexcept nogil:
    """Plan the scan of a pattern of ids (s, p, o, c; 0 = any): every pattern
    is one prefix scan of one index, but a graph's (only c bound), which
    is a prefix scan of spoc for each of the graph's subjects in cs."""
    cdef int i
    memset(st, 0, sizeof(ScanState))
    for i in range(4):
        st.want[i] = ids[i]
    if ids[0]:
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
        st.graph = ids[3]    # 0: every quad

cdef int scan_open(TxnCore* c, ScanState* st) noexcept nogil:
    """Open the scan's cursors (closed by its owner: scan_close)."""
    cdef int rc = mdb_cursor_open(c.txn, c.dbi[DB_SPOC + st.ix], &st.cur)
    if rc == 0 and st.graph:
        rc = mdb_cursor_open(c.txn, c.dbi[DB_CS], &st.subjects)
        if rc:
            mdb_cursor_close(st.cur)
            st.cur = NULL
    return rc

cdef void scan_close(ScanState* st) noexcept nogil:
    """Close the cursors scan_open opened."""
    if st.cur != NULL:
        mdb_cursor_close(st.cur)
        st.cur = NULL
    if st.subjects != NULL:
        mdb_cursor_close(st.subjects)
        st.subjects = NULL

cdef int scan_next_subject(ScanState* st) noexcept nogil:
    """A graph's scan moves to its next subject (the first one when it has
    none yet); MDB_NOTFOUND after the last."""
    cdef MDB_val k, v
    cdef uint8_t kb[ID_SIZE]
    cdef int rc
    if st.key == 0:
        put_be32(kb, st.graph)
        k.mv_data = kb
        k.mv_size = ID_SIZE
        rc = mdb_cursor_get(st.subjects, &k, &v, MDB_SET_KEY)
    else:
        rc = mdb_cursor_get(st.subjects, &k, &v, MDB_NEXT_DUP)
    if rc:
        return rc
    if v.mv_size != ID_SIZE or get_be32(<uint8_t*>v.mv_data) == 0:
        return E_CORRUPT   # (no id is 0: the scan would start again from the first subject)
    st.key = get_be32(<uint8_t*>v.mv_data)
    st.started = 0
    return 0

cdef int scan_count(ScanState* st, size_t* n) noexcept nogil:
    """The number of quads an open scan matches; MDB_NOTFOUND when done."""
    cdef MDB_val k, v
    cdef uint8_t kb[ID_SIZE]
    cdef uint32_t q[4]
    cdef int rc
    n[0] = 0
    if st.key and st.npre == 0 and st.start == 0 and \
            (st.want[0] != 0) + (st.want[1] != 0) + (st.want[2] != 0) + (st.want[3] != 0) == 1:
        # only the key is bound: LMDB counts its values
        put_be32(kb, st.key)
        k.mv_data = kb
        k.mv_size = ID_SIZE
        rc = mdb_cursor_get(st.cur, &k, &v, MDB_SET_KEY)
        if rc == 0:
            rc = mdb_cursor_count(st.cur, n)
            if rc == 0:
                rc = MDB_NOTFOUND
        return rc
    while True:
        rc = scan_next(st, q)
        if rc:
            return rc
        n[0] += 1

cdef int count_triples(TxnCore* c, size_t* n) noexcept nogil:
    """The number of distinct triples: a triple in several graphs is consecutive
    entries of spoc that differ only in c.  MDB_NOTFOUND when done."""
    cdef ScanState st
    cdef uint32_t ids[4]
    cdef uint32_t q[4]
    cdef uint32_t prev[3]
    cdef bint have = False
    cdef int rc
    n[0] = 0
    memset(ids, 0, sizeof(ids))
    plan_scan(&st, ids)
    rc = scan_open(c, &st)
    if rc:
        return rc
    while True:
        rc = scan_next(&st, q)
        if rc:
            break
        if not have or q[0] != prev[0] or q[1] != prev[1] or q[2] != prev[2]:
            n[0] += 1
            prev[0] = q[0]
            prev[1] = q[1]
            prev[2] = q[2]
            have = True
    scan_close(&st)
    return rc
