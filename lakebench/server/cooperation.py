"""How the store's writers wait for the write-ahead log's flush under gevent's worker.

The worker serves every connection from one OS thread, in turns of its
event loop: a turn takes the connections that became ready and runs each
one's greenlet until it waits again (for the network, or for a flush).  A
write puts its record in the log and waits for a flush
(lakebench.store.logsync).  Here that flush begins at the end of the turn,
as a callback of the loop, once every request ready in the turn has applied
its write to the batch, so they all share it; the writes it covers are woken
by the same turn's callbacks and answer before the loop looks for new work.

Where the flush runs depends on how long flushes take (:class:`LoopFlush`):

* a short one (a recent mean under :data:`INLINE_FLUSH_SECONDS`) runs on the
  loop's thread.  Handed to a thread, a flush of a few tenths of a
  millisecond returns while the loop runs the next turn's requests, and its
  writers are woken only after them: on a 2-core machine with 8 clients,
  durable throughput was 0.89x nosync's so, 0.93x run inline (docs/server.rst);
* a longer one runs on a thread of the hub's pool, so the loop goes on
  parsing requests and applying writes to the batch while the disk works,
  and those writes share the next flush.  Only ``fdatasync`` runs there: the
  batch, an LMDB write transaction, stays on the thread that opened it.
"""
from __future__ import annotations

import time
from typing import Callable

from lakebench.store import Waiting

#: A flush runs on the loop's thread while the recent mean of a flush's
#: duration is under this many seconds, on a thread of its own past it.
INLINE_FLUSH_SECONDS = 0.001
#: The weight of the latest flush in that mean (the rest is the mean before).
RECENT_WEIGHT = 0.2


class LoopFlush:
    """The ``run_blocking`` of :data:`GEVENT`: a flush begun at the end of the
    loop's turn, inline or on the hub's pool by how long recent ones took."""

    def __init__(self, inline_below: float = INLINE_FLUSH_SECONDS):
        self.inline_below = inline_below
        #: The recent mean of a flush's duration, in seconds.
        self.recent_seconds = 0.0
        #: Flushes run on the loop's thread, and on the pool.
        self.inline = 0
        self.pooled = 0

    def _note(self, seconds: float) -> None:
        self.recent_seconds += RECENT_WEIGHT * (seconds - self.recent_seconds)

    def __call__(self, flush: Callable[[], None]) -> None:
        import gevent
        from gevent.event import AsyncResult

        hub = gevent.get_hub()
        done = AsyncResult()

        def timed() -> float:
            began = time.perf_counter()
            flush()
            return time.perf_counter() - began

        def finished(result) -> None:  # in the hub, once the pool's thread has returned
            if result.successful():
                self._note(result.value)
                done.set(None)
            else:
                done.set_exception(result.exception)

        def inline() -> None:
            self.inline += 1
            try:
                self._note(timed())
            except BaseException as exc:  # noqa: BLE001  (the writer raises it)
                done.set_exception(exc)
            else:
                done.set(None)

        def begin() -> None:  # the end of the turn: the ready requests have written
            if self.recent_seconds < self.inline_below:
                inline()
                return
            try:
                pooled = hub.threadpool.spawn(timed)
            except BaseException:  # noqa: BLE001  (no thread for it: the flush still runs, here)
                inline()
                return
            self.pooled += 1
            pooled.rawlink(finished)

        hub.loop.run_callback(begin)
        done.get()


def _event():
    from gevent.event import Event

    return Event()


#: The store's ``waiting`` under the gevent worker.
GEVENT = Waiting(run_blocking=LoopFlush(), event=_event)
