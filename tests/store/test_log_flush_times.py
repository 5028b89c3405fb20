"""The write-ahead log's flushes timed (lakebench.store.logsync, LmdbStore.log_flushes):
a durable write waits for one, so their slowest times say how much of the writes'
slowest is the disk's.  The tally (lakebench.store.tally) keeps no time itself."""
from __future__ import annotations

import os

import pytest

from lakebench.store import LmdbStore, LogSyncError
from lakebench.store.logsync import GroupSync
from lakebench.store.tally import SLOW_MS, TimeTally
from lakebench.store.terms import iri


def _quad(k: int):
    return (iri(f"http://s.example/{k}"), iri("http://p.example/v"), iri(f"http://o.example/{k}"),
            iri("http://g.example/"))


def test_a_tally_counts_each_time_over_each_threshold_and_keeps_none():
    tally = TimeTally()
    for ms in (1, 5, 5.5, 20, 21, 50, 51, 400):
        tally.add(ms / 1000)
    summary = tally.summary()
    assert summary["count"] == 8 and summary["max_seconds"] == 0.4
    # Over, not at: a time of exactly 5 ms is not over 5 ms.
    assert summary["over_ms"] == {"5": 6, "20": 4, "50": 2}
    assert summary["seconds"] == pytest.approx(0.5535)
    assert TimeTally.__slots__ and not hasattr(tally, "__dict__")  # its size is fixed
    assert len(tally.over) == len(SLOW_MS)


class _Clock:
    """A stand-in for the time module of lakebench.store.logsync: its clock moves only when a
    fake flush says how long it took, so that the counts over each threshold are exact."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now

    def took(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch):
    from lakebench.store import logsync

    fake = _Clock()
    monkeypatch.setattr(logsync, "time", fake)
    return fake


def test_a_group_flush_and_a_flush_before_a_commit_are_both_timed_and_a_failed_one_is_not(clock):
    sync = GroupSync(lambda: clock.took(0.025), roll_back=lambda synced: None)
    sync.wait(sync.written(1))                 # a group's flush, 25 ms
    sync.written(2)
    sync.flush_now(lambda: clock.took(0.06))   # the owner's flush before a batch commit, 60 ms

    def fails():
        clock.took(0.5)
        raise OSError(5, "EIO")

    sync.written(3)
    with pytest.raises(LogSyncError):
        sync.flush_now(fails)
    times = sync.times.summary()
    assert sync.flushes == 2 and sync.failures == 1
    assert times == {"count": 2, "seconds": 0.085, "max_seconds": 0.06, "over_ms": {"5": 2, "20": 2, "50": 1}}


def test_a_durable_stores_log_flushes_say_how_long_the_writes_waited_for_the_disk(tmp_path, monkeypatch, clock):
    store = LmdbStore(tmp_path, batch_writes=100_000)  # no batch commit among these writes
    real = os.fdatasync
    calls = [0]
    slow = {2: 0.025, 4: 0.08}  # the 3rd and 5th flush after the open: one over 20 ms, one over 50 ms

    def fdatasync(fd):
        real(fd)
        clock.took(slow.get(calls[0], 0.0001))
        calls[0] += 1

    monkeypatch.setattr(os, "fdatasync", fdatasync)
    before = store.log_flushes
    for k in range(6):
        store.add([_quad(k)])
    after = store.log_flushes
    monkeypatch.undo()
    store.close()
    assert calls[0] == 6, "one log flush per durable write, and nothing else flushed"
    assert after["flushes"] - before["flushes"] == 6
    assert {k: after["over_ms"][k] - before["over_ms"][k] for k in after["over_ms"]} == {"5": 2, "20": 2, "50": 1}
    assert after["max_seconds"] == 0.08
    assert after["seconds"] - before["seconds"] == pytest.approx(0.105 + 4 * 0.0001)


def test_an_unsynced_store_waits_for_no_log_flush(tmp_path):
    store = LmdbStore(tmp_path, durability="nosync", batch_writes=100_000)
    for k in range(20):
        store.add([_quad(k)])
    store.close()
    flushes = store.log_flushes
    assert flushes["writes"] == 20 and flushes["flushes"] == 0
    assert flushes["over_ms"] == {"5": 0, "20": 0, "50": 0} and flushes["seconds"] == 0
