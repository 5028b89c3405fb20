# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The compiled core of the lakebench triple store, its Python face:
environments and transactions.  LMDB is
called through its C API, every call without the GIL.

The core is split by concern, one Cython module each (``ext/lakebench/``):
``_codec`` the byte layout (keys, entry order, term kinds, the term hash),
``_tables`` in-memory tables, ``_ntparser`` N-Triples -> terms,
``_rdfwriter`` terms -> N-Triples / Turtle, ``_check`` the checker,
``_errors`` the errors and the one place LMDB's return codes become them,
``_txncore`` a transaction's C half (index writes, scans), ``_termids`` its
term ids (lookup, creation, filing them in t2i late), ``_scan`` the
iterator over a scan (quads, or text through ``_rdfwriter``), ``_upgrade``
the upgrade of older stores, and this module.
Everything Python sees is here (re-exported where it is made).

The byte layout of an environment is described in ``_codec``.

Terms are never deleted, so an id, once committed, names the same term
forever.
"""
from libc.stdint cimport uint8_t, uint32_t, uint64_t, uintptr_t
from libc.string cimport memset
from libc.stdlib cimport malloc, free
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.pythread cimport (PyThread_type_lock, PyThread_allocate_lock, PyThread_free_lock,
                               PyThread_acquire_lock, PyThread_release_lock, WAIT_LOCK,
                               PyThread_get_thread_ident)

from liblmdb cimport *
from lakebench._codec cimport (DB_META, DB_T2I, DB_T2Y0, DB_T2Y1, DB_I2T, DB_I2L, DB_SPOC, DB_CS, IX_SPOC, DB_NS, DB_GRAPHS, N_DBS, E_PARSE, E_DANGLING,
                               put_be32,
                               get_be32, get_term, TermBuf, termbuf_free, hash_bytes, check_term)
from lakebench._tables cimport (TTable, HTable, tt_bytes, ht_bytes, hslots_bytes, bloom_bytes, Bloom, QBuf, StoredForms, sf_free, tt_intern, tt_free,
                               tt_clear, buf_free,
                               qb_push, qb_free,
                               ht_free, bloom_free, HSlots, hslots_free)
from lakebench._ntparser cimport Parser, parser_init, parser_free, parse_ntriples, parse_error_args
from lakebench._check cimport check_snapshot
from lakebench._scan cimport Scan, open_scan
from lakebench._errors cimport raise_rc
from lakebench._upgrade cimport graphs_from_cspo
from lakebench._txncore cimport (TxnCore, ScanState, FILED_ALL, core_close_cursors, insert_quads, put_staged,
                                 staged_quads, STAGE_SHARES,
                                 free_staged, delete_quads, plan_scan, scan_open, scan_close, scan_next, scan_count,
                                 count_triples, release_id)
from lakebench._termids cimport (lookup_id, resolve_id, resolve_table, merge_cache, unfiled_span, file_terms,
                                 file_terms_step)
from lakebench._termgc cimport drop_unused_terms, terms_generation

from libc.errno cimport errno, EINVAL
from posix.mman cimport mmap, munmap, msync, PROT_READ, MAP_SHARED, MAP_FAILED, MS_SYNC

cdef extern from "<fcntl.h>" nogil:
    int sync_file_range(int fd, long long offset, long long nbytes, unsigned int flags)
    unsigned int SYNC_FILE_RANGE_WAIT_BEFORE, SYNC_FILE_RANGE_WRITE, SYNC_FILE_RANGE_WAIT_AFTER
    int posix_fadvise(int fd, long long offset, long long length, int advice)
    int POSIX_FADV_WILLNEED

cdef extern from *:
    """
    #include <sys/mman.h>
    #ifndef MADV_POPULATE_WRITE
    #define MADV_POPULATE_WRITE 23  /* Linux 5.14 */
    #endif
    """
    int madvise(void *addr, size_t length, int advice) nogil
    int MADV_POPULATE_WRITE

import os

#: A map written in place (``writemap``) has its file allocated ahead of its last page in
#: steps of this much (``posix_fallocate``: about a millisecond a step here).  Its map
#: grows (maps the file again: munmap and mmap, up to half a second at tens of GB) only
#: once a store reaches the map it reserved, by half of what is used, and by at least this.
WRITEMAP_STEP = 256 << 20
#: The most pages one LMDB write transaction can take past the last committed page but for
#: overflow pages (LMDB's dirty list, MDB_IDL_UM_MAX = 2**17 entries, one page each, is
#: checked at every page allocation, written in place or not: MDB_TXN_FULL past it).
#: Overflow pages hold values over about 2 KB (long terms): at most twice their bytes.
TXN_PAGES = 1 << 17
#: A batch commit's flush (:meth:`Environment.write_back`) sends the data file to disk
#: this much at a time, so that a log flush meets at most one range in flight.
FLUSH_STEP = 2 << 20
#: A map written in place: how far past the last committed page :meth:`Environment.cache_ahead`
#: brings the file into the page cache, several batches' new pages (a seed batch takes
#: about 30 MB of them).
CACHE_AHEAD = 256 << 20
cdef size_t CACHE_AHEAD_STEP = 128 << 10  # what Linux reads per call at least (below)
#: A durable map written in place: how far past the last committed page
#: :meth:`Environment.map_ahead` maps the file writable, two batches' new pages at a
#: million seed children (about 30 KiB a child, 1,024 children a batch, at 100,000).
MAP_AHEAD = 128 << 20
#: The quads a write transaction stages the posc and ospc entries of before it sorts
#: them and puts them, a share at each following write (``Environment(index_stage=...)``);
#: 0: none staged.  4,096: about twenty seed children.  A million unsynced children
#: (scripts/durable-commit.py, docs/store.rst): the last tenth's mean write 1.17 ms,
#: p99.9 4.59 ms, against 1.32 and 1.36 ms, 4.62 and 4.92 ms in two runs unstaged.  Put
#: at once rather than spread, the write that put a stage waited for twenty children's
#: puts (p99.9 13.3 ms).
DEFAULT_INDEX_STAGE = 4096
#: A stage closed (``Txn.stage_closed``) is empty after this many more writes: each
#: drains at least a sixteenth of a full stage.  The store closes its batch's stage this
#: many writes before the commit, which then has nothing staged to put.
STAGE_DRAIN_WRITES = 2 * STAGE_SHARES
# Pages mapped per madvise call: the call holds the process's map lock (shared) while it
# faults them in, and a writer's mmap (a large malloc) waits for that lock.
cdef size_t MAP_AHEAD_STEP = 2 << 20

# Made by the modules that own them; Python reads them here.
from lakebench._codec import (FORMAT_VERSION, DB_NAMES, ID_LITERAL_BIT, INDEX_ORDER, KIND_IRI, KIND_BLANK, KIND_LITERAL,
                              KIND_LANG_LITERAL, KIND_TYPED_LITERAL, hash_term)
from lakebench._errors import StoreError, LmdbError, MapFullError, ParseError
from lakebench._ntparser import PARSE_MESSAGES
from lakebench._rdfwriter import render_ntriples_term
from lakebench._scan import iter_batches


def lmdb_version():
    """The linked LMDB's version string."""
    return mdb_version(NULL, NULL, NULL).decode()


# ---------------------------------------------------------------- the environment
cdef class Environment:
    """One LMDB environment (a directory) holding one store.

    ``durability="durable"`` (default): each commit is fsynced.
    ``durability="nosync"`` opens with MDB_NOSYNC: a commit is written to the
    OS but not fsynced, so a power loss can lose the last commits (never
    corrupt the store), while a process crash loses nothing committed.

    ``writemap``: pages are written in place through the map (MDB_WRITEMAP):
    a commit has no pages to copy out, and the batch's dirty pages are the
    file's, not private memory.  The file is allocated up to the map's size
    (``posix_fallocate``) before the map is opened or grown, so every page
    written through it has its block: a full disk is ENOSPC when the map
    grows, not a SIGBUS at a write (on file systems that overwrite a block
    in place: ext4, XFS, tmpfs; a copy-on-write one, btrfs or ZFS, needs new
    blocks even then); the map grows by half of what is used (at least
    WRITEMAP_STEP), and :meth:`close` gives back the blocks past the last
    page used.  For the one writer of a store without fsync (what a power loss
    may take, LMDB's MDB_NOSYNC contract, is the same with it).

    ``defer_filing``: this process is the store's only writer and uses the
    environment from one thread (the write-ahead log's owner): its writes
    leave new term ids out of ``t2i``, and a sweep files them, a share at
    each write (``Txn.file_due_terms``) and commit, once they are a quarter
    of the filed ones, at least ``filing_lag`` and at most ``filing_max``
    (see _termids: the table of unfiled ids holds about that many).
    Any other writer files them all at its first new term.

    ``index_stage``: a write transaction's entries of posc and ospc are
    staged; once those of this many quads are, they are sorted and put a
    share at each following write (all of them before the transaction reads
    or deletes from those indexes, or commits; see _txncore's
    ``stage_entries``); 0: each write's put at once.

    ``young_level``: with ``defer_filing``, the sweeps file the ids into a
    young level of t2i (two trees in turn, ``t2y0`` and ``t2y1``), whose
    leaves are few, and a merge pass copies the other young tree into t2i a
    hash range at each write, one pass every few generations, then empties it
    (see _termids): each t2i leaf is then rewritten once a pass rather than
    once a generation.
    """
    cdef MDB_env* env
    cdef MDB_dbi dbi[N_DBS]
    cdef readonly object path
    cdef readonly str durability   # "durable" or "nosync" (lakebench.durability)
    cdef readonly bint readonly
    cdef readonly bint writemap
    cdef readonly size_t allocated    # writemap: the data file's bytes allocated from its start
    cdef bint _can_map_ahead          # False once the kernel refused MADV_POPULATE_WRITE
    cdef char* _mapped_base           # the map that map_ahead last mapped pages of ...
    cdef size_t _mapped_to            # ... and the end of what it mapped there
    cdef public int open_txns
    cdef PyThread_type_lock wlock
    cdef long writer_thread
    cdef TTable cache          # committed terms -> ids (IRIs and short literals; see _termids)
    cdef TTable spare_seen     # the last write transaction's table of terms, emptied, for the next
    cdef TTable* writer_seen   # the open write transaction's table of terms (NULL: none open)
    cdef HTable unfiled        # ids not filed in t2i (defer_filing only; see _termids)
    cdef Bloom bloom           # hashes that may be in t2i (defer_filing only)
    cdef HSlots slice          # the buffers a sweep's slice is sorted in (defer_filing only)
    cdef readonly bint defer_filing
    cdef long filing_thread    # the thread whose transactions share the tables above
    cdef readonly uint32_t filing_lag
    cdef readonly uint32_t filing_max
    cdef public size_t index_stage
    cdef public bint young_level
    # meta's count of commits that removed terms, as this process last saw
    # it: when another process's commit changed it, the cache is cleared
    cdef uint64_t removals_seen
    cdef bint removals_known
    cdef readonly uint64_t terms_removed   # by this process's commits
    cdef uint64_t removal_txnid   # the LMDB txn id of this process's last commit that removed terms

    def __cinit__(self):
        self.env = NULL
        self.wlock = PyThread_allocate_lock()
        self.writer_thread = -1
        self._can_map_ahead = True
        self._mapped_base = NULL
        self._mapped_to = 0
        self.writer_seen = NULL
        memset(&self.cache, 0, sizeof(TTable))
        memset(&self.unfiled, 0, sizeof(HTable))
        memset(&self.bloom, 0, sizeof(Bloom))
        memset(&self.slice, 0, sizeof(HSlots))

    def __init__(self, path, *, size_t map_size=1 << 28, durability="durable", bint readonly=False,
                 unsigned int max_readers=126, bint writemap=False, bint defer_filing=False,
                 uint32_t filing_lag=1 << 20, uint32_t filing_max=1 << 22,
                 size_t index_stage=DEFAULT_INDEX_STAGE, bint young_level=False):
        cdef int rc, grown = 0
        cdef MDB_envinfo info
        cdef unsigned int flags = MDB_NOTLS | MDB_NORDAHEAD
        cdef bytes bpath = os.fsencode(os.fspath(path))
        self.path = os.fspath(path)
        if durability not in ("durable", "nosync"):
            raise ValueError(f"durability must be one of durable, nosync (got {durability!r})")
        self.durability = str(durability)
        self.readonly = readonly
        self.defer_filing = defer_filing and not readonly
        self.filing_thread = <long>PyThread_get_thread_ident()
        self.filing_lag = filing_lag
        self.filing_max = filing_max
        self.index_stage = index_stage
        self.young_level = young_level
        if durability != "durable":
            flags |= MDB_NOSYNC
        if readonly:
            flags |= MDB_RDONLY
        elif writemap:
            flags |= MDB_WRITEMAP
        self.writemap = writemap and not readonly
        cdef const char* cpath = bpath
        while True:
            rc = mdb_env_create(&self.env)
            if rc:
                raise_rc(rc, "mdb_env_create")
            mdb_env_set_maxdbs(self.env, N_DBS + 2)
            mdb_env_set_maxreaders(self.env, max_readers)
            mdb_env_set_mapsize(self.env, map_size)
            with nogil:
                rc = mdb_env_open(self.env, cpath, flags, 0o644)
            if rc:
                mdb_env_close(self.env)
                self.env = NULL
                raise_rc(rc, f"cannot open LMDB environment {self.path!r}")
            if not self.writemap:
                break
            self.allocated = 0
            try:  # before the first write through the map
                self.ensure_room()
                break
            except OSError:
                # No room for the map's blocks: the file back to its pages, and the
                # store written with pwrite, whose full disk is an error at a write.
                self._trim()
                mdb_env_close(self.env)
                self.env = NULL
                flags &= ~MDB_WRITEMAP
                self.writemap = False
        try:
            while True:
                try:
                    self._open_dbs()
                    break
                except MapFullError:
                    # The upgrade of an older store writes in the opening
                    # transaction, where nothing else can grow the map.
                    if grown == 8:
                        raise
                    mdb_env_info(self.env, &info)
                    rc = mdb_env_set_mapsize(self.env, info.me_mapsize * 2)
                    if rc:
                        raise_rc(rc, "mdb_env_set_mapsize")
                    if self.writemap:
                        self.ensure_room()
                    grown += 1
        except BaseException:
            mdb_env_close(self.env)
            self.env = NULL
            raise

    cdef _open_dbs(self):
        cdef MDB_txn* txn
        cdef int rc, i
        cdef unsigned int f
        cdef uint32_t fmt
        cdef MDB_val k, v
        cdef bytes name
        cdef uint8_t ver[4]
        cdef bint wrote_format = False
        cdef bint unflushed = self.durability != "durable"   # opened MDB_NOSYNC
        rc = mdb_txn_begin(self.env, NULL, MDB_RDONLY if self.readonly else 0, &txn)
        if rc == MDB_MAP_RESIZED:   # another process grew the map since this one was mapped
            mdb_env_set_mapsize(self.env, 0)
            self._allocate_map()
            rc = mdb_txn_begin(self.env, NULL, MDB_RDONLY if self.readonly else 0, &txn)
        if rc:
            raise_rc(rc, "mdb_txn_begin")
        try:
            for i, n in enumerate(DB_NAMES):
                name = n.encode()
                f = MDB_DUPSORT | MDB_DUPFIXED if n in ("t2i", "spoc", "posc", "ospc", "cs") else 0
                if n in ("i2t", "i2l"):
                    f = MDB_INTEGERKEY
                if not self.readonly:
                    f |= MDB_CREATE
                rc = mdb_dbi_open(txn, name, f, &self.dbi[i])
                if rc == MDB_NOTFOUND and i in (DB_T2Y0, DB_T2Y1) and _format_of(txn, self.dbi[DB_META]) < 7:
                    # a store from before the young level, read as it is: no
                    # young level is the young trees' handles being t2i's
                    # (every reader of them skips them then)
                    self.dbi[i] = self.dbi[DB_T2I]
                    continue
                if rc == MDB_NOTFOUND:
                    raise StoreError(f"{self.path!r} is not a lakebench store (no {n!r} database)")
                if rc:
                    raise_rc(rc, f"opening database {n!r}")
                if i == DB_META and self.readonly:
                    # a store older than format 4 lacks what this format reads
                    # (cs, i2l); format 4 differs only by the compact
                    # literals that format 5 writes, and reads as it is
                    # (as does 5: format 6 changed no byte of the layout)
                    fmt = _format_of(txn, self.dbi[DB_META])
                    if 0 < fmt < 4:
                        raise StoreError(f"{self.path!r} is a store of format {fmt}, an older lakebench's: "
                                         f"open it once for writing to upgrade it to format {FORMAT_VERSION}")
            k.mv_data = <char*>b"format"
            k.mv_size = 6
            rc = mdb_get(txn, self.dbi[DB_META], &k, &v)
            if rc and (rc != MDB_NOTFOUND or self.readonly):
                raise_rc(rc, "reading the format version")
            fmt = 0 if rc else (get_be32(<uint8_t*>v.mv_data) if v.mv_size == 4 else 0xFFFFFFFFU)
            if rc == 0 and not 1 <= fmt <= FORMAT_VERSION:
                raise StoreError(f"{self.path!r}: unsupported store format")
            # A new store gets the version.  A writable open upgrades an
            # older store before any write (an older lakebench then refuses
            # it rather than misread it: ids left out of t2i, from format
            # 2; literals in i2l, 3; no cspo, 4; compact literals in i2l,
            # 5, which needs no rewrite: the literals stored before keep
            # their form, read as they are; a commit that a crash may leave
            # cut, 6, which changes no byte: an older open would take the cut
            # commit as the store; t2i's young level, 7, its two trees created empty here).
            if not self.readonly and fmt != FORMAT_VERSION:
                if 0 < fmt < 4:
                    with nogil:
                        rc = graphs_from_cspo(txn, self.dbi[DB_CS])
                    if rc == MDB_NOTFOUND:
                        raise StoreError(f"{self.path!r}: a store of format {fmt} without its cspo index "
                                         "(damaged): cannot upgrade it")
                    if rc:
                        raise_rc(rc, "upgrading cspo to cs")
                put_be32(ver, FORMAT_VERSION)
                v.mv_data = ver
                v.mv_size = 4
                rc = mdb_put(txn, self.dbi[DB_META], &k, &v, 0)
                if rc:
                    raise_rc(rc, "writing the format version")
                wrote_format = True
        except BaseException:
            mdb_txn_abort(txn)
            raise
        # Committing (even a read-only transaction) keeps the database handles.  A commit that
        # wrote the format (a new store, an upgrade) is flushed in order, as a durable one is,
        # even where this environment's are not: a durable store's writer commits unflushed
        # and flushes aside (commitsync), and nothing would undo this one, made before its
        # first intent, if a power cut left it cut.
        if wrote_format and unflushed:
            mdb_env_set_flags(self.env, MDB_NOSYNC, 0)
        rc = mdb_txn_commit(txn)
        if wrote_format and unflushed:
            mdb_env_set_flags(self.env, MDB_NOSYNC, 1)
        if rc:
            raise_rc(rc, "mdb_txn_commit")

    def __dealloc__(self):
        if self.env != NULL:
            mdb_env_close(self.env)
            self.env = NULL
        tt_free(&self.cache)
        tt_free(&self.spare_seen)
        ht_free(&self.unfiled)
        bloom_free(&self.bloom)
        hslots_free(&self.slice)
        if self.wlock != NULL:
            PyThread_free_lock(self.wlock)

    cdef int _live(self) except -1:
        if self.env == NULL:
            raise StoreError("the environment is closed")
        return 0

    def close(self):
        """Close the environment (every transaction must be finished); a map written
        in place gives back the blocks of its file past the last page used."""
        if self.env != NULL:
            if self.open_txns:
                raise StoreError(f"{self.open_txns} transaction(s) still open")
            if self.writemap:
                self._trim()
            mdb_env_close(self.env)
            self.env = NULL
        tt_clear(&self.cache)
        tt_free(&self.spare_seen)
        ht_free(&self.unfiled)
        bloom_free(&self.bloom)
        hslots_free(&self.slice)

    @property
    def closed(self):
        return self.env == NULL

    def begin(self, bint write=False):
        """A new transaction; at most one writer per environment and thread."""
        self._live()
        return Txn._begin(self, write)

    def heap_bytes(self):
        """The bytes this process holds allocated for the environment's own tables, by table
        (LMDB's own allocations and the map, whose pages are the file's, are not counted):

        * ``unfiled_ids``: the table of ids not yet filed in t2i, about two generations of
          at most ``filing_max`` ids; its parts only grow, so this is its most since open;
        * ``bloom_filter``: t2i's hashes, a fixed size once built;
        * ``term_cache``: committed terms, bounded (see _termids);
        * ``write_terms``: the open write transaction's table of terms, or the one kept
          for the next write (a batch of 1,024 seed children fills some 32 MiB);
        * ``sweep_slice``: the buffers a sweep's slice is sorted in.

        Allocated, not resident: a page of a table that nothing wrote yet takes no memory."""
        cdef size_t write_terms
        self._live()
        write_terms = tt_bytes(&self.spare_seen)   # empty while a write is open: it took it
        if self.writer_seen != NULL:
            write_terms += tt_bytes(self.writer_seen)
        return {"unfiled_ids": ht_bytes(&self.unfiled), "bloom_filter": bloom_bytes(&self.bloom),
                "term_cache": tt_bytes(&self.cache), "write_terms": write_terms,
                "sweep_slice": hslots_bytes(&self.slice)}

    def info(self):
        """Map size, pages used, page size and reader slots."""
        cdef MDB_envinfo info
        cdef MDB_stat st
        self._live()
        mdb_env_info(self.env, &info)
        mdb_env_stat(self.env, &st)
        return {
            "map_size": info.me_mapsize,
            "last_pgno": info.me_last_pgno,
            "page_size": st.ms_psize,
            "used_bytes": (info.me_last_pgno + 1) * st.ms_psize,
            "last_txnid": info.me_last_txnid,
            "max_readers": info.me_maxreaders,
            "num_readers": info.me_numreaders,
        }

    cdef int _fd(self) except -1:
        cdef int fd
        cdef int rc = mdb_env_get_fd(self.env, &fd)
        if rc:
            raise_rc(rc, "mdb_env_get_fd")
        return fd

    cdef int _allocate(self, size_t start, size_t stop) except -1:
        """Give the data file its blocks from ``start`` to ``stop`` (a map written in place:
        LMDB made the file as long as the map, sparse); OSError (ENOSPC on a full disk) when
        the disk has not the room, ``allocated`` as it was."""
        cdef int fd = self._fd()
        try:
            os.posix_fallocate(fd, start, stop - start)
        except OSError as exc:
            raise OSError(exc.errno, f"cannot allocate {stop - start:,} bytes to {self.path}/data.mdb "
                                     f"for its map: {exc.strerror}") from None
        self.allocated = max(self.allocated, stop)
        return 0

    def ensure_room(self, size_t more=0):
        """A map written in place: make sure its file has blocks for whatever the open write
        transaction may still take, and ``more`` bytes besides: TXN_PAGES past the last
        committed page, allocated in steps of WRITEMAP_STEP (so that a page written through
        the map always has its block: a full disk is ENOSPC here, never a SIGBUS at a write).
        Cheap when there is room; may be called with transactions open (it does not remap)."""
        cdef MDB_envinfo info
        cdef MDB_stat st
        cdef size_t need
        self._live()
        if not self.writemap:
            return
        mdb_env_info(self.env, &info)
        mdb_env_stat(self.env, &st)
        need = min((info.me_last_pgno + 1 + <size_t>TXN_PAGES) * st.ms_psize + more, info.me_mapsize)
        if self.allocated < need:
            self._allocate(self.allocated, min(need + <size_t>WRITEMAP_STEP, info.me_mapsize))

    cdef int _allocate_map(self) except -1:
        """A map written in place, resized by another process: its room."""
        if self.writemap:
            self.ensure_room()
        return 0

    cdef void _trim(self) noexcept:
        """The data file cut to the last page of the last commit: past it there is nothing to
        keep, and a map written in place allocated it (its next open allocates the map again).
        Only disk: a failure is no matter."""
        cdef MDB_envinfo info
        cdef MDB_stat st
        cdef int fd
        if mdb_env_get_fd(self.env, &fd) != 0:
            return
        mdb_env_info(self.env, &info)
        mdb_env_stat(self.env, &st)
        try:
            os.ftruncate(fd, (info.me_last_pgno + 1) * st.ms_psize)
        except OSError:
            pass

    cdef size_t _extra(self, MDB_envinfo* info, size_t used) noexcept:
        """What a map written in place grows by: half of what is used, at least
        WRITEMAP_STEP, or the map itself while it is smaller than that."""
        return max(used // 2, min(<size_t>WRITEMAP_STEP, info.me_mapsize))

    def grow_due(self):
        """Whether the map should grow ahead of need: three quarters used, or, written in
        place, less than a transaction's room (TXN_PAGES) and a quarter of what it would grow
        by left; or, written in place, its file's allocation behind (:meth:`ensure_room`)."""
        cdef MDB_envinfo info
        cdef MDB_stat st
        cdef size_t used, room
        self._live()
        mdb_env_info(self.env, &info)
        mdb_env_stat(self.env, &st)
        used = (info.me_last_pgno + 1) * st.ms_psize
        if self.writemap:
            room = <size_t>TXN_PAGES * st.ms_psize
            return (info.me_mapsize - min(used, info.me_mapsize) < room + self._extra(&info, used) // 4
                    or self.allocated < min(used + room, info.me_mapsize))
        return used * 4 > info.me_mapsize * 3

    def grow(self, size_t min_size=0):
        """Grow the map (at least to ``min_size``): double it, or, written in place, by
        half of what is used (at least WRITEMAP_STEP), its file allocated first (OSError
        ENOSPC when the disk has not the room, the map as it was).  A map written in place
        that has room left (it reserved far more than it uses) is not remapped: its file's
        allocation catches up (:meth:`ensure_room`).  No transaction may be open here."""
        cdef MDB_envinfo info
        cdef MDB_stat st
        cdef size_t size, used, room
        cdef int rc
        self._live()
        if self.open_txns:
            raise StoreError(f"cannot grow the map while {self.open_txns} transaction(s) are open")
        mdb_env_info(self.env, &info)
        if self.writemap:
            mdb_env_stat(self.env, &st)
            used = (info.me_last_pgno + 1) * st.ms_psize
            room = <size_t>TXN_PAGES * st.ms_psize
            if min_size <= info.me_mapsize and info.me_mapsize - min(used, info.me_mapsize) >= (
                    room + self._extra(&info, used) // 4):
                self.ensure_room()
                return info.me_mapsize
            size = max(info.me_mapsize + self._extra(&info, used), min_size)
        else:
            size = max(info.me_mapsize * 2, min_size)
        rc = mdb_env_set_mapsize(self.env, size)
        if rc:
            raise_rc(rc, "mdb_env_set_mapsize")
        if self.writemap:
            try:
                self.ensure_room()
            except OSError:
                # No blocks for the larger map's room: the map as it was (LMDB sized the file
                # to the larger map, sparse; what was allocated stays allocated).
                mdb_env_set_mapsize(self.env, info.me_mapsize)
                raise
        return size

    def sync(self, bint force=True):
        """Flush written data to disk (what a ``nosync`` commit skips)."""
        cdef int rc
        self._live()
        with nogil:
            rc = mdb_env_sync(self.env, force)
        if rc:
            raise_rc(rc, "mdb_env_sync")

    def write_back(self, size_t step=FLUSH_STEP):
        """Send the written pages of the data file's used part to disk ``step`` bytes at a
        time, each range's writes waited for (``sync_file_range``).  No cache flush:
        :meth:`sync_in_steps` makes them durable.

        Why in steps: the log's fdatasync (a write's acknowledgement) waits for the disk's
        cache flush, which waits for every write in flight.  One ``mdb_env_sync`` of a batch
        puts all of its pages in flight at once, and the write that meets it waits for them
        all; in steps, for one range.  A range with nothing to write costs a lookup of the
        page cache's dirty tags, microseconds.  (A pause after each range that wrote, to let
        the log flushes through sooner, made the flush of a large store's scattered pages
        nearly twice as long, and more of the writes met it.)"""
        if step == 0 or step > (<size_t>1 << 40):
            raise ValueError("write_back: step must be from one byte to 1 TiB")
        self._live()
        self._write_back(self._used_bytes(), step)

    def sync_in_steps(self):
        """Flush the last commit as :meth:`sync` does, its pages written back first
        (:meth:`write_back`), so that the flush itself has little left to write.

        A map written in place is flushed up to the last committed page only (an ``msync``
        of a map of that range: its pages, the file's metadata and the disk's cache, what
        ``mdb_env_sync`` does for the whole map).  The pages past it are the next batch's,
        written while this runs: flushed too, each would be written twice and faulted in
        again by its next change."""
        cdef size_t used
        self._live()
        used = self._used_bytes()
        self._write_back(used, FLUSH_STEP)
        if self.writemap:
            self._sync_range(used)
        else:  # pwrite: the next batch leaves the file alone until its commit
            self.sync(True)

    def start_write_back(self):
        """Start writing the dirty pages of the data file's used part (up to the last
        committed page) back to disk (``sync_file_range``, ``SYNC_FILE_RANGE_WRITE``): the
        writes are not waited for, and nothing is flushed.

        Why, for an unsynced store written in place: its pages are otherwise left to the
        kernel's writeback, which starts once enough of memory is dirty (1.4 to 2.2 GB here),
        and then writes them at once, the open batch's pages with the rest.  Each of those,
        clean again, is write-protected, and the batch commit (LMDB clears a flag in every
        page the batch changed) faults each one in again: thousands of faults in one commit,
        about one commit in ten from 400,000 children on, 95 ms at 606,000.  Started after
        each commit, the file never holds enough dirty pages to reach that point.  Its price:
        the used part also holds the free pages the next batch reuses, and those it has
        already changed are written too, and faulted in again by its commit.  What it leaves:
        the kernel's writeback of data dirty for 30 s (``dirty_expire_centisecs``), and the
        writeback that reclaim wakes once the page cache fills memory, still meet an open
        batch (docs/store.rst, item 3)."""
        cdef int fd, rc = 0
        cdef size_t used
        self._live()
        fd = self._fd()
        used = self._used_bytes()
        with nogil:
            if used and sync_file_range(fd, 0, used, SYNC_FILE_RANGE_WRITE) != 0:
                rc = errno
        if rc:
            raise OSError(rc, f"cannot start writing {self.path}/data.mdb back: {os.strerror(rc)}")

    def cache_ahead(self, size_t length=CACHE_AHEAD):
        """A map written in place: bring the data file's ``length`` bytes past the last
        committed page into the page cache (``POSIX_FADV_WILLNEED``), up to what is
        allocated; otherwise nothing.

        Why: a write that takes a page never used before is the first to touch it through
        the map, and its page fault, finding no page cached, reads the page in (zeros, for
        a block allocated and never written): a major fault of 10 to 20 µs on the writing
        thread, some 7 per seed child and hundreds in the first write of a batch.  Cached
        ahead, on the thread that flushes the commits, the write's fault only maps the
        page.  Nothing is written: the pages stay clean until a write changes them."""
        cdef int fd, rc = 0
        cdef size_t start, stop
        self._live()
        if not self.writemap:
            return
        fd = self._fd()
        start = self._used_bytes()
        stop = start + min(length, self.allocated - start) if self.allocated > start else start
        with nogil:
            # In steps: Linux reads at most the device's readahead window (read_ahead_kb,
            # 128 KiB by default) per call, and ignores the rest of the range.
            while start < stop and rc == 0:
                rc = posix_fadvise(fd, start, min(CACHE_AHEAD_STEP, stop - start), POSIX_FADV_WILLNEED)
                start += CACHE_AHEAD_STEP
        if rc:
            raise OSError(rc, f"cannot read {self.path}/data.mdb ahead: {os.strerror(rc)}")

    def map_ahead(self, size_t length=MAP_AHEAD):
        """A map written in place: map the data file's ``length`` bytes past the last
        committed page writable (``MADV_POPULATE_WRITE``), up to what is allocated; whether
        it could (False: not written in place, or a kernel older than Linux 5.14).

        Why: a write that takes a page never used before faults on its first touch through
        the map even when :meth:`cache_ahead` brought the page into the page cache: the
        file system makes it writable (``page_mkwrite``).  At 100,000 durable children
        (``scripts/durable-commit.py``) a write faulted 9 times, and the first write after
        a batch commit, which copies the batch's hot pages, 526 times, for 5 ms of CPU where
        the others took 0.8 ms.  Mapped ahead, on the thread that flushes the commits, the
        writes find most of their new pages writable.  Nothing changes in the file: the
        pages are marked dirty with the bytes they hold, past the last committed page, which
        no snapshot names and no flush of a commit covers (:meth:`sync_in_steps` stops at
        it).  Past it too, the kernel's writeback writes one back only if no batch took it
        within its 30 s (``dirty_expire_centisecs``), and a close gives the blocks back."""
        cdef size_t start, stop
        cdef char* base
        cdef int rc = 0
        self._live()
        if not self.writemap or not self._can_map_ahead:
            return False
        base = self._map_base()
        if base == NULL:
            return False
        if base != self._mapped_base:  # mapped again (grown): nothing of this map is mapped ahead
            self._mapped_base, self._mapped_to = base, 0
        start = self._used_bytes()
        stop = start + min(length, self.allocated - start) if self.allocated > start else start
        # From where the last call stopped: its pages are mapped still (walking them again
        # cost 11 ms for 128 MiB), unless the kernel's writeback cleaned them since.
        start = max(start, self._mapped_to)
        with nogil:
            while start < stop and rc == 0:
                if madvise(base + start, min(MAP_AHEAD_STEP, stop - start), MADV_POPULATE_WRITE) != 0:
                    rc = errno
                else:
                    self._mapped_to = min(start + MAP_AHEAD_STEP, stop)
                start += MAP_AHEAD_STEP
        if rc == EINVAL:  # an older kernel: the writes fault as before
            self._can_map_ahead = False
            return False
        if rc:
            raise OSError(rc, f"cannot map {self.path}/data.mdb ahead: {os.strerror(rc)}")
        return True

    cdef char* _map_base(self):
        """Where LMDB mapped the data file (NULL: not found).  LMDB does not say
        (``mdb_env_info``'s ``me_mapaddr`` is the address a fixed map asked for), so it is
        read off a page: a key read in a read transaction points into its leaf page, in the
        map, and a page starts with its own number (LMDB's page header)."""
        cdef MDB_txn* txn
        cdef MDB_cursor* cur
        cdef MDB_val k, v
        cdef MDB_stat st
        cdef uintptr_t page
        cdef uint64_t pgno
        cdef char* base = NULL
        mdb_env_stat(self.env, &st)
        if mdb_txn_begin(self.env, NULL, MDB_RDONLY, &txn):
            return NULL
        if mdb_cursor_open(txn, self.dbi[DB_META], &cur) == 0:
            if mdb_cursor_get(cur, &k, &v, MDB_FIRST) == 0:
                page = (<uintptr_t>k.mv_data) & ~(<uintptr_t>st.ms_psize - 1)
                pgno = (<uint64_t*>page)[0]
                if pgno * st.ms_psize <= self._used_bytes():
                    base = <char*>(page - pgno * st.ms_psize)
            mdb_cursor_close(cur)
        mdb_txn_abort(txn)
        return base

    cdef size_t _used_bytes(self):
        """The data file's bytes up to the last committed page."""
        cdef MDB_envinfo info
        cdef MDB_stat st
        mdb_env_info(self.env, &info)
        mdb_env_stat(self.env, &st)
        return (info.me_last_pgno + 1) * st.ms_psize

    cdef int _write_back(self, size_t used, size_t step) except -1:
        cdef int fd = self._fd(), rc = 0
        cdef size_t offset = 0
        with nogil:
            while offset < used:  # the last range ends at used: past it are the next batch's pages
                if sync_file_range(fd, offset, min(step, used - offset), SYNC_FILE_RANGE_WAIT_BEFORE
                                   | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) != 0:
                    rc = errno
                    break
                offset += step
        if rc:
            raise OSError(rc, f"cannot write {self.path}/data.mdb back: {os.strerror(rc)}")
        return 0

    cdef int _sync_range(self, size_t length) except -1:
        """fdatasync the data file's first ``length`` bytes: Linux's ``msync`` of a shared
        map of a file flushes that range of the file (``vfs_fsync_range``, the data and what
        reading it back needs: extents, size), whichever map wrote its pages; nothing of this
        map is read.  The map is shared only because LMDB's descriptor is open for writing."""
        cdef int fd = self._fd(), rc = 0
        cdef void *view
        with nogil:
            view = mmap(NULL, length, PROT_READ, MAP_SHARED, fd, 0)
            if view == MAP_FAILED:
                rc = errno
            else:
                if msync(view, length, MS_SYNC) != 0:
                    rc = errno
                munmap(view, length)
        if rc:
            raise OSError(rc, f"cannot flush {self.path}/data.mdb: {os.strerror(rc)}")
        return 0

    def reader_check(self):
        """Clear reader slots left by dead processes; how many were cleared."""
        cdef int dead = 0
        self._live()
        mdb_reader_check(self.env, &dead)
        return dead

    def cache_size(self):
        return self.cache.n


# ---------------------------------------------------------------- transactions
cdef uint32_t _format_of(MDB_txn* txn, MDB_dbi meta):
    """The store format a transaction sees (0 when unreadable)."""
    cdef MDB_val k, v
    k.mv_data = <char*>b"format"
    k.mv_size = 6
    if mdb_get(txn, meta, &k, &v) or v.mv_size != 4:
        return 0
    return get_be32(<uint8_t*>v.mv_data)


cdef enum:
    SPARE_SEEN_MAX = 64 << 20   # a table that took more, terms, entries and slots (one huge transaction), is freed

cdef void keep_seen(TTable* seen, TTable* spare) noexcept nogil:
    """Keep a finished write transaction's table of terms, emptied, for the next write.

    A batch of 1,024 seed children fills it with 32 MiB of terms.  Freed at
    each commit, it was built again from nothing by the next batch, growing
    by doubling (fresh memory faulted in, its slots rehashed); kept, a
    million-child ingest lost its slowest writes, the same few of every
    batch (docs/store.rst, "The batch's table of terms kept")."""
    if tt_bytes(seen) > SPARE_SEEN_MAX:
        tt_free(seen)
        return
    tt_clear(seen)
    tt_free(spare)   # empty: the transaction took it
    spare[0] = seen[0]
    memset(seen, 0, sizeof(TTable))


cdef class Txn:
    """A read or write transaction; every store operation runs inside one.

    A write transaction that fails inside LMDB is aborted at once and the
    error raised (MapFullError when the map is full); a ParseError leaves it
    untouched, since parsing happens before any write.
    """
    cdef Environment env
    cdef TxnCore core          # the transaction's C state; core.txn is NULL once it ended
    cdef readonly bint write
    cdef uint64_t generation   # bumped when it ends: iterators of an ended transaction stop

    def __cinit__(self):
        memset(&self.core, 0, sizeof(TxnCore))

    @staticmethod
    cdef Txn _begin(Environment env, bint write):
        cdef Txn t = Txn.__new__(Txn)
        cdef int rc
        cdef long me
        t.env = env
        t.write = write
        t.core.dbi = env.dbi
        t.core.cache = &env.cache
        if env.defer_filing and PyThread_get_thread_ident() == env.filing_thread:
            # The tables are shared by the transactions of the thread that
            # opened the environment (the log's owner uses one); another
            # thread's transaction builds its own and goes without the rest.
            t.core.unfiled = &env.unfiled
            t.core.bloom = &env.bloom
            t.core.slice = &env.slice
        t.core.defer = write and env.defer_filing
        # the sweeps file into t2i's young level and merge it into t2i (a store
        # read as it is, from before the level, has none)
        t.core.young = t.core.defer and env.young_level and env.dbi[DB_T2Y0] != env.dbi[DB_T2I]
        t.core.stage_max = env.index_stage if write else 0
        if write:
            if env.readonly:
                raise StoreError("the environment is read-only")
            me = <long>PyThread_get_thread_ident()
            if env.writer_thread == me:
                raise StoreError("a write transaction is already open in this thread")
            with nogil:
                PyThread_acquire_lock(env.wlock, WAIT_LOCK)
            env.writer_thread = me
            t.core.seen = env.spare_seen   # the writer lock guards the spare
            memset(&env.spare_seen, 0, sizeof(TTable))
            env.writer_seen = &t.core.seen
        with nogil:
            rc = mdb_txn_begin(env.env, NULL, 0 if write else MDB_RDONLY, &t.core.txn)
        if rc == MDB_MAP_RESIZED and env.open_txns == 0:
            mdb_env_set_mapsize(env.env, 0)
            try:
                env._allocate_map()
            except BaseException:
                if write:
                    env.writer_thread = -1
                    env.writer_seen = NULL
                    PyThread_release_lock(env.wlock)
                raise
            with nogil:
                rc = mdb_txn_begin(env.env, NULL, 0 if write else MDB_RDONLY, &t.core.txn)
        if rc == 0:
            t.core.snapshot = mdb_txn_id(t.core.txn)
            t.core.removals = &env.removal_txnid
        if rc == 0 and write:
            rc = t._see_removals()
            if rc:
                mdb_txn_abort(t.core.txn)
        if rc == 0 and env.dbi[DB_T2Y0] == env.dbi[DB_T2I] and _format_of(t.core.txn, env.dbi[DB_META]) >= 7:
            # read as it was, from before the young level, and upgraded since by
            # a writer: its young trees (unopened here) may hold filed ids
            # (only a read-only environment aliases them: no writer lock is held)
            mdb_txn_abort(t.core.txn)
            t.core.txn = NULL
            raise StoreError(f"{env.path!r} was upgraded by a writer since this read-only open: open it again")
        if rc:
            t.core.txn = NULL
            if write:
                env.writer_thread = -1
                env.writer_seen = NULL
                PyThread_release_lock(env.wlock)
            raise_rc(rc, "mdb_txn_begin")
        env.open_txns += 1
        return t

    cdef int _see_removals(self) noexcept:
        """Clear the process's tables of term ids if another process's commit
        removed terms since this one last wrote (their ids may be gone)."""
        cdef uint64_t seen
        cdef Environment env = self.env
        cdef int rc = terms_generation(self.core.txn, env.dbi, &seen)
        if rc:
            return rc
        if env.removals_known and seen != env.removals_seen:
            tt_clear(&env.cache)
            env.unfiled.valid = False
        env.removals_seen = seen
        env.removals_known = True
        return 0

    def __dealloc__(self):
        if self.core.txn != NULL:
            self._end(False)
        tt_free(&self.core.seen)
        ht_free(&self.core.own)
        buf_free(&self.core.released)
        free_staged(&self.core)

    cdef int _live(self) except -1:
        if self.core.txn == NULL:
            raise StoreError("the transaction is finished")
        return 0

    cdef int _end(self, bint commit) except? -1:
        """Commit or abort; release the writer lock; 0 or the commit's error code."""
        cdef int rc = 0
        cdef size_t dropped = 0
        cdef MDB_txn* txn = self.core.txn
        if txn == NULL:
            return 0
        if commit and self.write:
            with nogil:
                rc = put_staged(&self.core)
                if rc == 0:
                    rc = drop_unused_terms(&self.core, &dropped)
                if rc == 0 and self.core.defer:
                    rc = file_terms_step(&self.core, self.env.filing_lag, self.env.filing_max)
            if rc:
                commit = False   # a failed write: the transaction is aborted, rc raised
        buf_free(&self.core.released)
        free_staged(&self.core)
        core_close_cursors(&self.core)
        self.core.txn = NULL
        self.generation += 1
        ht_free(&self.core.own)
        if commit:
            if self.write:
                merge_cache(&self.core)
            with nogil:
                rc = mdb_txn_commit(txn)
            if rc and self.write:
                tt_clear(&self.env.cache)   # it may hold ids that were never committed
                self.env.unfiled.valid = False
            elif dropped:
                self.env.removals_seen += 1   # this commit's own count (see _termgc)
                self.env.terms_removed += dropped
                self.env.removal_txnid = self.core.snapshot
            if rc == 0 and self.write and self.env.defer_filing and self.core.unfiled == NULL:
                # another thread's write: the filing thread's tables did not see
                # what it filed or removed (the Bloom filter would miss its filed ids)
                self.env.unfiled.valid = False
                self.env.bloom.valid = False
        else:
            mdb_txn_abort(txn)
            if self.write:   # they may hold ids that were never committed
                self.env.unfiled.valid = False
        self.env.open_txns -= 1
        if self.write:
            keep_seen(&self.core.seen, &self.env.spare_seen)
            self.env.writer_seen = NULL
            self.env.writer_thread = -1
            PyThread_release_lock(self.env.wlock)
        return rc

    def commit(self):
        """Make the transaction's writes durable (per the environment's mode)."""
        cdef int rc
        self._live()
        rc = self._end(True)
        if rc:
            raise_rc(rc, "mdb_txn_commit")

    def abort(self):
        """Discard the transaction (a no-op when already finished)."""
        self._end(False)

    @property
    def active(self):
        return self.core.txn != NULL

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if self.core.txn != NULL:
            if exc_type is None and self.write:
                self.commit()
            else:
                self._end(False)
        return False

    cdef int _fail(self, int rc, str what) except -1:
        """Abort (a failed LMDB write leaves the transaction unusable) and raise."""
        if self.write:
            self._end(False)
        raise_rc(rc, what)


    cdef int _require_write(self) except -1:
        self._live()
        if not self.write:
            raise StoreError("not a write transaction")
        return 0

    def ingest_ntriples(self, data, bytes graph not None, extra=()):
        """Parse N-Triples ``data`` into graph ``graph`` (an encoded term), plus
        ``extra`` quads of encoded terms, and insert them; the number of new quads.

        Blank node labels are scoped to the document: each document's blank
        nodes become fresh ones.  On a ParseError nothing is written.
        """
        cdef Parser P
        cdef TTable terms
        cdef StoredForms forms
        cdef QBuf q
        cdef Py_ssize_t g
        cdef int rc = 0
        cdef const unsigned char[::1] view = data
        self._require_write()
        check_term(graph)
        memset(&terms, 0, sizeof(TTable))
        memset(&forms, 0, sizeof(StoredForms))
        memset(&q, 0, sizeof(QBuf))
        parser_init(&P, &view[0] if view.shape[0] else <const uint8_t*>b"", view.shape[0], &terms, &forms)
        try:
            g = tt_intern(&terms, PyBytes_AS_STRING(graph), PyBytes_GET_SIZE(graph), 0)
            if g < 0:
                raise MemoryError()
            with nogil:
                rc = parse_ntriples(&P, &q, <uint32_t>g)
            if rc == E_PARSE:
                raise ParseError(*parse_error_args(&P, data))
            if rc:
                raise MemoryError()
            self._intern_quads(&terms, &q, extra)
            return self._resolve_and_insert(&terms, &q, "ingest", &forms)
        finally:
            qb_free(&q)
            tt_free(&terms)
            sf_free(&forms)
            parser_free(&P)

    def add(self, quads):
        """Insert quads of encoded terms ``(s, p, o, c)``; the number new."""
        cdef TTable terms
        cdef QBuf q
        self._require_write()
        memset(&terms, 0, sizeof(TTable))
        memset(&q, 0, sizeof(QBuf))
        try:
            self._intern_quads(&terms, &q, quads)
            return self._resolve_and_insert(&terms, &q, "add")
        finally:
            qb_free(&q)
            tt_free(&terms)

    cdef int _intern_quads(self, TTable* terms, QBuf* q, quads) except -1:
        """Append ``quads`` (4 encoded terms each) to ``q``, their terms to ``terms``."""
        cdef Py_ssize_t loc[4]
        cdef int j
        for quad in quads:
            if len(quad) != 4:
                raise ValueError("a quad needs 4 terms")
            for j in range(4):
                t = quad[j]
                check_term(t)
                loc[j] = tt_intern(terms, PyBytes_AS_STRING(t), PyBytes_GET_SIZE(t), 0)
                if loc[j] < 0:
                    raise MemoryError()
            if qb_push(q, <uint32_t>loc[0], <uint32_t>loc[1], <uint32_t>loc[2], <uint32_t>loc[3]):
                raise MemoryError()
        return 0

    cdef size_t _resolve_and_insert(self, TTable* terms, QBuf* q, str what,
                                    const StoredForms* forms=NULL) except? 0:
        """Give every term of ``terms`` an id, rewrite ``q`` to ids, insert it; the number new."""
        cdef uint32_t* ids = <uint32_t*>malloc((terms.n + 1) * sizeof(uint32_t))
        cdef size_t i, added = 0
        cdef int rc
        if ids == NULL:
            raise MemoryError()
        try:
            with nogil:
                rc = resolve_table(&self.core, terms, ids, forms)
                if rc == 0:
                    for i in range(q.n):
                        q.q[i].k = ids[q.q[i].k]
                        q.q[i].a = ids[q.q[i].a]
                        q.q[i].b = ids[q.q[i].b]
                        q.q[i].c = ids[q.q[i].c]
                    rc = insert_quads(&self.core, q, &added)
            if rc:
                self._fail(rc, what)
            return added
        finally:
            free(ids)

    def remove(self, s=None, p=None, o=None, c=None):
        """Delete every quad matching the pattern (None = any); the number deleted."""
        cdef ScanState st
        cdef QBuf q
        cdef uint32_t quad[4]
        cdef int rc
        self._require_write()
        if not self._plan(&st, s, p, o, c):
            return 0
        memset(&q, 0, sizeof(QBuf))
        try:
            rc = scan_open(&self.core, &st)
            if rc:
                self._fail(rc, "mdb_cursor_open")
            with nogil:
                while True:
                    rc = scan_next(&st, quad)
                    if rc:
                        break
                    rc = qb_push(&q, quad[0], quad[1], quad[2], quad[3])
                    if rc:
                        break
                scan_close(&st)
                if rc == MDB_NOTFOUND:
                    rc = delete_quads(&self.core, &q)
            if rc:
                self._fail(rc, "remove")
            return q.n
        finally:
            qb_free(&q)

    # -------------------------------------------------------- reads
    cdef uint32_t _id(self, term) except? 0xFFFFFFFF:
        """The id of an encoded term (0 when unknown); never writes."""
        cdef uint32_t out = 0
        cdef int rc
        cdef const uint8_t* p
        cdef size_t n
        cdef uint64_t h
        check_term(term)
        p = <const uint8_t*>PyBytes_AS_STRING(term)
        n = PyBytes_GET_SIZE(term)
        h = hash_bytes(p, n)
        with nogil:
            if self.write:
                rc = resolve_id(&self.core, p, n, h, False, &out)
            else:
                rc = lookup_id(&self.core, p, n, h, &out)
        if rc:
            raise_rc(rc, "term lookup")
        return out

    def term_id(self, term):
        """The id of an encoded term, 0 when the store does not know it."""
        self._live()
        return self._id(term)

    def term(self, uint32_t tid):
        """The encoded term of an id, or None."""
        cdef MDB_val v
        cdef TermBuf b
        cdef int rc
        self._live()
        memset(&b, 0, sizeof(TermBuf))
        try:
            with nogil:
                rc = get_term(self.core.txn, self.env.dbi, tid, &v, &b)
            if rc == MDB_NOTFOUND:
                return None
            if rc:
                raise_rc(rc, "mdb_get")
            return PyBytes_FromStringAndSize(<char*>v.mv_data, v.mv_size)
        finally:
            termbuf_free(&b)

    cdef bint _plan(self, ScanState* st, s, p, o, c, uint32_t start=0) except -1:
        """Fill st for a pattern; False when a bound term is unknown (empty result).
        ``start``: the scan of a subject and predicate (no object) begins at the
        first object whose id is ``start`` or more (ids in the order they were given)."""
        cdef uint32_t ids[4]
        cdef int i
        if start and (s is None or p is None or o is not None):
            raise ValueError("start needs a pattern with a subject and a predicate and no object")
        for i, t in enumerate((s, p, o, c)):
            ids[i] = 0 if t is None else self._id(t)
            if t is not None and ids[i] == 0:
                return False
        plan_scan(st, ids)
        st.start = start
        if st.ix != IX_SPOC:
            self._put_staged()
        return True

    cdef int _put_staged(self) except -1:
        """Put the staged index entries (see TxnCore.staged): before a read of
        posc or ospc, or of the whole store."""
        cdef int rc
        if self.write and self.core.txn != NULL and staged_quads(&self.core):   # (the GIL kept when none are)
            with nogil:
                rc = put_staged(&self.core)
            if rc:
                self._fail(rc, "mdb_put")
        return 0

    @property
    def staged(self):
        """The quads whose posc and ospc entries are staged, not yet put."""
        return staged_quads(&self.core)

    @property
    def stage_closed(self):
        """Whether this transaction's writes put their own index entries at once
        and drain the staged ones (see STAGE_DRAIN_WRITES) instead of staging
        theirs."""
        return self.core.stage_closed

    @stage_closed.setter
    def stage_closed(self, bint closed):
        self.core.stage_closed = closed

    def put_staged(self):
        """Put the index entries the writes staged (a commit does, first): a
        caller that can grow a full map and write again calls it before the
        commit, which would otherwise fail with MapFullError instead."""
        self._live()
        self._put_staged()

    cdef Scan _scan(self, s, p, o, c, int mode, prefixes, Py_ssize_t chunk_size, uint32_t start=0):
        cdef ScanState st
        memset(&st, 0, sizeof(ScanState))
        found = self._plan(&st, s, p, o, c, start)
        return open_scan(self, &self.core, self.env.dbi, &self.generation, self.write, &st, found, mode, prefixes,
                         chunk_size)

    def quads(self, s=None, p=None, o=None, c=None, *, uint32_t start=0):
        """Iterate the quads matching a pattern, as 4-tuples of encoded terms.

        With a subject and a predicate bound and no object, the objects come in
        id order; ``start`` skips those whose id is below it, with one seek
        (a page of a container's children: :meth:`term_id` of the next page's first).
        """
        self._live()
        return iter_batches(self._scan(s, p, o, c, 0, None, 0, start))

    def quad_ids(self, s=None, p=None, o=None, c=None, *, uint32_t start=0):
        """Iterate matching quads as 4-tuples of ids (for tests and tools); ``start`` as for :meth:`quads`."""
        self._live()
        return iter_batches(self._scan(s, p, o, c, 3, None, 0, start))

    def serialize(self, s=None, p=None, o=None, c=None, format="nt", prefixes=None, Py_ssize_t chunk_size=1 << 16,
                  *, uint32_t start=0):
        """Stream the triples matching a pattern as N-Triples (``"nt"``) or
        Turtle (``"turtle"``) bytes chunks, straight from the indices.

        A triple stored in several graphs is written once.  Turtle groups
        by subject and predicate when the pattern scans an index in subject
        order (a graph or a subject); ``prefixes`` maps names to namespaces;
        ``start`` as for :meth:`quads`.
        """
        self._live()
        if format in ("nt", "ntriples", "n-triples"):
            mode = 1
        elif format in ("turtle", "ttl"):
            mode = 2
        else:
            raise ValueError(f"unknown format {format!r}")
        return self._scan(s, p, o, c, mode, prefixes, chunk_size, start)

    def count(self, s=None, p=None, o=None, c=None):
        """Number of quads matching the pattern."""
        cdef ScanState st
        cdef size_t n = 0
        cdef int rc
        self._live()
        if not self._plan(&st, s, p, o, c):
            return 0
        rc = scan_open(&self.core, &st)
        if rc:
            raise_rc(rc, "mdb_cursor_open")
        with nogil:
            rc = scan_count(&st, &n)
            scan_close(&st)
        if rc != MDB_NOTFOUND:
            raise_rc(rc, "count")
        return n

    def quad_count(self):
        """Number of quads (entries of ``spoc``)."""
        cdef MDB_stat st
        self._live()
        mdb_stat(self.core.txn, self.env.dbi[DB_SPOC], &st)
        return st.ms_entries

    def term_count(self):
        """Number of terms (entries of ``i2t`` and ``i2l``)."""
        cdef MDB_stat st
        cdef size_t n
        self._live()
        mdb_stat(self.core.txn, self.env.dbi[DB_I2T], &st)
        n = st.ms_entries
        mdb_stat(self.core.txn, self.env.dbi[DB_I2L], &st)
        return n + st.ms_entries

    def unfiled_terms(self):
        """How many term ids are not yet filed in ``t2i`` (looked up through
        a table rebuilt from ``i2t`` and ``i2l`` instead; 0 once they are
        filed)."""
        cdef uint32_t w = 0, m = 0
        cdef int rc
        self._live()
        with nogil:
            rc = unfiled_span(&self.core, &w, &m)
        if rc:
            raise_rc(rc, "reading the filed terms")
        return 0 if w == FILED_ALL or m <= w else m - w

    def file_terms(self):
        """File every term id in ``t2i`` (or its young level) now (a write transaction)."""
        cdef int rc
        self._require_write()
        with nogil:
            rc = file_terms(&self.core)
        if rc:
            self._fail(rc, "filing term ids")

    def file_due_terms(self):
        """File the slice of unfiled term ids that is due now (a write
        transaction of a store that defers filing; nothing otherwise).  The
        commit files what is due too; a writer that calls this after each
        write spreads the sweep over its writes, so that no commit carries
        a large slice.  With the young level, it takes the merge pass's
        share too."""
        cdef int rc = 0
        self._require_write()
        if not self.core.defer or self.core.unfiled == NULL:
            return   # another thread's write builds its table per transaction: its commit files
        with nogil:
            rc = file_terms_step(&self.core, self.env.filing_lag, self.env.filing_max)
        if rc:
            self._fail(rc, "filing term ids")

    def triple_count(self):
        """Number of distinct triples (a triple in several graphs counts once)."""
        cdef size_t n = 0
        cdef int rc
        self._live()
        with nogil:
            rc = count_triples(&self.core, &n)
        if rc != MDB_NOTFOUND:
            raise_rc(rc, "triple_count")
        return n

    def contexts(self, s=None, p=None, o=None):
        """Encoded terms of the graphs holding a triple matching the pattern,
        each once, in id order; with no pattern, every graph that holds a
        triple or was declared with add_graph()."""
        cdef MDB_cursor* cur
        cdef MDB_val k, v, v2
        cdef int rc, db
        cdef set ids = set()
        self._live()
        if s is None and p is None and o is None:
            for db in (DB_CS, DB_GRAPHS):
                rc = mdb_cursor_open(self.core.txn, self.env.dbi[db], &cur)
                if rc:
                    raise_rc(rc, "mdb_cursor_open")
                rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST)
                while rc == 0:
                    if k.mv_size == 4:
                        ids.add(get_be32(<uint8_t*>k.mv_data))
                    rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT_NODUP if db == DB_CS else MDB_NEXT)
                mdb_cursor_close(cur)
                if rc != MDB_NOTFOUND:
                    raise_rc(rc, "contexts")
        else:
            for quad in iter_batches(self._scan(s, p, o, None, 3, None, 0)):
                ids.add(quad[3])
        return [self.term(i) for i in sorted(ids)]

    def add_graph(self, term):
        """Declare a graph (kept even while it holds no triple)."""
        cdef uint32_t tid = 0
        cdef MDB_val k, v
        cdef uint8_t kb[4]
        cdef int rc
        cdef const uint8_t* p
        cdef size_t n
        self._require_write()
        check_term(term)
        p = <const uint8_t*>PyBytes_AS_STRING(term)
        n = PyBytes_GET_SIZE(term)
        with nogil:
            rc = resolve_id(&self.core, p, n, hash_bytes(p, n), True, &tid)
            if rc == 0:
                put_be32(kb, tid)
                k.mv_data = kb
                k.mv_size = 4
                v.mv_data = kb
                v.mv_size = 0
                rc = mdb_put(self.core.txn, self.env.dbi[DB_GRAPHS], &k, &v, 0)
        if rc:
            self._fail(rc, "add_graph")

    def remove_graph(self, term):
        """Delete a graph's quads and its declaration; the number of quads deleted."""
        cdef uint32_t tid
        cdef MDB_val k
        cdef uint8_t kb[4]
        cdef int rc
        self._require_write()
        removed = self.remove(None, None, None, term)
        tid = self._id(term)
        if tid:
            put_be32(kb, tid)
            k.mv_data = kb
            k.mv_size = 4
            rc = mdb_del(self.core.txn, self.env.dbi[DB_GRAPHS], &k, NULL)
            if rc == 0:
                rc = release_id(&self.core, tid)
            if rc and rc != MDB_NOTFOUND:
                self._fail(rc, "remove_graph")
        return removed

    # -------------------------------------------------------- namespaces
    def namespaces(self):
        """(prefix, namespace) pairs, sorted by prefix."""
        cdef MDB_cursor* cur
        cdef MDB_val k, v
        cdef int rc
        cdef list out = []
        self._live()
        rc = mdb_cursor_open(self.core.txn, self.env.dbi[DB_NS], &cur)
        if rc:
            raise_rc(rc, "mdb_cursor_open")
        rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST)
        while rc == 0:
            prefix = PyBytes_FromStringAndSize(<char*>k.mv_data, k.mv_size)
            out.append(("" if prefix == b"\x00" else prefix.decode(),
                        PyBytes_FromStringAndSize(<char*>v.mv_data, v.mv_size).decode()))
            rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)
        mdb_cursor_close(cur)
        if rc != MDB_NOTFOUND:
            raise_rc(rc, "namespaces")
        return out

    def set_namespace(self, str prefix, str namespace):
        cdef MDB_val k, v
        cdef int rc
        cdef bytes bp = prefix.encode(), bn = namespace.encode()
        self._require_write()
        if not bp:
            bp = b"\x00"   # LMDB keys cannot be empty: the empty prefix is stored as NUL
        k.mv_data = <char*>bp
        k.mv_size = len(bp)
        v.mv_data = <char*>bn
        v.mv_size = len(bn)
        rc = mdb_put(self.core.txn, self.env.dbi[DB_NS], &k, &v, 0)
        if rc:
            self._fail(rc, "set_namespace")

    def del_namespace(self, str prefix):
        cdef MDB_val k
        cdef int rc
        cdef bytes bp = prefix.encode() or b"\x00"
        self._require_write()
        k.mv_data = <char*>bp
        k.mv_size = len(bp)
        rc = mdb_del(self.core.txn, self.env.dbi[DB_NS], &k, NULL)
        if rc and rc != MDB_NOTFOUND:
            self._fail(rc, "del_namespace")

    # -------------------------------------------------------- the facade's own values
    def get_meta(self, str name):
        """The value stored under ``name`` in ``meta``, or None (e.g. the log position
        the facade's write-ahead log has applied)."""
        cdef MDB_val k, v
        cdef int rc
        cdef bytes key = name.encode()
        self._live()
        k.mv_data = <char*>key
        k.mv_size = len(key)
        rc = mdb_get(self.core.txn, self.env.dbi[DB_META], &k, &v)
        if rc == MDB_NOTFOUND:
            return None
        if rc:
            raise_rc(rc, "get_meta")
        return PyBytes_FromStringAndSize(<char*>v.mv_data, v.mv_size)

    def set_meta(self, str name, bytes value not None):
        """Store ``value`` under ``name`` in ``meta`` (``format``, ``bnode_docs``,
        ``terms_filed``, ``terms_filing`` and ``terms_merging`` belong to the core and cannot be set)."""
        cdef MDB_val k, v
        cdef int rc
        cdef bytes key = name.encode()
        self._require_write()
        if name in ("format", "bnode_docs", "terms_filed", "terms_filing", "terms_merging") or not key:
            raise ValueError(f"meta key {name!r} is reserved")
        k.mv_data = <char*>key
        k.mv_size = len(key)
        v.mv_data = <char*>value
        v.mv_size = len(value)
        rc = mdb_put(self.core.txn, self.env.dbi[DB_META], &k, &v, 0)
        if rc:
            self._fail(rc, "set_meta")

    # -------------------------------------------------------- statistics and check
    def db_stats(self):
        """Per sub-database: entries and pages (branch, leaf, overflow)."""
        cdef MDB_stat st
        cdef int i
        self._live()
        self._put_staged()
        out = {}
        for i, name in enumerate(DB_NAMES):
            if i != DB_T2I and self.env.dbi[i] == self.env.dbi[DB_T2I]:
                continue   # a store from before the young level, read as it is: none
            mdb_stat(self.core.txn, self.env.dbi[i], &st)
            out[name] = {"entries": st.ms_entries, "depth": st.ms_depth, "branch_pages": st.ms_branch_pages,
                         "leaf_pages": st.ms_leaf_pages, "overflow_pages": st.ms_overflow_pages}
        return out

    def check(self, size_t max_problems=100):
        """Verify the store: ``(problems, summary)``, problems empty when consistent.

        Every filed term (up to ``terms_filed``, and those a sweep filed) is
        under its hash in ``t2i`` or a tree of its young level (in two only
        where a merge pass copied it) and no other term is; every hash entry
        points to a term with that hash; no term is stored twice; every quad of ``spoc``
        is in the two other indices, which hold as many entries; ``cs`` holds
        exactly the (graph, subject) pairs of the quads; every id in a quad
        names a stored term (``_check``).
        """
        cdef int rc = 0
        self._live()
        self._put_staged()
        result = check_snapshot(self.core.txn, self.env.dbi, max_problems, &rc)
        if rc:
            raise_rc(rc, "check")
        return result
