"""A durable batch commit whose flush runs off the request path.

LMDB's durable commit flushes ``data.mdb`` on the committing thread, twice
(the transaction's pages, then its meta page), and the one write that filled
the batch paid for it: 9.0 s of a 150,000-child ingest, up to 173 ms at once
(docs/store.rst).  Here the batch is committed
without a flush (LMDB's MDB_NOSYNC), a thread of its own (:class:`DataSync`)
flushes ``data.mdb`` while the next batch is written, and what a power cut
in between could leave is undone at the next open.  That thread sends the
batch's pages to disk a small range at a time (``Environment.sync_in_steps``)
before the flush proper: a write's own log flush then waits behind one range
in flight, not behind the whole batch.

**What could go wrong, and what undoes it.**  An unflushed commit may reach
the disk in any order: its meta page (which names the new snapshot) before
some of the pages it names.  After a power cut LMDB would open that meta
page and read pages that are not there.  So before each commit the store
writes the meta pages as they are (the last flushed snapshot's) into the
*intent* file (:class:`CommitIntent`), flushed, marked pending; once the
thread's flush has returned it marks the intent confirmed, flushed.  An open
that finds a pending intent writes those meta pages back before LMDB reads
them: LMDB opens the snapshot before the commit, which is whole, because

* every one of its pages was flushed before the intent was written (the
  previous commit's flush is waited for before the next commit), and
* no page of it is written over until the intent is confirmed: LMDB reuses
  a page that a commit freed only two commits later (and never one that a
  live reader can see), and the commit after this one waits for this one's
  confirmation.  The store also holds a read transaction on that snapshot
  (the *pin*) from before the commit until then, which makes it explicit and
  keeps the map from being resized under the flushing thread;

and the write-ahead log still holds every acknowledged write since that
snapshot: each batch's records go to one of two log files in turn, flushed
before its commit, and a log file is started again only by the commit after
next, when the commit its records went into is confirmed.  This is LMDB
1.0's ``MDB_PREVSNAPSHOT`` (open the snapshot before the last), done with
0.9's API: the bytes written back are the meta pages LMDB itself wrote.

A flush that fails leaves the intent pending: the store takes no more
writes, and its next open goes back to the confirmed snapshot and replays
the log.  That open is refused while another process has the store's
environment open (its lock file would still name the cut commit), and it
checks that the intent is this file's.  A lakebench older than this module
knows neither ``wal.2`` nor ``commit.intent`` and would take the cut commit
as the store: the store format it writes, 6, is one such a lakebench
refuses.  tests/store/test_powerloss.py replays every crash
point of a traced run of this path.
"""
from __future__ import annotations

import fcntl
import logging
import os
import struct
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

from lakebench._store import LmdbError, StoreError
from lakebench.store.wal import fsync_path

_logger = logging.getLogger(__name__)

INTENT_FILE = "commit.intent"
#: magic | state | LMDB txn id of the snapshot the pages name | page size | CRC32 of the
#: txn id, the page size and the pages; then the two meta pages.  The state is outside
#: the CRC, so that confirming rewrites 4 bytes of one sector.
_HEAD = struct.Struct("<4sIQII")
_MAGIC = b"LBI1"
_PENDING, _CONFIRMED = 1, 2
_META_PAGES = 2


def _native():
    """``start_new_thread`` and ``allocate_lock`` of the OS, also in a process that gevent
    has monkey-patched (Locust's): a flush of a tenth of a second must not run on the event loop."""
    try:
        from gevent import monkey
    except ImportError:
        monkey = None
    if monkey is not None and monkey.is_module_patched("threading"):
        return monkey.get_original("_thread", "start_new_thread"), monkey.get_original("_thread", "allocate_lock")
    import _thread

    return _thread.start_new_thread, _thread.allocate_lock


class CommitIntent:
    """The intent file beside ``data.mdb``: the meta pages to write back after a cut.
    ``create=False`` opens an existing one only (none: nothing is pending)."""

    def __init__(self, store_dir: Path, create: bool = True):
        self.path = Path(store_dir) / INTENT_FILE
        created = create and not self.path.exists()
        self._fd = os.open(self.path, os.O_RDWR | (os.O_CREAT if create else 0), 0o644)
        if created:
            # Its name durable before any intent is written in it.
            os.fsync(self._fd)
            fsync_path(self.path.parent)

    @staticmethod
    def existing(store_dir: Path) -> "CommitIntent | None":
        """The store's intent file, opened, or None when it has none."""
        try:
            return CommitIntent(store_dir, create=False)
        except FileNotFoundError:
            return None

    @staticmethod
    def pending_at(store_dir: Path) -> bytes | None:
        """The meta pages of the store's intent if it is pending, else None."""
        intent = CommitIntent.existing(store_dir)
        if intent is None:
            return None
        try:
            pending = intent.pending()
            return None if pending is None else pending[2]
        finally:
            intent.close()

    def pending(self) -> tuple[int, int, bytes] | None:
        """(LMDB txn id of the snapshot, page size, its meta pages) if pending, else None."""
        head = os.pread(self._fd, _HEAD.size, 0)
        if len(head) < _HEAD.size:
            return None
        magic, state, txnid, page_size, crc = _HEAD.unpack(head)
        if magic != _MAGIC or state != _PENDING or not 512 <= page_size <= 1 << 16:
            return None
        pages = os.pread(self._fd, _META_PAGES * page_size, _HEAD.size)
        if len(pages) < _META_PAGES * page_size or _crc(txnid, page_size, pages) != crc:
            # Torn: its write never returned, so the commit it was for never began.
            return None
        return txnid, page_size, pages

    def write(self, txnid: int, page_size: int, pages: bytes) -> None:
        """The meta pages of snapshot ``txnid`` (every page of it flushed), pending, flushed."""
        head = _HEAD.pack(_MAGIC, _PENDING, txnid, page_size, _crc(txnid, page_size, pages))
        _write_all(self._fd, head + pages, 0)
        os.fdatasync(self._fd)

    def confirm(self) -> None:
        """The commit after it is flushed, or the meta pages written back: nothing to undo."""
        _write_all(self._fd, struct.pack("<I", _CONFIRMED), 4)
        os.fdatasync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def undo_cut_commit(store_dir: Path) -> bool:
    """Before LMDB opens the store (its writer, holding the log's lock): if a commit
    was cut before its flush was confirmed, write back the meta pages of the snapshot
    before it, flushed, and confirm the intent; whether there was one.

    Refused (StoreError) while another process has the store's environment open: its
    lock file would keep LMDB's count of transactions, which names the cut commit.
    LMDB's own lock (a write lock on the first byte of ``lock.mdb``, which the first
    opener takes to reset the file) is held meanwhile, so no reader opens it half done.
    The intent must be of this file: the meta page of its snapshot is still in place."""
    store_dir = Path(store_dir)
    intent = CommitIntent.existing(store_dir)
    if intent is None:
        return False
    try:
        pending = intent.pending()
        if pending is None:
            return False
        txnid, page_size, pages = pending
        data_file = store_dir / "data.mdb"
        slot = (txnid & 1) * page_size
        if meta_pages(data_file, page_size)[slot:slot + page_size] != pages[slot:slot + page_size]:
            raise StoreError(f"{intent.path} does not belong to {data_file} (the meta page of its "
                             f"snapshot, transaction {txnid}, is not there); nothing was changed")
        with _environment_alone(store_dir):
            restore_meta_pages(data_file, pages)
            intent.confirm()  # the pages written back are on disk: nothing is left to undo
        return True
    finally:
        intent.close()


@contextmanager
def _environment_alone(store_dir: Path):
    try:
        fd = os.open(store_dir / "lock.mdb", os.O_RDWR)
    except FileNotFoundError:  # no process ever opened it since it was made: alone
        yield
        return
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
        except OSError:
            raise StoreError(f"{store_dir}: its last batch commit was cut before it was flushed, and another "
                             "process has the store open: close it, then open the store for writing "
                             "to recover it") from None
        yield
    finally:
        os.close(fd)  # lets the lock go


def meta_pages(data_file: Path, page_size: int) -> bytes:
    """The two meta pages of ``data.mdb`` as the page cache has them."""
    fd = os.open(data_file, os.O_RDONLY)
    try:
        pages = os.pread(fd, _META_PAGES * page_size, 0)
    finally:
        os.close(fd)
    if len(pages) != _META_PAGES * page_size:
        raise StoreError(f"{data_file}: shorter than its meta pages")
    return pages


def restore_meta_pages(data_file: Path, pages: bytes) -> None:
    """Write the meta pages of a pending intent back, flushed, before LMDB opens the file."""
    fd = os.open(data_file, os.O_RDWR)
    try:
        _write_all(fd, pages, 0)
        os.fdatasync(fd)
    finally:
        os.close(fd)


class _OneThread:
    """Work on a thread of the OS's own (see :func:`_native`), one run at a time."""

    def __init__(self):
        self._start_thread, allocate_lock = _native()
        self._done = allocate_lock()
        self._running = False

    @property
    def finished(self) -> bool:
        """Whether the run started last has returned (a wait then does not block)."""
        return not self._running or not self._done.locked()

    def _start(self, run: Callable[[], None]) -> None:
        self._done.acquire()
        self._running = True
        try:
            self._start_thread(self._guarded, (run,))
        except BaseException:  # no thread: nothing will release the lock, and no wait may hang
            self._running = False
            self._done.release()
            raise

    def _guarded(self, run: Callable[[], None]) -> None:
        try:
            run()
        finally:
            self._done.release()

    def _join(self) -> None:
        if self._running:
            self._done.acquire()
            self._done.release()
            self._running = False


def _for_the_next_batch(work: Callable[[], None]) -> None:
    """Run ``work`` done ahead for the next batch: its failure costs only speed, so it is logged."""
    try:
        work()
    except (OSError, LmdbError) as exc:
        _logger.warning("after a batch commit: %s", exc)


class DataSync(_OneThread):
    """Flushes ``data.mdb`` after a commit on a thread of its own, then confirms the intent,
    then runs ``then`` (work for the next batch, whose failure is only logged).

    One flush at a time: :meth:`start` after a commit, :meth:`wait` before the
    next one (and before the environment closes).  ``seconds`` and ``max_seconds``
    are the flushes' and confirmations', ``then`` not included."""

    def __init__(self, flush: Callable[[], None], intent: CommitIntent,
                 then: Callable[[], None] | None = None):
        super().__init__()
        self._flush = flush
        self._intent = intent
        self._then = then  # after the confirmation: work for the next batch (the cache ahead)
        self._error: BaseException | None = None
        self.seconds = 0.0
        self.max_seconds = 0.0
        #: Whether the flush started last is running, up to its confirmation (not ``then``).
        self.flushing = False

    def start(self) -> None:
        self._error = None
        self.flushing = True
        try:
            self._start(self._run)
        except BaseException:
            self.flushing = False
            raise

    def _run(self) -> None:
        import time

        began = time.perf_counter()
        try:
            self._flush()
            self._intent.confirm()
        except BaseException as exc:  # noqa: BLE001  (the writer raises it, at wait())
            self._error = exc
            return
        finally:
            self.flushing = False
        seconds = time.perf_counter() - began
        self.seconds += seconds
        self.max_seconds = max(self.max_seconds, seconds)
        if self._then is not None:
            _for_the_next_batch(self._then)

    def wait(self) -> None:
        """Return once the flush started last has returned; raise what it raised."""
        self._join()
        if self._error is not None:
            error, self._error = self._error, None
            raise error


class AfterCommit(_OneThread):
    """Runs ``work`` on a thread of its own after an unflushed batch commit: for the unsynced
    store, the next batches' blocks allocated and their new pages cached ahead
    (``Environment.ensure_room`` and ``cache_ahead``, what the durable store's
    :class:`DataSync` does after each flush), then, after every ``write_back`` commits (each,
    by default), the committed pages' write-back started (``Environment.start_write_back``;
    ``lmdb_store._AfterUnsyncedCommit``).  One at a time: a start while
    the last one runs is skipped, the next commit starts another.  :meth:`wait` before the
    map grows (mapped again, while ``work`` reads the environment's meta page) or the
    environment closes."""

    def __init__(self, work: Callable[[], None]):
        super().__init__()
        self._work = work

    def start(self) -> None:
        if not self.finished:
            return
        self._join()
        self._start(lambda: _for_the_next_batch(self._work))

    def wait(self) -> None:
        """Return once the run started last has returned."""
        self._join()


def _crc(txnid: int, page_size: int, pages: bytes) -> int:
    return zlib.crc32(pages, zlib.crc32(struct.pack("<QI", txnid, page_size)))


def _write_all(fd: int, data: bytes, offset: int) -> None:
    view, written = memoryview(data), 0
    while written < len(data):
        written += os.pwrite(fd, view[written:], offset + written)
