# The C half of a transaction: its state (TxnCore), quad index writes and
# pattern scans, all without the GIL; its term ids are _termids'.  _store's
# Txn holds one TxnCore and is its Python face.
from libc.stdint cimport uint8_t, uint32_t, uint64_t
from libc.string cimport memset

from liblmdb cimport *
from lakebench._codec cimport N_DBS, N_INDEXES, E_CORRUPT, ID_SIZE, ENTRY_VALUE_SIZE, put_be32, get_be32, unpack_entry
from lakebench._tables cimport TTable, HTable, HSlots, Bloom, QBuf, Buf, buf_put

cdef struct TxnCore:
    MDB_txn* txn
    MDB_dbi* dbi              # the environment's handles, N_DBS of them
    TTable* cache             # the environment's committed terms; written only under its writer lock
    MDB_cursor* cur[N_DBS]    # opened on demand, one per sub-database
    uint32_t next_id          # the next new term id (0: not read yet)
    uint32_t last_key[N_INDEXES + 1]   # the last key of each quad index and of cs, for appends
    bint last_known[N_INDEXES + 1]
    TTable seen               # terms resolved in this (write) transaction
    # Term ids not yet filed in t2i (see _txncore): which ids are filed, and
    # the table of the others' hashes this transaction looks them up in.
    uint32_t filed            # ids up to this one are in t2i or its young level (FILED_ALL: every id)
    bint filed_known
    bint defer                # a write that leaves its new ids out of t2i
    bint young                # ... whose sweeps file them into t2i's young level and merge it into t2i
    int young_cur             # the young tree the sweeps file into (0: t2y0, 1: t2y1); the other ...
    uint32_t merge_from       # ... a merge pass that began at this id (0: none) and lasts merge_len ids ...
    uint32_t merge_len
    uint64_t merge_pos        # ... has copied into t2i below this hash
    bint merge_known
    HTable* unfiled           # the environment's table (a deferring store), or NULL ...
    HTable own                # ... and then this transaction's own, built when first needed
    Bloom* bloom              # the environment's filter of t2i's hashes (a deferring store), or NULL
    HSlots* slice             # the environment's buffers for a sweep's slice (a deferring store), or NULL
    uint32_t sweep_upto       # a sweep filing (filed, sweep_upto] is at hash sweep_pos (0: none)
    uint64_t sweep_pos
    bint sweep_known
    # The ids of the deleted quads' terms: at commit, those no quad uses any
    # more are removed (see _termgc).
    Buf released              # uint32 ids, native order
    # The snapshot this transaction reads (its LMDB txn id), and the id of
    # the last commit of the process that removed terms (the environment's;
    # NULL: none kept): an older snapshot may not use the writer's table.
    uint64_t snapshot
    const uint64_t* removals
    # Entries of posc and ospc (in index order) not yet put (see _txncore's
    # stage_entries): ``staged`` gathers the new quads' entries; once those
    # of ``stage_max`` quads are there, they are sorted and become
    # ``draining``, put a share at each following write (from
    # ``drained`` on).  Everything is put before anything reads or deletes
    # those indexes, and at the commit (put_staged).  Index 0 (spoc) is never
    # staged: it tells which quads are new.  stage_max 0: every entry put at
    # once.  ``stage_closed``: the writes stage nothing more and drain what
    # is staged (the last writes before a commit, which then has little to put).
    QBuf staged[N_INDEXES]
    QBuf draining[N_INDEXES]
    size_t drained            # (the same place in both: they hold the same quads)
    size_t stage_max
    bint stage_closed

cdef enum:
    FILED_ALL = 0xFFFFFFFFU
    # Each write drains at least 1/STAGE_SHARES of a full stage (and twice
    # what it staged): a stage closed before a commit is empty after at most
    # 2 * STAGE_SHARES writes (what was draining, then what was staged).
    STAGE_SHARES = 16

cdef inline int core_cursor(TxnCore* c, int db, MDB_cursor** out) noexcept nogil:
    """The transaction's cursor on sub-database ``db``, opened on first use."""
    cdef int rc
    if c.cur[db] == NULL:
        rc = mdb_cursor_open(c.txn, c.dbi[db], &c.cur[db])
        if rc:
            return rc
    out[0] = c.cur[db]
    return 0

cdef void core_close_cursors(TxnCore* c) noexcept nogil

cdef inline int release_id(TxnCore* c, uint32_t tid) noexcept nogil:
    """Note that a quad naming ``tid`` was deleted (its term may be unused now)."""
    if tid == 0:
        return 0
    return buf_put(&c.released, &tid, sizeof(uint32_t))

# index writes
cdef int insert_quads(TxnCore* c, QBuf* q, size_t* added) noexcept nogil
cdef int put_staged(TxnCore* c) noexcept nogil
cdef size_t staged_quads(const TxnCore* c) noexcept nogil
cdef void free_staged(TxnCore* c) noexcept nogil
cdef int delete_quads(TxnCore* c, QBuf* q) noexcept nogil

# scans
cdef struct ScanState:
    MDB_cursor* cur
    int ix
    uint32_t key          # 0: every key
    uint32_t pre[3]       # leading value components that must match
    int npre
    uint32_t want[4]      # s, p, o, c filters (0 = any)
    # The first value of the component after the prefix (a subject and
    # predicate's scan: the least object id; 0: from the first): the seek
    # that makes a page of a container's children cost the page, not the
    # children before it.
    uint32_t start
    int started
    # A graph's scan (only c bound): its subjects, from cs, each one a scan
    # of spoc filtered by the graph.  NULL for every other scan.
    MDB_cursor* subjects
    uint32_t graph

cdef void plan_scan(ScanState* st, const uint32_t* ids) noexcept nogil
cdef int scan_open(TxnCore* c, ScanState* st) noexcept nogil
cdef void scan_close(ScanState* st) noexcept nogil
cdef int scan_next_subject(ScanState* st) noexcept nogil
cdef int scan_count(ScanState* st, size_t* n) noexcept nogil
cdef int count_triples(TxnCore* c, size_t* n) noexcept nogil

cdef inline int scan_key_next(ScanState* st, uint32_t* q) noexcept nogil:
    """Next matching quad of the scan's key (of every key when it has none)."""
    cdef MDB_val k, v
    cdef uint8_t kb[ID_SIZE]
    cdef uint8_t vb[ENTRY_VALUE_SIZE]
    cdef int rc, i
    while True:
        if not st.started:
            st.started = 1
            if st.key:
                put_be32(kb, st.key)
                k.mv_data = kb
                k.mv_size = ID_SIZE
                if st.npre or st.start:
                    memset(vb, 0, ENTRY_VALUE_SIZE)
                    for i in range(st.npre):
                        put_be32(vb + 4 * i, st.pre[i])
                    if st.start and st.npre < 3:
                        put_be32(vb + 4 * st.npre, st.start)
                    v.mv_data = vb
                    v.mv_size = ENTRY_VALUE_SIZE
                    rc = mdb_cursor_get(st.cur, &k, &v, MDB_GET_BOTH_RANGE)
                else:
                    rc = mdb_cursor_get(st.cur, &k, &v, MDB_SET_KEY)
            else:
                rc = mdb_cursor_get(st.cur, &k, &v, MDB_FIRST)
        else:
            rc = mdb_cursor_get(st.cur, &k, &v, MDB_NEXT_DUP if st.key else MDB_NEXT)
        if rc:
            return rc
        if k.mv_size != ID_SIZE or v.mv_size != ENTRY_VALUE_SIZE:
            return E_CORRUPT
        # the entry's values in index order: a, b, c
        for i in range(st.npre):
            if get_be32(<uint8_t*>v.mv_data + 4 * i) != st.pre[i]:
                return MDB_NOTFOUND   # past the prefix: sorted, so nothing more matches
        unpack_entry(st.ix, &k, &v, q)
        if (st.want[0] and q[0] != st.want[0]) or (st.want[1] and q[1] != st.want[1]) \
                or (st.want[2] and q[2] != st.want[2]) or (st.want[3] and q[3] != st.want[3]):
            continue
        return 0

cdef inline int scan_next(ScanState* st, uint32_t* q) noexcept nogil:
    """Next matching quad into q[4]; MDB_NOTFOUND at the end (inline: it runs once
    per quad of every read)."""
    cdef int rc
    if st.subjects == NULL:
        return scan_key_next(st, q)
    while True:            # a graph's scan: subject after subject
        if st.key:
            rc = scan_key_next(st, q)
            if rc != MDB_NOTFOUND:
                return rc
        rc = scan_next_subject(st)
        if rc:
            return rc
