"""Group commit (lakebench.store.logsync): writes that wait together share one flush
of the write-ahead log, each is acknowledged only once a flush that began after
its record was written has returned, and a failed flush fails every write not
yet durable, whichever group it was in.

Driven as the server drives it: greenlets on one thread, the flush begun at the
end of the loop's turn, on the loop's thread or on gevent's thread pool
(lakebench.server.cooperation), a real store and real fdatasync.
"""
from __future__ import annotations

import os
import threading
import time

import pytest

from lakebench.store import LmdbStore, LogSyncError, check
from lakebench.store.terms import iri

gevent = pytest.importorskip("gevent")

from lakebench.server.cooperation import GEVENT, INLINE_FLUSH_SECONDS, LoopFlush  # noqa: E402  (needs gevent)
from lakebench.store import Waiting  # noqa: E402

G = "http://g.example/"


def _quad(k: int):
    return (iri(f"http://s.example/{k}"), iri("http://p.example/v"), iri(f"http://o.example/{k}"), iri(G))


def _subjects(store) -> set[int]:
    return {int(q[0].decode().rsplit("/", 1)[1]) for q in store.quads(None, None, None, iri(G))}


def _concurrently(store, keys, on_each=None) -> dict[int, object]:
    """Each key added by a greenlet of its own; what each got (None, or the error)."""
    outcome: dict[int, object] = {}

    def put(k):
        try:
            store.add([_quad(k)])
            outcome[k] = None
        except Exception as exc:  # noqa: BLE001 (what the write got is the result)
            outcome[k] = exc

    gevent.joinall([gevent.spawn(put, k) for k in keys], raise_error=True)
    return outcome


def test_writes_that_wait_together_share_a_flush(tmp_path):
    store = LmdbStore(tmp_path, waiting=GEVENT, batch_writes=100_000)
    outcome = _concurrently(store, range(200))
    assert set(outcome.values()) == {None}
    flushes = store.log_flushes
    assert flushes["writes"] == 200 and flushes["failures"] == 0
    # One flush per write is what a log without group commit does.
    assert 1 <= flushes["flushes"] <= 200 // 4, flushes
    store.close()
    with LmdbStore(tmp_path) as store:
        assert _subjects(store) == set(range(200))
    assert check(tmp_path) == []


def test_one_writer_alone_still_gets_one_flush_per_write(tmp_path):
    store = LmdbStore(tmp_path, waiting=GEVENT, batch_writes=100_000)
    for k in range(20):
        store.add([_quad(k)])
    assert store.log_flushes["flushes"] == 20
    store.close()


def test_a_write_is_acknowledged_only_after_a_flush_that_began_after_it(tmp_path, monkeypatch):
    """Each flush notes the records written when it began; no write may return
    before a flush that began after its record was written has returned."""
    store = LmdbStore(tmp_path, waiting=GEVENT, batch_writes=100_000)
    real = os.fdatasync
    lock = threading.Lock()
    flushes: list[tuple[float, float, int]] = []  # (began, returned, records written when it began)
    written = [0]

    def slow_fdatasync(fd):
        began, count = time.monotonic(), written[0]
        time.sleep(0.01)  # a slow disk: many writes arrive meanwhile
        real(fd)
        with lock:
            flushes.append((began, time.monotonic(), count))

    acknowledged: list[tuple[int, float]] = []

    def put(k):
        store.add([_quad(k)])
        acknowledged.append((k, time.monotonic()))

    original_write = store._log.write  # white-box: count records as they reach the log

    def counting_write(seq, payload):
        original_write(seq, payload)
        written[0] = seq

    monkeypatch.setattr(store._log, "write", counting_write)
    monkeypatch.setattr(os, "fdatasync", slow_fdatasync)
    gevent.joinall([gevent.spawn(put, k) for k in range(64)], raise_error=True)
    monkeypatch.undo()
    assert len(flushes) < 64
    seq_of = {k: i + 1 for i, k in enumerate(range(64))}  # greenlets run in spawn order, one record each
    for k, at in acknowledged:
        covering = [f for f in flushes if f[2] >= seq_of[k] and f[1] <= at]
        assert covering, f"write {k} was acknowledged before any flush covering it returned"
    store.close()


def test_a_failed_flush_fails_every_write_not_yet_durable(tmp_path, monkeypatch):
    store = LmdbStore(tmp_path, waiting=GEVENT, batch_writes=100_000)
    assert _concurrently(store, range(10)) == {k: None for k in range(10)}
    real = os.fdatasync
    calls = [0]

    def fails_once(fd):
        calls[0] += 1
        time.sleep(0.005)  # others write while it runs: they are in no flush yet
        if calls[0] == 1:
            raise OSError(5, "injected EIO")
        real(fd)

    monkeypatch.setattr(os, "fdatasync", fails_once)
    outcome = _concurrently(store, range(10, 40))
    monkeypatch.undo()
    failed = {k for k, got in outcome.items() if got is not None}
    assert all(isinstance(outcome[k], LogSyncError) and "injected" in str(outcome[k]) for k in failed)
    # The first flush's group and every write made while it ran were lost with it.
    assert len(failed) >= 2, outcome
    kept = set(range(40)) - failed
    assert _subjects(store) == kept  # the batch no longer shows what failed
    assert _concurrently(store, range(40, 50)) == {k: None for k in range(40, 50)}
    store.close()
    with LmdbStore(tmp_path) as store:  # and the log does not bring them back
        assert _subjects(store) == kept | set(range(40, 50))
    assert check(tmp_path) == []


def test_a_read_answers_only_once_what_it_saw_is_durable(tmp_path, monkeypatch):
    store = LmdbStore(tmp_path, waiting=GEVENT, batch_writes=100_000)
    real = os.fdatasync
    events: list[str] = []

    def slow(fd):
        time.sleep(0.05)
        real(fd)
        events.append("flushed")

    monkeypatch.setattr(os, "fdatasync", slow)

    def write():
        store.add([_quad(1)])
        events.append("write acknowledged")

    def read():
        seen = _subjects(store)  # the batch: the write is there, its flush still running
        store.settle()
        events.append(f"read answered {sorted(seen)}")

    gevent.joinall([gevent.spawn(write), gevent.spawn(read)], raise_error=True)
    assert events.index("flushed") < events.index("read answered [1]"), events
    store.close()


def test_a_read_of_a_write_whose_flush_failed_is_refused(tmp_path, monkeypatch):
    store = LmdbStore(tmp_path, waiting=GEVENT, batch_writes=100_000)

    def failing(fd):
        time.sleep(0.02)
        raise OSError(5, "injected EIO")

    monkeypatch.setattr(os, "fdatasync", failing)
    got: dict[str, object] = {}

    def write():
        try:
            store.add([_quad(1)])
        except LogSyncError as exc:
            got["write"] = exc

    def read():
        got["seen"] = _subjects(store)
        try:
            store.settle()
        except LogSyncError as exc:
            got["read"] = exc

    gevent.joinall([gevent.spawn(write), gevent.spawn(read)], raise_error=True)
    monkeypatch.undo()
    assert got["seen"] == {1} and isinstance(got["write"], LogSyncError) and isinstance(got["read"], LogSyncError)
    assert _subjects(store) == set()
    store.close()


def _fresh_waiting() -> Waiting:
    """GEVENT's waiting with a flush timer of its own (GEVENT's remembers other tests' flushes)."""
    return Waiting(run_blocking=LoopFlush(), event=GEVENT.event)


def test_the_writes_of_one_turn_of_the_loop_share_one_flush(tmp_path):
    """200 greenlets ready at once each write and wait: the flush begins once the
    last has written (the end of the turn), so one flush covers them all."""
    waiting = _fresh_waiting()
    store = LmdbStore(tmp_path, waiting=waiting, batch_writes=100_000)
    assert set(_concurrently(store, range(200)).values()) == {None}
    assert store.log_flushes["flushes"] == 1, store.log_flushes
    assert waiting.run_blocking.inline == 1 and waiting.run_blocking.pooled == 0
    store.close()


def test_a_slow_flush_runs_off_the_loop_which_goes_on_meanwhile(tmp_path, monkeypatch):
    """Flushes slower than INLINE_FLUSH_SECONDS move to a thread: while one runs,
    another greenlet of the loop keeps running."""
    waiting = _fresh_waiting()
    store = LmdbStore(tmp_path, waiting=waiting, batch_writes=100_000)
    real = os.fdatasync
    windows: list[tuple[float, float]] = []

    def slow(fd):
        began = time.monotonic()
        time.sleep(20 * INLINE_FLUSH_SECONDS)
        real(fd)
        windows.append((began, time.monotonic()))

    monkeypatch.setattr(os, "fdatasync", slow)
    ticks: list[float] = []
    writing = [True]

    def ticker():
        while writing[0]:
            ticks.append(time.monotonic())
            gevent.sleep(INLINE_FLUSH_SECONDS / 2)

    def writer():
        for k in range(12):
            store.add([_quad(k)])
        writing[0] = False

    gevent.joinall([gevent.spawn(ticker), gevent.spawn(writer)], raise_error=True)
    monkeypatch.undo()
    flush = waiting.run_blocking
    assert flush.inline >= 1 and flush.pooled >= 1, (flush.inline, flush.pooled)
    assert flush.recent_seconds > INLINE_FLUSH_SECONDS
    pooled = windows[flush.inline:]  # the first ones ran inline, until the mean passed the bound
    assert any(began < tick < ended for began, ended in pooled for tick in ticks), "the loop stood still"
    assert _subjects(store) == set(range(12))
    store.close()


def test_a_pool_that_cannot_take_the_flush_leaves_it_to_the_loop(tmp_path, monkeypatch):
    """No thread for a slow flush (a process limit): it runs on the loop's thread, no writer hangs."""
    waiting = _fresh_waiting()
    waiting.run_blocking.recent_seconds = 1.0  # as after slow flushes: the next goes to the pool
    store = LmdbStore(tmp_path, waiting=waiting, batch_writes=100_000)

    class NoThreads:
        def spawn(self, *args, **kwargs):
            raise RuntimeError("can't start new thread")

    monkeypatch.setattr(gevent.get_hub(), "_threadpool", NoThreads())  # what hub.threadpool returns
    with gevent.Timeout(10):
        assert set(_concurrently(store, range(5)).values()) == {None}
    assert waiting.run_blocking.pooled == 0 and waiting.run_blocking.inline >= 1
    store.close()
