"""Locust as a library: how lakebench's runner drives its ingest through Locust (``--driver locust``)."""
from __future__ import annotations

import os
from typing import Callable

from lakebench.locust import LoadTestError
from lakebench.locust.coordination import LocalCoordinator
from lakebench.locust.ingest import ingest_user_class
from lakebench.locust.options import IngestConfig
from lakebench.dataset import DataSet
from lakebench.systems.base import NO_ACCESS, HttpAccess

#: How often the ingest tells the runner how many children exist (when the count changed).
PROGRESS_INTERVAL = 0.1


def ingest_with_locust(base_url: str, dataset: DataSet, users: int = 1, spawn_rate: float | None = None,
                       server_pid: int | None = None, data_dir: str | os.PathLike | None = None, *,
                       monitor_interval: float = 0.5, monitor_tail: float = 0.0, first_alone: bool = True,
                       timeout: float | None = None, budget_seconds: float | None = None,
                       on_progress: Callable[[int], None] | None = None, parents: str = "shared",
                       access: HttpAccess = NO_ACCESS) -> dict:
    """Ingest ``workload`` into the LDP server at ``base_url`` with Locust as a library.

    The same ``IngestUser`` as ``locustfiles/ingest.py``, in a local
    runner with ``users`` users spawned at ``spawn_rate`` per second (default:
    all at once).  Returns ``{"latencies": [seconds per PUT, completion
    order], "failures": [records of failed PUTs], "retrievals": {"full" |
    "omit_containment" | "minimal": {"seconds", "bytes", "body", "status",
    "content_type", "contains"}}, "samples": [monitor samples], "requests":
    [per-PUT records], ...}`` plus the totals of
    :func:`lakebench.locust.record.summarize`.

    ``first_alone``: see :class:`~lakebench.locust.dispensing.Ledger`.
    ``budget_seconds``: no child is dispensed once the ingest time reaches
    it (see :class:`~lakebench.locust.options.IngestConfig`); the result's
    ``budget_exhausted`` says whether it did before the last child.
    ``on_progress(n)``: called with the children created so far (PUTs that succeeded), every
    PROGRESS_INTERVAL seconds when it changed.
    ``parents``: ``shared`` (every user PUTs into the one parent) or
    ``per-user`` (each into a parent of its own, the result's
    ``parent_urls``; the three retrievals read the first).
    ``access``: the credentials every request carries and the CAs TLS is
    verified against (:class:`~lakebench.systems.base.HttpAccess`).
    Raises :class:`~lakebench.locust.LoadTestError` if the parent exists
    already or the run does not finish within ``timeout`` seconds.  Imports
    Locust, which monkey-patches this process with gevent: call it in a
    fresh process.
    """
    import gevent
    from locust.env import Environment

    user_class = ingest_user_class()
    config = IngestConfig(base_url=base_url, dataset=dataset, server_pid=server_pid,
                          data_dir=str(data_dir) if data_dir is not None else None,
                          monitor_interval=monitor_interval, monitor_tail=monitor_tail, first_alone=first_alone,
                          budget_seconds=budget_seconds, parents=parents, users=users, access=access)
    environment = Environment(user_classes=[user_class], host=config.base_url)
    environment.lakebench_access = access
    runner = environment.create_local_runner()
    coordinator = LocalCoordinator(environment)
    environment.lakebench = coordinator
    environment.events.test_start.add_listener(lambda **_kw: coordinator.test_start(config))
    def report_progress():
        # Often enough that the runner's samples (disk, memory) carry the children made by
        # their time, not a count half a second old; only when it changed.
        reported = None
        while True:
            created = coordinator.ledger.created if coordinator.ledger is not None else 0
            if created != reported:
                on_progress(created)
                reported = created
            gevent.sleep(PROGRESS_INTERVAL)

    reporter = gevent.spawn(report_progress) if on_progress is not None else None
    try:
        runner.start(users, spawn_rate or users)
        if not runner.greenlet.join(timeout=timeout):
            coordinator.error = coordinator.error or f"did not finish in {timeout} s"
    finally:
        if reporter is not None:
            reporter.kill()
        runner.quit()  # no-op if the run finished; else stops the users
        gevent.sleep(0)
    if coordinator.error and coordinator.ledger is not None and not coordinator.ledger.records:
        raise LoadTestError(coordinator.error)
    if coordinator.result is None:
        coordinator.quitting()
    if not coordinator.result["complete"]:
        raise LoadTestError(coordinator.error or "ingest did not complete")
    return coordinator.result


def read_parent_with_locust(base_url: str, parent_url: str, retrievals: int, before_each=None,
                            access: HttpAccess = NO_ACCESS) -> list[dict]:
    """GET the parent (full) ``retrievals`` times through a Locust client, after the workload.

    Each is timed by Locust's request event (its ``response_time``); returns
    ``{"seconds", "status", "content_type", "body"}`` per retrieval, in order.
    ``before_each()`` runs before each request's clock (``--cold`` drops the
    page cache there); ``access`` as for :func:`ingest_with_locust`.  Raises :class:`~lakebench.locust.LoadTestError` on an
    answer other than 200.
    """
    from locust.env import Environment

    from lakebench.locust.ldp_requests import GET_NAMES, retrieve_parent, stats_session

    environment = Environment(host=base_url)
    seconds: list[float] = []

    def on_request(name, response_time, exception, **_kw):
        if name == GET_NAMES["full"] and exception is None:
            seconds.append(response_time / 1000.0)

    environment.events.request.add_listener(on_request)
    session = stats_session(environment, base_url, access)
    out = []
    for _ in range(retrievals):
        if before_each is not None:
            before_each()
        got = retrieve_parent(session, parent_url, "full", count=False)
        if got["status"] in (401, 403):
            raise LoadTestError(f"GET {parent_url}: {access.refusal(got['status'])}")
        if got["status"] != 200:
            raise LoadTestError(f"GET {parent_url}: HTTP {got['status']} "
                                f"{got['body'][:200].decode('utf-8', 'replace').strip()}")
        got["seconds"] = seconds[-1]
        out.append(got)
    return out
