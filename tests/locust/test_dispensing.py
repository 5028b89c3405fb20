"""Tests for lakebench.locust.dispensing: each index once, whatever the consumers (plain Python, no Locust)."""
from __future__ import annotations

import random

import pytest

from lakebench.locust import LoadTestError
from lakebench.locust.dispensing import BlockQueue, IndexDispenser, Ledger, block_size


def test_dispenser_hands_out_each_index_once():
    d = IndexDispenser(10)
    got = [list(d.take(n)) for n in (3, 0, 4, 5, 2)]
    assert got == [[0, 1, 2], [], [3, 4, 5, 6], [7, 8, 9], []]
    assert d.remaining == 0


def test_block_size_is_guided_and_capped():
    assert block_size(1000, consumers=2, want=8) == 8
    assert block_size(10, consumers=2, want=8) == 3  # ceil(10 / 4)
    assert block_size(1, consumers=5, want=8) == 1
    assert block_size(1000, consumers=1, want=500, cap=16) == 16
    assert block_size(1000, consumers=1, want=0) == 1


@pytest.mark.parametrize("first_alone", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_ledger_with_several_consumers_no_duplicates_no_gaps(seed, first_alone):
    """Workers ask for blocks and complete indices in a random interleaving."""
    rng = random.Random(seed)
    total = 137
    ledger = Ledger(total, cap=rng.choice([0, 5]), first_alone=first_alone)
    queues = [BlockQueue() for _ in range(4)]
    in_flight: list[int] = []
    finished_calls = 0
    created: list[int] = []
    while not ledger.finished:
        i = rng.randrange(len(queues))
        q = queues[i]
        if in_flight and rng.random() < 0.5:  # some PUT completes
            index = in_flight.pop(rng.randrange(len(in_flight)))
            created.append(index)
            finished_calls += ledger.complete({"index": index, "ok": True})
            continue
        index = q.pop()
        if index is None and not q.exhausted:
            block = ledger.grant(want=rng.randint(1, 6), consumers=len(queues))
            if block is None:  # the first child is out alone: nothing else may start
                assert first_alone and in_flight == [0] and not created
                continue
            q.add(block)
            index = q.pop()
        if index is not None:
            in_flight.append(index)
    assert finished_calls == 1  # exactly one completion was the last
    assert sorted(created) == list(range(total))
    assert len(ledger.records) == total
    assert all(len(q.queue) == 0 for q in queues)  # nothing granted was left unused
    assert ledger.grant(want=10) == range(0)


def test_first_alone_holds_every_grant_until_the_first_completes():
    ledger = Ledger(10, first_alone=True)
    assert ledger.grant(want=5) == range(0, 1)
    assert ledger.grant(want=5) is None and ledger.waiting
    ledger.complete({"index": 0})
    assert ledger.grant(want=5) == range(1, 6)
    assert not ledger.waiting
    one = Ledger(1, first_alone=True)
    assert one.grant() == range(0, 1) and one.grant() is None
    one.complete({"index": 0})
    assert one.grant() == range(0)  # exhausted, not waiting


def test_ledger_refuses_duplicate_and_unknown_completions():
    ledger = Ledger(3)
    ledger.grant(2)
    ledger.complete({"index": 0})
    with pytest.raises(LoadTestError, match="twice"):
        ledger.complete({"index": 0})
    with pytest.raises(LoadTestError, match="without being granted"):
        ledger.complete({"index": 2})


def test_aborted_ledger_grants_nothing():
    ledger = Ledger(5)
    ledger.abort("parent exists")
    assert ledger.grant(3) == range(0)


def test_block_queue_marks_exhaustion():
    q = BlockQueue()
