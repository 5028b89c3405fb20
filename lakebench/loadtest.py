"""The lakebench workload as a Locust load test against any LDP server.

``locustfiles/ingest.py`` and ``locustfiles/retrieve.py`` are thin: the logic
lives here, so that lakebench's runner can drive the very same user class
through Locust as a library (:func:`ingest_with_locust`).

**Ingest.**  Every user PUTs workload graphs (Turtle, ``<>`` subject,
relative IRIs) at ``{base}{parent}/{slug}``.  Indices come from one
dispenser, so exactly ``children`` creations happen in total, whatever the
number of users, ``--processes`` or ``--master``/``--worker`` nodes:

* in a local run the dispenser is a counter in the one process;
* in a distributed run the master holds it and hands out blocks of indices
  to the workers (custom messages ``lakebench:take`` / ``lakebench:block``);
  workers report every completed PUT back (``lakebench:done``).

Child ``k``'s internal links point to the children the same user created
(newest first), so every linked resource exists.  A user takes its indices
a block at a time (:data:`PREPARE_BLOCK`) and builds the block's Turtle
before timing any of it, on a native thread of gevent's pool so that the
other users' requests in flight are not held up; each child is built linking
as if the block's earlier PUTs succeed, and built again, before its clock,
if one did not.  A PUT answered with a
status other than 201/204 is a Locust failure, and its index still counts
as used.  Once the last creation completes, the local runner (or the master)
waits until Locust's statistics hold every PUT, then GETs the parent in
three variants, each its own request name (:data:`GET_NAMES`), writes the
``--lakebench-out`` JSON, and quits the runner.

**Monkey-patching.**  Importing :mod:`locust` monkey-patches the process with
gevent (sockets, threads, ``time.sleep``...).  This module therefore imports
Locust only when a Locust-based object is first used: the user classes
(``IngestUser``, ``ReadUser``, through a module ``__getattr__``),
:func:`ingest_with_locust` and :func:`client_ceiling`.  The pure parts
(:class:`IndexDispenser`, :class:`Ledger`, :class:`BlockQueue`,
:class:`IngestConfig`) import nothing of Locust or gevent.  Call the Locust
entry points in a process of their own (lakebench's runner uses a fresh
worker process per measurement): after them, the process stays patched.
"""
from __future__ import annotations

import argparse
import json
import logging
import math
import os
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lakebench.workload import DEFAULT_PARENT, LDP_CONTAINS, RECENT_CHILDREN, Workload

log = logging.getLogger("lakebench.loadtest")

TURTLE = "text/turtle"
PUT_NAME = "PUT child"
#: Locust request name of each retrieval variant of the parent.
GET_NAMES = {
    "full": "GET parent (full)",
    "omit_containment": "GET parent (omit containment)",
    "minimal": "GET parent (minimal container)",
}
#: ``Prefer`` header of each variant (None: a plain GET).
PREFER = {
    "full": None,
    "omit_containment": 'return=representation; omit="http://www.w3.org/ns/ldp#PreferContainment"',
    "minimal": 'return=representation; include="http://www.w3.org/ns/ldp#PreferMinimalContainer"',
}
CHILD_GET_NAME = "GET child"
#: Children a user takes and builds at once, before timing any of them.
PREPARE_BLOCK = 8
CREATED = (201, 204)  # what a successful child PUT may answer
# Compressed answers would make sizes and times incomparable with
# lakebench's own client (urllib3, which asks for no encoding).
PUT_HEADERS = {"Content-Type": TURTLE, "Accept-Encoding": "identity"}

MSG_TAKE = "lakebench:take"    # worker -> master: {"want": n}
MSG_BLOCK = "lakebench:block"  # master -> worker: {"start": a, "stop": b}; empty range: no more
MSG_DONE = "lakebench:done"    # worker -> master: {"records": [...]}


class LoadTestError(RuntimeError):
    """The load test cannot start or went wrong (parent exists, bad reply...)."""


# -- the pure parts: no Locust, no gevent ------------------------------------

class IndexDispenser:
    """Hands out the indices ``0..total-1`` once each, in ascending blocks.

    >>> d = IndexDispenser(5)
    >>> list(d.take(2)), list(d.take(10)), list(d.take(1))
    ([0, 1], [2, 3, 4], [])
    """

    def __init__(self, total: int):
        if total < 0:
            raise ValueError(f"total must not be negative, got {total}")
        self.total = total
        self.next = 0

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
        self.aborted: str | None = None

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


@dataclass
class IngestConfig:
    """What an ingest run needs besides Locust's own options."""

    base_url: str
    workload: Workload
    server_pid: int | None = None
    data_dir: str | None = None
    out: str | None = None
    monitor_interval: float = 0.5
    monitor_tail: float = 0.0
    block_cap: int = 0  # largest block a worker may get (0: guided only)
    first_alone: bool = True  # the first PUT is sent before any other (see Ledger)

    def __post_init__(self) -> None:
        if not self.base_url:
            raise LoadTestError("no base URL: give the LDP server's base with --host, e.g. http://127.0.0.1:8080/rest/")
        if not self.base_url.endswith("/"):
            self.base_url += "/"

    @property
    def parent_url(self) -> str:
        return self.base_url + self.workload.parent

    @classmethod
    def from_options(cls, options: Any, host: str | None) -> "IngestConfig":
        workload = Workload(
            children=options.children,
            triples=options.graph_size,
            literal_length=options.literal_length,
            seed=options.seed,
            parent=options.parent,
        )
        return cls(
            base_url=host or "",
            workload=workload,
            server_pid=options.server_pid,
            data_dir=options.data_dir,
            out=options.lakebench_out,
            monitor_interval=options.monitor_interval,
            monitor_tail=options.monitor_tail,
            block_cap=options.index_block,
            first_alone=options.first_alone,
        )


def add_ingest_arguments(parser: argparse.ArgumentParser) -> None:
    """The ingest locustfile's options (Locust's ``init_command_line_parser``)."""
    group = parser.add_argument_group("lakebench ingest", "the workload, and what to monitor")
    group.add_argument("--children", type=int, default=10_000, help="children to create in total (default 10000)")
    group.add_argument("--graph-size", type=int, default=200, help="triples per child (default 200)")
    group.add_argument("--literal-length", type=int, default=64, help="characters per literal (default 64)")
    group.add_argument("--seed", type=int, default=0, help="workload seed (default 0)")
    group.add_argument("--parent", default=DEFAULT_PARENT, help="parent container name; must not exist yet (default parent)")
    group.add_argument("--server-pid", type=int, default=None, help="process to sample (CPU, RSS, VMS) with its children")
    group.add_argument("--data-dir", default=None, help="directory whose size is sampled")
    group.add_argument("--lakebench-out", default=None, help="write monitor samples, retrievals and per-PUT latencies here (JSON)")
    group.add_argument("--monitor-interval", type=float, default=0.5, help="seconds between samples (default 0.5)")
    group.add_argument("--monitor-tail", type=float, default=0.0,
                       help="keep sampling this many seconds after the retrievals before quitting (default 0)")
    group.add_argument("--first-alone", action=argparse.BooleanOptionalAction, default=True,
                       help="send the first PUT before all others, so a fresh server's first-use work "
                            "(Fedora 4 registers namespace prefixes) is not raced (default: yes)")
    group.add_argument("--index-block", type=int, default=0,
                       help="distributed runs: most indices a worker gets at once (default 0: guided by what is left)")


def add_retrieve_arguments(parser: argparse.ArgumentParser) -> None:
    """The read-mix locustfile's options."""
    group = parser.add_argument_group("lakebench retrieve", "what to read")
    group.add_argument("--parent", default=DEFAULT_PARENT, help="parent container name (default parent)")
    group.add_argument("--children", type=int, default=0,
                       help="read children c00000000.. of this count (default 0: discover them from the parent's ldp:contains)")
    group.add_argument("--parent-ratio", type=float, default=0.05, help="share of requests that GET the parent (default 0.05)")
    group.add_argument("--parent-variant", choices=sorted(GET_NAMES), default="full",
                       help="how the parent is read (default full)")


def summarize(records: list[dict]) -> dict:
    """Totals of a list of PUT records (completion order)."""
    ok = [r for r in records if r["ok"]]
    lat = sorted(r["seconds"] for r in records)
    out = {"created": len(ok), "failed": len(records) - len(ok),
           # seconds the users spent building the children's Turtle (before their clocks)
           "generate_seconds": round(sum(r.get("generate_seconds", 0.0) for r in records), 6)}
    if records:
        out["ingest_seconds"] = round(max(r["end"] for r in records) - min(r["start"] for r in records), 6)
        out["mean_seconds"] = sum(lat) / len(lat)
        out["p50_seconds"] = lat[len(lat) // 2]
        out["p95_seconds"] = lat[min(len(lat) - 1, int(0.95 * len(lat)))]
        out["max_seconds"] = lat[-1]
    return out


def _parse_containment(body: bytes, content_type: str, parent_url: str) -> list[str]:
    """Objects of ``<parent> ldp:contains ?o`` in a retrieved representation."""
    import pyoxigraph as ox

    formats = {"text/turtle": ox.RdfFormat.TURTLE, "application/n-triples": ox.RdfFormat.N_TRIPLES,
               "application/ld+json": ox.RdfFormat.JSON_LD}
    fmt = formats.get(content_type.split(";")[0].strip().lower(), ox.RdfFormat.TURTLE)
    parent = ox.NamedNode(parent_url)
    contains = ox.NamedNode(LDP_CONTAINS)
    return [q.object.value for q in ox.parse(body, format=fmt, base_iri=parent_url)
            if q.predicate == contains and q.subject == parent]


# -- Locust glue (imports gevent / locust lazily) ----------------------------

class _MonitorDriver:
    """Runs :class:`lakebench.monitor.Monitor` samples on a native thread.

    Under gevent the Monitor's own thread would be a greenlet, and walking a
    large data directory would block the hub and inflate the latencies being
    measured; here each sample runs in gevent's native thread pool instead.
    """

    def __init__(self, pid: int | None, directory: str | None, interval: float):
        from lakebench.monitor import Monitor, directory_bytes

        self.monitor = Monitor(pid, directory, interval)
        self._directory_bytes = directory_bytes
        self.interval = interval
        self._greenlet = None
        self._stopped = None

    @property
    def active(self) -> bool:
        return self.monitor.pid is not None or self.monitor.directory is not None

    def _sample(self) -> None:
        if self.monitor.sample() is None and self.monitor.directory is not None:  # no process: disk alone
            m = self.monitor
            m.samples.append({"t": round(time.monotonic() - m._t0, 3), "phase": m.phase, "children": m.children,
                              "disk_bytes": self._directory_bytes(m.directory)})

    def start(self) -> None:
        import gevent
        import gevent.event

        if not self.active:
            return
        self._stopped = gevent.event.Event()
        pool = gevent.get_hub().threadpool

        def loop():
            while True:
                pool.apply(self._sample)
                if self._stopped.wait(self.interval):
                    return

        self._greenlet = gevent.spawn(loop)

    def stop(self) -> None:
        if self._greenlet is not None:
            import gevent

            self._stopped.set()
            self._greenlet.join()
            self._greenlet = None
            gevent.get_hub().threadpool.apply(self._sample)  # the state at the end

    def set(self, phase: str | None = None, children: int | None = None) -> None:
        if phase is not None:
            self.monitor.phase = phase
        if children is not None:
            self.monitor.children = children

    @property
    def samples(self) -> list[dict]:
        return self.monitor.samples


def _session(environment, base_url: str):
    """A Locust HTTP client not tied to a user: its requests go to Locust's stats."""
    from locust.contrib.fasthttp import FastHttpSession

    return FastHttpSession(base_url=base_url, request_event=environment.events.request, user=None,
                           network_timeout=600.0, connection_timeout=30.0, max_retries=0)


def retrieve_parent(session, parent_url: str, variant: str, count: bool = True) -> dict:
    """GET the parent in one variant through a Locust client, timed.

    ``count``: also count its ``ldp:contains`` triples (after the clock).
    """
    headers = {"Accept": TURTLE, "Accept-Encoding": "identity"}
    if PREFER[variant]:
        headers["Prefer"] = PREFER[variant]
    t0 = time.perf_counter()
    with session.request("GET", parent_url, name=GET_NAMES[variant], headers=headers, catch_response=True) as resp:
        seconds = time.perf_counter() - t0
        body = resp.content or b""
        status = resp.status_code
        if status == 200:
            resp.success()
        else:
            resp.failure(f"HTTP {status}: {body[:200].decode('utf-8', 'replace').strip()}")
        content_type = resp.headers.get("Content-Type", TURTLE) if resp.headers else TURTLE
    out = {"seconds": seconds, "bytes": len(body), "status": status, "content_type": content_type, "body": body}
    if status == 200 and count:
        try:
            out["contains"] = len(_parse_containment(body, content_type, parent_url))
        except Exception as exc:  # counted after the clock; a parse error is reported, not fatal
            out["contains"] = None
            out["parse_error"] = f"{type(exc).__name__}: {exc}"
    return out


class _Coordinator:
    """Per-process ingest state, reached by users as ``environment.lakebench``."""

    role = "?"

    def __init__(self, environment):
        self.environment = environment
        self.config: IngestConfig | None = None

    # called by users
    @property
    def workload(self) -> Workload:
        return self.config.workload

    def next_index(self) -> int | None:
        raise NotImplementedError

    def next_block(self, want: int) -> list[int]:
        """Up to ``want`` indices for one user to send (empty: none left)."""
        index = self.next_index()
        return [] if index is None else [index]

    def completed(self, record: dict) -> None:
        raise NotImplementedError

    def idle(self) -> None:
        """Nothing left to create here: wait for the runner to stop this user."""
        import gevent

        gevent.sleep(1.0)

    # called by events
    def test_start(self, config: IngestConfig) -> None:
        self.config = config

    def quitting(self) -> None:
        pass


class LocalCoordinator(_Coordinator):
    """The dispenser in this process: a local run, or the library entry point."""

    role = "local"

    def __init__(self, environment, quit_when_done: bool = True):
        super().__init__(environment)
        self.quit_when_done = quit_when_done
        self.ledger: Ledger | None = None
        self.monitor: _MonitorDriver | None = None
        self.retrievals: dict[str, dict] = {}
        self.error: str | None = None
        self.result: dict | None = None
        self._finisher = None

    def test_start(self, config: IngestConfig) -> None:
        """Create the parent and start the monitor; on failure abort the run."""
        super().test_start(config)
        import gevent.event

        self.ledger = Ledger(config.workload.children, cap=config.block_cap, first_alone=config.first_alone)
        self._progress = gevent.event.Event()  # set at each completion
        self.retrievals = {}
        self.result = None
        self.error = None
        self.monitor = _MonitorDriver(config.server_pid, config.data_dir, config.monitor_interval)
        self.monitor.set(phase="setup")
        self.monitor.start()
        try:
            create_parent(config.parent_url)
        except LoadTestError as exc:
            self.abort(str(exc))
            return
        self.monitor.set(phase="ingest")

    def abort(self, reason: str) -> None:
        import gevent

        self.error = reason
        self.ledger.abort(reason)
        log.error("lakebench: %s", reason)
        self.environment.process_exit_code = 1
        if self.monitor:
            self.monitor.stop()
        if self.quit_when_done:
            gevent.spawn(self._quit)

    def next_index(self) -> int | None:
        if self.ledger is None:
            return None
        while True:
            block = self.ledger.grant(1)
            if block is not None:
                return block[0] if block else None
            self._progress.clear()
            self._progress.wait(timeout=1.0)

    def next_block(self, want: int) -> list[int]:
        if self.ledger is None:
            return []
        users = max(1, getattr(self.environment.runner, "user_count", 1) or 1)
        while True:
            block = self.ledger.grant(want, consumers=users)
            if block is not None:
                return list(block)
            self._progress.clear()
            self._progress.wait(timeout=1.0)

    def completed(self, record: dict) -> None:
        self._complete(record)

    def _complete(self, record: dict) -> None:
        import gevent

        last = self.ledger.complete(record)
        self._progress.set()
        self.monitor.set(children=len(self.ledger.done))
        if last and self._finisher is None:
            self._finisher = gevent.spawn(self._finish)

    def _wait_for_stats(self) -> None:
        """Locally every PUT is in the stats already."""

    def _finish(self) -> None:
        cfg = self.config
        try:
            self._wait_for_stats()
            self.monitor.set(phase="retrieve")
            session = _session(self.environment, cfg.base_url)
            for variant in GET_NAMES:
                self.retrievals[variant] = retrieve_parent(session, cfg.parent_url, variant)
            self.monitor.set(phase="after")
            import gevent
            gevent.sleep(max(cfg.monitor_tail, self._csv_grace()))
        except Exception as exc:  # report, and still quit
            log.exception("lakebench: retrieval failed")
            self.error = f"retrieval failed: {type(exc).__name__}: {exc}"
            self.environment.process_exit_code = 1
        finally:
            self.monitor.stop()
            self.result = self.build_result(complete=True)
            self._log_summary()
            self.write_out()
            self._finisher = None
            if self.quit_when_done:
                self._quit()

    def _csv_grace(self) -> float:
        """Seconds to let Locust's CSV writer (it rewrites the files every second) see the last requests."""
        options = self.environment.parsed_options
        if options is None or not getattr(options, "csv_prefix", None):
            return 0.0
        from locust import stats

        return stats.CSV_STATS_INTERVAL_SEC + 0.25

    def _quit(self) -> None:
        runner = self.environment.runner
        options = self.environment.parsed_options
        if options is None or getattr(options, "headless", True):
            runner.quit()
        else:
            runner.stop()  # web UI: stop the test, keep the UI

    def build_result(self, complete: bool) -> dict:
        from locust import __version__ as locust_version

        records = sorted(self.ledger.records, key=lambda r: r["end"]) if self.ledger else []
        runner = self.environment.runner
        result = {
            "tool": f"locust {locust_version}",
            "client": "FastHttpUser",
            "mode": self.role,
            "base_url": self.config.base_url,
            "parent_url": self.config.parent_url,
            "workload": self.config.workload.describe(),
            "users": getattr(runner, "target_user_count", None),
            "first_alone": self.config.first_alone,
            "complete": complete and self.error is None and bool(self.ledger and self.ledger.finished),
            "error": self.error,
            **summarize(records),
            "latencies": [r["seconds"] for r in records],
            "requests": records,
            "failures": [r for r in records if not r["ok"]],
            "retrievals": dict(self.retrievals),
            "samples": list(self.monitor.samples) if self.monitor else [],
        }
        return result

    def write_out(self) -> None:
        if not self.config or not self.config.out or self.result is None:
            return
        doc = dict(self.result)
        doc["retrievals"] = {k: {f: v for f, v in r.items() if f != "body"} for k, r in doc["retrievals"].items()}
        path = Path(self.config.out)
        if path.parent != Path(""):
            path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".part")
        tmp.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(tmp, path)

    def _log_summary(self) -> None:
        r = self.result
        if "mean_seconds" in r:
            log.info("lakebench: %d children created, %d failed, in %.2f s (mean %.1f ms, p95 %.1f ms)",
                     r["created"], r["failed"], r["ingest_seconds"], r["mean_seconds"] * 1e3, r["p95_seconds"] * 1e3)
        for variant, got in r["retrievals"].items():
            log.info("lakebench: %s: HTTP %s, %.3f s, %d bytes, %s ldp:contains", GET_NAMES[variant],
                     got["status"], got["seconds"], got["bytes"], got.get("contains"))

    def quitting(self) -> None:
        """Locust is quitting: keep a partial record if the run did not finish."""
        if self.result is None and self.config is not None and self.ledger is not None:
            if self.monitor:
                self.monitor.stop()
            self.result = self.build_result(complete=False)
            self.write_out()


class MasterCoordinator(LocalCoordinator):
    """The dispenser on the master; workers take blocks and report completions."""

    role = "master"

    def __init__(self, environment):
        super().__init__(environment)
        self._pending: list[tuple[str, int]] = []  # takes deferred while the first PUT is out alone
        runner = environment.runner
        runner.register_message(MSG_TAKE, self._on_take)
        runner.register_message(MSG_DONE, self._on_done)

    def _on_take(self, environment, msg, **_kw) -> None:
        self._serve(msg.node_id, int(msg.data.get("want", 1)))

    def _serve(self, node_id: str, want: int) -> None:
        runner = self.environment.runner
        if self.ledger is None:
            block = range(0)  # no test started (should not happen: spawn follows test_start)
        else:
            block = self.ledger.grant(want, consumers=max(1, runner.worker_count))
        if block is None:
            self._pending.append((node_id, want))
            return
        runner.send_message(MSG_BLOCK, {"start": block.start, "stop": block.stop}, client_id=node_id)

    def _on_done(self, environment, msg, **_kw) -> None:
        for record in msg.data["records"]:
            record["node"] = msg.node_id
            try:
                self._complete(record)
            except LoadTestError as exc:
                log.error("lakebench: %s", exc)
                self.error = str(exc)
                self.environment.process_exit_code = 1
        pending, self._pending = self._pending, []
        for node_id, want in pending:
            self._serve(node_id, want)

    def _wait_for_stats(self) -> None:
        """Wait until the workers' reports hold every PUT (they come every few seconds)."""
        import gevent
        from locust import runners

        deadline = time.monotonic() + 3 * runners.WORKER_REPORT_INTERVAL + 2
        stats = self.environment.runner.stats
        while stats.get(PUT_NAME, "PUT").num_requests < self.ledger.total and time.monotonic() < deadline:
            gevent.sleep(0.1)
        got = stats.get(PUT_NAME, "PUT").num_requests
        if got != self.ledger.total:
            log.warning("lakebench: Locust's stats hold %d of %d PUTs after waiting for the workers' reports",
                        got, self.ledger.total)


class WorkerCoordinator(_Coordinator):
    """A worker's share: blocks of indices asked from the master as needed."""

    role = "worker"

    def __init__(self, environment):
        super().__init__(environment)
        import gevent.event

        self.queue = BlockQueue()
        self._arrived = gevent.event.Event()
        self._asking = False
        environment.runner.register_message(MSG_BLOCK, self._on_block)

    def test_start(self, config: IngestConfig) -> None:
        super().test_start(config)
        self.queue = BlockQueue()
        self._asking = False

    def _on_block(self, environment, msg, **_kw) -> None:
        self.queue.add(range(msg.data["start"], msg.data["stop"]))
        self._asking = False
        self._arrived.set()

    def next_index(self) -> int | None:
        runner = self.environment.runner
        while True:
            index = self.queue.pop()
            if index is not None or self.queue.exhausted:
                return index
            if not self._asking:
                self._asking = True
                self._arrived.clear()
                runner.send_message(MSG_TAKE, {"want": max(1, runner.user_count)})
            if not self._arrived.wait(timeout=10.0):
                self._asking = False  # no answer: ask again

    def next_block(self, want: int) -> list[int]:
        first = self.next_index()  # waits for the master if need be; the rest only if already here
        if first is None:
            return []
        block = [first]
        while len(block) < want and (index := self.queue.pop()) is not None:
            block.append(index)
        return block

    def completed(self, record: dict) -> None:
        self.environment.runner.send_message(MSG_DONE, {"records": [record]})


def create_parent(parent_url: str) -> None:
    """PUT the parent container; refuse if it exists.  Not a Locust request: set-up is not measured."""
    from lakebench.systems import ldp
    from lakebench.systems.base import SystemFailure

    http = ldp.new_pool()
    try:
        ldp.create_parent(http, parent_url)
    except SystemFailure as exc:
        raise LoadTestError(str(exc)) from None
    finally:
        http.clear()


def build_turtles(workload: Workload, indices: list[int], recent: list[int]) -> list[tuple[int, list[int], bytes, float]]:
    """``(index, links, turtle, seconds to build)`` of each child, in order, for one user.

    ``recent``: the user's created children, newest first; each child links
    as if the ones before it in ``indices`` are created too.

    >>> w = Workload(children=10)
    >>> [(index, links) for index, links, _, _ in build_turtles(w, [5, 7], [2])]
    [(5, [2]), (7, [5, 2])]
    """
    out = []
    links = list(recent)[:RECENT_CHILDREN]
    for index in indices:
        t0 = time.perf_counter()
        turtle = workload.child(index, recent=links).turtle
        out.append((index, links, turtle, time.perf_counter() - t0))
        links = [index, *links][:RECENT_CHILDREN]
    return out


def _build_off_the_hub(workload: Workload, indices: list[int], recent: list[int]):
    """:func:`build_turtles` on a native thread: the hub goes on serving the other users meanwhile."""
    import gevent

    return gevent.get_hub().threadpool.apply(build_turtles, (workload, indices, recent))


def create_one(user) -> None:
    """One iteration of an ingest user: take an index, PUT that child, report it.

    The child's Turtle was built with its block, before any clock
    (:data:`PREPARE_BLOCK`); nothing is generated between the clock's start and stop.
    """
    coordinator: _Coordinator = user.environment.lakebench
    if not user.prepared:
        block = coordinator.next_block(PREPARE_BLOCK)
        if not block:
            coordinator.idle()
            return
        user.prepared.extend(_build_off_the_hub(coordinator.workload, block, user.recent))
    index, links, turtle, generate_seconds = user.prepared.popleft()
    if links != user.recent[:RECENT_CHILDREN]:  # an earlier PUT of the block failed: link only what exists
        ((index, links, turtle, again),) = _build_off_the_hub(coordinator.workload, [index], user.recent)
        generate_seconds += again
    url = coordinator.config.base_url + f"{coordinator.workload.parent}/c{index:08d}"
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


def _make_coordinator(environment, runner) -> _Coordinator:
    from locust.runners import MasterRunner, WorkerRunner

    if isinstance(runner, MasterRunner):
        return MasterCoordinator(environment)
    if isinstance(runner, WorkerRunner):
        return WorkerCoordinator(environment)
    return LocalCoordinator(environment)


def install_ingest(events) -> None:
    """Hook the ingest test into Locust's events (what ``locustfiles/ingest.py`` calls)."""

    def on_parser(parser, **_kw):
        add_ingest_arguments(parser)

    def on_init(environment, runner=None, **_kw):
        if runner is not None:
            environment.lakebench = _make_coordinator(environment, runner)

    def on_test_start(environment, **_kw):
        coordinator = environment.lakebench
        try:
            config = IngestConfig.from_options(environment.parsed_options, environment.host)
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


# -- the read mix --------------------------------------------------------------

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
    import urllib3

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
    http = urllib3.PoolManager(retries=False, timeout=urllib3.Timeout(connect=10.0, read=600.0))
    try:
        resp = http.request("GET", parent_url, headers={"Accept": TURTLE})
    except urllib3.exceptions.HTTPError as exc:
        raise LoadTestError(f"cannot reach {parent_url}: {exc}") from None
    finally:
        http.clear()
    if resp.status != 200:
        raise LoadTestError(f"GET {parent_url}: HTTP {resp.status}; is --parent right?")
    children = _parse_containment(resp.data, resp.headers.get("Content-Type", TURTLE), parent_url)
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

        if isinstance(environment.runner, WorkerRunner):
            return  # workers discover lazily, in their first user
        try:
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


# -- the user classes (built on first use, see the module docstring) ----------

_CLASSES: dict[str, type] = {}


def _build_classes() -> dict[str, type]:
    if _CLASSES:
        return _CLASSES
    import random

    from locust import FastHttpUser, constant, task
    from locust.exception import StopUser

    class IngestUser(FastHttpUser):
        """PUTs workload children until the dispenser has none left."""

        wait_time = constant(0)
        network_timeout = 600.0  # a PUT into a huge container may be slow; a timeout would be a false failure
        connection_timeout = 30.0
        max_retries = 0  # a failed request is a result, never silently repeated

        def on_start(self) -> None:
            self.recent: list[int] = []  # the children this user created, newest first
            self.prepared: deque = deque()  # built, not yet sent: (index, links, turtle, seconds)

        @task
        def create_child(self) -> None:
            create_one(self)

    class ReadUser(FastHttpUser):
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

    for cls in (IngestUser, ReadUser):
        cls.__module__ = __name__
    _CLASSES.update(IngestUser=IngestUser, ReadUser=ReadUser)
    return _CLASSES


def __getattr__(name: str):
    if name in ("IngestUser", "ReadUser"):
        return _build_classes()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- library entry point -------------------------------------------------------

def ingest_with_locust(base_url: str, workload: Workload, users: int = 1, spawn_rate: float | None = None,
                       server_pid: int | None = None, data_dir: str | os.PathLike | None = None, *,
                       monitor_interval: float = 0.5, monitor_tail: float = 0.0, first_alone: bool = True,
                       timeout: float | None = None) -> dict:
    """Ingest ``workload`` into the LDP server at ``base_url`` with Locust as a library.

    The same :class:`IngestUser` as ``locustfiles/ingest.py``, in a local
    runner with ``users`` users spawned at ``spawn_rate`` per second (default:
    all at once).  Returns ``{"latencies": [seconds per PUT, completion
    order], "failures": [records of failed PUTs], "retrievals": {"full" |
    "omit_containment" | "minimal": {"seconds", "bytes", "body", "status",
    "content_type", "contains"}}, "samples": [monitor samples], "requests":
    [per-PUT records], ...}`` plus the totals of :func:`summarize`.

    ``first_alone``: see :class:`Ledger`.  Raises :class:`LoadTestError` if the parent exists already or the run
    does not finish within ``timeout`` seconds.  Imports Locust, which
    monkey-patches this process with gevent: call it in a fresh process.
    """
    import gevent
    from locust.env import Environment

    user_class = _build_classes()["IngestUser"]
    config = IngestConfig(base_url=base_url, workload=workload, server_pid=server_pid,
                          data_dir=str(data_dir) if data_dir is not None else None,
                          monitor_interval=monitor_interval, monitor_tail=monitor_tail, first_alone=first_alone)
    environment = Environment(user_classes=[user_class], host=config.base_url)
    runner = environment.create_local_runner()
    coordinator = LocalCoordinator(environment)
    environment.lakebench = coordinator
    environment.events.test_start.add_listener(lambda **_kw: coordinator.test_start(config))
    try:
        runner.start(users, spawn_rate or users)
        if not runner.greenlet.join(timeout=timeout):
            coordinator.error = coordinator.error or f"did not finish in {timeout} s"
    finally:
        runner.quit()  # no-op if the run finished; else stops the users
        gevent.sleep(0)
    if coordinator.error and coordinator.ledger is not None and not coordinator.ledger.records:
        raise LoadTestError(coordinator.error)
    if coordinator.result is None:
        coordinator.quitting()
    if not coordinator.result["complete"]:
        raise LoadTestError(coordinator.error or "ingest did not complete")
    return coordinator.result


# -- Locust's own ceiling -------------------------------------------------------

def serve_trivial(port: int = 0) -> None:
    """A minimal HTTP/1.1 keep-alive server on 127.0.0.1 (prints its port, serves forever).

    It parses just enough (headers, ``Content-Length`` body) to answer every
    request at once: 201 to a PUT, ``200 ok`` otherwise.  It exists to show
    what the load driver alone can send.
    """
    import asyncio

    class Protocol(asyncio.Protocol):
        def connection_made(self, transport):
            self.transport = transport
            self.buffer = b""

        def data_received(self, data):
            buffer = self.buffer + data
            while True:
                end = buffer.find(b"\r\n\r\n")
                if end < 0:
                    break
                head = buffer[:end]
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                if len(buffer) < end + 4 + length:
                    break
                buffer = buffer[end + 4 + length:]
                if head.startswith(b"PUT"):
                    self.transport.write(b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
                else:
                    self.transport.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok")
            self.buffer = buffer

    async def main():
        server = await asyncio.get_running_loop().create_server(Protocol, "127.0.0.1", port)
        print(server.sockets[0].getsockname()[1], flush=True)
        await server.serve_forever()

    asyncio.run(main())


def _package_env() -> dict:
    """Environment for a child Python that must import this lakebench (installed or not)."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def client_ceiling(seconds: float = 5.0, user: str = "fast", method: str = "GET", body_bytes: int = 0,
                   users: int = 1) -> dict:
    """Requests per second ``users`` Locust users send to a trivial loopback server.

    ``user`` is ``"fast"`` (FastHttpUser, geventhttpclient) or ``"http"``
    (HttpUser, requests).  The server runs in its own process; the result
    gives the rate, and the client's CPU time per request, which is the
    driver's cost whatever the server: ``1e6 / client_cpu_us_per_request``
    is what one core of driver could send.  Imports Locust (monkey-patches
    this process): call it in a process of its own, e.g.
    ``python -m lakebench.loadtest ceiling``.
    """
    import gevent
    import psutil
    from locust import FastHttpUser, HttpUser, constant, task
    from locust.env import Environment

    base = {"fast": FastHttpUser, "http": HttpUser}[user]
    body = b"x" * body_bytes if body_bytes else None

    class CeilingUser(base):
        wait_time = constant(0)

        def on_start(self):
            if user == "http":
                self.client.trust_env = False  # never through a proxy from the environment

        @task
        def hit(self):
            self.client.request(method, "/", data=body, name="ceiling")

    server = subprocess.Popen([sys.executable, "-c", "from lakebench.loadtest import serve_trivial; serve_trivial()"],
                              stdout=subprocess.PIPE, text=True, env=_package_env())
    try:
        port = int(server.stdout.readline())
        server_proc = psutil.Process(server.pid)
        env = Environment(user_classes=[CeilingUser], host=f"http://127.0.0.1:{port}")
        runner = env.create_local_runner()
        cpu0, srv0 = time.process_time(), sum(server_proc.cpu_times()[:2])
        t0 = time.perf_counter()
        runner.start(users, users)
        gevent.sleep(seconds)
        runner.quit()
        elapsed = time.perf_counter() - t0
        cpu, srv = time.process_time() - cpu0, sum(server_proc.cpu_times()[:2]) - srv0
    finally:
        server.terminate()
        server.wait(10)
    total = env.stats.total
    n = total.num_requests
    return {
        "user": base.__name__,
        "users": users,
        "method": method,
        "body_bytes": body_bytes,
        "seconds": round(elapsed, 3),
        "requests": n,
        "failures": total.num_failures,
        "requests_per_second": round(n / elapsed, 1),
        "mean_ms": round(total.avg_response_time, 3),
        "client_cpu_seconds": round(cpu, 3),
        "client_cpu_us_per_request": round(cpu / n * 1e6, 1) if n else None,
        "server_cpu_seconds": round(srv, 3),
    }


def _main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lakebench.loadtest",
                                     description="Locust helpers of lakebench")
    sub = parser.add_subparsers(dest="command", required=True)
    ceiling = sub.add_parser("ceiling", help="measure what one Locust user can send to a trivial loopback server")
    ceiling.add_argument("--seconds", type=float, default=5.0)
    ceiling.add_argument("--user", choices=["fast", "http"], action="append",
                         help="client class(es) to measure (default both)")
    ceiling.add_argument("--method", default="GET")
    ceiling.add_argument("--body-bytes", type=int, default=0)
    ceiling.add_argument("--users", type=int, default=1)
    sub.add_parser("serve-trivial", help="run the trivial server (prints its port)")
    args = parser.parse_args(argv)
    if args.command == "serve-trivial":
        serve_trivial()
        return 0
    for kind in args.user or ["fast", "http"]:
        print(json.dumps(client_ceiling(args.seconds, kind, args.method, args.body_bytes, args.users)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(_main())
