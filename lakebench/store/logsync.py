"""Group commit: the write-ahead log's records made durable together, one flush per group.

A write puts its record in the log unflushed and then waits until a flush
covers it.  The first writer to wait leads: it asks for a flush (fdatasync),
which notes the last record written when it begins (the group's end), and
when the flush has returned it publishes that every record up to the
group's end is durable and wakes the others.  The writes that arrived
during the flush form the next group, which one of them leads.  A write is
acknowledged only once a flush that began after its record was written has
returned.

How a writer waits is the caller's (:class:`Waiting`): by default the flush
runs inline and nothing else runs meanwhile, one write, one flush, as a
plain log does.  The server passes its event loop's
(lakebench.server.cooperation): the flush begins once the requests ready in
this turn of the loop have made their writes, so they all share it, and a
slow flush runs on a thread while the loop goes on.

A flush that fails loses every record not yet durable, whichever group it
was in: the kernel may have dropped the pages of any of them, and a later
flush that succeeds says nothing of those.  So every write not yet durable
fails (the writers get :class:`LogSyncError`, none is acknowledged), and the
owner rolls its state back to the last durable record (``roll_back``): the
batch is rebuilt from the log up to there and the next record overwrites the
failed ones.  Each failure starts a new *epoch*: a record is named by its
epoch and sequence number, since sequence numbers are given again after a
roll-back.

>>> flushes = []
>>> sync = GroupSync(lambda: flushes.append("fdatasync"), roll_back=lambda synced: None)
>>> token = sync.written(1)
>>> sync.wait(token); sync.synced, flushes
(1, ['fdatasync'])
>>> sync.mark_durable(5)       # a batch commit made everything up to 5 durable
>>> sync.wait(sync.written(5)); flushes       # no flush needed
['fdatasync']
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from lakebench.store.tally import TimeTally
from lakebench.store.wal import LogError


class LogSyncError(LogError):
    """The flush that was to make a write durable failed: the write was not
    acknowledged, and the store no longer holds it."""


@dataclass(frozen=True)
class Waiting:
    """How a writer waits for a flush: ``run_blocking(fn)`` runs ``fn`` (now, or
    once the writes ready to run have been made) and returns once it has,
    raising what it raised; ``event()`` makes an event with ``set()`` and
    ``wait()`` for the writers that wait for another's flush."""

    run_blocking: Callable[[Callable[[], None]], None]
    event: Callable[[], Any]


def _run_inline(fn: Callable[[], None]) -> None:
    fn()


#: The flush runs on the writer's thread, which waits for it: one write at a time.
INLINE = Waiting(run_blocking=_run_inline, event=threading.Event)


@dataclass(frozen=True)
class Token:
    """A record written to the log, to wait for: its epoch and sequence number."""

    epoch: int
    seq: int


class GroupSync:
    """Flushes of one log, shared by the writes that wait for them.

    ``flush()`` makes every record written before it durable (the log's
    ``sync``); ``roll_back(synced)`` is called, by the writer whose flush
    failed, to drop the records after ``synced`` from the owner's state.
    All calls but ``flush`` run on the owner's thread.
    """

    def __init__(self, flush: Callable[[], None], roll_back: Callable[[int], None],
                 waiting: Waiting = INLINE):
        self._flush = flush
        self._roll_back = roll_back
        self._waiting = waiting
        self.epoch = 0
        #: Every record up to this sequence number (in this epoch) is durable.
        self.synced = 0
        self._last = 0          # the last record written, in this epoch
        self._round = None      # the event of the flush in flight, or None
        self._ends: dict[int, int] = {}  # a past epoch -> the last record durable in it
        self.flushes = 0        # flushes run
        self.writes = 0         # records written
        self.failures = 0       # flushes that failed
        self._why = ""          # what the last failure said
        # Each flush's time, added on the owner's thread once the flush has returned (a
        # group's flush may run on another thread, and a killed leader's may outlive it).
        self._times = TimeTally()

    def written(self, seq: int) -> Token:
        """Record ``seq`` is in the log (unflushed): its token, to wait for."""
        self._last = seq
        self.writes += 1
        return Token(self.epoch, seq)

    def mark_durable(self, seq: int) -> None:
        """Every record up to ``seq`` is durable by other means (a batch commit's own fsync)."""
        self.synced = max(self.synced, seq)
        self._last = max(self._last, seq)

    def flush_now(self, flush: Callable[[], None]) -> None:
        """Flush with ``flush`` on the owner's thread, now (before a batch commit leaves
        the log for the other one), failing as a group's flush fails.  A group's flush
        may be running meanwhile on another thread: ``flush`` must see a write-back
        error that one took (the log's ``sync_apart``)."""
        covered = self._last
        began = time.perf_counter()
        try:
            flush()
        except OSError as exc:
            self.failures += 1
            self._fail(exc)
            raise LogSyncError(self._why) from exc
        self._times.add(time.perf_counter() - began)
        self.flushes += 1
        self.synced = max(self.synced, covered)

    @property
    def times(self) -> TimeTally:
        """How long the flushes that returned took (a failed one is not timed), one each."""
        return self._times

    def pending(self) -> Token:
        """A token for everything written so far (what a read has seen)."""
        return Token(self.epoch, self._last)

    def idle(self) -> None:
        """Return once no flush is in flight (before the log's file is closed)."""
        while self._round is not None:
            self._round.wait()

    def wait(self, token: Token) -> None:
        """Return once the record of ``token`` is durable; LogSyncError if the
        flush that was to cover it failed."""
        while True:
            if token.epoch != self.epoch:
                if token.seq <= self._ends.get(token.epoch, 0):
                    return
                raise LogSyncError(self._why)
            if token.seq <= self.synced:
                return
            if self._round is not None:
                self._round.wait()  # another writer's flush; then look again
                continue
            self._lead()

    def _lead(self) -> None:
        covered = [self._last]
        took = [0.0]  # the flush's own time, not its wait for a turn of the loop
        event = self._round = self._waiting.event()

        def flush() -> None:
            # The writes made between the lead and the flush's start (run_blocking
            # may start it later) are in this group too.
            covered[0] = self._last
            began = time.perf_counter()
            self._flush()
            took[0] = time.perf_counter() - began

        try:
            try:
                self._waiting.run_blocking(flush)
            except OSError as exc:
                self.failures += 1
                self._fail(exc)
                raise LogSyncError(self._why) from exc
            self._times.add(took[0])
            self.flushes += 1
            self.synced = max(self.synced, covered[0])
        finally:
            # Also if this writer was killed while it waited: the others then
            # find no flush in flight, and one of them leads the next.
            self._round = None
            event.set()

    def _fail(self, exc: OSError) -> None:
        """Every record after the last durable one is lost: a new epoch, and the
        owner's state rolled back to ``synced``."""
        self._why = (f"the write-ahead log could not be flushed to stable storage ({exc}); "
                     "the write was not kept")
        self._ends[self.epoch] = self.synced
        if len(self._ends) > 64:  # a writer that waits across 64 failures is long gone
            self._ends.pop(next(iter(self._ends)))
        self.epoch += 1
        self._last = self.synced
        self._roll_back(self.synced)
