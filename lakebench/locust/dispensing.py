"""Which child indices are sent, once each, whatever the users and nodes.

Exactly ``children`` creations happen in total, whatever the number of
users, ``--processes`` or ``--master``/``--worker`` nodes, because indices
come from one dispenser, held by one :class:`Ledger`: in the one process of
a local run, on the master in a distributed run (which hands out blocks to
the workers' :class:`BlockQueue`; :mod:`lakebench.locust.coordination`).

Pure Python: nothing here imports Locust or gevent.
"""
from __future__ import annotations

import math
from collections import deque

from lakebench.locust import LoadTestError

class IndexDispenser:
    """Hands out the indices ``0..total-1`` once each, in ascending blocks.

    >>> d = IndexDispenser(5)
    >>> list(d.take(2)), list(d.take(10)), list(d.take(1))
    ([0, 1], [2, 3, 4], [])
    """

    def __init__(self, total: int, start: int = 0):
        if total < 0:
            raise ValueError(f"total must not be negative, got {total}")
        self.total = total
        self.next = start  # the mixed workload's creates follow the children already there

    @property
    def remaining(self) -> int:
        return self.total - self.next

    def take(self, count: int = 1) -> range:
        """The next ``count`` indices (fewer at the end, none once exhausted)."""
        start = self.next
        self.next = min(self.total, start + max(0, count))
        return range(start, self.next)


def block_size(remaining: int, consumers: int, want: int, cap: int = 0) -> int:
    """How many indices to grant a consumer asking for ``want``.

    Guided self-scheduling: at most a ``1/(2*consumers)`` share of what is
    left, so the last blocks are small and no node is left holding a long
    tail while the others idle; at least 1; at most ``cap`` if set.

    >>> block_size(1000, 2, 50), block_size(10, 2, 50), block_size(1, 4, 8)
    (50, 3, 1)
    """
    share = math.ceil(remaining / (2 * max(1, consumers)))
    size = max(1, min(max(1, want), share))
    return min(size, cap) if cap > 0 else size


class Ledger:
    """The dispenser's owner (local runner or master): grants and completions.

    Every index is granted once and must be completed once; a duplicate or
    unknown completion is an error, never silently counted.

    ``first_alone``: the first index is granted alone, and nothing more until
    it has completed, so a server's first-use work (a fresh Fedora 4
    registers the graph's namespace prefixes, and concurrent first PUTs race
    on it) is not raced by the other users.
    """

    def __init__(self, total: int, cap: int = 0, first_alone: bool = False):
        self.dispenser = IndexDispenser(total)
        self.total = total
        self.cap = cap
        self.first_alone = first_alone
        self.outstanding: set[int] = set()
        self.done: set[int] = set()
        self.records: list[dict] = []  # in completion order (as reported)
        self.created = 0  # of them, the PUTs that succeeded: the children the system holds
        self.aborted: str | None = None
        self.stopped_early = False  # the budget ended the dispensing (see stop_early)

    def grant(self, want: int = 1, consumers: int = 1) -> range | None:
        """A block of indices; empty when none are left; None: ask again after the next completion."""
        if self.aborted:
            return range(0)
        if self.waiting:
            return None
        size = block_size(self.dispenser.remaining, consumers, want, self.cap)
        if self.first_alone and self.dispenser.next == 0:
            size = 1
        block = self.dispenser.take(size)
        self.outstanding.update(block)
        return block

    def complete(self, record: dict) -> bool:
        """Record one finished PUT; True when it was the last one."""
        index = record["index"]
        if index not in self.outstanding:
            what = "twice" if index in self.done else "without being granted"
            raise LoadTestError(f"child {index} reported complete {what}")
        self.outstanding.remove(index)
        self.done.add(index)
        self.records.append(record)
        if record.get("ok", True):
            self.created += 1
        return self.finished

    @property
    def finished(self) -> bool:
        return len(self.done) == self.total

    @property
    def waiting(self) -> bool:
        """True while the first index is out alone (``first_alone``)."""
        return self.first_alone and self.dispenser.next > 0 and not self.done

    def abort(self, reason: str) -> None:
        self.aborted = reason

    def stop_early(self) -> bool:
        """Grant nothing more: the indices granted so far are all there will be; True when they are all done.

        >>> ledger = Ledger(10)
        >>> ledger.grant(3)
        range(0, 3)
        >>> ledger.complete({"index": 0})
        False
        >>> ledger.stop_early(), ledger.grant(1), ledger.total
        (False, range(3, 3), 3)
        >>> ledger.complete({"index": 1}), ledger.complete({"index": 2})
        (False, True)
        """
        self.dispenser.total = self.total = self.dispenser.next
        self.stopped_early = True
        return self.finished


class BlockQueue:
    """A worker's share of indices: blocks granted by the master, used in order.

    >>> q = BlockQueue()
    >>> q.add(range(3, 5)); q.pop(), q.pop(), q.pop(), q.exhausted
    (3, 4, None, False)
    >>> q.add(range(0)); q.exhausted
    True
    """

    def __init__(self):
        self.queue: deque[int] = deque()
        self.exhausted = False

    def add(self, block: range) -> None:
        if len(block) == 0:
            self.exhausted = True
        self.queue.extend(block)

    def pop(self) -> int | None:
        return self.queue.popleft() if self.queue else None

