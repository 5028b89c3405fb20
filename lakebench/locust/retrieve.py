"""The read mix: its user, and its hooks into Locust's events (``locustfiles/retrieve.py``).

Each request reads the parent with probability ``--parent-ratio``, otherwise
a random child; the children are those the parent's ``ldp:contains``
triples list (each process reads the parent once), or those of the
``--children`` count.  ``ReadUser`` is built on first use (this module's
``__getattr__``): Locust is imported then, not before.
"""
from __future__ import annotations

import functools
import logging
import random

from lakebench.locust import LoadTestError
from lakebench.locust.ldp_requests import (CHILD_GET_NAME, TURTLE, environment_access, parse_containment,
                                           retrieve_parent)
from lakebench.locust.options import access_from_options, add_retrieve_arguments
from lakebench.dataset import DEFAULT_PARENT

log = logging.getLogger("lakebench.locust")


class _Targets:
    """The URLs a read-mix process reads, discovered once per process."""

    def __init__(self):
        self.parent_url: str | None = None
        self.children: list[str] | None = None
        self._lock = None

    def get(self, environment) -> tuple[str, list[str]]:
        import gevent.lock

        if self._lock is None:
            self._lock = gevent.lock.Semaphore()
        with self._lock:
            if self.children is None:
                self.parent_url, self.children = discover(environment)
        return self.parent_url, self.children


def discover(environment) -> tuple[str, list[str]]:
    """The parent URL and its children, from ``--children`` or the parent's containment triples."""
    from lakebench.systems import ldp
    from lakebench.systems.base import SystemFailure

    options = environment.parsed_options
    base = environment.host or ""
    if not base:
        raise LoadTestError("no base URL: give the LDP server's base with --host")
    base = base if base.endswith("/") else base + "/"
    parent = getattr(options, "parent", DEFAULT_PARENT) if options else DEFAULT_PARENT
    count = getattr(options, "children", 0) if options else 0
    parent_url = base + parent
    if count:
        return parent_url, [f"{parent_url}/c{k:08d}" for k in range(count)]
    http = ldp.new_pool(environment_access(environment))
    try:
        resp = ldp.request(http, "GET", parent_url, headers={"Accept": TURTLE})
    except SystemFailure as exc:
        raise LoadTestError(f"cannot read the parent: {exc}") from None
    finally:
        http.clear()
    if resp.status != 200:
        raise LoadTestError(f"GET {parent_url}: HTTP {resp.status}; is --parent right?")
    children = parse_containment(resp.data, resp.headers.get("Content-Type", TURTLE), parent_url)
    return parent_url, sorted(children)


def read_one(user) -> None:
    """One iteration of a read-mix user: the parent now and then, a random child mostly."""
    parent_url, children = user.targets
    options = user.environment.parsed_options
    ratio = getattr(options, "parent_ratio", 0.05) if options else 0.05
    if not children or user.random.random() < ratio:
        variant = getattr(options, "parent_variant", "full") if options else "full"
        retrieve_parent(user.client, parent_url, variant, count=False)
        return
    url = user.random.choice(children)
    with user.client.request("GET", url, name=CHILD_GET_NAME, headers={"Accept": TURTLE, "Accept-Encoding": "identity"},
                             catch_response=True) as resp:
        if resp.status_code == 200:
            resp.success()
        else:
            resp.failure(f"HTTP {resp.status_code}")


def install_retrieve(events) -> None:
    """Hook the read mix into Locust's events (what ``locustfiles/retrieve.py`` calls)."""

    def on_parser(parser, **_kw):
        add_retrieve_arguments(parser)

    def on_init(environment, runner=None, **_kw):
        environment.lakebench_targets = _Targets()

    def on_test_start(environment, **_kw):
        from locust.runners import WorkerRunner

        try:  # each process its own, from its own environment and files, before its users are made
            environment.lakebench_access = access_from_options(environment.parsed_options, environment.host)
            if isinstance(environment.runner, WorkerRunner):
                return  # workers discover lazily, in their first user
            parent_url, children = environment.lakebench_targets.get(environment)
        except LoadTestError as exc:
            import gevent
            log.error("lakebench: %s", exc)
            environment.process_exit_code = 1
            gevent.spawn(environment.runner.quit)
            return
        log.info("lakebench: reading %s and %d children", parent_url, len(children))

    events.init_command_line_parser.add_listener(on_parser)
    events.init.add_listener(on_init)
    events.test_start.add_listener(on_test_start)


@functools.cache
def read_user_class() -> type:
    """``ReadUser``, the user of ``locustfiles/retrieve.py``; imports Locust on the first call."""
    from locust import constant, task
    from locust.exception import StopUser

    from lakebench.locust.ldp_requests import access_user_class

    class ReadUser(access_user_class()):
        """GETs the parent now and then, random children mostly."""

        wait_time = constant(0)
        network_timeout = 600.0
        connection_timeout = 30.0
        max_retries = 0

        def on_start(self) -> None:
            self.random = random.Random()
            targets = getattr(self.environment, "lakebench_targets", None) or _Targets()
            try:
                self.targets = targets.get(self.environment)
            except LoadTestError as exc:
                log.error("lakebench: %s", exc)
                raise StopUser() from None

        @task
        def read(self) -> None:
            read_one(self)

    ReadUser.__module__ = __name__
    return ReadUser


def __getattr__(name: str):
    if name == "ReadUser":
        return read_user_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
