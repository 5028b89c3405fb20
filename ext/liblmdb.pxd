# Hand-written declarations of the LMDB C API (lmdb.h, 0.9.x) used by the
# store core (ext/lakebench/*.pyx).  Only what the core calls is declared.
# Every function here is safe to call without the GIL.

cdef extern from "lmdb.h" nogil:
    ctypedef struct MDB_env:
        pass
    ctypedef struct MDB_txn:
        pass
    ctypedef struct MDB_cursor:
        pass
    ctypedef unsigned int MDB_dbi

    ctypedef struct MDB_val:
        size_t mv_size
        void *mv_data

    ctypedef struct MDB_stat:
        unsigned int ms_psize
        unsigned int ms_depth
        size_t ms_branch_pages
        size_t ms_leaf_pages
        size_t ms_overflow_pages
        size_t ms_entries

    ctypedef struct MDB_envinfo:
        void *me_mapaddr
        size_t me_mapsize
        size_t me_last_pgno
        size_t me_last_txnid
        unsigned int me_maxreaders
        unsigned int me_numreaders

    ctypedef enum MDB_cursor_op:
        MDB_FIRST
        MDB_FIRST_DUP
        MDB_GET_BOTH
        MDB_GET_BOTH_RANGE
        MDB_GET_CURRENT
        MDB_GET_MULTIPLE
        MDB_LAST
        MDB_LAST_DUP
        MDB_NEXT
        MDB_NEXT_DUP
        MDB_NEXT_MULTIPLE
        MDB_NEXT_NODUP
        MDB_PREV
        MDB_PREV_DUP
        MDB_PREV_NODUP
        MDB_SET
        MDB_SET_KEY
        MDB_SET_RANGE

    # environment flags
    enum:
        MDB_NOSUBDIR
        MDB_NOSYNC
        MDB_RDONLY
        MDB_NOMETASYNC
        MDB_WRITEMAP
        MDB_NOTLS
        MDB_NORDAHEAD
    # database flags
    enum:
        MDB_REVERSEKEY
        MDB_DUPSORT
        MDB_INTEGERKEY
        MDB_DUPFIXED
        MDB_INTEGERDUP
        MDB_CREATE
    # write flags
    enum:
        MDB_NOOVERWRITE
        MDB_NODUPDATA
        MDB_CURRENT
        MDB_RESERVE
        MDB_APPEND
        MDB_APPENDDUP
        MDB_MULTIPLE
    # return codes
    enum:
        MDB_SUCCESS
        MDB_KEYEXIST
        MDB_NOTFOUND
        MDB_PAGE_NOTFOUND
        MDB_CORRUPTED
        MDB_PANIC
        MDB_VERSION_MISMATCH
        MDB_INVALID
        MDB_MAP_FULL
        MDB_DBS_FULL
        MDB_READERS_FULL
        MDB_TXN_FULL
        MDB_CURSOR_FULL
        MDB_PAGE_FULL
        MDB_MAP_RESIZED
        MDB_INCOMPATIBLE
        MDB_BAD_RSLOT
        MDB_BAD_TXN
        MDB_BAD_VALSIZE
        MDB_BAD_DBI

    char *mdb_version(int *major, int *minor, int *patch)
    char *mdb_strerror(int err)

    int mdb_env_create(MDB_env **env)
    int mdb_env_open(MDB_env *env, const char *path, unsigned int flags, unsigned int mode)
    int mdb_env_stat(MDB_env *env, MDB_stat *stat)
    int mdb_env_info(MDB_env *env, MDB_envinfo *stat)
    int mdb_env_sync(MDB_env *env, int force)
    int mdb_env_set_flags(MDB_env *env, unsigned int flags, int onoff)
    void mdb_env_close(MDB_env *env)
    int mdb_env_set_mapsize(MDB_env *env, size_t size)
    int mdb_env_set_maxreaders(MDB_env *env, unsigned int readers)
    int mdb_env_set_maxdbs(MDB_env *env, MDB_dbi dbs)
    int mdb_env_get_maxkeysize(MDB_env *env)
    int mdb_env_get_fd(MDB_env *env, int *fd)
    int mdb_reader_check(MDB_env *env, int *dead)

    int mdb_txn_begin(MDB_env *env, MDB_txn *parent, unsigned int flags, MDB_txn **txn)
    size_t mdb_txn_id(MDB_txn *txn)
    int mdb_txn_commit(MDB_txn *txn)
    void mdb_txn_abort(MDB_txn *txn)

    int mdb_dbi_open(MDB_txn *txn, const char *name, unsigned int flags, MDB_dbi *dbi)
    int mdb_drop(MDB_txn *txn, MDB_dbi dbi, int del_)
    int mdb_stat(MDB_txn *txn, MDB_dbi dbi, MDB_stat *stat)

    int mdb_get(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data)
    int mdb_put(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data, unsigned int flags)
    int mdb_del(MDB_txn *txn, MDB_dbi dbi, MDB_val *key, MDB_val *data)

    int mdb_cursor_open(MDB_txn *txn, MDB_dbi dbi, MDB_cursor **cursor)
    void mdb_cursor_close(MDB_cursor *cursor)
    int mdb_cursor_get(MDB_cursor *cursor, MDB_val *key, MDB_val *data, MDB_cursor_op op)
    int mdb_cursor_put(MDB_cursor *cursor, MDB_val *key, MDB_val *data, unsigned int flags)
    int mdb_cursor_del(MDB_cursor *cursor, unsigned int flags)
    int mdb_cursor_count(MDB_cursor *cursor, size_t *countp)
