# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The checker of the store core: verifies one snapshot of a store.

Every term is valid, in the table of its kind (``i2l`` holds literals
under ids with the literal bit, ``i2t`` the other ids), and filed under its own hash (up to ``meta``'s
``terms_filed``, and those a sweep filed; the other ids are in no hash
entry), every hash entry
names a term with that hash, no term is stored twice, every quad of ``spoc`` is in
the two other indices (which hold as many entries), ``cs`` holds exactly
the (graph, subject) pairs of the quads, and every id in a quad or a
declared graph names a term.  It reads the raw entries itself rather than through the
transaction's scan, since a wrong-sized entry is a problem to report here,
not an error that stops the walk.

It is written for damaged stores too: a walk of a tree stops once it has
met more entries than the tree records (damaged pages can lead a cursor
round in a loop forever), and an id is range-checked before it indexes the
id bitmap.  What it cannot survive (liblmdb following a damaged page number
out of the file) is left to a child process (lakebench.store.preflight).
"""
from libc.stdint cimport uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy, memcmp, memset
from libc.stdlib cimport calloc, free

from liblmdb cimport *
from lakebench._tables cimport HTable, ht_add, ht_home, ht_next, ht_free
from lakebench._codec cimport (E_NOMEM, DB_META, DB_T2I, DB_T2Y0, DB_T2Y1, DB_I2T, DB_I2L, ID_LITERAL, id_seq, is_literal_term,
                               DB_SPOC, DB_CS, DB_GRAPHS, IX_SPOC, N_INDEXES, ID_SIZE, E_CORRUPT, Quad, put_be32, spoc_holds,
                               pack_pair,
                               get_be32, put_be64, get_be64, ld32, to_entry, pack_entry, unpack_entry,
                               valid_term, get_term, get_stored, read_term, stored_equals, is_compact, TermBuf,
                               termbuf_free, hash_bytes)

cdef struct Problem:
    int code
    uint32_t a
    uint32_t b
    uint32_t c
    uint32_t d
    int ix

cdef struct Check:
    uint8_t* bitmap       # bit 2 * seq + literal: the ids that exist
    uint32_t max_id       # the highest sequence number of an id
    uint32_t filed        # the last id filed in t2i (0xFFFFFFFFU: every id) ...
    uint32_t sweep_upto   # ... and those up to sweep_upto whose hash is below sweep_pos
    uint64_t sweep_pos
    int young_cur         # the young tree the sweeps file into; a merge pass under way ...
    uint32_t merge_from   # ... (0: none) has copied the other's ids below merge_pos into t2i
    uint64_t merge_pos
    size_t copied         # filed ids in t2i and in the young tree a pass copies (counted once in filed_terms)
    size_t terms
    size_t filed_terms
    size_t unfiled_terms
    size_t hash_entries
    size_t collisions
    size_t entries[N_INDEXES]
    size_t pairs          # entries of cs
    size_t triples
    size_t graphs
    size_t subjects
    Problem* probs
    size_t nprobs
    size_t max_problems
    size_t total_problems
    TermBuf term          # a literal's term, expanded from i2l's compact form ...
    TermBuf term2         # ... and a second one, to compare two

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
    K_WALK_LOOPS     # ix: which tree (W_*), a: the entries it records
    K_BAD_ID_KEY
    K_UNFILED_HASHED
    K_HASH_BEYOND_FILED
    K_FILED_BEYOND_LAST
    K_BAD_FILED
    K_BAD_SWEEP
    K_MISPLACED_TERM
    K_SEQ_TWICE
    K_MISSING_PAIR   # a quad's (graph, subject) not in cs
    K_STALE_PAIR     # a pair of cs that no quad holds
    K_UNKNOWN_GRAPH  # a declared graph (graphs) whose id names no term
    K_FILED_TWICE    # a filed id in two of t2i and its young trees (b: which, a bit each) where no pass copies it
    K_BAD_MERGE      # meta's terms_merging
    K_NOT_COPIED     # a filed id below a merge pass's position in the young tree it copies, not in t2i
    K_YOUNG_LEFT     # with no merge pass, ids in the young tree the sweeps do not file into

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

# The trees the checker walks from end to end, for K_WALK_LOOPS.
cdef enum:
    W_I2T = 0
    W_T2I
    W_SPOC
    W_CS
    W_I2L
    W_GRAPHS
    W_T2Y0
    W_T2Y1

# The hash index's trees, in the order a lookup does not follow but the
# checker does: t2i, then the young level's two (indexes into ``trees``).
cdef int N_HASH_TREES = 3
cdef int HASH_TREE_DB[3]
HASH_TREE_DB[:] = [DB_T2I, DB_T2Y0, DB_T2Y1]
cdef int HASH_TREE_W[3]
HASH_TREE_W[:] = [W_T2I, W_T2Y0, W_T2Y1]

cdef str _problem_text(Problem* p):
    names = ("spoc", "posc", "ospc")
    walked = ("i2t", "t2i", "spoc", "cs", "i2l", "graphs", "t2y0", "t2y1")  # by W_*
    quad = f"(s={p.a}, p={p.b}, o={p.c}, c={p.d})"
    if p.code == K_BAD_TERM:
        return f"term {p.a}: invalid encoding"
    if p.code == K_TERM_NOT_HASHED:
        return f"term {p.a}: missing from the hash index"
    if p.code == K_HASH_DANGLING:
        return f"{walked[p.ix]}: an entry points to term id {p.a}, which does not exist"
    if p.code == K_HASH_WRONG:
        return f"{walked[p.ix]}: term {p.a} is filed under a hash that is not its own"
    if p.code == K_DUPLICATE_TERM:
        return f"terms {p.a} and {p.b} are the same term stored twice"
    if p.code == K_COUNT_TERMS:
        if p.ix:   # the young level holds ids
            return (f"t2i and its young level hold {p.a} entries but i2t and i2l hold {p.b} terms filed in them "
                    f"(an id a merge pass copied counts twice)")
        return f"t2i holds {p.a} entries but i2t and i2l hold {p.b} terms filed in it"
    if p.code == K_UNFILED_HASHED:
        return f"term {p.a}: in {walked[p.ix]}, though not filed (the last filed id is {p.b})"
    if p.code == K_HASH_BEYOND_FILED:
        return f"{walked[p.ix]}: an entry points to term id {p.a}, which is not filed (the last filed id is {p.b})"
    if p.code == K_BAD_SWEEP:
        return f"meta: terms_filing is damaged (the sweep's last id {p.a}, the last filed id {p.b})"
    if p.code == K_FILED_BEYOND_LAST:
        return f"meta: terms_filed is {p.a}, above the last term id ({p.b})"
    if p.code == K_FILED_TWICE:
        trees = " and ".join(walked[HASH_TREE_W[i]] for i in range(N_HASH_TREES) if p.b >> i & 1)
        return f"term {p.a}: filed twice, in {trees}"
    if p.code == K_BAD_MERGE:
        return f"meta: terms_merging is damaged (the pass's first id {p.a}, the last id {p.b})"
    if p.code == K_YOUNG_LEFT:
        return f"{walked[p.ix]}: holds ids ({p.a:,}) though no merge pass copies it and the sweeps file into the other"
    if p.code == K_NOT_COPIED:
        return f"term {p.a}: in {walked[p.ix]} below the merge pass's position, but not copied into t2i"
    if p.code == K_BAD_FILED:
        return "meta: terms_filed is not a term id (wrong size)"
    if p.code == K_MISSING_ENTRY:
        return f"quad {quad} is in spoc but missing from {names[p.ix]}"
    if p.code == K_UNKNOWN_ID:
        return f"quad {quad} uses an id that names no term"
    if p.code == K_COUNT_INDEX:
        return f"{names[p.ix]} holds {p.a} entries but spoc holds {p.b}"
    if p.code == K_BAD_ENTRY:   # ix: the walked tree (W_*)
        return f"{walked[p.ix]}: an entry has the wrong key or value size"
    if p.code == K_BAD_ID_KEY:
        return f"{walked[p.ix]}: a key is not a term id (wrong size or literal bit, or above the last id)"
    if p.code == K_MISPLACED_TERM:
        return f"term {p.a}: in i2l, which holds literals only"
    if p.code == K_SEQ_TWICE:
        return f"terms {p.a} (i2t) and {p.b} (i2l) share the sequence number {p.a}"
    if p.code == K_MISSING_PAIR:
        return f"quad {quad} is in spoc but cs does not list its subject under its graph"
    if p.code == K_UNKNOWN_GRAPH:
        return f"graphs declares graph {p.a}, an id that names no term"
    if p.code == K_STALE_PAIR:
        return f"cs lists subject {p.a} under graph {p.b}, which holds no quad of it"
    if p.code == K_WALK_LOOPS:
        return (f"{walked[p.ix]}: a walk met more entries than the {p.a:,} the tree records "
                f"(its pages are damaged: they lead round in a loop, or the count is wrong); walk stopped")
    return f"problem {p.code}"

cdef inline bint is_filed(Check* ck, uint32_t tid, uint64_t h) noexcept nogil:
    """Whether id ``tid`` (of hash ``h``) must be in t2i (or its young level)."""
    tid = id_seq(tid)
    return tid <= ck.filed or (tid <= ck.sweep_upto and h < ck.sweep_pos)

cdef inline size_t id_bit(uint32_t tid) noexcept nogil:
    return 2 * <size_t>id_seq(tid) + (tid >> 31)

cdef inline bint has_id(Check* ck, uint32_t i) noexcept nogil:
    return id_seq(i) != 0 and id_seq(i) <= ck.max_id and (ck.bitmap[id_bit(i) >> 3] & (1 << (id_bit(i) & 7))) != 0

cdef inline void mark_id(Check* ck, uint32_t i) noexcept nogil:
    """Record that id ``i`` exists (its number is at most ck.max_id)."""
    ck.bitmap[id_bit(i) >> 3] |= <uint8_t>(1 << (id_bit(i) & 7))

cdef int last_key_seq(MDB_txn* txn, MDB_dbi dbi, uint32_t* m) noexcept nogil:
    """The sequence number of the last key of i2t or i2l (0: none)."""
    cdef MDB_cursor* cur
    cdef MDB_val k, v
    cdef int rc = mdb_cursor_open(txn, dbi, &cur)
    if rc:
        return rc
    rc = mdb_cursor_get(cur, &k, &v, MDB_LAST)
    m[0] = id_seq(ld32(k.mv_data)) if rc == 0 and k.mv_size == 4 else 0
    mdb_cursor_close(cur)
    return 0 if rc == 0 or rc == MDB_NOTFOUND else rc

cdef inline bint copied_by_pass(Check* ck, uint64_t h) noexcept nogil:
    """Whether a merge pass under way has copied the ids of hash ``h`` of the
    young tree it copies (the one the sweeps do not file into) into t2i."""
    return ck.merge_from != 0 and h < ck.merge_pos

cdef int hash_ids(MDB_cursor* cur, int tree, uint64_t h, uint32_t* ids, size_t most, size_t* n) noexcept nogil:
    """Append to ``ids`` (``n`` held, ``most`` at most) the ids filed under
    hash ``h`` in hash tree ``tree`` (0: t2i; 1, 2: the young trees, whose
    keys are hash and id), read through ``cur``."""
    cdef MDB_val k, v
    cdef uint8_t hk[8]
    cdef int rc
    put_be64(hk, h)
    k.mv_data = hk
    k.mv_size = 8
    if tree == 0:
        rc = mdb_cursor_get(cur, &k, &v, MDB_SET_KEY)
        while rc == 0 and n[0] < most:
            if v.mv_size == 4:
                ids[n[0]] = get_be32(<uint8_t*>v.mv_data)
                n[0] += 1
            rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT_DUP)
    else:
        rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE)   # hash alone sorts first
        while rc == 0 and n[0] < most:
            if k.mv_size != 12 or get_be64(<uint8_t*>k.mv_data) != h:
                break
            ids[n[0]] = get_be32(<uint8_t*>k.mv_data + 8)
            n[0] += 1
            rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)
    return 0 if rc == 0 or rc == MDB_NOTFOUND else rc

cdef int hash_entry_rc(MDB_cursor* cur, int tree, uint64_t h, uint32_t tid) noexcept nogil:
    """0 when hash tree ``tree`` holds (``h``, ``tid``), MDB_NOTFOUND when not."""
    cdef MDB_val k, v
    cdef uint8_t kb[12]
    put_be64(kb, h)
    put_be32(kb + 8, tid)
    k.mv_data = kb
    if tree == 0:
        k.mv_size = 8
        v.mv_data = kb + 8
        v.mv_size = 4
        return mdb_cursor_get(cur, &k, &v, MDB_GET_BOTH)
    k.mv_size = 12
    return mdb_cursor_get(cur, &k, &v, MDB_SET)

cdef int walk_terms(MDB_txn* txn, MDB_dbi* dbi, int db, MDB_cursor** trees, int ntrees, HTable* unfiled,
                    Check* ck) noexcept nogil:
    """Check each term of i2t or i2l (``db``): its key, encoding and kind,
    and its hash entries in t2i and its young trees (``trees``, ``ntrees``
    of them: 1 when the store has no young level): in one of them if it is
    filed (in t2i too when a merge pass copied it), and otherwise in none
    and the term stored once (``unfiled``: those met)."""
    cdef int i, found, err, old = 1 + (1 - ck.young_cur)
    cdef MDB_cursor* cur
    cdef MDB_val k, v, t
    cdef MDB_stat stat
    cdef uint32_t tid, literal = ID_LITERAL if db == DB_I2L else 0
    cdef int tree = W_I2L if literal else W_I2T
    cdef uint64_t h
    cdef size_t walked = 0
    cdef int rc = mdb_cursor_open(txn, dbi[db], &cur)
    if rc:
        return rc
    mdb_stat(txn, dbi[db], &stat)
    rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST)
    while rc == 0:
        if walked == stat.ms_entries:
            problem(ck, K_WALK_LOOPS, <uint32_t>stat.ms_entries, 0, 0, 0, tree)
            rc = MDB_NOTFOUND
            break
        walked += 1
        ck.terms += 1
        if k.mv_size != 4 or (ld32(k.mv_data) & ID_LITERAL) != literal or id_seq(ld32(k.mv_data)) > ck.max_id:
            problem(ck, K_BAD_ID_KEY, 0, 0, 0, 0, tree)   # keys out of order: damage
            rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)
            continue
        tid = ld32(k.mv_data)
        mark_id(ck, tid)
        if literal and has_id(ck, id_seq(tid)):   # i2t, walked first, has the number too
            problem(ck, K_SEQ_TWICE, id_seq(tid), tid, 0, 0, 0)
        # t: the encoded term (i2l holds literals compact; i2t, encoded terms only)
        rc = E_CORRUPT if not literal and is_compact(<uint8_t*>v.mv_data, v.mv_size) else read_term(&v, &ck.term, &t)
        if rc == E_CORRUPT:   # no term to hash or compare: one problem, and on
            problem(ck, K_BAD_TERM, tid, 0, 0, 0, 0)
            rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)
            continue
        if rc:
            break
        if not valid_term(<uint8_t*>t.mv_data, t.mv_size):
            problem(ck, K_BAD_TERM, tid, 0, 0, 0, 0)
        elif literal and not is_literal_term(<uint8_t*>t.mv_data):
            problem(ck, K_MISPLACED_TERM, tid, 0, 0, 0, 0)
        h = hash_bytes(<uint8_t*>t.mv_data, t.mv_size)
        found = 0   # a bit for each hash tree holding (h, tid)
        err = 0
        for i in range(ntrees):
            rc = hash_entry_rc(trees[i], i, h, tid)
            if rc == 0:
                found |= 1 << i
            elif rc != MDB_NOTFOUND:
                err = rc
                break
        if err:
            rc = err
            break
        if is_filed(ck, tid, h):
            ck.filed_terms += 1
            if found == 0:
                problem(ck, K_TERM_NOT_HASHED, tid, 0, 0, 0, 0)
            elif found == (1 | 1 << old) and copied_by_pass(ck, h):
                ck.copied += 1
            elif found & (found - 1):
                problem(ck, K_FILED_TWICE, tid, <uint32_t>found, 0, 0, 0)
            elif found == 1 << old and copied_by_pass(ck, h):
                problem(ck, K_NOT_COPIED, tid, 0, 0, 0, HASH_TREE_W[old])
        else:
            ck.unfiled_terms += 1
            for i in range(ntrees):
                if found >> i & 1:
                    problem(ck, K_UNFILED_HASHED, tid, ck.filed, 0, 0, HASH_TREE_W[i])
            rc = check_unfiled(txn, dbi, trees, ntrees, unfiled, tid, <uint8_t*>t.mv_data, t.mv_size, h, ck)
            if rc:
                break
        rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)
    mdb_cursor_close(cur)
    return 0 if rc == MDB_NOTFOUND else rc

cdef int walk_hash_index(MDB_txn* txn, MDB_dbi* dbi, int tree, MDB_cursor** trees, int ntrees,
                         Check* ck) noexcept nogil:
    """Walk hash tree ``tree`` (0: t2i; 1, 2: the young trees): each
    entry's size, term, hash and place against what is filed.  A hash whose
    ids (in all ``ntrees`` trees, read through ``trees``) are several is
    checked for equal terms once, in the walk of the first tree holding it."""
    cdef MDB_cursor* walk
    cdef MDB_val k, v, v2
    cdef MDB_stat stat
    cdef uint32_t tid
    cdef uint32_t ids[64]
    cdef uint64_t h
    cdef uint8_t prev[8]
    cdef bint have = False
    cdef size_t ndups, total, walked = 0
    cdef int rc, j, first
    cdef int w = HASH_TREE_W[tree]
    rc = mdb_cursor_open(txn, dbi[HASH_TREE_DB[tree]], &walk)
    if rc:
        return rc
    mdb_stat(txn, dbi[HASH_TREE_DB[tree]], &stat)
    rc = mdb_cursor_get(walk, &k, &v, MDB_FIRST)
    while rc == 0:
        if walked == stat.ms_entries:
            problem(ck, K_WALK_LOOPS, <uint32_t>stat.ms_entries, 0, 0, 0, w)
            rc = MDB_NOTFOUND
            break
        walked += 1
        ck.hash_entries += 1
        if (k.mv_size != 8 or v.mv_size != 4) if tree == 0 else (k.mv_size != 12 or v.mv_size != 0):
            problem(ck, K_BAD_ENTRY, 0, 0, 0, 0, w)
        else:
            h = get_be64(<uint8_t*>k.mv_data)
            tid = get_be32(<uint8_t*>v.mv_data if tree == 0 else <uint8_t*>k.mv_data + 8)
            if not has_id(ck, tid):
                problem(ck, K_HASH_DANGLING, tid, 0, 0, 0, w)
            elif not is_filed(ck, tid, h):
                problem(ck, K_HASH_BEYOND_FILED, tid, ck.filed, 0, 0, w)
            else:
                if get_term(txn, dbi, tid, &v2, &ck.term) == 0:
                    if hash_bytes(<uint8_t*>v2.mv_data, v2.mv_size) != h:
                        problem(ck, K_HASH_WRONG, tid, 0, 0, 0, w)
            if not have or memcmp(prev, k.mv_data, 8) != 0:   # first id under this hash
                memcpy(prev, k.mv_data, 8)
                have = True
                if ntrees == 1:
                    mdb_cursor_count(walk, &total)
                    first = 0
                else:   # the ids under it in every tree
                    total = 0
                    first = -1
                    for j in range(ntrees):
                        ndups = 0
                        rc = hash_ids(trees[j], j, h, ids, 64, &ndups)
                        if rc:
                            break
                        if ndups and first < 0:
                            first = j
                        total += ndups
                    if rc:
                        break
                if total > 1 and first == tree:
                    rc = check_collisions(txn, dbi, trees, ntrees, h, ck)
                    if rc:
                        break
        rc = mdb_cursor_get(walk, &k, &v, MDB_NEXT)
    mdb_cursor_close(walk)
    return 0 if rc == MDB_NOTFOUND else rc

cdef int run_check(MDB_txn* txn, MDB_dbi* dbi, Check* ck) noexcept nogil:
    cdef MDB_cursor* cur = NULL
    cdef MDB_cursor* c2 = NULL
    cdef MDB_cursor* trees[3]   # lookups in the hash trees (t2i, the young level's two)
    cdef bint young_level = dbi[DB_T2Y0] != dbi[DB_T2I]   # none in a store of format 6 or older, read as it is
    cdef int ntrees = N_HASH_TREES if young_level else 1
    cdef size_t young_entries[2]
    cdef int i
    cdef MDB_val k, v, k2, v2
    cdef MDB_stat stat
    cdef int rc, ix
    cdef uint32_t tid, prev_s = 0, missing_s = 0, missing_c = 0
    cdef uint32_t q[4]
    cdef uint8_t kb[4]
    cdef uint8_t vb[12]
    cdef uint8_t prev[12]
    cdef bint have = False
    cdef Quad e, qq
    cdef size_t ndups, walked
    cdef HTable unfiled
    memset(&unfiled, 0, sizeof(HTable))
    # 1. terms: i2t and i2l ids -> bitmap; each term valid and filed under
    #    its hash, or, above the last filed id, in no hash entry and stored once
    ck.filed = 0xFFFFFFFFU
    k.mv_data = <char*>b"terms_filed"
    k.mv_size = 11
    rc = mdb_get(txn, dbi[DB_META], &k, &v)
    if rc == 0:
        if v.mv_size == 4:
            ck.filed = get_be32(<uint8_t*>v.mv_data)
        else:
            problem(ck, K_BAD_FILED, 0, 0, 0, 0, 0)
    elif rc != MDB_NOTFOUND:
        return rc
    k.mv_data = <char*>b"terms_filing"
    k.mv_size = 12
    rc = mdb_get(txn, dbi[DB_META], &k, &v)
    if rc == 0:
        if v.mv_size == 12 and ck.filed != 0xFFFFFFFFU and get_be32(<uint8_t*>v.mv_data) > ck.filed:
            ck.sweep_upto = get_be32(<uint8_t*>v.mv_data)
            ck.sweep_pos = get_be64(<uint8_t*>v.mv_data + 4)
        else:
            problem(ck, K_BAD_SWEEP, get_be32(<uint8_t*>v.mv_data) if v.mv_size >= 4 else 0, ck.filed, 0, 0, 0)
    elif rc != MDB_NOTFOUND:
        return rc
    rc = last_key_seq(txn, dbi[DB_I2T], &ck.max_id)
    if rc == 0:
        rc = last_key_seq(txn, dbi[DB_I2L], &tid)
        if tid > ck.max_id:
            ck.max_id = tid
    if rc:
        return rc
    if ck.filed != 0xFFFFFFFFU and ck.filed > ck.max_id:
        problem(ck, K_FILED_BEYOND_LAST, ck.filed, ck.max_id, 0, 0, 0)
    if ck.sweep_upto > ck.max_id:
        problem(ck, K_BAD_SWEEP, ck.sweep_upto, ck.filed, 0, 0, 0)
    k.mv_data = <char*>b"terms_merging"
    k.mv_size = 13
    rc = mdb_get(txn, dbi[DB_META], &k, &v)
    if rc == 0:   # the current young tree; the pass's first id (0: none), its length and position
        if v.mv_size == 20 and young_level and get_be32(<uint8_t*>v.mv_data) <= 1 and (
                (get_be32(<uint8_t*>v.mv_data + 4) == 0 and get_be32(<uint8_t*>v.mv_data + 8) == 0
                 and get_be64(<uint8_t*>v.mv_data + 12) == 0)
                or (get_be32(<uint8_t*>v.mv_data + 4) <= ck.max_id and get_be32(<uint8_t*>v.mv_data + 8) != 0)):
            ck.young_cur = get_be32(<uint8_t*>v.mv_data)
            ck.merge_from = get_be32(<uint8_t*>v.mv_data + 4)
            ck.merge_pos = get_be64(<uint8_t*>v.mv_data + 12)
        else:
            problem(ck, K_BAD_MERGE, get_be32(<uint8_t*>v.mv_data + 4) if v.mv_size >= 8 else 0, ck.max_id,
                    0, 0, 0)
    elif rc != MDB_NOTFOUND:
        return rc
    young_entries[0] = young_entries[1] = 0
    if young_level:
        for i in range(2):
            rc = mdb_stat(txn, dbi[HASH_TREE_DB[1 + i]], &stat)
            if rc:
                return rc
            young_entries[i] = stat.ms_entries
        if ck.merge_from == 0 and young_entries[1 - ck.young_cur]:
            problem(ck, K_YOUNG_LEFT, <uint32_t>young_entries[1 - ck.young_cur], 0, 0, 0,
                    HASH_TREE_W[2 - ck.young_cur])
        if young_entries[0] == 0 and young_entries[1] == 0:
            ntrees = 1   # both empty (a store that never used them): t2i's lookups alone
    ck.bitmap = <uint8_t*>calloc((<size_t>ck.max_id >> 2) + 1, 1)
    if ck.bitmap == NULL:
        return E_NOMEM
    for i in range(ntrees):
        trees[i] = NULL
    rc = 0
    for i in range(ntrees):
        rc = mdb_cursor_open(txn, dbi[HASH_TREE_DB[i]], &trees[i])
        if rc:
            break
    if rc == 0:
        rc = walk_terms(txn, dbi, DB_I2T, trees, ntrees, &unfiled, ck)
    if rc == 0:
        rc = walk_terms(txn, dbi, DB_I2L, trees, ntrees, &unfiled, ck)
    ht_free(&unfiled)
    # 2. the hash index, t2i then its young level: every entry points to an
    #    existing term with that hash; ids sharing a hash (in any tree) are
    #    distinct terms (collisions, told apart)
    for i in range(ntrees):
        if rc == 0:
            rc = walk_hash_index(txn, dbi, i, trees, ntrees, ck)
    for i in range(ntrees):
        if trees[i] != NULL:
            mdb_cursor_close(trees[i])
    if rc:
        return rc
    if ck.hash_entries != ck.filed_terms + ck.copied:
        problem(ck, K_COUNT_TERMS, <uint32_t>ck.hash_entries, <uint32_t>(ck.filed_terms + ck.copied), 0, 0,
                ntrees > 1)
    # 3. every spoc quad is in the two other indices, with known ids, and
    #    its (graph, subject) pair in cs
    for ix in range(N_INDEXES):
        mdb_stat(txn, dbi[DB_SPOC + ix], &stat)
        ck.entries[ix] = stat.ms_entries
    for ix in range(1, N_INDEXES):
        if ck.entries[ix] != ck.entries[0]:
            problem(ck, K_COUNT_INDEX, <uint32_t>ck.entries[ix], <uint32_t>ck.entries[0], 0, 0, ix)
    rc = mdb_cursor_open(txn, dbi[DB_SPOC], &cur)
    if rc:
        return rc
    walked = 0
    rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST)
    while rc == 0:
        if walked == ck.entries[0]:
            problem(ck, K_WALK_LOOPS, <uint32_t>ck.entries[0], 0, 0, 0, W_SPOC)
            rc = MDB_NOTFOUND
            break
        walked += 1
        if k.mv_size != 4 or v.mv_size != 12:
            problem(ck, K_BAD_ENTRY, 0, 0, 0, 0, W_SPOC)
            rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)
            continue
        unpack_entry(IX_SPOC, &k, &v, q)
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
        for ix in range(1, N_INDEXES + 1):
            if ix < N_INDEXES:
                to_entry(ix, &qq, &e)
                pack_entry(&e, kb, vb, &k2, &v2)
            else:                     # cs: graph -> subject
                pack_pair(qq.c, qq.k, kb, vb, &k2, &v2)
            if c2 != NULL:
                mdb_cursor_close(c2)
                c2 = NULL
            rc = mdb_cursor_open(txn, dbi[DB_SPOC + ix] if ix < N_INDEXES else dbi[DB_CS], &c2)
            if rc:
                mdb_cursor_close(cur)
                return rc
            rc = mdb_cursor_get(c2, &k2, &v2, MDB_GET_BOTH)
            if rc == MDB_NOTFOUND:
                if ix < N_INDEXES:
                    problem(ck, K_MISSING_ENTRY, q[0], q[1], q[2], q[3], ix)
                elif q[0] != missing_s or q[3] != missing_c:   # once per pair, mostly
                    problem(ck, K_MISSING_PAIR, q[0], q[1], q[2], q[3], 0)
                    missing_s = q[0]
                    missing_c = q[3]
            elif rc:
                mdb_cursor_close(cur)
                mdb_cursor_close(c2)
                return rc
        rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)
    if c2 != NULL:
        mdb_cursor_close(c2)
        c2 = NULL
    mdb_cursor_close(cur)
    if rc != MDB_NOTFOUND:
        return rc
    # 4. cs: every pair names a subject with a quad in the graph (with 3,
    #    cs holds exactly the pairs of the quads); graphs: its distinct keys
    mdb_stat(txn, dbi[DB_CS], &stat)
    rc = mdb_cursor_open(txn, dbi[DB_CS], &cur)
    if rc:
        return rc
    rc = mdb_cursor_open(txn, dbi[DB_SPOC], &c2)
    if rc:
        mdb_cursor_close(cur)
        return rc
    have = False
    rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST)
    while rc == 0:
        if ck.pairs == stat.ms_entries:
            problem(ck, K_WALK_LOOPS, <uint32_t>stat.ms_entries, 0, 0, 0, W_CS)
            rc = MDB_NOTFOUND
            break
        ck.pairs += 1
        if k.mv_size != ID_SIZE or v.mv_size != ID_SIZE:
            problem(ck, K_BAD_ENTRY, 0, 0, 0, 0, W_CS)
        else:
            if not have or memcmp(prev, k.mv_data, 4) != 0:
                ck.graphs += 1
                memcpy(prev, k.mv_data, 4)
                have = True
            rc = spoc_holds(c2, get_be32(<uint8_t*>v.mv_data), get_be32(<uint8_t*>k.mv_data))
            if rc == MDB_NOTFOUND or rc == E_CORRUPT:   # a wrong-sized entry is reported by 3
                problem(ck, K_STALE_PAIR, get_be32(<uint8_t*>v.mv_data), get_be32(<uint8_t*>k.mv_data), 0, 0, 0)
            elif rc:
                break
        rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)
    mdb_cursor_close(c2)
    mdb_cursor_close(cur)
    if rc != MDB_NOTFOUND:
        return rc
    # 5. graphs: every declared graph is a stored term
    rc = mdb_cursor_open(txn, dbi[DB_GRAPHS], &cur)
    if rc:
        return rc
    mdb_stat(txn, dbi[DB_GRAPHS], &stat)
    walked = 0
    rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST)
    while rc == 0:
        if walked == stat.ms_entries:
            problem(ck, K_WALK_LOOPS, <uint32_t>stat.ms_entries, 0, 0, 0, W_GRAPHS)
            rc = MDB_NOTFOUND
            break
        walked += 1
        if k.mv_size != ID_SIZE or not has_id(ck, get_be32(<uint8_t*>k.mv_data)):
            problem(ck, K_UNKNOWN_GRAPH, get_be32(<uint8_t*>k.mv_data) if k.mv_size == ID_SIZE else 0, 0, 0, 0, 0)
        rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)
    mdb_cursor_close(cur)
    return 0 if rc == MDB_NOTFOUND else rc

cdef int check_unfiled(MDB_txn* txn, MDB_dbi* dbi, MDB_cursor** trees, int ntrees, HTable* seen, uint32_t tid,
                       const uint8_t* p, size_t n, uint64_t h, Check* ck) noexcept nogil:
    """An unfiled term is stored once: neither a filed term (under its hash
    in a hash tree: ``trees``) nor an earlier unfiled one (``seen``) is the
    same term."""
    cdef MDB_val t
    cdef uint32_t ids[64]
    cdef size_t pos = ht_home(seen, h), nids = 0, i
    cdef uint32_t other
    cdef int j, rc = 0
    for j in range(ntrees):
        rc = hash_ids(trees[j], j, h, ids, 64, &nids)
        if rc:
            return rc
    for i in range(nids):
        other = ids[i]
        if other != tid and get_stored(txn, dbi, other, &t) == 0 and stored_equals(<const uint8_t*>t.mv_data,
                                                                                   t.mv_size, p, n):
            problem(ck, K_DUPLICATE_TERM, other, tid, 0, 0, 0)
    while True:
        other = ht_next(seen, h, &pos)
        if other == 0:
            break
        if get_stored(txn, dbi, other, &t) == 0 and stored_equals(<const uint8_t*>t.mv_data, t.mv_size, p, n):
            problem(ck, K_DUPLICATE_TERM, other, tid, 0, 0, 0)
    return E_NOMEM if ht_add(seen, h, tid) else 0

cdef int check_collisions(MDB_txn* txn, MDB_dbi* dbi, MDB_cursor** trees, int ntrees, uint64_t h,
                          Check* ck) noexcept nogil:
    """Several ids share hash ``h`` (in t2i and its young trees, read
    through ``trees``): no two may name equal terms.  An id in two trees (a
    merge pass's copy) is one id; a hash of two distinct ids is a collision."""
    cdef uint32_t ids[64]
    cdef size_t n = 0, distinct = 0, i, j
    cdef MDB_val va, vb_
    cdef int rc, tree
    for tree in range(ntrees):
        rc = hash_ids(trees[tree], tree, h, ids, 64, &n)
        if rc:
            return rc
    for i in range(n):   # the distinct ids, in place
        for j in range(distinct):
            if ids[j] == ids[i]:
                break
        else:
            ids[distinct] = ids[i]
            distinct += 1
    if distinct < 2:
        return 0
    ck.collisions += 1
    for i in range(distinct):
        for j in range(i + 1, distinct):
            if get_term(txn, dbi, ids[i], &va, &ck.term2) == 0 and get_stored(txn, dbi, ids[j], &vb_) == 0:
                if stored_equals(<const uint8_t*>vb_.mv_data, vb_.mv_size, <const uint8_t*>va.mv_data, va.mv_size):
                    problem(ck, K_DUPLICATE_TERM, ids[i], ids[j], 0, 0, 0)
    return 0

cdef tuple check_snapshot(MDB_txn* txn, MDB_dbi* dbi, size_t max_problems, int* error):
    """``(problems, summary)`` of the snapshot ``txn``; None, with ``error``
    set to the failing call's code, when the walk itself fails."""
    cdef Check ck
    cdef int rc
    memset(&ck, 0, sizeof(Check))
    ck.max_problems = max_problems
    ck.probs = <Problem*>calloc(max_problems + 1, sizeof(Problem))
    if ck.probs == NULL:
        raise MemoryError()
    try:
        with nogil:
            rc = run_check(txn, dbi, &ck)
        if rc:
            error[0] = rc
            return None
        problems = [_problem_text(&ck.probs[i]) for i in range(ck.nprobs)]
        if ck.total_problems > ck.nprobs:
            problems.append(f"... and {ck.total_problems - ck.nprobs} more problems")
        summary = {
            "quads": ck.entries[0],
            "triples": ck.triples,
            "terms": ck.terms,
            "graphs": ck.graphs,
            "subjects": ck.subjects,
            "index_entries": {"spoc": ck.entries[0], "posc": ck.entries[1], "ospc": ck.entries[2]},
            "graph_subjects": ck.pairs,
            "hash_entries": ck.hash_entries,
            # ids in t2i and in the young tree the merge pass under way copies (two entries each)
            "hash_copies": ck.copied,
            "unfiled_terms": ck.unfiled_terms,
            "hash_collisions": ck.collisions,
        }
        return problems, summary
    finally:
        free(ck.bitmap)
        free(ck.probs)
        termbuf_free(&ck.term)
        termbuf_free(&ck.term2)
