"""Per-process resource sampling, like the seeds' ``ps`` loops.

A :class:`Monitor` thread samples one process (and its children) every
``interval`` seconds: CPU %, RSS, private RSS (``RssAnon``), VMS, and the
size of a data directory.  The runner starts it before a system is set up
and keeps it going for a few seconds after the load, so memory release and
background work (compaction, checkpoints) show in the series.

>>> import os
>>> with Monitor(os.getpid(), interval=0.05) as m:
...     _ = sum(range(100_000))
>>> m.samples[0]["rss_bytes"] > 0
True
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import psutil


def directory_bytes(path: str | os.PathLike | None) -> int | None:
    """Bytes allocated on disk under ``path`` (like ``du``), None if it is absent."""
    if path is None:
        return None
    path = Path(path)
    if not path.exists():
        return None
    if path.is_file():
        return path.stat().st_blocks * 512
    total = 0
    stack = [str(path)]
    while stack:
        try:
            entries = os.scandir(stack.pop())
        except FileNotFoundError:  # removed while we walked (compaction)
            continue
        with entries:
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    else:
                        total += entry.stat(follow_symlinks=False).st_blocks * 512
                except FileNotFoundError:
                    continue
    return total


def rss_anon_bytes(pid: int) -> int | None:
    """Private resident memory (``RssAnon``): RSS less file-backed mapped pages.

    A memory-mapped store (LMDB) has its file pages in RSS, which the kernel
    can drop at will; this is the part it cannot.
    """
    try:
        with open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"RssAnon:"):
                    return int(line.split()[1]) * 1024
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return None


#: The shortest window a CPU share is measured over: psutil counts CPU time in clock ticks (10 ms
#: here), so a share over a few milliseconds (a phase's last sample, taken just after a regular one)
#: would read 0% or several hundred.  A sample taken sooner records no ``cpu_percent``, and the
#: window goes on to the next sample.
MIN_CPU_WINDOW = 0.1
#: The parent's read (``retrieve``) lasts seconds, where an ingest may last an hour sampled every
#: ten: it is sampled this often (or at the interval, when shorter), so that its memory peak (a
#: million children's representation built, spooled and sent) is seen whatever the interval.
CLOSE_INTERVAL = 0.05
CLOSE_PHASES = frozenset({"retrieve"})


class Monitor:
    """Samples a process tree and a directory on a background thread.

    ``phase`` and ``children`` (how many children exist so far) may be set at
    any time by the runner; each sample records both as they were when taken.
    """

    def __init__(self, pid: int | None, directory: str | os.PathLike | None = None, interval: float = 0.5):
        self.pid = pid
        self.directory = directory
        self.interval = interval
        self.phase = "start"
        self.children = 0
        self.samples: list[dict] = []
        self._stop = threading.Event()
        self._wake = threading.Event()  # a phase sampled closely began, or the monitor stops
        self._thread = threading.Thread(target=self._run, name="lakebench-monitor", daemon=True)
        self._processes: dict[int, psutil.Process] = {}
        self._t0 = time.monotonic()
        self._sampling = threading.Lock()  # the thread's samples and a phase's last one, one at a time
        self._cpu_since = float("-inf")  # when the CPU window of the next sample's cpu_percent began

    def watch(self, pid: int | None, directory: str | os.PathLike | None = None) -> None:
        """Switch to another process (a server the system started), or to none."""
        self.pid = pid
        self.directory = directory
        self._processes.clear()

    def start(self) -> "Monitor":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join()

    def __enter__(self) -> "Monitor":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _tree(self) -> list[psutil.Process]:
        """The process and its descendants, keeping Process objects so CPU % is per interval."""
        if self.pid is None:
            return []
        try:
            root = self._processes.get(self.pid) or psutil.Process(self.pid)
            current = [root] + root.children(recursive=True)
        except psutil.NoSuchProcess:
            return []
        known = {}
        for proc in current:
            known[proc.pid] = self._processes.get(proc.pid, proc)
        self._processes = known
        return list(known.values())

    def sample(self) -> dict | None:
        """Take one sample now (also used by tests)."""
        cpu = rss = vms = anon = 0.0
        alive = 0
        now = time.monotonic()
        measure_cpu = now - self._cpu_since >= MIN_CPU_WINDOW
        for proc in self._tree():
            try:
                with proc.oneshot():
                    if measure_cpu:
                        cpu += proc.cpu_percent(interval=None)
                    mem = proc.memory_info()
                rss += mem.rss
                vms += mem.vms
                anon += rss_anon_bytes(proc.pid) or 0
                alive += 1
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        if not alive:
            return None
        if self.phase in CLOSE_PHASES and self.samples:
            # A read leaves the disk as it was; walking the data directory every 0.05 s would
            # slow the reads being timed (a file per child) and undo a cold cache's drop.
            disk = self.samples[-1]["disk_bytes"]
        else:
            disk = directory_bytes(self.directory)
        record = {
            "t": round(now - self._t0, 3),
            "phase": self.phase,
            "children": self.children,
            "rss_bytes": int(rss),
            "rss_anon_bytes": int(anon),
            "vms_bytes": int(vms),
            "disk_bytes": disk,
        }
        if measure_cpu:
            record["cpu_percent"] = round(cpu, 1)
            self._cpu_since = now
        self.samples.append(record)
        return record

    def enter_phase(self, phase: str) -> None:
        """Start ``phase``; while the thread runs, the phase that ends gets a sample of its last state,
        so that a phase shorter than the interval still has one of what it did."""
        if phase == self.phase:
            return
        if self._thread.is_alive():
            with self._sampling:
                self.sample()
        self.phase = phase
        if phase in CLOSE_PHASES:
            self._wake.set()

    def _run(self) -> None:
        while True:
            with self._sampling:
                self.sample()
            self._wake.wait(min(self.interval, CLOSE_INTERVAL) if self.phase in CLOSE_PHASES else self.interval)
            self._wake.clear()
            if self._stop.is_set():
                return

    def peak(self, key: str) -> int | None:
        values = [s[key] for s in self.samples if s.get(key) is not None]
        return max(values) if values else None


def _tree_sum(pid: int, read) -> float | None:
    """The sum of ``read(process)`` over a process and its live descendants (None: no such process);
    a descendant that exits or hides meanwhile is left out."""
    try:
        root = psutil.Process(pid)
        procs = [root] + root.children(recursive=True)
    except psutil.NoSuchProcess:
        return None
    total = 0
    for proc in procs:
        try:
            total += read(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return total


def tree_rss_bytes(pid: int | None) -> int | None:
    """Resident memory now of a process and its live descendants; None if there is none to see."""
    return None if pid is None else _tree_sum(pid, lambda proc: proc.memory_info().rss)


def tree_cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU seconds used so far by a process and its live descendants (0 once it is gone)."""
    if pid is None:
        return None
    total = _tree_sum(pid, lambda proc: sum(proc.cpu_times()[:2]))
    return 0.0 if total is None else float(total)
