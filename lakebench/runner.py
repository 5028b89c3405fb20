"""The runner: one fresh worker process per system, case and run.

``run(config)`` measures each system in a fresh worker process with a fresh
data directory, so its memory and disk figures are its own:

1. the worker builds the system and calls ``setup()`` (not timed; with
   Locust, ``connect()``: its users create the parent);
2. it runs the workload (:mod:`lakebench.workloads`, ``--workload``) through
   a driver (:mod:`lakebench.drivers`: lakebench's own loop or Locust), which
   holds the only clock and returns the raw times by operation kind; every
   workload ends by retrieving the parent ``retrievals`` times;
3. it idles ``tail_seconds`` so the monitor sees the system after the load,
   then closes the system and measures the data directory.

Meanwhile the parent process samples the system's process (the worker, or a
server the system started) with :class:`lakebench.monitor.Monitor`.  The
worker reports to the parent as JSON lines on a private pipe: phases,
progress, its record, and the times of the workload's primary kind as they
are taken, which it does not keep (in process, its memory is the system's):
the parent computes their figures.  A system
that cannot take the workload (an in-process store and binaries) is not
run: its entry says "not applicable".

In a sweep, a case of a system is not run (an entry ``skipped``) when a
case of the same system and literal length already spent its budget before
reaching this case's size: it would stop at about the same size again, a
budget later (:func:`budget_skip`); and when it would not fit on the disk
(:func:`disk_skip`, from the disk each system was measured to take per triple).

A run that fails (a server that does not start or answer, a bad reply) is a
result: its record says ``failed`` with the error's first line, and the
whole of it (a server log's end, the worker's traceback) goes to
``OUT/logs/``, not to the terminal.

Run as ``python -m lakebench.runner SPEC_JSON EVENT_FD`` it is that worker.
"""
from __future__ import annotations

import contextlib
import dataclasses
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

from lakebench import drivers, environment, figures, prefetch, results, systems, table, workloads
from lakebench.monitor import Monitor, directory_bytes, tree_cpu_seconds
from lakebench.runspec import DEFAULT_PAGE_SIZE, DEFAULT_RETRIEVALS, RunSpec
from lakebench.systems.base import NO_ACCESS, PASSWORD_VARIABLE, USER_VARIABLE, WORKER_VARIABLE, HttpAccess, HttpSystem
from lakebench.dataset import DataSet
from lakebench.workloads.base import count_containment


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
    retrievals: int = DEFAULT_RETRIEVALS
    page_size: int = DEFAULT_PAGE_SIZE  # children a page of the parent's walk; 0: no walk
    tail_seconds: float = 3.0
    interval: float = 0.5
    keep_data: bool = False
    progress: bool = True
    cold: bool = False  # drop the OS page cache before each parent retrieval
    driver: str = "client"  # or "locust", for HTTP systems
    users: int | Sequence[int] = 1  # concurrent Locust users (driver "locust"); several: a sweep, one case each
    options: dict = field(default_factory=dict)
    prefetch: bool = True  # children from a producer process where a core is free (lakebench.prefetch)
    command: str = ""  # the command line, recorded in results
    #: Stop each system x case's ingest once its ingest time (the sum of the
    #: timed calls) reaches this many seconds; None: no budget.
    budget_seconds: float | None = None
    #: Sizes at which the parent is also retrieved and the disk measured
    #: during the ingest: "auto" (:data:`CHECKPOINT_SERIES`), a list, or None.
    checkpoints: str | Sequence[int] | None = "auto"
    #: The workload (:mod:`lakebench.workloads`) and its parameters; a list
    #: for a swept parameter is one case per value.
    workload: str = workloads.DEFAULT
    workload_params: dict = field(default_factory=dict)
    #: Credentials and CA bundle for a server lakebench does not start (``--system-url``): they
    #: reach the worker in its environment, never in its argv, the RunSpec or the results.
    access: HttpAccess = NO_ACCESS

    def cases(self) -> list[Case]:
        """One case per combination of the swept children counts, literal lengths, workload parameters
        and Locust user counts (the users last, so that a users sweep runs in ascending order)."""
        workload_class = workloads.load(self.workload)
        # A sweepable option given one value is a plain setting: no variant, so the run compares
        # with one that left the option at that value.
        given = {name: (_as_list(value) if workload_class.PARAMETERS[name].sweep else [value])
                 for name, value in self.workload_params.items()}
        swept = {name: values for name, values in given.items() if len(values) > 1}
        fixed = tuple(sorted((k, v[0]) for k, v in given.items() if k not in swept))
        variants: list[tuple] = [()]
        for name in sorted(swept):
            variants = [(*v, (name, value)) for v in variants for value in swept[name]]
        users = _as_list(self.users)
        # A users sweep names each case by its users, after the workload's swept parameters; one
        # user count is a plain setting, as a sweepable option given one value is.
        users_swept = len(users) > 1
        return [
            Case(DataSet(children=n, triples=self.triples, literal_length=length, seed=self.seed,
                          parent=self.parent), tuple(sorted(fixed + variant)),
                 ",".join(f"{k}={v}" for k, v in (*variant, *([("users", u)] if users_swept else []))),
                 users=u)
            for n in _as_list(self.children)
            for length in _as_list(self.literal_length)
            for variant in variants
            for u in users
        ]


@dataclass(frozen=True)
class Case:
    """One case of a run: the data set, and the workload's parameters with a swept one at one value."""

    dataset: DataSet
    params: tuple = ()  # (name, value) pairs, sorted
    #: The swept parameters' values and, in a users sweep, the users: "binary_size=1024", "users=8";
    #: "" when nothing is swept.
    variant: str = ""
    users: int = 1  # concurrent Locust users

    @property
    def children(self) -> int:
        return self.dataset.children

    @property
    def literal_length(self) -> int:
        return self.dataset.literal_length

    def label(self) -> str:
        """How the case is named on the terminal."""
        words = [f"{self.children} children", f"{self.literal_length}-character literals"]
        return ", ".join(words + ([self.variant] if self.variant else []))


def _as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


#: ``--checkpoints auto``: 1,000, 2,000, 5,000, 10,000, 20,000, ... : even
#: steps on the report's log axis, a handful per decade, few enough that the
#: reads (each ``retrievals`` GETs of a growing parent) stay a small part of a run.
CHECKPOINT_SERIES = tuple(m * 10**e for e in range(3, 8) for m in (1, 2, 5))
#: A worker sends its primary kind's times as they come, in events of this many: it keeps
#: none of them (an in-process system's private memory is the worker's), and each event is
#: a JSON line of a few hundred KB, built in a few milliseconds between two timed calls.
LATENCIES_PER_EVENT = 10_000


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

class _Events:
    """JSON lines to the parent over an inherited file descriptor."""

    def __init__(self, fd: int):
        self._file = os.fdopen(fd, "w", buffering=1)

    def send(self, event: str, **fields) -> None:
        self._file.write(json.dumps({"event": event, **fields}) + "\n")
        self._file.flush()


def worker(spec: RunSpec, events: _Events, access: HttpAccess = NO_ACCESS) -> dict:
    """Measure one system once; returns the run record (also sent as an event).

    ``access``: the credentials and CA bundle an HTTP system uses for a server
    it does not start.  A system that fails is still closed, so a server it
    started does not outlive the run.
    """
    workload = workloads.load(spec.workload)(spec.dataset, spec.params)
    system_cls = systems.load_target(spec.target)
    system = system_cls(Path(spec.data_dir), spec.dataset, spec.options)
    if isinstance(system, HttpSystem):
        system.access = access
    try:
        return _measure(system, workload, spec, events)
    except BaseException:
        with contextlib.suppress(Exception):
            system.close()
        raise


def _measure(system, workload, spec: RunSpec, events: _Events) -> dict:
    driver_name = spec.driver
    record: dict = {
        "system": spec.system,
        "run": spec.run,
        "durability": system.durability,
        "transport": system.transport,
        "driver": driver_name,
        **({"users": spec.users} if driver_name == "locust" else {}),
    }
    if driver_name == "locust" and not isinstance(system, HttpSystem):
        raise ValueError(f"--driver locust drives HTTP systems only; {spec.system} runs in-process")
    events.send("phase", phase="setup")
    if driver_name == "locust":
        system.connect()  # Locust creates the parent itself
    else:
        system.setup()
    # The data set as the system's server accepts it (LAKEsuperior: absolute IRIs).
    workload.dataset = system.dataset
    pid = system.pid()
    disk_path = system.disk_path()
    events.send("pid", pid=pid, disk_path=str(disk_path) if disk_path else None)
    in_process = pid == os.getpid()

    cpu_start = tree_cpu_seconds(pid)
    driver = drivers.DRIVERS[driver_name](spec, events)

    def send_latencies(chunk: list[float]) -> None:  # lakebench's own work, as building children is
        c0 = time.process_time()
        events.send("latencies", seconds=chunk)
        driver.outcome.generate_cpu += time.process_time() - c0

    # The primary kind's times leave this process as they are filed; the parent computes
    # their figures (_with_primary_figures).
    driver.outcome.send_as_filed(workload.primary, send_latencies, LATENCIES_PER_EVENT)
    outcome = workload.run(system, driver)
    outcome.times[workload.primary].flush()
    # Only CPU spent by the system counts: when the system runs in this very
    # process, the CPU spent generating graphs is subtracted.
    cpu_end = tree_cpu_seconds(pid)
    cpu_seconds = None if cpu_start is None or cpu_end is None else round(
        cpu_end - cpu_start - (outcome.generate_cpu if in_process else 0.0), 3)

    created = outcome.created()
    record.update(
        {
            "workload": {"name": workload.name, "primary": workload.primary, "params": workload.params},
            "children": created,
            "children_requested": workload.dataset.children,
            "budget_exhausted": outcome.budget_exhausted,
            "literal_length": workload.dataset.literal_length,
            # Time spent sending requests: the sum of the per-child times when
            # they come one at a time; the wall time when users overlap them.
            "ingest_seconds": round(outcome.total_seconds("create") if record.get("users", 1) == 1
                                    else outcome.ingest_wall, 6),
            "ingest_wall_seconds": round(outcome.ingest_wall, 6),
            **outcome.generation,
            "parent": {
                **drivers.parent_times(outcome.times["get parent"]),
                "all_seconds": [round(t, 6) for t in outcome.times["get parent"]],
                "containment_triples": count_containment(outcome.retrieval),
                "bytes": outcome.retrieval.size,
                "cache": outcome.cache,
                **({"variants_seconds": outcome.variants} if outcome.variants else {}),
                **({"paged": outcome.paged} if outcome.paged else {}),
            },
            # The primary kind's entry is the parent's (_with_primary_figures); here, its errors only.
            "operations": results.operations_summary(
                {kind: seconds for kind, seconds in outcome.times.items() if kind != workload.primary},
                outcome.errors),
            "checkpoints": outcome.checkpoints,
            "checkpoint_seconds": round(outcome.checkpoint_seconds, 6),
            "cpu_seconds": cpu_seconds,
            "triples_total": system.triples_total(children=created),
            **({"first_error": outcome.first_error} if outcome.first_error else {}),
            **workload.record(outcome, system),
        }
    )
    triples = results.held_triples(record)
    if triples is not None:
        record["held"]["triples"] = triples
    record["version"] = system.version_text()
    record["work"] = system.work()
    events.send("phase", phase="tail")
    time.sleep(spec.tail_seconds)
    events.send("phase", phase="close")
    system.close()
    record["disk_bytes"] = directory_bytes(disk_path)
    internals = system.internals()
    if internals:
        record["internals"] = internals
    if in_process:
        record["worker_max_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return record


def _worker_main(argv: list[str]) -> int:
    spec = RunSpec.from_json(argv[0])
    access = HttpAccess.from_environment(os.environ)  # and gone from it: no server started here inherits it
    if spec.driver == "locust":
        # Locust runs on gevent: patch before the system imports ssl/urllib3.
        from gevent import monkey

        monkey.patch_all()
    events = _Events(int(argv[1]))
    try:
        record = worker(spec, events, access)
    except BaseException as exc:  # report any failure to the parent, then exit non-zero
        events.send("failed", error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc())
        return 1
    events.send("result", record=record)
    return 0


# -- parent side -----------------------------------------------------------

def run_one(config: RunConfig, name: str, run_index: int, data_root: Path,
            c: Case) -> tuple[dict, list[float]]:
    """Measure system ``name`` once on case ``c`` in a fresh worker; returns (record, latencies)."""
    w = c.dataset
    case = "" if len(config.cases()) == 1 else f"-{w.children}x{w.literal_length}" + (
        "-" + c.variant.replace(",", "-").replace("=", "") if c.variant else "")
    label = f"{name}{case}-{run_index}"
    data_dir = data_root / label
    if data_dir.exists():
        shutil.rmtree(data_dir)
    data_dir.mkdir(parents=True)
    spec = RunSpec(
        system=name,
        target=systems.target(name),
        run=run_index,
        data_dir=str(data_dir),
        dataset=w,
        workload=config.workload,
        params=dict(c.params),
        retrievals=config.retrievals,
        page_size=config.page_size,
        tail_seconds=config.tail_seconds,
        progress=config.progress,
        cold=config.cold,
        driver=config.driver,
        users=c.users,
        options=dict(config.options or {}),
        budget_seconds=config.budget_seconds,
        # Locust's users take no checkpoints (a read among concurrent PUTs would time the PUTs too).
        checkpoints=tuple(checkpoint_sizes(w.children, config.checkpoints)) if _takes_checkpoints(config) else (),
    )
    # lakebench's own loop gets its children from a producer process where a
    # core is free for it; Locust users build their own (lakebench.locust).
    producer = feed_fd = None
    if config.driver == "client" and config.prefetch and prefetch.core_free():
        producer, feed_fd = prefetch.start_producer(w)
        spec = dataclasses.replace(spec, feed_fd=feed_fd)
    # The dirty pages an earlier measurement left (gigabytes, at scale) are
    # written now, so that the kernel's write-back of them is not timed here.
    os.sync()
    read_fd, write_fd = os.pipe()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "lakebench.runner", spec.to_json(), str(write_fd)],
            pass_fds=(write_fd,) if feed_fd is None else (write_fd, feed_fd),
            stdin=subprocess.DEVNULL,
            env=worker_environment(config.access),
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
                monitor.enter_phase(event["phase"])
            elif kind == "progress":
                monitor.children = event["children"]
            elif kind == "pid":
                monitor.watch(event["pid"], event["disk_path"])
            elif kind == "latencies":
                latencies.extend(event["seconds"])
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
        _with_primary_figures(record, latencies)
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


def _with_primary_figures(record: dict, seconds: list[float]) -> None:
    """Add to a worker's ``record`` the figures of its workload's primary kind, from ``seconds``, the
    times it sent on (it kept none): ``per_resource_ms``, ``growth`` and the kind's ``operations`` entry."""
    primary = record["workload"]["primary"]
    others = record["operations"]
    errors = (others.pop(primary, None) or {}).get("errors", 0)
    record.update(results.latency_summary(seconds))
    record["operations"] = {**results.operations_summary({primary: seconds}, {primary: errors}), **others}


def worker_environment(access: HttpAccess, environ: dict | None = None) -> dict[str, str]:
    """A worker's environment: this process's, with ``access`` as :data:`WORKER_VARIABLE` and without
    the user's credential variables (read once, by the command line, and passed on only when they apply).

    >>> env = worker_environment(NO_ACCESS, {"LAKEBENCH_SYSTEM_PASSWORD": "x", "PATH": "/bin"})
    >>> env
    {'PATH': '/bin'}
    """
    env = dict(os.environ if environ is None else environ)
    for name in (USER_VARIABLE, PASSWORD_VARIABLE, WORKER_VARIABLE):
        env.pop(name, None)
    env.update(access.environment())
    return env


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


def budget_skip(name: str, c: Case, runs: dict[tuple[str, Case], list[dict]]) -> str | None:
    """Why case ``c`` of system ``name`` is not run, or None: the budget ran out at a smaller size.

    A case is skipped when another case of the same system, literal length
    and variant already spent its budget before ``c.children`` children: the
    first children of every case are the same graphs, so this one would stop
    at about the same size, a whole budget later, and measure nothing new.
    A smaller case, or one whose size that run passed, still runs.

    >>> small, large = Case(DataSet(children=1000)), Case(DataSet(children=100_000))
    >>> runs = {("a", small): [{"status": "ok", "budget_exhausted": True, "children": 800}]}
    >>> budget_skip("a", large, runs)
    'the budget ran out at 800 children (case 1,000)'
    >>> budget_skip("b", large, runs) is None, budget_skip("a", Case(DataSet(children=500)), runs) is None
    (True, True)
    """
    stops = [
        (record["children"], other.children)
        for (system, other), records in runs.items()
        if system == name and other != c and other.literal_length == c.literal_length
        and other.variant == c.variant
        for record in records
        if record.get("status") == "ok" and record.get("budget_exhausted") and record["children"] <= c.children
    ]
    if not stops:
        return None
    reached, case = min(stops)
    return f"{results.BUDGET_RAN_OUT} at {reached:,} children (case {case:,})"


#: What an estimate of a case's disk is multiplied by: the disk a system takes per triple was
#: measured at rest, and a run also holds a write-ahead log, staging files and the like meanwhile.
DISK_MARGIN = 1.5
#: And what it adds: a store's log can reach 64 MiB before its batch is committed.
DISK_FIXED = 64 << 20
#: The literal length the disk per triple was measured with (the seed's).
MEASURED_LITERAL = 64
#: A case estimated to need this much disk or more says so as it starts.
DISK_SAID = 1 << 30


def disk_needed(name: str, c: Case) -> int | None:
    """The disk case ``c`` of system ``name`` is estimated to need at most, or None when not known.

    >>> disk_needed("lmdb", Case(DataSet(children=1_000_000)))  # 201 triples a child, 150 B each
    45292108864
    >>> disk_needed("lmdb", Case(DataSet(children=1000, literal_length=65536))) // 10**9  # 100 literals of 64 KiB a child
    39
    >>> disk_needed("memory", Case(DataSet(children=10))) is None
    True
    """
    per_triple = systems.load(name).DISK_PER_TRIPLE
    if per_triple is None:
        return None
    triples = c.children * (c.dataset.triples + 1)  # and the parent's containment triple
    # The measured figure holds literals of MEASURED_LITERAL characters; longer ones add their
    # bytes (4 a character at most, in UTF-8), and a binary its own.
    longer = c.dataset.group_sizes[2] * max(0, c.literal_length - MEASURED_LITERAL) * 4
    binary = int(dict(c.params).get("binary_size") or 0)
    return int((triples * per_triple + c.children * (longer + binary)) * DISK_MARGIN) + DISK_FIXED


def disk_skip(name: str, c: Case, free: int) -> str | None:
    """Why case ``c`` of system ``name`` is not run, or None: its estimate is more than the ``free`` bytes.

    >>> disk_skip("lmdb", Case(DataSet(children=1_000_000)), free=10 << 30)
    'not enough disk: it would need about 45.3 GB (150 B a triple, as measured, and a margin), 10.7 GB free'
    >>> disk_skip("lmdb", Case(DataSet(children=1000)), free=10 << 30) is None
    True
    """
    need = disk_needed(name, c)
    if need is None or need <= free:
        return None
    per_triple = systems.load(name).DISK_PER_TRIPLE
    return (f"{results.NOT_ENOUGH_DISK}: it would need about {figures.size(need)} ({per_triple:,.0f} B a triple, "
            f"as measured, and a margin), {figures.size(free)} free")


def _like(name: str, runs: dict[tuple[str, Case], list[dict]]) -> dict:
    """What is known of system ``name`` without a record of this case: its durability and transport."""
    records = [r for (system, _), rs in runs.items() if system == name for r in rs]
    known = next((r for r in records if r.get("durability")), None)
    if known is not None:
        return known
    cls = systems.load(name)
    return {"durability": cls.durability, "transport": cls.transport}


def _not_applicable(config: RunConfig, name: str) -> str | None:
    """Why system ``name`` cannot take the run's workload with its driver, or None."""
    workload_class = workloads.load(config.workload)
    if config.driver not in workload_class.drivers:
        return f"not applicable: the {config.workload} workload does not run with --driver {config.driver}"
    reason = workload_class.not_applicable(systems.load(name), config.workload_params)
    return None if reason is None else f"not applicable: {reason}"


def _takes_checkpoints(config: RunConfig) -> bool:
    """Checkpoints are taken by lakebench's own ingest loop, in the workloads that use it."""
    return config.driver == "client" and workloads.load(config.workload).ingests


def _summary_line(record: dict, primary: str) -> str:
    """One line on the terminal for a finished run."""
    stopped = (f"stopped at {record['children']:,} children (budget spent), "
               if record.get("budget_exhausted") else "")
    operations = record.get("operations") or {}
    errors = sum(op.get("errors", 0) for op in operations.values())
    refused = f", {errors:,} operations refused (first: {record.get('first_error')})" if errors else ""
    parent = f"{figures.PARENT_STEADY.name} {figures.duration(record['parent']['seconds'])}"
    if primary == "create":
        # The timed calls alone: the progress bar's elapsed time also counts
        # building the children and the checkpoints.
        timed = ("s of wall time, users overlapping" if record.get("users", 1) > 1
                 else f"s in timed calls ({record['ingest_wall_seconds']:.1f} s wall)")
        line = (f"   {stopped}{record['ingest_seconds']:.1f} {timed}, "
                f"{figures.TIME_PER_CHILD.name} {figures.millis(record['per_resource_ms']['mean'])}, {parent}{refused}")
    else:
        main = operations.get(primary) or {}
        line = (f"   {main.get('count', 0):,} {primary} in {main.get('seconds', 0):.1f} s of timed calls, "
                f"{figures.time_per(primary)} {figures.millis(record['per_resource_ms']['mean'])}, {parent}{refused}")
    return "\n".join([line, *table.load_lines(record, "   ")])


def run(config: RunConfig, log=print) -> dict:
    """Run every system on every case ``config.repeat`` times; write and return the results document."""
    out = Path(config.out)
    data_root = out / "data"
    data_root.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(out / "logs", ignore_errors=True)  # failures of an earlier run into the same OUT
    started = datetime.now(timezone.utc)
    cases = config.cases()
    primary = workloads.load(config.workload).primary
    runs: dict[tuple[str, Case], list[dict]] = {}
    skipped: dict[tuple[str, Case], str] = {}
    latencies: dict[tuple, list[float]] = {}
    for c in cases:
        # Interleave repeats (A B A B ...) so slow drift of a shared machine
        # spreads over every system instead of landing on one.
        for run_index in range(config.repeat):
            for name in config.systems:
                label = f"{name} (run {run_index + 1}/{config.repeat})" if config.repeat > 1 else name
                if (name, c) in skipped:
                    continue
                local = not config.options.get("system_url")  # a server of the user's keeps its data itself
                reason = (_not_applicable(config, name) or budget_skip(name, c, runs)
                          or (local and disk_skip(name, c, shutil.disk_usage(data_root).free)) or None
                          ) if run_index == 0 else None
                if reason is not None:
                    skipped[(name, c)] = reason
                    log(f"== {name}: {c.label()}: {reason}")
                    continue
                need = disk_needed(name, c) if run_index == 0 and local else None
                disk = f" (disk: about {figures.size(need)} at most)" if need and need >= DISK_SAID else ""
                log(f"== {label}: {c.label()}{disk}")
                record, lat = run_one(config, name, run_index, data_root, c)
                runs.setdefault((name, c), []).append(record)
                latencies[(name, c.children, c.literal_length, c.variant, run_index)] = lat
                if record["status"] == "ok":
                    log(_summary_line(record, (record.get("workload") or {}).get("primary") or primary))
                else:
                    where = f" (log: {out / record['log']})" if record.get("log") else ""
                    log(f"   FAILED: {record['error']}{where}")
    if not config.keep_data:
        shutil.rmtree(data_root, ignore_errors=True)
    reference = config.reference or ("fcrepo" if "fcrepo" in config.systems else config.systems[0])
    entries = []
    for c in cases:  # each case compared with the reference's row of the same case
        case_entries = []
        for name in config.systems:
            if (name, c) in skipped:
                entry = results.skipped_entry(name, c.children, c.literal_length, skipped[(name, c)],
                                              _like(name, runs))
            else:
                entry = results.aggregate(name, runs[(name, c)])
            if c.variant:
                entry["variant"] = c.variant
            chosen = systems.load(name).option_values(config.options)  # --system-option, defaults included
            if chosen:
                entry["system_options"] = chosen
            case_entries.append(entry)
        results.compare_with_reference(case_entries, reference)
        entries += case_entries
    workload = cases[0].dataset.describe()
    workload["name"] = config.workload
    workload_class = workloads.load(config.workload)
    # The parameters every case shares; a swept one is each case's (its variant).
    swept = {name for name in workload_class.PARAMETERS if len({dict(c.params).get(name) for c in cases}) > 1}
    workload["params"] = {name: value for name, value in workload_class(cases[0].dataset, dict(cases[0].params)).params.items()
                          if name not in swept}
    if len(cases) > 1:
        workload["sweep"] = {"children": sorted({c.children for c in cases}),
                             "literal_length": sorted({c.literal_length for c in cases})}
        if any(c.variant for c in cases):
            workload["sweep"]["variant"] = list(dict.fromkeys(c.variant for c in cases))
        if len({c.users for c in cases}) > 1:
            workload["sweep"]["users"] = sorted({c.users for c in cases})
    document = {
        "schema": results.SCHEMA_VERSION,
        "started": started.isoformat(timespec="seconds"),
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": config.command,
        "environment": environment.describe(out),
        "workload": workload,
        "settings": {
            "repeat": config.repeat,
            "retrievals": config.retrievals,
            "page_size": config.page_size,
            "tail_seconds": config.tail_seconds,
            "sample_interval_seconds": config.interval,
            "cache": "cold" if config.cold else "warm",
            "budget_seconds": config.budget_seconds,
            # Asked for, across the sweep; each run's checkpoints say which it took.
            "checkpoints": checkpoint_sizes(max(c.children for c in cases), config.checkpoints)
            if _takes_checkpoints(config) else [],
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
