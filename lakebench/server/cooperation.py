"""How the store's writers wait for the write-ahead log's flush under gevent's worker.

The worker serves every connection from one OS thread.  A write puts its
record in the log and waits for a flush (lakebench.store.logsync); here the
flush runs on a thread of the hub's pool, and the writer's greenlet yields
meanwhile, so the event loop goes on reading requests and applying writes
to the batch, and those share the next flush.  Only ``fdatasync`` runs on
the pool's thread: the batch, an LMDB write transaction, stays on the
thread that opened it.
"""
from __future__ import annotations

from lakebench.store import Waiting


def _on_the_hubs_pool(fn) -> None:
    import gevent

    gevent.get_hub().threadpool.apply(fn)


def _event():
    from gevent.event import Event

    return Event()


#: The store's ``waiting`` under the gevent worker.
GEVENT = Waiting(run_blocking=_on_the_hubs_pool, event=_event)

#: How long the worker's thread may keep the GIL once the flush's thread asks for it (seconds).
#: Python's default, 5 ms, is paid twice per flush (to start fdatasync, to return from it) while
#: the loop parses requests: at 8 clients it, not the disk, set the pace of durable writes.
GIL_HANDOFF_SECONDS = 0.0005


def gevent_waiting() -> Waiting:
    """:data:`GEVENT`, with the worker's GIL handed over promptly to the flush's thread."""
    import sys

    sys.setswitchinterval(min(sys.getswitchinterval(), GIL_HANDOFF_SECONDS))
    return GEVENT
