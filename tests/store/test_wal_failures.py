"""The log mode when something fails: nothing acknowledged is lost, nothing
unacknowledged is kept, and the store goes on (or refuses) cleanly."""
from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from lakebench.store import LmdbStore, LogError, LogSyncError, MapFullError, NoSpaceError, StoreError, check
from lakebench.store.terms import iri

from ..conftest import fill_disk

S, P, G = iri("http://ex.org/s"), iri("http://ex.org/p"), iri("http://ex.org/g")


def _quad(i: int) -> tuple:
    return (S, P, iri(f"http://ex.org/o{i}"), G)


def _objects(store: LmdbStore) -> set[bytes]:
    return {q[2] for q in store.quads()}


def _long_quad(i: int) -> tuple:
    return (iri(f"http://ex.org/s{i}"), P, b"L" + b"x" * 300 + str(i).encode(), G)


def test_a_map_that_cannot_grow_under_a_held_snapshot_loses_nothing(tmp_path):
    store = LmdbStore(tmp_path, map_size=1 << 17, batch_writes=100_000)
    snapshot = store.read()  # no batch yet: a real snapshot, which forbids growing the map
    acknowledged = 0
    with pytest.raises(StoreError, match="cannot grow"):
        for i in range(2000):
            store.add([_long_quad(i)])
            acknowledged += 1
    assert 0 < acknowledged < 2000
    assert len(store) == acknowledged  # the reads rebuild the batch from the log first
    snapshot.abort()
    store.add([_long_quad(5000)])
    assert len(store) == acknowledged + 1
    store.close()
    with LmdbStore(tmp_path) as store:
        assert len(store) == acknowledged + 1
    assert check(tmp_path) == []


def test_a_write_whose_flush_failed_is_not_replayed(tmp_path, monkeypatch):
    store = LmdbStore(tmp_path, batch_writes=1000)
    store.add([_quad(1)])

    def failing_fdatasync(fd):
        raise OSError(5, "injected EIO")

    with monkeypatch.context() as patch:
        patch.setattr(os, "fdatasync", failing_fdatasync)
        with pytest.raises(LogSyncError, match="injected"):
            store.add([_quad(2)])
    assert _objects(store) == {_quad(1)[2]}
    store.add([_quad(3)])  # the next write rebuilds the batch: record 2 must not come back
    assert _objects(store) == {_quad(1)[2], _quad(3)[2]}
    store.close()
    with LmdbStore(tmp_path) as store:
        assert _objects(store) == {_quad(1)[2], _quad(3)[2]}


def test_a_batch_commit_that_fails_after_the_flush_does_not_fail_the_write(tmp_path):
    store = LmdbStore(tmp_path, batch_writes=2)
    store.add([_quad(1)])

    def no_space(txn):
        raise OSError(28, "injected ENOSPC")

    store._batch = _FailingCommit(store._batch, no_space)  # white-box: LMDB's commit fails, as on a full disk
    store.add([_quad(2)])  # logged and flushed: acknowledged, whatever the batch commit does
    assert _objects(store) == {_quad(1)[2], _quad(2)[2]}
    store.add([_quad(3)])  # into the batch rebuilt from the log (the commit is tried again later)
    store.close()
    with LmdbStore(tmp_path) as store:
        assert _objects(store) == {_quad(1)[2], _quad(2)[2], _quad(3)[2]}
    assert check(tmp_path) == []


class _FailingCommit:
    def __init__(self, txn, fail):
        self._txn, self._fail = txn, fail

    def __getattr__(self, name):
        return getattr(self._txn, name)

    def commit(self):
        self._txn.abort()
        self._fail(self._txn)


def test_a_full_map_while_committing_the_batch_grows_it_and_keeps_the_writes(tmp_path):
    store = LmdbStore(tmp_path, batch_writes=2)
    store.add([_quad(1)])

    def full(txn):
        raise MapFullError(-30792, "injected")

    store._batch = _FailingCommit(store._batch, full)  # white-box: LMDB's MDB_MAP_FULL at commit
    store.add([_quad(2)])
    store.add([_quad(3)])
    store.add([_quad(4)])
    assert len(store) == 4
    store.close()
    with LmdbStore(tmp_path) as store:
        assert len(store) == 4


@pytest.mark.parametrize("name, args", [("set_meta", ("x", b"1")), ("commit", ()), ("abort", ())])
def test_a_write_cannot_end_the_batch_or_write_unlogged(tmp_path, name, args):
    with LmdbStore(tmp_path) as store:
        store.add([_quad(1)])
        with pytest.raises(StoreError, match="not allowed"):
            store.write(lambda txn: getattr(txn, name)(*args))
        store.add([_quad(2)])
        assert len(store) == 2


@pytest.mark.parametrize("log", [True, False])
def test_writes_do_not_nest(tmp_path, log):
    with LmdbStore(tmp_path, log=log, batch_writes=1) as store:
        def outer(txn):
            txn.add([_quad(0)])
            store.add([_quad(1)])  # would log and commit the batch under the outer write

        with pytest.raises(StoreError, match="inside another"):
            store.write(outer)
        assert len(store) == 0
        store.add([_quad(2)])
        assert len(store) == 1


_OTHER_WRITER = r"""
import sys
from lakebench.store import LmdbStore, LogError
try:
    LmdbStore(sys.argv[1], log=sys.argv[2] == "log")
except LogError as exc:
    print("refused:", exc)
else:
    print("opened")
"""


@pytest.mark.parametrize("here, there", [("log", "nolog"), ("nolog", "log")])
def test_a_writer_with_a_log_and_one_without_exclude_each_other(tmp_path, here, there):
    # Without this, the second waits for LMDB's writer lock as long as the batch lives.
    with LmdbStore(tmp_path, log=here == "log") as store:
        store.add([_quad(1)])
        out = subprocess.run([sys.executable, "-c", _OTHER_WRITER, str(tmp_path), there],
                             capture_output=True, text=True, timeout=60)
        assert out.stdout.startswith("refused:"), out.stdout + out.stderr


def test_writers_without_a_log_share_the_store(tmp_path):
    with LmdbStore(tmp_path, log=False) as store:
        store.add([_quad(1)])
        out = subprocess.run([sys.executable, "-c", _OTHER_WRITER, str(tmp_path), "nolog"],
                             capture_output=True, text=True, timeout=60)
        assert out.stdout.strip() == "opened", out.stdout + out.stderr


def test_an_open_that_fails_half_way_releases_the_store(tmp_path, monkeypatch):
    LmdbStore(tmp_path).close()
    with monkeypatch.context() as patch:
        patch.setattr(LmdbStore, "_maybe_grow", lambda self: (_ for _ in ()).throw(OSError("injected")))
        with pytest.raises(OSError, match="injected"):
            LmdbStore(tmp_path)
    with LmdbStore(tmp_path) as store:  # neither "already open" nor the log's lock held
        store.add([_quad(1)])


def test_closing_after_a_chdir_forgets_the_store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    store = LmdbStore("s")
    store.add([_quad(1)])
    monkeypatch.chdir("/")
    store.close()
    monkeypatch.chdir(tmp_path)
    with LmdbStore("s") as store:
        assert len(store) == 1


def test_only_the_batch_thread_may_close_the_store(tmp_path):
    store = LmdbStore(tmp_path)
    store.add([_quad(1)])
    errors = []
    thread = threading.Thread(target=lambda: _record(errors, store.close))
    thread.start()
    thread.join()
    assert len(errors) == 1 and "another thread" in errors[0]
    store.add([_quad(2)])  # the owner still has its batch
    store.close()
    with LmdbStore(tmp_path) as store:
        assert len(store) == 2


def _record(errors: list, call) -> None:
    try:
        call()
    except StoreError as exc:
        errors.append(str(exc))


def test_a_record_too_large_for_the_log_is_refused(tmp_path, monkeypatch):
    from lakebench.store import wal

    monkeypatch.setattr(wal, "MAX_RECORD", 200)
    with LmdbStore(tmp_path) as store:
        store.add([_quad(1)])
        with pytest.raises(LogError, match="larger than a log record"):
            store.add([_long_quad(2)])
        assert len(store) == 1


def test_a_full_disk_that_stays_full_refuses_writes_without_replaying_the_log(tmp_path, small_disk):
    """Once a write failed for lack of space, the next ones are refused at once
    (no change to undo, no log replayed), until space is freed."""
    store = LmdbStore(small_disk / "s", batch_writes=100_000)
    acknowledged = 0
    filler = fill_disk(small_disk, 1 << 20)
    with pytest.raises(NoSpaceError):
        for i in range(100_000):
            store.add([_long_quad(i)])
            acknowledged += 1
    assert acknowledged > 0
    rebuilds = store.rebuilds
    for i in range(50):
        with pytest.raises(NoSpaceError, match="since a write failed"):
            store.add([_long_quad(10**6 + i)])
    assert store.rebuilds == rebuilds  # not one replay of the log for the refused writes
    filler.unlink()
    store.add([_long_quad(2 * 10**6)])  # space again: writes resume
    store.close()
    with LmdbStore(small_disk / "s") as store:
        assert store.count() == acknowledged + 1
    assert check(small_disk / "s") == []


def test_a_batch_commit_that_keeps_failing_is_tried_after_a_pause(tmp_path, monkeypatch):
    import lakebench.store.lmdb_store

    monkeypatch.setattr(lakebench.store.lmdb_store, "_COMMIT_PAUSE_MIN", 600.0)  # however slow the writes below
    store = LmdbStore(tmp_path, batch_writes=1)
    attempts = []

    def no_space(txn):
        attempts.append(1)
        raise OSError(28, "injected ENOSPC")

    real_commit = store._commit_batch

    def failing_commit():  # white-box: every batch commit fails, as on a disk that stays full
        store._batch = _FailingCommit(store._batch, no_space) if store._batch is not None else None
        real_commit()

    store._commit_batch = failing_commit
    for i in range(50):
        store.add([_quad(i)])  # each acknowledged: it is in the log
    assert len(attempts) == 1  # not one commit (and log replay) per write
    del store._commit_batch
    store.close()
    with LmdbStore(tmp_path) as store:
        assert _objects(store) == {_quad(i)[2] for i in range(50)}
