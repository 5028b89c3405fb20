"""Drivers: how a workload's operations reach a system, and the one clock that times them.

* :class:`ClientDriver`: lakebench's own loop, one operation at a time.
  Every operation is timed by :meth:`ClientDriver.time` alone (YCSB's
  ``DBWrapper``), which files the seconds under the operation's kind.
* :class:`LocustDriver`: Locust as a library, for HTTP systems; Locust's
  request events are its clock (:mod:`lakebench.locust`).

Both give a workload the same calls (``ingest``, ``read_parent``) and fill
one :class:`~lakebench.workloads.base.Outcome`.  Statistics are never
computed here: the runner turns the raw times into figures with
:mod:`lakebench.results.stats`, which makes the two made here too (the
parent's steady time; a Locust ingest's throughput, in its load record:
:func:`lakebench.locust.record.load_record`).
"""
from __future__ import annotations

import contextlib
import sys
import time
from typing import Any, Callable

from lakebench.monitor import directory_bytes, tree_cpu_seconds, tree_rss_bytes
from lakebench.pagecache import drop_page_cache
from lakebench.prefetch import ChildFeed
from lakebench.runspec import RunSpec
from lakebench.results import stats
from lakebench.systems.base import HttpSystem, Retrieval, SystemFailure
from lakebench.dataset import DataSet
from lakebench.workloads.base import NotApplicable, Outcome, count_containment

#: The worker tells the parent how many children exist every this many, so
#: each monitor sample knows how far the ingest was (disk against children).
PROGRESS_EVERY = 50
#: The operation kind of each page's request when the parent is walked in pages.
PAGE_KIND = "get parent page"


def parent_times(times: list[float]) -> dict:
    """Steady (median of the retrievals after the first: the first, right after
    the writes, is often much slower) and first retrieval seconds."""
    return {"seconds": round(stats.steady_seconds(times), 6),
            "first_seconds": round(times[0], 6)}


def _progress_bar(total: int, label: str, enabled: bool, unit: str = "child"):
    if not enabled:
        return None
    from tqdm import tqdm

    # On a terminal the bar redraws twice a second; in a log (CI) a line
    # every 10 s is enough.
    interval = 0.5 if sys.stderr.isatty() else 10.0
    return tqdm(total=total, desc=label, unit=unit, mininterval=interval, file=sys.stderr)


class ClientDriver:
    """lakebench's own client loop: one operation at a time, each timed alone.

    ``spec`` is the worker's specification (retrievals, cold, budget,
    checkpoints, progress, the producer's ``feed_fd``); ``events`` reports
    phases and progress to the runner's monitor.
    """

    name = "client"

    def __init__(self, spec: RunSpec, events):
        self.spec = spec
        self.events = events
        self.outcome = Outcome()

    @property
    def budget_seconds(self) -> float | None:
        """How long the workload's ingest may take (``--budget``; None: no bound)."""
        return self.spec.budget_seconds


    # -- the one clock ---------------------------------------------------
    def time(self, kind: str, call: Callable[..., Any], *args, **kwargs) -> Any:
        """Run ``call(*args, **kwargs)``, file its seconds under ``kind``, return its result.

        A call that raises is not timed: the exception goes to the workload.
        """
        t0 = time.perf_counter()
        result = call(*args, **kwargs)
        self.outcome.series(kind).append(time.perf_counter() - t0)
        return result

    def attempt(self, kind: str, call: Callable[..., Any], *args, **kwargs) -> Any:
        """:meth:`time`, but a failure is counted under ``kind`` (the first message kept) and
        None returned: for workloads that go on after a refused operation."""
        try:
            return self.time(kind, call, *args, **kwargs)
        except NotApplicable:
            raise
        except Exception as exc:  # the system's answer, recorded: the run goes on
            self.outcome.errors[kind] = self.outcome.errors.get(kind, 0) + 1
            if self.outcome.first_error is None:
                self.outcome.first_error = f"{kind}: {type(exc).__name__}: {exc}"
            return None

    def phase(self, name: str) -> None:
        self.events.send("phase", phase=name)

    @contextlib.contextmanager
    def harness(self):
        """Work of lakebench's own (checking what came back, building what is sent next): its CPU
        in this process is not the system's, and the runner takes it out of an in-process
        system's ``cpu_seconds``."""
        c0 = time.process_time()
        try:
            yield
        finally:
            self.outcome.generate_cpu += time.process_time() - c0

    def progress(self, total: int, label: str, unit: str):
        """A progress bar for ``total`` operations (None when progress is off)."""
        return _progress_bar(total, f"{self.spec.system} {label}", self.spec.progress, unit)

    # -- the seed's operations -------------------------------------------
    def ingest(self, system, dataset: DataSet, parents: str = "shared") -> None:
        """Create every child of ``dataset``, each ``create_child`` timed alone as ``"create"``.

        One client is one user, so its parent is the one ``parents`` can only be (``shared``).

        The children come from a producer process when the runner started one
        (``feed_fd``, see :mod:`lakebench.prefetch`), else they are built here,
        before each clock starts.  At each of ``spec.checkpoints`` children
        the loop pauses for :meth:`_checkpoint`, whose time is in no figure of
        the ingest; with ``spec.budget_seconds`` it stops once the ingest
        time, the sum of the timed calls, reaches the budget.
        """
        if parents != "shared":
            raise ValueError(f"--parents {parents} needs Locust's users (--driver locust); one client has one parent")
        outcome, spec, events = self.outcome, self.spec, self.events
        ingest_seconds = 0.0  # the sum of the timed calls so far: what the budget is spent on
        budget = spec.budget_seconds
        checkpoint_at = set(spec.checkpoints)
        generate_cpu = 0.0  # CPU this process spent building or receiving children
        generate_seconds = 0.0  # wall time spent building children, here or in the producer
        feed = ChildFeed(dataset, spec.feed_fd) if spec.feed_fd is not None else None
        bar = _progress_bar(dataset.children, spec.system, spec.progress)
        self.phase("ingest")
        wall_start = time.perf_counter()
        for index in range(dataset.children):
            g0, w0 = time.process_time(), time.perf_counter()
            if feed is not None:
                child = system.prepare(feed.next())
            else:
                child = system.prepare(dataset.child(index))
                child.turtle, child.ntriples  # noqa: B018 - build both serializations outside the clock
                generate_seconds += time.perf_counter() - w0
            generate_cpu += time.process_time() - g0
            self.time("create", system.create_child, child)
            ingest_seconds += outcome.last("create")
            created = index + 1
            if index % PROGRESS_EVERY == PROGRESS_EVERY - 1:
                events.send("progress", children=created)
            if bar is not None:
                bar.update(1)
                if index % 200 == 0:
                    bar.set_postfix_str(f"last child {outcome.last('create') * 1000:.2f} ms", refresh=False)
            if budget is not None and ingest_seconds >= budget and created < dataset.children:
                outcome.budget_exhausted = True  # the final retrieval measures this size: no checkpoint here
                break
            if created in checkpoint_at:
                c0 = time.perf_counter()
                outcome.checkpoints.append(self._checkpoint(system, created))
                outcome.checkpoint_seconds += time.perf_counter() - c0
        outcome.ingest_wall += time.perf_counter() - wall_start - outcome.checkpoint_seconds
        if feed is not None:
            generate_seconds = feed.stop() if outcome.budget_exhausted else feed.close()
        if bar is not None:
            bar.close()
        events.send("progress", children=outcome.created())
        outcome.generate_cpu += generate_cpu
        outcome.generation = {"generation": "producer" if feed is not None else "inline",
                              "generate_seconds": round(generate_seconds, 6)}

    def _retrievals(self, system, kind: str | None) -> tuple[Retrieval, list[float]]:
        """Read the parent ``retrievals`` times; (the last retrieval, the seconds of each).

        Filed under ``kind`` when given (checkpoint reads are not: their
        figures go to the checkpoint's record alone).
        """
        times = []
        retrieval = None
        cold = self.spec.cold
        for _ in range(self.spec.retrievals):
            if cold:
                cold = drop_page_cache()  # once refused, the rest are warm too
            retrieval = None  # the last one let go first: in process, its memory is the system's
            t0 = time.perf_counter()
            retrieval = system.retrieve_parent()
            times.append(time.perf_counter() - t0)
        if kind is not None:
            self.outcome.series(kind).extend(times)
        self.outcome.cache = "cold" if cold else "warm"
        return retrieval, times

    def _checkpoint(self, system, children: int) -> dict:
        """The parent retrieved as at the end of a run, and the disk and memory, with ``children`` created."""
        self.events.send("progress", children=children)
        self.phase("checkpoint")
        retrieval, times = self._retrievals(system, None)
        parent = parent_times(times)
        record = {
            "children": children,
            "parent_seconds": parent["seconds"],
            "parent_first_seconds": parent["first_seconds"],
            "containment_triples": count_containment(retrieval),
            # Allocated so far, the system still open (the run's disk_bytes is after close).
            "disk_bytes": directory_bytes(system.disk_path()),
            "rss_bytes": tree_rss_bytes(system.pid()),
        }
        self.phase("ingest")
        return record

    def read_parent(self, system) -> None:
        """Retrieve the parent ``retrievals`` times, filed as ``"get parent"``; then, with a
        ``page_size``, walk it once in pages if the system pages (:meth:`walk_pages`)."""
        self.phase("retrieve")
        self.outcome.retrieval, _ = self._retrievals(system, "get parent")
        if self.spec.page_size and system.supports("first_page"):
            self.walk_pages(system, self.spec.page_size)

    def walk_pages(self, system, size: int) -> None:
        """The parent read once in pages of ``size`` children (LDP Paging 1.0), from the first page
        to the last, each page's request timed and filed as ``"get parent page"``; the walk's
        figures go to the record's ``parent.paged``.  The containment triples are counted on
        every page (outside the clock), so a walk that loses or repeats children shows.  A system
        that answers with the whole parent does not page: its answer is recorded as such, and
        is no page's time."""
        before = len(self.outcome.times.get(PAGE_KIND, ()))
        page = self.time(PAGE_KIND, system.first_page, size)
        with self.harness():
            contained = count_containment(page.retrieval)
        if not page.paged:
            times = self.outcome.times[PAGE_KIND]
            (seconds,) = times[before:]
            del times[before:]
            if not times:
                del self.outcome.times[PAGE_KIND]
            self.outcome.paged = {"page_size": size, "paged": False, "pages": 1, "containment_triples": contained,
                                  "first_seconds": round(seconds, 6), "walk_seconds": round(seconds, 6)}
            return
        # No parent holds more children than operations were made: more pages than that is a loop.
        most = sum(map(len, self.outcome.times.values())) // size + 2
        seen, pages = set(), 1
        while page.next_url is not None:
            if page.next_url in seen or pages >= most:
                raise SystemFailure(f"{self.spec.system}: the parent's next links loop ({page.next_url} after "
                                    f"{pages:,} pages of {size:,})")
            seen.add(page.next_url)
            page = self.time(PAGE_KIND, system.next_page, page.next_url)
            pages += 1
            with self.harness():
                contained += count_containment(page.retrieval)
        seconds = self.outcome.times[PAGE_KIND][before:]
        self.outcome.paged = {"page_size": size, "paged": True, "pages": pages, "containment_triples": contained,
                              "first_seconds": round(seconds[0], 6), "walk_seconds": round(sum(seconds), 6)}


class LocustDriver:
    """Locust as a library: its users PUT the children, its requests are timed by Locust.

    The parent is then read once in each of three variants (full, omit
    containment, minimal container), and ``retrievals`` times more at the
    end of the workload (:meth:`read_parent`).  Importing Locust monkey-patches this
    worker with gevent, which is why each run has a process of its own.
    The budget stops the dispensing of children (the PUTs under way finish);
    Locust's users take no checkpoints.
    """

    name = "locust"

    def __init__(self, spec: RunSpec, events):
        self.spec = spec
        self.events = events
        self.outcome = Outcome()
        self._retrievals: dict | None = None
        self._parent_urls: list[str] = []  # where the users PUT: the shared parent, or one per user

    @property
    def budget_seconds(self) -> float | None:
        """How long the workload's ingest may take (``--budget``; None: no bound)."""
        return self.spec.budget_seconds


    def phase(self, name: str) -> None:
        self.events.send("phase", phase=name)

    def ingest(self, system, dataset: DataSet, parents: str = "shared") -> None:
        """The users PUT the children: into the one parent (``shared``), or each into a parent of its
        own (``per-user``); the ingest's ``load`` record says which, and what the system and the
        generator (this process) spent meanwhile."""
        from lakebench.locust.driver import ingest_with_locust
        from lakebench.locust.record import load_record

        if not isinstance(system, HttpSystem):
            raise NotApplicable(f"--driver locust drives HTTP systems only; {self.spec.system} runs in-process")
        self.phase("ingest")
        users = self.spec.users
        bar = _progress_bar(dataset.children, f"{self.spec.system} ({users} users)", self.spec.progress)

        def progress(done: int) -> None:  # from a greenlet beside the users, when the count changed
            self.events.send("progress", children=done)
            if bar is not None:
                bar.update(done - bar.n)

        window = _CpuWindow(system.pid())
        out = ingest_with_locust(system.base_url, dataset, users=users,
                                 budget_seconds=self.spec.budget_seconds, on_progress=progress, parents=parents,
                                 access=system.access)
        cpu = window.close()
        # The ingest's wall time: from the first PUT's start to the last one's end, by Locust's
        # clock (the call also reads the parent's three Prefer variants after the PUTs).
        wall = out.get("ingest_seconds") or 0.0
        self.outcome.ingest_wall += wall
        if bar is not None:
            bar.close()
        records = out["requests"]  # completion order
        failed = [r for r in records if not r["ok"]]
        # A load test's refusals are a result: counted (by kind, in its load record), the run goes on.
        if failed:
            self.outcome.errors["create"] = len(failed)
            self.outcome.first_error = f"create: {failed[0].get('error') or 'HTTP ' + str(failed[0].get('status'))}"
        self.outcome.series("create").extend(r["seconds"] for r in records if r["ok"])
        self.outcome.budget_exhausted = bool(out.get("budget_exhausted"))
        self.outcome.generation = {"generation": "users",
                                   "generate_seconds": round(out.get("generate_seconds", 0.0), 6)}
        # Its throughput: over the same wall time, the records' span.
        self.outcome.details["load"] = load_record(records, users, cpu=cpu, parents=parents)
        self.events.send("progress", children=len(records) - len(failed))
        self._retrievals = out["retrievals"]
        self._parent_urls = list(out.get("parent_urls") or [])

    def read_parent(self, system) -> None:
        """Retrieve the parent ``retrievals`` times through a Locust client, filed as ``"get parent"``
        (``--cold``: the page cache dropped before each, as :class:`ClientDriver` does); after a
        Locust ingest, the seconds of its three Prefer variants (read right after the PUTs) too."""
        from lakebench.locust.driver import read_parent_with_locust

        self.phase("retrieve")
        cold = self.spec.cold

        def before_each():
            nonlocal cold
            if cold:
                cold = drop_page_cache()  # once refused, the rest are warm too

        # With per-user parents the first user's is the one timed; the others are read once each,
        # outside every figure, so that what is held can be counted.
        parent_url, *others = self._parent_urls or [system.parent_url]
        got = read_parent_with_locust(system.base_url, parent_url, self.spec.retrievals, before_each,
                                      access=system.access)
        last = got[-1]
        self.outcome.retrieval = Retrieval(body=last["body"], parent_uri=parent_url,
                                           content_type=last.get("content_type") or "text/turtle")
        self.outcome.series("get parent").extend(g["seconds"] for g in got)
        for url in others:
            (other,) = read_parent_with_locust(system.base_url, url, 1, access=system.access)
            self.outcome.other_parents.append(Retrieval(body=other["body"], parent_uri=url,
                                                        content_type=other.get("content_type") or "text/turtle"))
        self.outcome.cache = "cold" if cold else "warm"
        if self._retrievals:
            self.outcome.variants = {name: round(r["seconds"], 6) for name, r in self._retrievals.items()}

    def mixed(self, system, dataset: DataSet, weights: dict[str, int], duration: float | None = None,
              operations: int = 0):
        """Locust users doing weighted creates, PATCHes and GETs (:mod:`lakebench.locust.mixed`) on
        the children the ingest created; their times and refusals go to the outcome.  Returns the
        users' shared state (created children, patched values, wall seconds)."""
        from lakebench.locust.mixed import run_mixed
        from lakebench.locust.record import load_record

        self.phase("mixed")
        window = _CpuWindow(system.pid())
        state = run_mixed(system.base_url, dataset, weights, existing=self.outcome.created(),
                          users=self.spec.users, duration=duration, operations=operations, access=system.access)
        # The mixed tasks are the load test (the ingest before them only fills the parent): its record
        # replaces the ingest's.
        self.outcome.details["load"] = load_record(sorted(state.records, key=lambda r: r["end"]), self.spec.users,
                                                   cpu=window.close())
        for kind, seconds in state.times.items():
            self.outcome.series(kind).extend(seconds)
        for kind, count in state.errors.items():
            self.outcome.errors[kind] = self.outcome.errors.get(kind, 0) + count
        self.outcome.first_error = self.outcome.first_error or state.first_error
        return state


class _CpuWindow:
    """CPU seconds spent by the system (its process tree) and by the load generator (this process, where
    Locust's local runner and its users run) from now to :meth:`close`, with the wall time between."""

    def __init__(self, system_pid: int | None):
        self.system_pid = system_pid
        self.system_start = tree_cpu_seconds(system_pid)
        self.generator_start = time.process_time()
        self.wall_start = time.perf_counter()

    def close(self) -> dict:
        """The window as the ``load`` record holds it (:func:`lakebench.locust.record.cpu_record`)."""
        from lakebench.locust.record import cpu_record

        wall = time.perf_counter() - self.wall_start
        generator = time.process_time() - self.generator_start
        system_end = tree_cpu_seconds(self.system_pid)
        system = None if self.system_start is None or system_end is None else system_end - self.system_start
        return cpu_record(system, generator, wall, generator_processes=1)


DRIVERS = {"client": ClientDriver, "locust": LocustDriver}
