"""The store's Python face over the compiled core: :class:`LmdbStore`.

Terms are passed as IRI strings, rdflib terms or encoded bytes
(:mod:`lakebench.store.terms`).  Every write method is committed before it
returns, unless :meth:`LmdbStore.begin` opened a pending transaction (the
rdflib plugin's mode), which :meth:`LmdbStore.commit` ends.

**How a durable write is committed** (``durability="durable"``, the default): the
write runs in the *batch*, one LMDB write transaction left open across
writes; its changes are appended to the write-ahead log (:mod:`.wal`) and
the log is fdatasynced, and only then does the call return.  Every
``batch_writes`` writes (or ``batch_bytes`` of log), the batch is committed,
unflushed, and flushed on a thread of its own while the next batch is
written into the other of two log files (:mod:`.commitsync`: what makes
that safe across a power cut).  Reads through this store
go through the batch, so they see every acknowledged write; a crash loses
the batch, and the next open replays the log into the store.  One process
owns a store's log at a time; ``log=False`` gives LMDB's plain commit
per write instead (several processes may then write one store).

``durability="nosync"`` takes the same path without the flushes, in one log
file, with a smaller batch (:data:`UNSYNCED_BATCH_WRITES`); each batch
commit's pages are sent to disk right after it, off the writing thread and
not waited for, so that the kernel never holds enough of them dirty to
write the open batch's.  Both batches write their pages in place through LMDB's memory map (MDB_WRITEMAP):
a batch commit then has no pages to copy out (a tenth of the commit's time
at 100,000 children), and the dirty pages are the file's, not the
process's private memory.  A map written in place is a SIGBUS on a full
disk wherever the file has no block, so its file is allocated ahead of what
a write may take (:meth:`~lakebench._store.Environment.ensure_room`, before
each write of the batch): a full disk is ENOSPC there, which
:class:`NoSpaceError` reports, before the write changes anything.  After
each batch commit a thread of its own allocates further ahead, so that the
writer's check finds the blocks there (:func:`_room_ahead`).

**No remap on the write path.**  A writer opened without a ``map_size``
reserves a map as large as the file system (:func:`map_reserve`): address
space, not memory or disk.  Growing a map maps the whole file again (munmap
and mmap, which at tens of GB took 100 to 450 ms, and every page faulted in
again afterwards), so a store that never outgrows its map never pauses a
write for it.
The power-loss harness (tests/store/test_powerloss.py) sees the pages written
through the map as well as those written with ``pwrite`` (``writemap=False``).
"""
from __future__ import annotations

import errno
import functools
import logging
import os
import resource
import threading
import time
from pathlib import Path
from typing import Callable, Iterable, Iterator

from lakebench._store import (
    CACHE_AHEAD,
    MAP_AHEAD,
    STAGE_DRAIN_WRITES,
    Environment,
    LmdbError,
    MapFullError,
    ParseError,
    StoreError,
    Txn,
    WRITEMAP_STEP,
)
from lakebench.durability import Durability
from lakebench.store.commitsync import AfterCommit, CommitIntent, DataSync, meta_pages, undo_cut_commit
from lakebench.store.logsync import INLINE, GroupSync, Token, Waiting
from lakebench.store.preflight import before_open
from lakebench.store.tally import TimeTally
from lakebench.store.terms import term
from lakebench.store.wal import (
    LOG_FILE,
    LOG_FILES,
    SECOND_LOG_FILE,
    LogError,
    LoggedTxn,
    WriteAheadLog,
    applied_sequence,
    encode_changes,
    in_sequence,
    pending_log_records,
    replay,
    set_applied_sequence,
    share_writers_lock,
    writer_alive,
)

#: The map of a store opened with an explicit small size, or read only; the map doubles
#: whenever it is three quarters full or full.
DEFAULT_MAP_SIZE = 256 << 20
#: The largest map a writer reserves (see :func:`map_reserve`): well within the 128 TiB of
#: a 64-bit process's address space, and more than a store of this kind has yet needed.
MAX_RESERVE = 4 << 40
_MAX_GROWTHS = 24
#: What one write's long terms may take beyond the batch's, in a map written in place: twice
#: a body of 32 MiB (the server takes 16 MiB at most).
_WRITE_ROOM = 64 << 20
#: After each batch commit, a map written in place has its file's blocks allocated this
#: much past what the writer's own ``ensure_room`` asks for, off the writing thread
#: (:func:`_room_ahead`): a write then finds them there, and allocates none itself.
_ROOM_AHEAD = 2 * _WRITE_ROOM + WRITEMAP_STEP
#: A batch is committed after this many logged writes, or this many bytes of log.
#: 1,024 was chosen when a batch's commit rewrote most leaves of the hash index
#: t2i whatever its size (at 30,000 children, per child 0.96 ms at 256, 0.73 at
#: 1,024, 0.68 at 4,096, nosync 0.51), for about 170 MB of dirty pages held in
#: memory until the commit.  Since ids are filed late, a batch of 1,024 of
#: those children writes about 9,400 pages, nearly all of them new data, and
#: t2i's sweep about 2,300 more on average at 100,000 children
#: (docs/store-history.rst, "Durable writes at scale").
DEFAULT_BATCH_WRITES = 1024
#: The unsynced store's batch is smaller: its commit is never flushed, and its cost on
#: the writing thread is what a write waits for.  The kernel's writeback still cleans an
#: open batch's pages now and then (a file dirty for 30 s is written whole), and the
#: commit faults each of them in again: the fewer a batch holds, the shorter that wait.
#: A million unsynced children (scripts/durable-commit.py, one run each, docs/store.rst):
#: at 1,024, writes that commit took 7.7 ms at the median and up to 104 ms, and 982
#: writes took 5 ms or more; at 256, 3.4 ms and up to 33 ms, and 148 writes; the mean
#: write the same within the runs' noise.
UNSYNCED_BATCH_WRITES = 256
#: The unsynced store starts writing its committed pages back after every this many
#: commits (:class:`_AfterUnsyncedCommit`).  After every fourth, 500,000 unsynced children
#: (scripts/durable-commit.py, alternated twice, docs/store.rst item 3) went faster (the
#: mean write 0.69 and 0.65 ms against 0.80 and 0.76, the last tenth 1.05 and 0.96 times
#: the first against 1.25 and 1.36), but a million (the harness's run) had 104 writes over
#: 20 ms where the kept run, after every commit, had 11 (the slowest late in the run, where
#: the page cache fills memory), and p99.9 5.35 ms against 4.67: so after every commit.
WRITE_BACK_EVERY = 1
DEFAULT_BATCH_BYTES = 64 << 20
#: With the log, new term ids stay out of the hash index ``t2i`` (whose random
#: keys made each batch commit rewrite most of its leaves) until a commit
#: finds this many or more, and at least a quarter of those filed; a sweep
#: then files them, a slice of t2i at each write (docs/store.rst).  2^20
#: ids: about 10,000 children of the seed workload.
DEFAULT_FILING_LAG = 1 << 20
#: ... and at most this many: the table that finds the unfiled ids holds
#: one to two such generations (the one a sweep files, the next gathering),
#: 12 bytes an id at a load of 3/8 to 3/4: at 2^22 ids (about 40,000
#: children) 154 MB measured (``heap_bytes``, docs/store.rst, "What the
#: private memory holds"), however large the store grows.  A larger value
#: spares t2i's leaves rewrites (fewer, larger sweeps) for memory.
DEFAULT_FILING_MAX = 1 << 22
#: The sweeps file into t2i's young level (two trees in turn, ``t2y0`` and ``t2y1``) and a
#: merge pass copies the other into t2i and empties it, one pass every few generations
#: (Environment's ``young_level``, _termids' ``merge_step``; docs/store.rst).
YOUNG_LEVEL = True
#: After a write failed for lack of space, writes are refused at once until
#: the disk has this much free again.
_SPACE_AGAIN = 1 << 20
#: The pause before a failed batch commit is tried again: from the first to
#: the second, doubling while it keeps failing.
_COMMIT_PAUSE_MIN, _COMMIT_PAUSE_MAX = 0.5, 30.0
#: The stores open in this process, by resolved path.  LMDB forbids opening
#: one environment twice in a process (closing the second drops the first's
#: locks); doing it anyway was seen to crash an unrelated writer process.
_OPEN: dict[Path, "LmdbStore"] = {}
_logger = logging.getLogger("lakebench.store")
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


class NoSpaceError(StoreError):
    """A write failed for lack of disk space; nothing of it was kept, and the
    store stays readable and writable once space is freed."""


def _thread_bytes_written() -> int | None:
    """Bytes this thread has passed to write calls (Linux's per-thread I/O
    counters), or None: around a commit, the pages LMDB wrote for it."""
    try:
        with open("/proc/thread-self/io", "rb") as f:
            for line in f:
                if line.startswith(b"wchar:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _room_ahead(env: Environment, cache_ahead: int, map_ahead: int = 0) -> None:
    """Work for the next batches of a map written in place, off the writing thread: the
    file's blocks allocated ahead (``posix_fallocate``, which waited 51 ms for the file
    system's block bitmap, read behind the disk's queue of writes, on the writing thread
    once in 600,000 unsynced children; ``scripts/durable-commit.py``), then, with a
    ``cache_ahead``, its new pages brought into the page cache, and with a ``map_ahead``
    (the durable store's), mapped writable (``Environment.map_ahead``).  A failed
    allocation (a full disk) costs nothing here: the writer's own ``ensure_room`` meets it
    again, before the write that needs the room, and reports it."""
    try:
        env.ensure_room(_ROOM_AHEAD)
    finally:
        if cache_ahead > 0:
            env.cache_ahead(cache_ahead)
        if map_ahead > 0:
            env.map_ahead(map_ahead)


class _AfterUnsyncedCommit:
    """The unsynced store's work after a batch commit, off the writing thread: the next
    batch's blocks allocated and its new pages cached ahead first (:func:`_room_ahead`),
    then, once ``write_back`` commits of the environment have gone by since the last
    write-back (0: never), the committed pages' write-back started
    (``Environment.start_write_back``).

    Why ``write_back`` may be more than one commit: a write-back cleans each page it writes
    and leaves it write-protected, the writes that follow fault the pages they change in
    again, and its writes fill the disk's queue; covering several commits, it cleans once a
    page that several batches changed, and the batches between write-backs meet none, but
    the writes that meet it wait longer (WRITE_BACK_EVERY says what was measured, and why
    the default is every commit).

    In that order because the write-back fills the disk's queue with writes: a cache
    ahead after it read its pages behind them, while the next batch's first writes
    faulted on the pages not yet read (``scripts/durable-commit.py``, 400,000 unsynced
    children: the write after a commit took 6.1 and 6.6 ms on average in two runs, with
    441 and 444 major faults; in this order 2.5 ms and none; without the write-back 2.0
    and 1.8 ms).  Its price: started later, the write-back finds more of the next batch's
    pages dirty, and that batch's commit faults them in again (the commits took 2.2 s in
    all, against 1.3 and 1.4 s); docs/store.rst, item 3."""

    def __init__(self, env: Environment, cache_ahead: int, write_back: int):
        self._env = env
        self._cache_ahead = cache_ahead
        self._write_back = write_back
        # The snapshot at open: its pages are on disk or the kernel's to write, none this store's.
        self._written_back = env.info()["last_txnid"]

    def __call__(self) -> None:
        try:
            _room_ahead(self._env, self._cache_ahead)
        finally:  # a failed allocation or cache ahead costs only speed: the write-back still starts
            if self._write_back > 0:
                committed = self._env.info()["last_txnid"]
                if committed - self._written_back >= self._write_back:
                    self._written_back = committed
                    self._env.start_write_back()


def map_reserve(path) -> int:
    """The map a writer of the store at ``path`` reserves: the size of the file system it is
    on (a store cannot outgrow it), at least DEFAULT_MAP_SIZE and at most MAX_RESERVE, or a
    quarter of the process's address space when that is limited (``ulimit -v``)."""
    stat = os.statvfs(path)
    most = MAX_RESERVE
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit != resource.RLIM_INFINITY:
        most = min(most, limit // 4)
    return max(DEFAULT_MAP_SIZE, min(most, stat.f_blocks * stat.f_frsize)) & ~((1 << 20) - 1)


def no_space(exc: BaseException) -> bool:
    """Whether ``exc`` (an OSError or an LMDB error) means the disk is full."""
    return getattr(exc, "errno", None) in _NO_SPACE or getattr(exc, "code", None) in _NO_SPACE


def _flush_times(tally: TimeTally) -> dict:
    """A tally of log flushes as ``log_flushes`` gives it (its count is ``flushes``)."""
    times = tally.summary()
    del times["count"]
    return times


class LmdbStore:
    """A quad store in one directory (LMDB's ``data.mdb`` and ``lock.mdb``, the log ``wal``).

    ``durability="durable"`` (default): a write returns once it is recoverable from
    stable storage, through the write-ahead log (see the module docstring),
    or, with ``log=False``, through LMDB's fsync of every commit.
    ``durability="nosync"`` writes the log and each commit to the OS
    without fsync: a crashed process loses nothing acknowledged, an OS crash
    or power loss may lose the last writes or damage the store (LMDB's
    MDB_NOSYNC contract, and what pyoxigraph does by default).
    ``writemap``: the batch writes its pages in place through the map (see
    the module docstring); default (None): with the log.
    ``map_size``: the map to open with; default (None): a writer reserves
    :func:`map_reserve` (no growth, so no remap, on the write path).
    ``cache_ahead``: with the batch written in place, the bytes of the file past
    the last committed page brought into the page cache after each batch commit,
    on a thread of its own (``Environment.cache_ahead``); 0: none.
    ``batch_writes``: the writes a batch commits at most; default (None):
    DEFAULT_BATCH_WRITES durable, UNSYNCED_BATCH_WRITES unsynced.
    ``write_back``: unsynced, with the batch written in place, the committed pages sent to
    disk after every ``write_back`` batch commits, on that thread
    (``Environment.start_write_back``: the kernel's writeback of gigabytes of dirty pages
    at once would otherwise clean the open batch's pages, and its commit fault them all in
    again); default WRITE_BACK_EVERY; 0 (or False): left to the kernel.
    ``map_ahead``: durable, with the batch written in place, the bytes of the file past the
    last committed page mapped writable after each batch commit's flush, on that thread
    (``Environment.map_ahead``: the first write after a commit otherwise faults on each new
    page it copies the batch's hot pages to); 0: none.  Not unsynced: there the pages that
    write faults on are mostly free pages taken again, which the commits' write-back left
    clean and read-only, not new ones (mapping ahead left its faults as they were).
    ``young_level``: the writer's sweeps file new term ids into t2i's young level and a
    merge pass copies it into t2i and empties it (Environment's ``young_level``); default
    YOUNG_LEVEL (on).
    """

    def __init__(self, path, *, durability: Durability | str = Durability.DURABLE, create: bool = True, readonly: bool = False,
                 map_size: int | None = None, log: bool | None = None,
                 batch_writes: int | None = None, batch_bytes: int = DEFAULT_BATCH_BYTES,
                 filing_lag: int = DEFAULT_FILING_LAG, filing_max: int = DEFAULT_FILING_MAX,
                 truncate_damaged_log: bool = False, writemap: bool | None = None,
                 waiting: Waiting = INLINE, cache_ahead: int = CACHE_AHEAD, write_back: int = WRITE_BACK_EVERY,
                 map_ahead: int = MAP_AHEAD, young_level: bool = YOUNG_LEVEL):
        self.path = Path(path)
        durability = Durability.parse(durability)
        if write_back < 0:
            raise ValueError(f"write_back: batch commits between write-backs, 0 for none, not {write_back}")
        # A log damaged in the middle (acknowledged writes after the damage)
        # refuses the open, unless the operator chose to lose those writes.
        self._truncate_damaged_log = truncate_damaged_log
        if create and not readonly:
            self.path.mkdir(parents=True, exist_ok=True)
        elif not (self.path / "data.mdb").exists():
            raise StoreError(f"no store at {self.path}")
        # Resolved once: a later chdir must not make close() miss the entry.
        self._key = self.path.resolve()
        if self._key in _OPEN:
            raise StoreError(f"{self.path}: the store is already open in this process")
        if log is None:
            log = True
        log = log and not readonly
        self._pending: tuple[Txn, list[Callable[[Txn], object]]] | None = None
        self._durability = durability
        self._log: WriteAheadLog | None = None  # the log the batch's records go to
        self._logs: list[WriteAheadLog] = []    # every log file of the store (two, durable)
        # Durable, with the log: the batch is committed unflushed and flushed on a thread
        # of its own (lakebench.store.commitsync).
        self._intent: CommitIntent | None = None
        self._data_sync: DataSync | None = None
        # Nosync, written in place: after each commit, on a thread of its own, the next
        # batch's new pages cached, then the commit's pages' write-back started.
        self._after_commit: AfterCommit | None = None
        self._pin: Txn | None = None      # a reader on the last flushed snapshot, until the next is
        self._failed: str | None = None   # why the store takes no more writes (a flush of data.mdb failed)
        self._sync: GroupSync | None = None  # the log's flushes (lakebench.store.logsync)
        self._writers_lock = -1           # a writer without a log: its shared lock on the log file
        self._batch: Txn | None = None    # the open LMDB write transaction (log mode)
        self._batch_records = 0           # logged writes in it
        self._owner: int | None = None    # the thread that opened it
        # True while the batch may not hold what the log holds (a rebuild or a
        # batch commit failed): the next read or write builds it again first.
        self._stale = False
        self._writing = False             # a write's op is running (writes do not nest)
        self._user: list | None = None    # changes of a begin()..commit() transaction (log mode)
        self._seq = 0                     # the last sequence number logged
        self._commits = {"count": 0, "seconds": 0.0, "max_seconds": 0.0, "pages_written": 0}
        self._filing = {"seconds": 0.0, "max_seconds": 0.0}  # the sweep's shares (term_filing)
        # After a write failed for lack of space, later writes are refused at
        # once until space is back (no batch change to undo, no log replayed);
        # a batch commit that failed is tried again after a growing pause,
        # not at every write.
        self._disk_full = False
        self._commit_after = 0.0
        self._commit_pause = 0.0
        self._rebuilds = 0
        if batch_writes is None:
            batch_writes = DEFAULT_BATCH_WRITES if durability is Durability.DURABLE else UNSYNCED_BATCH_WRITES
        self.batch_writes = max(1, batch_writes)
        self.batch_bytes = batch_bytes
        self.env = None
        log_path = self.path / LOG_FILE
        if writemap is None:  # the default: in place for the writer that owns the log
            writemap = log
        pipelined = log and durability.syncs
        # Without a log of its own, a writer still recovers one left by a crash.
        recover_only = not log and not readonly and (
            any((self.path / name).exists() and (self.path / name).stat().st_size > 0 for name in LOG_FILES)
            or CommitIntent.pending_at(self.path) is not None)
        try:
            # The log's lock first: opening LMDB may take its writer lock, which
            # a live batch of another process holds for as long as it lives.
            if log or recover_only:
                self._log = WriteAheadLog(log_path, durability=durability)
                self._logs = [self._log]
                if pipelined or (self.path / SECOND_LOG_FILE).exists():
                    self._logs.append(WriteAheadLog(self.path / SECOND_LOG_FILE, durability=durability))
                self._sync = GroupSync(self._flush_log, self._roll_back, waiting)
                # A commit whose flush a cut interrupted: LMDB opens the snapshot before it.
                undo_cut_commit(self.path)
                if pipelined:
                    self._intent = CommitIntent(self.path)
            elif not readonly:
                self._writers_lock = share_writers_lock(log_path)
            elif CommitIntent.pending_at(self.path) is not None and not writer_alive(self.path):
                raise StoreError(f"{self.path}: its last commit was cut before it was flushed; "
                                 "open the store for writing once to recover it")
            # Before LMDB maps the files (and after a cut commit is undone): a data.mdb cut
            # short, or a lock file the file system cannot back, would be a SIGBUS rather
            # than an error.
            before_open(self.path, create=create, readonly=readonly)
            # Only the log's owner, the one writer, leaves term ids unfiled.
            if map_size is None:
                map_size = DEFAULT_MAP_SIZE if readonly else map_reserve(self.path)
            # Pipelined, LMDB commits unflushed; this store flushes (DataSync), in steps.
            self.env = Environment(self.path, map_size=map_size,
                                   durability=Durability.NOSYNC if pipelined else durability, readonly=readonly,
                                   writemap=writemap and log, defer_filing=log, filing_lag=filing_lag,
                                   filing_max=filing_max, young_level=young_level)
            if self._intent is not None:
                # The first intent names the snapshot as opened: flushed, whatever wrote it
                # (a nosync writer may not have).
                self.env.sync(True)
                ahead = (functools.partial(_room_ahead, self.env, cache_ahead, map_ahead)
                         if self.env.writemap else None)
                self._data_sync = DataSync(self.env.sync_in_steps, self._intent, then=ahead)
            elif log and self.env.writemap:
                self._after_commit = AfterCommit(
                    _AfterUnsyncedCommit(self.env, cache_ahead, int(write_back)))
            if self._log is not None:
                self._recover()
                self._sync.mark_durable(self._seq)
            if recover_only:
                for each in self._logs:
                    each.truncate()
                    each.close()
                self._log, self._logs, self._sync = None, [], None
                self._writers_lock = share_writers_lock(log_path)
            if not log and not readonly:
                self._file_terms()
            if readonly:
                pending = pending_log_records(self.path, self.env)
                if pending:
                    raise StoreError(f"{self.path}: {pending} acknowledged write(s) are in the log only; "
                                     "open the store for writing once to recover them")
            else:
                self._maybe_grow()
        except BaseException:
            self._release()
            raise
        _OPEN[self._key] = self

    def _release(self) -> None:
        """Let go of everything open here, committing nothing: the environment before
        the log's lock, so that no other writer opens the store before this one's
        environment, and what its close does to the file (a map written in place
        gives back its blocks past the last page), is done."""
        if self._sync is not None:
            self._sync.idle()  # a flush on another thread still uses the log
        try:
            if self._data_sync is not None:
                try:
                    self._data_sync.wait()  # it uses the environment
                except Exception:  # noqa: BLE001  (its intent stays pending: the next open undoes it)
                    pass
            self._wait_after_commit()
            if self._pin is not None:
                pin, self._pin = self._pin, None
                pin.abort()
            self._abort_batch()
            if self._pending is not None:
                txn, _ = self._pending
                self._pending = None
                if txn.active:
                    txn.abort()
            if self.env is not None:
                self.env.close()
        finally:
            for each in self._logs:
                each.close()
            self._log, self._logs = None, []
            if self._intent is not None:
                self._intent.close()
            if self._writers_lock >= 0:
                os.close(self._writers_lock)
                self._writers_lock = -1

    @property
    def durability(self) -> Durability:
        return self._durability

    @property
    def logged(self) -> bool:
        """Whether writes go through the write-ahead log."""
        return self._log is not None

    @property
    def writing(self) -> bool:
        """Whether a write transaction is open here: reads then come from it, so a
        caller must not hold one across a write (read into a list instead)."""
        return self._pending is not None or self._batch is not None

    # -- transactions ------------------------------------------------------
    def read(self) -> Txn:
        """A read transaction (a snapshot), for ``with store.read() as txn:``.

        While writes are pending here, it is a view of the write transaction
        (its ``commit``/``abort``/``with`` do not end it), so it sees them;
        in log mode that is the batch, which only its thread may read.
        """
        if self._batch is not None or self._stale:
            return _Borrowed(self._open_batch())
        return self.env.begin()

    def begin(self) -> None:
        """Open a pending write transaction: later writes join it until commit()."""
        if self._log is not None:
            if self._user is None:
                self._user = []
        elif self._pending is None:
            self._pending = (self.env.begin(write=True), [])

    def commit(self) -> None:
        """Commit the pending transaction, if any."""
        if self._log is not None:
            changes, self._user = self._user, None
            if changes:
                self._sync.wait(self._log_changes(changes))
        elif self._pending is not None:
            txn, _ = self._pending
            self._pending = None
            txn.commit()
            self._maybe_grow()

    def rollback(self) -> None:
        """Discard the pending transaction, if any."""
        if self._log is not None:
            changes, self._user = self._user, None
            if changes:
                self._rebuild()  # the batch without them
        elif self._pending is not None:
            txn, _ = self._pending
            self._pending = None
            txn.abort()

    @property
    def in_transaction(self) -> bool:
        return self._pending is not None or self._user is not None

    def write(self, op: Callable[[Txn], object]):
        """Run ``op(txn)`` in a write transaction and return its result.

        Alone, ``op`` is committed (durable, in log mode: logged and
        flushed) before this returns; if it raises, none of its changes
        remain.  When the map is full the map is doubled and ``op`` run
        again: a write is never half done.  In a pending transaction
        (:meth:`begin`), ``op`` joins it.  ``op`` must not write through
        this store itself (StoreError): LMDB's writer lock is not reentrant.
        """
        if self._writing:
            raise StoreError("a store write cannot start inside another one")
        if self._failed is not None:
            raise StoreError(self._failed)
        if self._disk_full and not self._space_again():
            raise NoSpaceError(f"{self.path}: no space left on the device (less than "
                               f"{_SPACE_AGAIN >> 20} MiB free since a write failed for lack of it)")
        self._writing = True
        try:
            if self._log is not None:
                result, logged = self._write_logged(op)
            elif self._pending is not None:
                return self._write_pending(op)
            else:
                return self._write_committed(op)
        except (OSError, LmdbError) as exc:
            if no_space(exc):
                self._disk_full = True
                raise NoSpaceError(f"{self.path}: no space left on the device ({exc})") from exc
            raise
        finally:
            self._writing = False
        if logged is not None:
            # Outside the write: while this one waits for its flush, others
            # (other greenlets of the server) write theirs, for the next flush.
            self._sync.wait(logged)
        return result

    def settle(self) -> None:
        """Return once every write so far is durable: a read that saw the batch
        answers only then, so it never shows a write that a failed flush or a
        crash could still take back (LogSyncError if one did)."""
        if self._sync is not None:
            self._sync.wait(self._sync.pending())

    def _space_again(self) -> bool:
        """Whether the disk has room again since a write failed for lack of it."""
        stat = os.statvfs(self.path)
        free = (stat.f_bfree if os.geteuid() == 0 else stat.f_bavail) * stat.f_frsize
        self._disk_full = free < _SPACE_AGAIN
        return not self._disk_full

    @property
    def rebuilds(self) -> int:
        """How many times the batch was built again from the log (after a write
        or a batch commit failed): each replays every record since the last commit."""
        return self._rebuilds

    def _write_committed(self, op):
        for _ in range(_MAX_GROWTHS):
            txn = self.env.begin(write=True)
            try:
                result = op(txn)
                txn.commit()
            except MapFullError:
                txn.abort()
                self._grow()
                continue
            except BaseException:
                txn.abort()
                raise
            self._maybe_grow()
            return result
        raise MapFullError(-30792, "the map is still full after growing it")

    def _write_pending(self, op):
        txn, log = self._pending
        for _ in range(_MAX_GROWTHS):
            try:
                if not txn.active:  # aborted by a full map: replay in a new one
                    txn = self.env.begin(write=True)
                    self._pending = (txn, log)
                    for old in log:
                        old(txn)
                result = op(txn)
                txn.put_staged()  # here, where a full map is grown and the writes run again
            except MapFullError:
                txn.abort()
                self._grow()
                continue
            except BaseException:
                if not txn.active:  # an LMDB failure ended it: the pending writes are lost
                    self._pending = None
                raise
            log.append(op)
            return result
        raise MapFullError(-30792, "the map is still full after growing it")

    # -- log mode: the batch and the write-ahead log --------------------------
    def _write_logged(self, op) -> tuple[object, Token | None]:
        """Run ``op`` in the batch and log its changes, unflushed; its result, and
        the record to wait for (None: nothing changed, or a pending transaction's)."""
        if self._pin is not None and self._data_sync.finished:
            self._settle_commit()  # the last commit is flushed: its pages may be reused
        for _ in range(_MAX_GROWTHS):
            batch = self._open_batch()
            # The batch's last writes stage no index entries and drain those staged,
            # so that its commit (the write that waits longest) has none left to put.
            batch.stage_closed = self._batch_records >= self.batch_writes - STAGE_DRAIN_WRITES
            # Written in place: blocks for what this write may add to the batch, before it
            # writes (twice the batch's log for its long terms' overflow pages, and a write's).
            self.env.ensure_room(2 * self._log.size + _WRITE_ROOM)
            txn = LoggedTxn(batch)
            try:
                result = op(txn)
                if txn.changes:
                    began = time.perf_counter()
                    batch.file_due_terms()  # the sweep's share of this write, not a slice per commit
                    self._count_filing(time.perf_counter() - began)
            except MapFullError:  # the core aborted the batch: grow, rebuild it, run op again
                self._rebuild(grow=True)
                continue
            except BaseException:
                if txn.changes or not batch.active:
                    self._rebuild()  # undo op's changes: the batch again from the log
                raise
            if self._user is not None:
                self._user.extend(txn.changes)
            elif txn.changes:
                return result, self._log_changes(txn.changes)
            return result, None
        raise MapFullError(-30792, "the map is still full after growing it")

    def _log_changes(self, changes) -> Token:
        """Log changes already in the batch: one record, unflushed; what to wait
        for before the write is acknowledged (lakebench.store.logsync)."""
        seq = self._seq + 1
        try:
            self._log.write(seq, encode_changes(changes))
        except BaseException:
            self._rebuild()  # not logged, so not acknowledged: out of the batch
            raise
        self._seq = seq
        logged = self._sync.written(seq)
        if not self._log.durability.syncs:
            self._sync.mark_durable(seq)  # nosync: acknowledged once the OS has it
        self._batch_records += 1
        if ((self._batch_records >= self.batch_writes or self._log.size >= self.batch_bytes)
                and time.monotonic() >= self._commit_after):
            try:
                self._commit_batch()
            except Exception as exc:  # e.g. a full disk
                # The write stands: it is in the log (acknowledged once its
                # flush returns), and the batch (rebuilt from the log if need
                # be) is committed at a later write, after a pause that
                # doubles while commits keep failing.
                self._commit_pause = min(_COMMIT_PAUSE_MAX, max(_COMMIT_PAUSE_MIN, 2 * self._commit_pause))
                self._commit_after = time.monotonic() + self._commit_pause
                _logger.warning("%s: the batch could not be committed (%s); the log keeps its writes, "
                                "next try in %g s", self.path, exc, self._commit_pause)
            else:
                self._commit_pause, self._commit_after = 0.0, 0.0
        return logged

    def _begin_batch(self) -> Txn:
        self._batch = self.env.begin(write=True)
        self._owner = threading.get_ident()
        return self._batch

    def _open_batch(self) -> Txn:
        if self._stale or (self._batch is not None and not self._batch.active):
            # (ended by a failure inside LMDB, e.g. a read's put of staged entries)
            self._rebuild()
        elif self._batch is None:
            return self._begin_batch()
        self._check_owner()
        return self._batch

    def _check_owner(self) -> None:
        if self._owner != threading.get_ident():
            # LMDB's writer lock belongs to the thread that took it.
            raise StoreError("the store's write batch belongs to another thread")

    def _commit_batch(self, flushed: bool = False) -> None:
        """Commit the batch; the log then starts again.

        Durable, the commit is flushed on a thread of its own while the next
        batch is written (lakebench.store.commitsync), into the other log
        file; ``flushed`` waits for that flush.  Nosync, LMDB's commit is
        not flushed, and the same log starts again.
        On failure the batch is gone and is rebuilt from the log (now, or at
        the next use if that fails too); nothing acknowledged is lost.
        """
        if self._stale:
            self._rebuild()
        batch = self._batch
        if batch is None:
            if flushed:
                self._settle_commit()
            return
        if self._user:
            raise StoreError("a pending transaction is open")
        self._check_owner()
        batch = self._put_staged()
        pin = None
        if self._intent is not None:
            self._settle_commit()  # the last commit flushed, its pin let go
            # This batch's records durable in their log, which the next batch does not
            # write: until this commit is flushed, a cut replays them.
            self._sync.flush_now(self._log.sync_apart)
            info = self.env.info()
            self._intent.write(info["last_txnid"], info["page_size"],
                               meta_pages(self._key / "data.mdb", info["page_size"]))
            pin = self.env.begin()  # no page of the flushed snapshot is reused until the next is flushed
        self._batch = None
        written, started = _thread_bytes_written(), time.perf_counter()
        try:
            set_applied_sequence(batch, self._seq)
            batch.commit()
        except BaseException as exc:
            if pin is not None:
                pin.abort()
            if batch.active:
                batch.abort()
            self._stale = True
            try:
                self._rebuild(grow=isinstance(exc, MapFullError))
            except Exception as again:  # still stale: the next read or write tries again
                if isinstance(exc, MapFullError) and no_space(again):  # the map could not grow for it
                    raise self._no_room_to_commit(again) from exc
            raise
        self._count_commit(time.perf_counter() - started, written)
        self._batch_records = 0
        if pin is None:
            self._sync.mark_durable(self._seq)
            self._log.reset()
            if self._after_commit is not None and not flushed and not self.env.grow_due():
                self._after_commit.start()  # not at a close (no batch follows) or a checkpoint (rare)
        else:
            self._pin = pin
            self._log = self._logs[1] if self._log is self._logs[0] else self._logs[0]
            self._log.reset()  # its records are in the snapshot the pin keeps, flushed
            self._data_sync.start()
            if flushed or self.env.grow_due():  # growing the map needs no transaction open
                self._settle_commit()
        self._maybe_grow()

    def _put_staged(self) -> Txn:
        """Put the index entries the batch's writes staged (a commit's first
        step): a full map is grown and the batch built again from the log, as
        for a write; the batch."""
        for _ in range(_MAX_GROWTHS):
            try:
                self._batch.put_staged()
                return self._batch
            except MapFullError as exc:
                full = exc
            self._stale = True  # the core aborted the batch
            try:
                self._rebuild(grow=True)
            except Exception as again:  # still stale: the next read or write tries again
                if no_space(again):
                    raise self._no_room_to_commit(again) from full
                raise
        raise MapFullError(-30792, "the map is still full after growing it")

    def _no_room_to_commit(self, why: BaseException) -> NoSpaceError:
        return NoSpaceError(f"{self.path}: the batch could not be committed for lack of disk space ({why}); "
                            "the log keeps its writes, and the next open with space recovers them")

    def _grow(self) -> None:
        """Grow the map (mapped again): what reads the environment on another thread first done."""
        self._wait_after_commit()
        self.env.grow()

    def _wait_after_commit(self) -> None:
        """Nosync: wait for the thread that works after a commit (it reads the
        environment: before the map grows or the environment closes)."""
        if self._after_commit is not None:
            self._after_commit.wait()

    def _settle_commit(self) -> None:
        """Wait for the flush of the last commit (on its own thread) and let go of its pin."""
        if self._data_sync is None:
            return
        if self._failed is not None:  # no commit after it: its intent must stay as it is
            raise StoreError(self._failed)
        try:
            self._data_sync.wait()
        except Exception as exc:  # OSError, or LMDB's error from its msync: whatever it was, the
            # commit may not be on disk, and its intent stays pending
            self._failed = (f"{self.path}: data.mdb could not be flushed after a batch commit ({exc}); "
                            "the log keeps every acknowledged write: close the store and open it again")
            raise StoreError(self._failed) from exc
        if self._pin is not None:
            pin, self._pin = self._pin, None
            pin.abort()

    def _flush_log(self) -> None:
        """The group commit's flush: the log the batch writes to (the other one was
        flushed before the batch commit that left it)."""
        self._log.sync()

    def _count_commit(self, seconds: float, written_before: int | None) -> None:
        stats = self._commits
        stats["count"] += 1
        stats["seconds"] += seconds
        stats["max_seconds"] = max(stats["max_seconds"], seconds)
        written_after = _thread_bytes_written()
        if (stats["pages_written"] is not None and written_before is not None and written_after is not None
                and not self.env.writemap):
            stats["pages_written"] += (written_after - written_before) // self.env.info()["page_size"]
        else:
            stats["pages_written"] = None

    @property
    def batch_commits(self) -> dict:
        """The batch commits so far (log mode): how many, their seconds on the
        writer's thread (total and the longest), the pages LMDB wrote for them
        (None where it writes none itself, the map being written in place, or
        where the OS does not count a thread's writes), and, durable, the
        seconds of their flushes on a thread of their own (None nosync)."""
        stats = dict(self._commits)
        stats["seconds"] = round(stats["seconds"], 6)
        stats["max_seconds"] = round(stats["max_seconds"], 6)
        sync = self._data_sync
        stats["flush_seconds"] = None if sync is None else round(sync.seconds, 6)
        stats["flush_max_seconds"] = None if sync is None else round(sync.max_seconds, 6)
        return stats

    def _count_filing(self, seconds: float) -> None:
        stats = self._filing
        stats["seconds"] += seconds
        stats["max_seconds"] = max(stats["max_seconds"], seconds)

    @property
    def term_filing(self) -> dict:
        """The sweep's shares so far (log mode): the seconds the writes spent on the
        writer's thread filing due term ids into ``t2i`` after their own changes
        (total and the longest), part of each write's time."""
        return {"seconds": round(self._filing["seconds"], 6), "max_seconds": round(self._filing["max_seconds"], 6)}

    @property
    def flushing(self) -> bool:
        """Whether the last batch commit's flush (durable) is still running on its thread, up
        to its confirmation: a write's own log flush meanwhile waits behind the batch's pages
        on their way out."""
        return self._data_sync is not None and self._data_sync.flushing

    @property
    def log_flushes(self) -> dict:
        """The write-ahead log's flushes so far (log mode): how many ran, how many
        failed, the writes they covered (fewer flushes than writes: writes
        that waited together shared one, lakebench.store.logsync), and the time of
        those that returned (a failed one is not timed): ``seconds`` in all,
        ``max_seconds``, and ``over_ms``, how many took over 5, 20 and 50 ms
        (lakebench.store.tally).  A durable write waits for one; the others are
        the flushes before a batch commit (in the write that commits it), at a
        checkpoint, at close and at the recovery of an open."""
        if self._sync is None:
            return {"flushes": 0, "failures": 0, "writes": 0, **_flush_times(TimeTally())}
        return {"flushes": self._sync.flushes, "failures": self._sync.failures, "writes": self._sync.writes,
                **_flush_times(self._sync.times)}

    def heap_bytes(self) -> dict[str, int]:
        """What the store's own tables hold allocated in this process's heap, in bytes by
        table (``Environment.heap_bytes``): the part of private memory that is the store's
        (LMDB's map is the file's pages)."""
        env = self.env
        if env is None or env.closed:
            raise StoreError(f"{self.path}: the store is closed")
        return env.heap_bytes()

    def _abort_batch(self) -> None:
        batch, self._batch = self._batch, None
        self._batch_records = 0
        if batch is not None and batch.active:
            batch.abort()

    def _rebuild(self, grow: bool = False) -> None:
        """Abort the batch and build it again from the log (the records up to
        the last acknowledged one) and the pending transaction's changes,
        growing the map first if asked.  Until it succeeds the store is stale."""
        if self._batch is not None:
            self._check_owner()
        self._stale = True
        self._rebuilds += 1
        user = self._user or []
        for _ in range(_MAX_GROWTHS):
            self._abort_batch()
            if grow:
                self._settle_commit()  # growing the map needs no transaction open: the pin neither
                self._grow()
            batch = self._begin_batch()
            try:
                applied = applied_sequence(batch)
                # A record past self._seq is one whose flush failed: never acknowledged.
                records = [(seq, payload) for seq, payload in in_sequence(self._logs) if applied < seq <= self._seq]
                for _, payload in records:
                    replay(batch, payload)
                if user:
                    replay(batch, encode_changes(user))
            except MapFullError:
                grow = True
                continue
            self._batch_records = len(records)
            self._stale = False
            return
        raise MapFullError(-30792, "the map is still full after growing it")

    def _roll_back(self, synced: int) -> None:
        """A flush of the log failed: drop every record after ``synced`` (none was
        acknowledged) from the batch and from the log's tail, which the next
        record overwrites."""
        self._seq = synced
        self._rebuild()
        with self.env.begin() as txn:
            applied = applied_sequence(txn)
        # After a reset, the records since the last commit start at offset 0.
        self._log.position_after([(seq, payload) for seq, payload in self._log.records()
                                  if applied < seq <= synced])

    def _recover(self) -> None:
        """At open: replay what the log holds beyond the store, and commit it."""
        with self.env.begin() as txn:
            applied = applied_sequence(txn)
        # Each log file by its own last record: damage in the middle of the older one (its
        # batch's records end there, the next batch's are in the other file) is damage too.
        for log in self._logs:
            damage = log.damage_past(applied)
            if damage is not None:
                if not self._truncate_damaged_log:
                    raise LogError(f"{self.path}: {damage}; nothing was changed (to drop them and go on, "
                                   "open the store with its damaged log truncated: lakebench serve "
                                   "--truncate-damaged-log)")
                log.cut_after(list(log.records()))
                _logger.warning("%s: %s; truncated there, as asked", self.path, damage)
        pending = [(seq, payload) for seq, payload in in_sequence(self._logs) if seq > applied]
        if pending and pending[0][0] != applied + 1:
            raise LogError(f"{self.path}: the log starts at record {pending[0][0]} but the store holds "
                           f"records up to {applied}: records are missing")
        for kept, (before, after) in enumerate(zip(pending, pending[1:]), 1):
            if after[0] != before[0] + 1:
                if not self._truncate_damaged_log:
                    raise LogError(f"{self.path}: the log's record {after[0]} follows record {before[0]}: "
                                   "records are missing")
                # A damaged log cut above: the writes after the cut go with it.
                for log in self._logs:
                    log.cut_after([r for r in log.records() if r[0] <= before[0]])
                _logger.warning("%s: records %d to %d dropped after the cut, as asked", self.path,
                                after[0], pending[-1][0])
                pending = pending[:kept]
                break
        self._seq = pending[-1][0] if pending else applied
        if pending:
            # Kept until they are committed: new records go after the last of them.
            for log in self._logs:
                records = list(log.records())
                if records and records[-1][0] == self._seq:
                    self._log = log
                    log.position_after(records)
            self._rebuild()
            self._commit_batch(flushed=True)

    def _file_terms(self) -> None:
        """File the term ids a writer with a log left out of ``t2i``: without
        a log, every transaction would otherwise rebuild its table of them."""
        with self.env.begin() as txn:
            if not txn.unfiled_terms():
                return
        for _ in range(_MAX_GROWTHS):
            try:
                with self.env.begin(write=True) as txn:
                    txn.file_terms()
                return
            except MapFullError:
                self._grow()
        raise MapFullError(-30792, "the map is still full after growing it")

    def _maybe_grow(self) -> None:
        if self.env.open_txns == 0 and self.env.grow_due():
            try:
                self._grow()
            except (OSError, LmdbError) as exc:
                if not no_space(exc):
                    raise
                # Only ahead of need: a write that fills the map grows it (or fails) itself.
                _logger.warning("%s: the map could not grow ahead of need (%s)", self.path, exc)

    # -- the fast path -------------------------------------------------------
    def ingest(self, data: bytes, graph, *, format: str = "nt", base: str | None = None,
               extra: Iterable[tuple] = ()) -> int:
        """Store one document into ``graph`` in one transaction; the number of new quads.

        ``format`` is ``"nt"`` (parsed by the core, straight to term ids) or
        ``"turtle"`` (parsed by pyoxigraph against ``base``, default the
        graph's IRI, then handed to the core as N-Triples).  ``extra`` quads
        (4 terms each) are written in the same transaction, e.g. a
        container's ``ldp:contains``.  Malformed input raises ParseError
        (with line and column) and writes nothing.
        """
        g = term(graph)
        if format in ("turtle", "ttl"):
            data = turtle_to_ntriples(data, base or (g[1:].decode() if g[:1] == b"I" else None))
        elif format not in ("nt", "ntriples", "n-triples"):
            raise ValueError(f"unknown format {format!r}")
        quads = [tuple(term(t) for t in quad) for quad in extra]
        return self.write(lambda txn: txn.ingest_ntriples(data, g, quads))

    def add(self, quads: Iterable[tuple]) -> int:
        """Insert quads ``(s, p, o, graph)``; the number that were new."""
        quads = [tuple(term(t) for t in quad) for quad in quads]
        return self.write(lambda txn: txn.add(quads))

    def remove(self, s=None, p=None, o=None, graph=None) -> int:
        """Delete the quads matching the pattern (None: any); the number deleted."""
        s, p, o, g = term(s), term(p), term(o), term(graph)
        return self.write(lambda txn: txn.remove(s, p, o, g))

    def iter_serialize(self, *, graph=None, subject=None, format: str = "turtle",
                       prefixes: dict[str, str] | None = None) -> Iterator[bytes]:
        """Stream the triples of a graph and/or subject as N-Triples or Turtle chunks."""
        with self._snapshot() as txn:
            yield from txn.serialize(s=term(subject), c=term(graph), format=format, prefixes=prefixes)

    def serialize(self, *, graph=None, subject=None, format: str = "turtle",
                  prefixes: dict[str, str] | None = None) -> bytes:
        """The triples of a graph and/or subject as N-Triples or Turtle bytes."""
        return b"".join(self.iter_serialize(graph=graph, subject=subject, format=format, prefixes=prefixes))

    # -- reads -------------------------------------------------------------
    def _snapshot(self) -> Txn:
        """What a read sees: the open write transaction (not ended by ``with``) or a snapshot."""
        if self._pending is not None:
            return _Borrowed(self._pending[0])
        return self.read()

    def view(self, op):
        """``op(txn)`` over what a read sees here (the pending transaction, the batch or a snapshot)."""
        with self._snapshot() as txn:
            return op(txn)

    def quads(self, s=None, p=None, o=None, graph=None) -> list[tuple[bytes, bytes, bytes, bytes]]:
        """The quads matching a pattern, as encoded terms."""
        s, p, o, g = term(s), term(p), term(o), term(graph)
        return self.view(lambda txn: list(txn.quads(s, p, o, g)))

    def count(self, s=None, p=None, o=None, graph=None) -> int:
        """Number of quads matching a pattern."""
        s, p, o, g = term(s), term(p), term(o), term(graph)
        return self.view(lambda txn: txn.count(s, p, o, g))

    def __len__(self) -> int:
        """Number of quads."""
        return self.view(lambda txn: txn.quad_count())

    def contexts(self) -> list[bytes]:
        return self.view(lambda txn: txn.contexts())

    def checkpoint(self) -> None:
        """Commit the batch and empty the log: everything is then in ``data.mdb``
        (what a clean close does, the store staying open)."""
        self.commit()
        if self._log is not None:
            self._commit_batch(flushed=True)
            for log in self._logs:
                log.truncate()

    def clear_stale_readers(self) -> int:
        """Free the reader slots of processes that died holding a snapshot (a
        killed worker, say); how many.  LMDB has ``max_readers`` slots, and a
        stale one also keeps the pages of its snapshot from reuse."""
        return self.env.reader_check()

    def check(self) -> Problems:
        """The problems of the store as this store reads it (see :func:`lakebench.store.check`)."""
        result = check_snapshot(self.view)
        result.summary["log_pending"] = self._batch_records  # logged, not yet committed to LMDB
        return result

    def close(self) -> None:
        """Commit a pending transaction and the batch, and close the store."""
        if self.env.closed:
            return
        if self._batch is not None:
            self._check_owner()  # only the batch's thread may commit or abort it
        try:
            self.commit()
            if self._failed is not None:
                # The log keeps every acknowledged write, and the next open recovers them.
                _logger.warning("%s: closed without a commit: %s", self.path, self._failed)
            elif self._log is not None:
                self._sync.idle()
                self._commit_batch(flushed=True)
                for log in self._logs:
                    log.truncate()  # everything is in data.mdb: the log costs no disk at rest
        finally:
            # Whatever failed above is still in the log (or was never
            # acknowledged): the next open recovers it.
            self._release()
            _OPEN.pop(self._key, None)

    def __enter__(self) -> "LmdbStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _Borrowed:
    """A view of an open write transaction for reading: ending it is a no-op,
    since the transaction belongs to the store."""

    def __init__(self, txn: Txn):
        self._txn = txn

    def __getattr__(self, name):
        return getattr(self._txn, name)

    def commit(self) -> None:
        pass

    def abort(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> bool:
        return False


def turtle_to_ntriples(data: bytes, base: str | None) -> bytes:
    """Turtle -> N-Triples through pyoxigraph's parser (full Turtle 1.1)."""
    import pyoxigraph as ox

    try:
        quads = ox.parse(data, format=ox.RdfFormat.TURTLE, base_iri=base)
        return ox.serialize(quads, format=ox.RdfFormat.N_TRIPLES)
    except SyntaxError as e:
        raise ParseError(f"Turtle: {e.msg}", None, e.lineno, e.offset) from None




def opened(path) -> LmdbStore | None:
    """The store open in this process at ``path``, if any (LMDB forbids a second open)."""
    return _OPEN.get(Path(path).resolve())


class Problems(list):
    """The problems found by :func:`check` (empty: consistent), with ``summary`` counts."""

    summary: dict


def check_snapshot(read) -> Problems:
    """The core's check of one snapshot, through ``read`` (a store's read, or a function given the transaction)."""
    problems, summary = read(lambda txn: txn.check())
    result = Problems(problems)
    result.summary = summary
    return result
