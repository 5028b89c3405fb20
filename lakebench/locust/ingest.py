"""The ingest: its user, and its hooks into Locust's events (``locustfiles/ingest.py``).

Every user PUTs workload graphs (Turtle, ``<>`` subject, relative IRIs) at
``{base}{parent}/{slug}``, taking indices from its process's coordinator
(:mod:`lakebench.locust.coordination`), so exactly ``children`` creations
happen in total.  With ``per-user`` parents (lakebench's runner only) each
user has a parent of its own, ``{parent}-u{k}``, and its children link to it.

Child ``k``'s internal links point to the children the same user created
(newest first), so every linked resource exists.  A user takes its indices
a block at a time (:data:`PREPARE_BLOCK`) and builds the block's Turtle
before timing any of it, on a native thread of gevent's pool so that the
other users' requests in flight are not held up; each child is built linking
as if the block's earlier PUTs succeed, and built again, before its clock,
if one did not.  A PUT answered with a status other than 201/204 is a
Locust failure, and its index still counts as used.

``IngestUser`` is built on first use (this module's ``__getattr__``):
Locust is imported then, not before (see :mod:`lakebench.locust`).
"""
from __future__ import annotations

import functools
import logging
import time
from collections import deque

from lakebench.locust import LoadTestError
from lakebench.locust.coordination import Coordinator, LocalCoordinator, make_coordinator
from lakebench.locust.ldp_requests import CREATED, PUT_HEADERS, PUT_NAME
from lakebench.locust.options import IngestConfig, add_ingest_arguments
from lakebench.dataset import RECENT_CHILDREN, DataSet

log = logging.getLogger("lakebench.locust")

#: Children a user takes and builds at once, before timing any of them.
PREPARE_BLOCK = 8


def build_turtles(dataset: DataSet, indices: list[int], recent: list[int]) -> list[tuple[int, list[int], bytes, float]]:
    """``(index, links, turtle, seconds to build)`` of each child, in order, for one user.

    ``recent``: the user's created children, newest first; each child links
    as if the ones before it in ``indices`` are created too.

    >>> w = DataSet(children=10)
    >>> [(index, links) for index, links, _, _ in build_turtles(w, [5, 7], [2])]
    [(5, [2]), (7, [5, 2])]
    """
    out = []
    links = list(recent)[:RECENT_CHILDREN]
    for index in indices:
        t0 = time.perf_counter()
        turtle = dataset.child(index, recent=links).turtle
        out.append((index, links, turtle, time.perf_counter() - t0))
        links = [index, *links][:RECENT_CHILDREN]
    return out


def _build_off_the_hub(dataset: DataSet, indices: list[int], recent: list[int]):
    """:func:`build_turtles` on a native thread: the hub goes on serving the other users meanwhile."""
    import gevent

    return gevent.get_hub().threadpool.apply(build_turtles, (dataset, indices, recent))


def create_one(user) -> None:
    """One iteration of an ingest user: take an index, PUT that child, report it.

    The child's Turtle was built with its block, before any clock
    (:data:`PREPARE_BLOCK`); nothing is generated between the clock's start and stop.
    """
    coordinator: Coordinator = user.environment.lakebench
    if user.dataset is None:  # its parent: the shared one, or its own (per-user parents)
        user.dataset = coordinator.user_dataset()
    dataset = user.dataset
    if not user.prepared:
        block = coordinator.next_block(PREPARE_BLOCK)
        if not block:
            coordinator.idle()
            return
        user.prepared.extend(_build_off_the_hub(dataset, block, user.recent))
    index, links, turtle, generate_seconds = user.prepared.popleft()
    if links != user.recent[:RECENT_CHILDREN]:  # an earlier PUT of the block failed: link only what exists
        ((index, links, turtle, again),) = _build_off_the_hub(dataset, [index], user.recent)
        generate_seconds += again
    url = coordinator.config.base_url + f"{dataset.parent}/c{index:08d}"
    status, error = 0, None
    start = time.time()
    t0 = time.perf_counter()
    try:
        with user.client.request("PUT", url, name=PUT_NAME, data=turtle, headers=PUT_HEADERS,
                                 catch_response=True) as resp:
            seconds = time.perf_counter() - t0
            status = resp.status_code
            if status in CREATED:
                resp.success()
            else:
                body = (resp.content or b"")[:200].decode("utf-8", "replace").strip()
                error = f"HTTP {status}: {body}" if status else f"no response: {getattr(resp, 'error', None)!r}"
                resp.failure(error)
    except Exception as exc:  # never lose an index: it is reported, as failed
        seconds = time.perf_counter() - t0
        error = f"{type(exc).__name__}: {exc}"
    ok = error is None
    coordinator.completed({"index": index, "seconds": seconds, "status": status, "ok": ok,
                           "start": start, "end": start + seconds, "generate_seconds": round(generate_seconds, 9),
                           **({"error": error} if error else {})})
    if ok:
        user.recent.insert(0, index)
        del user.recent[RECENT_CHILDREN:]


def install_ingest(events) -> None:
    """Hook the ingest test into Locust's events (what ``locustfiles/ingest.py`` calls)."""

    def on_parser(parser, **_kw):
        add_ingest_arguments(parser)

    def on_init(environment, runner=None, **_kw):
        if runner is not None:
            environment.lakebench = make_coordinator(environment, runner)

    def on_test_start(environment, **_kw):
        coordinator = environment.lakebench
        try:
            config = IngestConfig.from_options(environment.parsed_options, environment.host)
            environment.lakebench_access = config.access  # before the users are made: their clients use it
        except (LoadTestError, ValueError) as exc:
            if isinstance(coordinator, LocalCoordinator):
                coordinator.config = None
                log.error("lakebench: %s", exc)
                environment.process_exit_code = 1
                import gevent
                gevent.spawn(environment.runner.quit)
            return
        coordinator.test_start(config)

    def on_quitting(environment, **_kw):
        coordinator = getattr(environment, "lakebench", None)
        if coordinator is not None:
            coordinator.quitting()

    events.init_command_line_parser.add_listener(on_parser)
    events.init.add_listener(on_init)
    events.test_start.add_listener(on_test_start)
    events.quitting.add_listener(on_quitting)



@functools.cache
def ingest_user_class() -> type:
    """``IngestUser``, the user of ``locustfiles/ingest.py``; imports Locust on the first call."""
    from locust import constant, task

    from lakebench.locust.ldp_requests import access_user_class

    class IngestUser(access_user_class()):
        """PUTs workload children until the dispenser has none left."""

        wait_time = constant(0)
        network_timeout = 600.0  # a PUT into a huge container may be slow; a timeout would be a false failure
        connection_timeout = 30.0
        max_retries = 0  # a failed request is a result, never silently repeated

        def on_start(self) -> None:
            self.recent: list[int] = []  # the children this user created, newest first
            self.prepared: deque = deque()  # built, not yet sent: (index, links, turtle, seconds)
            self.dataset: DataSet | None = None  # given by the coordinator at the first task

        @task
        def create_child(self) -> None:
            create_one(self)

    IngestUser.__module__ = __name__
    return IngestUser


def __getattr__(name: str):
    if name == "IngestUser":
        return ingest_user_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
