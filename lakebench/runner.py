"""The runner: the only place that holds a clock.

``run(config)`` measures each system in a fresh worker process with a fresh
data directory, so its memory and disk figures are its own:

1. the worker builds the system and calls ``setup()`` (not timed);
2. it creates every child, timing each ``create_child`` call alone (the
   graph is generated before the clock starts); at each checkpoint size
   (:func:`checkpoint_sizes`) it pauses to retrieve the parent and measure
   the disk, outside every clock of the ingest; with a budget
   (``budget_seconds``) it stops once the ingest time (the sum of those
   timed calls) reaches it;
3. it retrieves the parent ``retrievals`` times, timing each;
4. it idles ``tail_seconds`` so the monitor sees the system after the load,
   then closes the system and measures the data directory.

Meanwhile the parent process samples the system's process (the worker, or a
server the system started) with :class:`lakebench.monitor.Monitor`.  The
worker reports to the parent as JSON lines on a private pipe.

In a sweep, a case of a system is not run (an entry ``skipped``) when a
case of the same system and literal length already spent its budget before
reaching this case's size: it would stop at about the same size again, a
budget later (:func:`budget_skip`).

A run that fails (a server that does not start or answer, a bad reply) is a
result: its record says ``failed`` with the error's first line, and the
whole of it (a server log's end, the worker's traceback) goes to
``OUT/logs/``, not to the terminal.

Run as ``python -m lakebench.runner SPEC_JSON EVENT_FD`` it is that worker.
"""
from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from typing import Sequence
from datetime import datetime, timezone
from pathlib import Path

from lakebench import environment, prefetch, results, systems
from lakebench.monitor import Monitor, directory_bytes, tree_cpu_seconds, tree_rss_bytes
from lakebench.prefetch import ChildFeed
from lakebench.systems.base import Retrieval
from lakebench.workload import LDP_CONTAINS, Workload


@dataclass
class RunConfig:
    systems: list[str]
    children: int | Sequence[int] = 10_000  # several: a sweep, one case each
    triples: int = 200
    literal_length: int | Sequence[int] = 64  # several: a payload-size sweep
    seed: int = 0
    parent: str = "parent"
    repeat: int = 1
    reference: str | None = None
    out: Path = Path("results")
    retrievals: int = 3
    tail_seconds: float = 3.0
    interval: float = 0.5
    keep_data: bool = False
    progress: bool = True
    cold: bool = False  # drop the OS page cache before each parent retrieval
    driver: str = "client"  # or "locust", for HTTP systems
    users: int = 1  # concurrent Locust users (driver "locust")
    options: dict = field(default_factory=dict)
    prefetch: bool = True  # children from a producer process where a core is free (lakebench.prefetch)
    command: str = ""  # the command line, recorded in results
    #: Stop each system x case's ingest once its ingest time (the sum of the
    #: timed calls) reaches this many seconds; None: no budget.
    budget_seconds: float | None = None
    #: Sizes at which the parent is also retrieved and the disk measured
    #: during the ingest: "auto" (:data:`CHECKPOINT_SERIES`), a list, or None.
    checkpoints: str | Sequence[int] | None = "auto"

    def cases(self) -> list[Workload]:
        """One workload per combination of the swept children counts and literal lengths."""
        return [
            Workload(children=n, triples=self.triples, literal_length=length, seed=self.seed,
                     parent=self.parent)
            for n in _as_list(self.children)
            for length in _as_list(self.literal_length)
        ]


def _as_list(value) -> list[int]:
    return [value] if isinstance(value, int) else list(value)


#: ``--checkpoints auto``: 1,000, 2,000, 5,000, 10,000, 20,000, ... : even
#: steps on the report's log axis, a handful per decade, few enough that the
#: reads (each ``retrievals`` GETs of a growing parent) stay a small part of a run.
CHECKPOINT_SERIES = tuple(m * 10**e for e in range(3, 8) for m in (1, 2, 5))


def checkpoint_sizes(children: int, checkpoints: str | Sequence[int] | None) -> list[int]:
    """The checkpoint sizes of a case of ``children``: those below it (the final retrieval measures that size).

    >>> checkpoint_sizes(20_000, "auto")
    [1000, 2000, 5000, 10000]
    >>> checkpoint_sizes(100, [50, 10, 100, 500]), checkpoint_sizes(100_000, None)
    ([10, 50], [])
    """
    if not checkpoints:
        return []
    sizes = CHECKPOINT_SERIES if checkpoints == "auto" else checkpoints
    return sorted({n for n in sizes if n < children})


# -- worker side -----------------------------------------------------------

#: The worker tells the parent how many children exist every this many, so
#: each monitor sample knows how far the ingest was (disk against children).
PROGRESS_EVERY = 50

class _Events:
    """JSON lines to the parent over an inherited file descriptor."""

    def __init__(self, fd: int):
        self._file = os.fdopen(fd, "w", buffering=1)

    def send(self, event: str, **fields) -> None:
        self._file.write(json.dumps({"event": event, **fields}) + "\n")
        self._file.flush()


def _progress(total: int, label: str, enabled: bool):
    if not enabled:
        return None
    from tqdm import tqdm

    # On a terminal the bar redraws twice a second; in a log (CI) a line
    # every 10 s is enough.
    interval = 0.5 if sys.stderr.isatty() else 10.0
    return tqdm(total=total, desc=label, unit="child", mininterval=interval, file=sys.stderr)


@dataclass
class Outcome:
    """What a driver measured: raw times, the parent as last retrieved, and how the ingest went."""

    latencies: list[float]  # seconds of each create_child / PUT, in order
    ingest_wall: float  # wall time of the ingest loop, checkpoint reads excluded
    retrieval: Retrieval  # the parent as the last timed retrieval returned it
    retrieval_times: list[float]
    generate_cpu: float  # CPU this process spent building children (in-process systems: not the system's)
    cache: str  # "cold" or "warm": what the retrievals really were
    generation: dict  # "generation" and "generate_seconds" of the record
    variants: dict | None = None  # Locust: seconds of each Prefer variant
    budget_exhausted: bool = False
    checkpoints: list[dict] = field(default_factory=list)
    checkpoint_seconds: float = 0.0  # wall time spent in checkpoint reads, outside the ingest's clocks


def _read_parent(system, retrievals: int, cold: bool) -> tuple[Retrieval, list[float], bool]:
    """Retrieve the parent ``retrievals`` times, each timed; (the last retrieval, times, still cold)."""
    times = []
    retrieval = None
    for _ in range(retrievals):
        if cold:
            cold = drop_page_cache()  # once refused, the rest are warm too
        t0 = time.perf_counter()
        retrieval = system.retrieve_parent()
        times.append(time.perf_counter() - t0)
    return retrieval, times, cold


def _parent_times(times: list[float]) -> dict:
    """Steady (median of the retrievals after the first: the first, right after
    the writes, is often much slower) and first retrieval seconds."""
    return {"seconds": round(results.percentile(sorted(times[1:] or times), 50), 6),
            "first_seconds": round(times[0], 6)}


def _checkpoint(system, children: int, spec: dict, events: _Events) -> dict:
    """The parent retrieved as at the end of a run, and the disk and memory, with ``children`` created."""
    events.send("progress", children=children)
    events.send("phase", phase="checkpoint")
    retrieval, times, _ = _read_parent(system, spec.get("retrievals", 3), spec.get("cold", False))
    parent = _parent_times(times)
    record = {
        "children": children,
        "parent_seconds": parent["seconds"],
        "parent_first_seconds": parent["first_seconds"],
        "containment_triples": count_containment(retrieval),
        # Allocated so far, the system still open (the run's disk_bytes is after close).
        "disk_bytes": directory_bytes(system.disk_path()),
        "rss_bytes": tree_rss_bytes(system.pid()),
    }
    events.send("phase", phase="ingest")
    return record


def _drive_with_client(system, workload, spec, events) -> Outcome:
    """lakebench's own loop: one child at a time, each create_child timed alone.

    The children come from a producer process when the runner started one
    (``feed_fd``, see :mod:`lakebench.prefetch`), else they are built here,
    before each clock starts.  At each of ``spec["checkpoints"]`` children
    the loop pauses for :func:`_checkpoint`, whose time is in no figure of
    the ingest; with ``spec["budget_seconds"]`` it stops once the ingest
    time, the sum of the timed calls, reaches the budget.
    """
    latencies: list[float] = []
    ingest_seconds = 0.0  # the sum of latencies so far: what the budget is spent on
    budget = spec.get("budget_seconds")
    budget_exhausted = False
    checkpoint_at = set(spec.get("checkpoints") or ())
    checkpoints: list[dict] = []
    checkpoint_seconds = 0.0
    generate_cpu = 0.0  # CPU this process spent building or receiving children
    generate_seconds = 0.0  # wall time spent building children, here or in the producer
    feed = ChildFeed(workload, spec["feed_fd"]) if spec.get("feed_fd") is not None else None
    bar = _progress(workload.children, spec["system"], spec.get("progress", False))
    wall_start = time.perf_counter()
    for index in range(workload.children):
        g0, w0 = time.process_time(), time.perf_counter()
        if feed is not None:
            child = system.prepare(feed.next())
        else:
            child = system.prepare(workload.child(index))
            child.turtle, child.ntriples  # noqa: B018 - build both serializations outside the clock
            generate_seconds += time.perf_counter() - w0
        generate_cpu += time.process_time() - g0
        t0 = time.perf_counter()
        system.create_child(child)
        latency = time.perf_counter() - t0
        latencies.append(latency)
        ingest_seconds += latency
        created = index + 1
        if index % PROGRESS_EVERY == PROGRESS_EVERY - 1:
            events.send("progress", children=created)
        if bar is not None:
            bar.update(1)
            if index % 200 == 0:
                bar.set_postfix_str(f"{latencies[-1] * 1000:.2f} ms", refresh=False)
        if budget is not None and ingest_seconds >= budget and created < workload.children:
            budget_exhausted = True  # the final retrieval measures this size: no checkpoint here
            break
        if created in checkpoint_at:
            c0 = time.perf_counter()
            checkpoints.append(_checkpoint(system, created, spec, events))
            checkpoint_seconds += time.perf_counter() - c0
    ingest_wall = time.perf_counter() - wall_start - checkpoint_seconds
    if feed is not None:
        generate_seconds = feed.stop() if budget_exhausted else feed.close()
    if bar is not None:
        bar.close()
    events.send("progress", children=len(latencies))
    events.send("latencies", seconds=latencies)

    events.send("phase", phase="retrieve")
    retrieval, retrieval_times, cold = _read_parent(system, spec.get("retrievals", 3), spec.get("cold", False))
    generation = {"generation": "producer" if feed is not None else "inline",
                  "generate_seconds": round(generate_seconds, 6)}
    return Outcome(latencies, ingest_wall, retrieval, retrieval_times, generate_cpu, "cold" if cold else "warm",
                   generation, budget_exhausted=budget_exhausted, checkpoints=checkpoints,
                   checkpoint_seconds=checkpoint_seconds)


def drop_page_cache() -> bool:
    """Write dirty pages and drop the OS page cache (root only); whether it was done.

    Pages a process has mapped and touched (an in-process LMDB store's) may
    stay resident: the kernel drops only what nobody maps.
    """
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError:
        return False
    return True


def _drive_with_locust(system, workload, spec, events) -> Outcome:
    """Locust as a library: its users PUT the children, its requests are timed by Locust.

    The parent is then read once in each of three variants (full, omit
    containment, minimal container).  Importing Locust monkey-patches this
    worker with gevent, which is why each run has a process of its own.
    The budget stops the dispensing of children (the PUTs under way finish);
    Locust's users take no checkpoints.
    """
    from lakebench.locust.driver import ingest_with_locust

    wall_start = time.perf_counter()
    out = ingest_with_locust(system.base, workload, users=spec.get("users", 1),
                             budget_seconds=spec.get("budget_seconds"))
    ingest_wall = time.perf_counter() - wall_start
    if out["failures"]:
        first = out["failures"][0]
        raise RuntimeError(f"{len(out['failures'])} PUTs failed under Locust, the first: {first}")
    latencies = out["latencies"]
    events.send("progress", children=len(latencies))
    events.send("latencies", seconds=latencies)
    events.send("phase", phase="retrieve")
    full = out["retrievals"]["full"]
    retrieval = Retrieval(body=full["body"], parent_uri=system.parent_url,
                          content_type=full.get("content_type") or "text/turtle")
    variants = {name: round(r["seconds"], 6) for name, r in out["retrievals"].items()}
    generation = {"generation": "users", "generate_seconds": round(out.get("generate_seconds", 0.0), 6)}
    return Outcome(latencies, ingest_wall, retrieval, [full["seconds"]], 0.0, "warm", generation,
                   variants=variants, budget_exhausted=bool(out.get("budget_exhausted")))


def worker(spec: dict, events: _Events) -> dict:
    """Measure one system once; returns the run record (also sent as an event).

    A system that fails is still closed, so a server it started does not
    outlive the run.
    """
    workload = Workload(**spec["workload"])
    system_cls = systems.load_target(spec["target"])
    system = system_cls(Path(spec["data_dir"]), workload, spec.get("options"))
    try:
        return _measure(system, workload, spec, events)
    except BaseException:
        with contextlib.suppress(Exception):
            system.close()
        raise


def _measure(system, workload: Workload, spec: dict, events: _Events) -> dict:
    driver = spec.get("driver", "client")
    record: dict = {
        "system": spec["system"],
        "run": spec["run"],
        "durability": system.durability,
        "transport": system.transport,
        "driver": driver,
        **({"users": spec.get("users", 1)} if driver == "locust" else {}),
    }
    if driver == "locust" and system.transport != "http":
        raise ValueError(f"--driver locust drives HTTP systems only; {spec['system']} runs in-process")
    events.send("phase", phase="setup")
    if driver == "locust":
        system.connect()  # Locust creates the parent itself
    else:
        system.setup()
    workload = system.workload  # as the system's server accepts it (LAKEsuperior: absolute IRIs)
    pid = system.pid()
    disk_path = system.disk_path()
    events.send("pid", pid=pid, disk_path=str(disk_path) if disk_path else None)
    in_process = pid == os.getpid()

    cpu_start = tree_cpu_seconds(pid)
    events.send("phase", phase="ingest")
    drive = _drive_with_locust if driver == "locust" else _drive_with_client
    outcome = drive(system, workload, spec, events)
    latencies = outcome.latencies
    # Only CPU spent by the system counts: when the system runs in this very
    # process, the CPU spent generating graphs is subtracted.
    cpu_end = tree_cpu_seconds(pid)
    cpu_seconds = None if cpu_start is None or cpu_end is None else round(
        cpu_end - cpu_start - (outcome.generate_cpu if in_process else 0.0), 3)

    record.update(results.latency_summary(latencies))
    record.update(
        {
            "children": len(latencies),
            "children_requested": workload.children,
            "budget_exhausted": outcome.budget_exhausted,
            "literal_length": workload.literal_length,
            # Time spent sending requests: the sum of the per-child times when
            # they come one at a time; the wall time when users overlap them.
            "ingest_seconds": round(sum(latencies) if record.get("users", 1) == 1 else outcome.ingest_wall, 6),
            "ingest_wall_seconds": round(outcome.ingest_wall, 6),
            **outcome.generation,
            "parent": {
                **_parent_times(outcome.retrieval_times),
                "all_seconds": [round(t, 6) for t in outcome.retrieval_times],
                "containment_triples": count_containment(outcome.retrieval),
                "bytes": len(outcome.retrieval.body),
                "cache": outcome.cache,
                **({"variants_seconds": outcome.variants} if outcome.variants else {}),
            },
            "checkpoints": outcome.checkpoints,
            "checkpoint_seconds": round(outcome.checkpoint_seconds, 6),
            "cpu_seconds": cpu_seconds,
            "triples_total": system.triples_total(children=len(latencies)),
        }
    )
    events.send("phase", phase="tail")
    time.sleep(spec.get("tail_seconds", 0))
    events.send("phase", phase="close")
    system.close()
    record["disk_bytes"] = directory_bytes(disk_path)
    if in_process:
        record["worker_max_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return record


def count_containment(retrieval) -> int:
    """``ldp:contains`` triples of the parent in a retrieved representation."""
    import pyoxigraph as ox

    formats = {"text/turtle": ox.RdfFormat.TURTLE, "application/n-triples": ox.RdfFormat.N_TRIPLES}
    media_type = retrieval.content_type.split(";")[0].strip()
    parent = ox.NamedNode(retrieval.parent_uri)
    contains = ox.NamedNode(LDP_CONTAINS)
    return sum(
        1
        for quad in ox.parse(retrieval.body, format=formats[media_type], base_iri=retrieval.parent_uri)
        if quad.predicate == contains and quad.subject == parent
    )


def _worker_main(argv: list[str]) -> int:
    spec = json.loads(argv[0])
    if spec.get("driver") == "locust":
        # Locust runs on gevent: patch before the system imports ssl/urllib3.
        from gevent import monkey

        monkey.patch_all()
    events = _Events(int(argv[1]))
    try:
        record = worker(spec, events)
    except BaseException as exc:  # report any failure to the parent, then exit non-zero
        events.send("failed", error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc())
        return 1
    events.send("result", record=record)
    return 0


# -- parent side -----------------------------------------------------------

def run_one(config: RunConfig, name: str, run_index: int, data_root: Path,
            w: Workload) -> tuple[dict, list[float]]:
    """Measure system ``name`` once on workload ``w`` in a fresh worker; returns (record, latencies)."""
    case = "" if len(config.cases()) == 1 else f"-{w.children}x{w.literal_length}"
    label = f"{name}{case}-{run_index}"
    data_dir = data_root / label
    if data_dir.exists():
        shutil.rmtree(data_dir)
    data_dir.mkdir(parents=True)
    spec = {
        "system": name,
        "target": systems.target(name),
        "run": run_index,
        "data_dir": str(data_dir),
        "workload": {
            "children": w.children,
            "triples": w.triples,
            "literal_length": w.literal_length,
            "seed": w.seed,
            "parent": w.parent,
        },
        "retrievals": config.retrievals,
        "tail_seconds": config.tail_seconds,
        "progress": config.progress,
        "cold": config.cold,
        "driver": config.driver,
        "users": config.users,
        "options": config.options,
        "budget_seconds": config.budget_seconds,
        # Locust's users take no checkpoints (a read among concurrent PUTs would time the PUTs too).
        "checkpoints": checkpoint_sizes(w.children, config.checkpoints) if config.driver == "client" else [],
    }
    # lakebench's own loop gets its children from a producer process where a
    # core is free for it; Locust users build their own (lakebench.locust).
    producer = feed_fd = None
    if config.driver == "client" and config.prefetch and prefetch.core_free():
        producer, feed_fd = prefetch.start_producer(w)
        spec["feed_fd"] = feed_fd
    read_fd, write_fd = os.pipe()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "lakebench.runner", json.dumps(spec), str(write_fd)],
            pass_fds=(write_fd,) if feed_fd is None else (write_fd, feed_fd),
            stdin=subprocess.DEVNULL,
        )
    finally:
        os.close(write_fd)
        if feed_fd is not None:
            os.close(feed_fd)  # the worker holds it now (or never will: the producer then stops)
    monitor = Monitor(proc.pid, data_dir, interval=config.interval).start()
    record: dict | None = None
    latencies: list[float] = []
    error = failure_log = None
    with os.fdopen(read_fd) as pipe:
        for line in pipe:
            event = json.loads(line)
            kind = event["event"]
            if kind == "phase":
                monitor.phase = event["phase"]
            elif kind == "progress":
                monitor.children = event["children"]
            elif kind == "pid":
                monitor.watch(event["pid"], event["disk_path"])
            elif kind == "latencies":
                latencies = event["seconds"]
            elif kind == "result":
                record = event["record"]
            elif kind == "failed":
                error, failure_log = _write_failure_log(Path(config.out), label, event)
    returncode = proc.wait()
    monitor.stop()
    if producer is not None:
        prefetch.stop_producer(producer)
    if record is None:
        record = {"system": name, "run": run_index, "status": "failed",
                  "error": error or f"worker exited with code {returncode}"}
        if failure_log is not None:
            record["log"] = str(failure_log.relative_to(config.out))
        try:
            cls = systems.load(name)
            record.update(durability=cls.durability, transport=cls.transport)
        except Exception:  # the registry error is already the run's error
            pass
    else:
        record["status"] = "ok"
        record["error"] = None
        # Unknown (None) when the system's process is not ours to watch.
        peaks = [p for p in (monitor.peak("rss_bytes"), record.pop("worker_max_rss_bytes", None)) if p]
        record["peak_rss_bytes"] = max(peaks) if peaks else None
        record["peak_rss_anon_bytes"] = monitor.peak("rss_anon_bytes")
        record["peak_vms_bytes"] = monitor.peak("vms_bytes")
    record["samples"] = monitor.samples
    if not config.keep_data:
        shutil.rmtree(data_dir, ignore_errors=True)
    return record, latencies


def _write_failure_log(out: Path, label: str, event: dict) -> tuple[str, Path | None]:
    """Keep a failed run's whole story in ``OUT/logs/LABEL.log``; return its first line and the log.

    The run's output and results get that one line: a server that did not
    start, or one nobody listens for, is a result, not a crash.  The rest
    (a server log's last lines, the worker's traceback) would otherwise be
    lost with the run's data directory.
    """
    error = event["error"]
    first_line = error.strip().splitlines()[0] if error.strip() else "failed"
    path = out / "logs" / f"{label}.log"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{error}\n\n{event.get('traceback', '')}", encoding="utf-8")
    except OSError:  # OUT full or gone: better on the terminal than nowhere
        sys.stderr.write(f"{error}\n{event.get('traceback', '')}")
        return first_line, None
    return first_line, path


def budget_skip(name: str, w: Workload, runs: dict[tuple[str, Workload], list[dict]]) -> str | None:
    """Why case ``w`` of system ``name`` is not run, or None: the budget ran out at a smaller size.

    A case is skipped when another case of the same system and literal
    length already spent its budget before ``w.children`` children: the
    first children of every case are the same graphs, so this one would stop
    at about the same size, a whole budget later, and measure nothing new.
    A smaller case, or one whose size that run passed, still runs.

    >>> small, large = Workload(children=1000), Workload(children=100_000)
    >>> runs = {("a", small): [{"status": "ok", "budget_exhausted": True, "children": 800}]}
    >>> budget_skip("a", large, runs)
    'the budget ran out at 800 children (case 1,000)'
    >>> budget_skip("b", large, runs) is None, budget_skip("a", Workload(children=500), runs) is None
    (True, True)
    """
    stops = [
        (record["children"], other.children)
        for (system, other), records in runs.items()
        if system == name and other != w and other.literal_length == w.literal_length
        for record in records
        if record.get("status") == "ok" and record.get("budget_exhausted") and record["children"] <= w.children
    ]
    if not stops:
        return None
    reached, case = min(stops)
    return f"the budget ran out at {reached:,} children (case {case:,})"


def _any_record(name: str, runs: dict[tuple[str, Workload], list[dict]]) -> dict:
    """A run record of system ``name`` (one whose durability and transport are known, if any)."""
    records = [r for (system, _), rs in runs.items() if system == name for r in rs]
    return next((r for r in records if r.get("durability")), records[0])


def run(config: RunConfig, log=print) -> dict:
    """Run every system on every case ``config.repeat`` times; write and return the results document."""
    out = Path(config.out)
    data_root = out / "data"
    data_root.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(out / "logs", ignore_errors=True)  # failures of an earlier run into the same OUT
    started = datetime.now(timezone.utc)
    cases = config.cases()
    runs: dict[tuple[str, Workload], list[dict]] = {}
    skipped: dict[tuple[str, Workload], str] = {}
    latencies: dict[tuple, list[float]] = {}
    for w in cases:
        # Interleave repeats (A B A B ...) so slow drift of a shared machine
        # spreads over every system instead of landing on one.
        for run_index in range(config.repeat):
            for name in config.systems:
                label = f"{name} (run {run_index + 1}/{config.repeat})" if config.repeat > 1 else name
                if (name, w) in skipped:
                    continue
                reason = budget_skip(name, w, runs) if run_index == 0 else None
                if reason is not None:
                    skipped[(name, w)] = reason
                    log(f"== {name}: {w.children} children, {w.literal_length}-character literals: "
                        f"not run, {reason}")
                    continue
                log(f"== {label}: {w.children} children, {w.literal_length}-character literals")
                record, lat = run_one(config, name, run_index, data_root, w)
                runs.setdefault((name, w), []).append(record)
                latencies[(name, w.children, w.literal_length, run_index)] = lat
                if record["status"] == "ok":
                    stopped = (f"stopped at {record['children']:,} children (budget spent), "
                               if record.get("budget_exhausted") else "")
                    log(f"   {stopped}{record['ingest_seconds']:.1f} s ingest, "
                        f"{record['per_resource_ms']['mean']:.2f} ms per child, "
                        f"parent {record['parent']['seconds'] * 1000:.1f} ms")
                else:
                    where = f" (log: {out / record['log']})" if record.get("log") else ""
                    log(f"   FAILED: {record['error']}{where}")
    if not config.keep_data:
        shutil.rmtree(data_root, ignore_errors=True)
    reference = config.reference or ("fcrepo" if "fcrepo" in config.systems else config.systems[0])
    entries = []
    for w in cases:  # each case compared with the reference's row of the same case
        case_entries = [
            results.skipped_entry(name, w.children, w.literal_length, skipped[(name, w)],
                                  _any_record(name, runs))
            if (name, w) in skipped else results.aggregate(name, runs[(name, w)])
            for name in config.systems
        ]
        results.compare_with_reference(case_entries, reference)
        entries += case_entries
    workload = cases[0].describe()
    if len(cases) > 1:
        workload["sweep"] = {"children": sorted({w.children for w in cases}),
                             "literal_length": sorted({w.literal_length for w in cases})}
    document = {
        "schema": results.SCHEMA_VERSION,
        "started": started.isoformat(timespec="seconds"),
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": config.command,
        "environment": environment.describe(),
        "workload": workload,
        "settings": {
            "repeat": config.repeat,
            "retrievals": config.retrievals,
            "tail_seconds": config.tail_seconds,
            "sample_interval_seconds": config.interval,
            "cache": "cold" if config.cold else "warm",
            "budget_seconds": config.budget_seconds,
            # Asked for, across the sweep; each run's checkpoints say which it took.
            "checkpoints": checkpoint_sizes(max(w.children for w in cases), config.checkpoints)
            if config.driver == "client" else [],
        },
        "reference": reference,
        "systems": entries,
    }
    results.write(out, document, latencies)
    return document


def check_writable(out: Path) -> None:
    """Raise OSError with a clear message if results cannot be written to ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=out, prefix=".write-test-"):
        pass


if __name__ == "__main__":
    sys.exit(_worker_main(sys.argv[1:]))
