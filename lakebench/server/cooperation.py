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
