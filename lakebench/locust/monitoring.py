"""The resource monitor under gevent: its samples taken on gevent's native thread pool.

Under gevent :class:`lakebench.monitor.Monitor`'s own thread would be a
greenlet, and walking a large data directory would block the hub and
inflate the latencies being measured.
"""
from __future__ import annotations

import time

from lakebench.monitor import Monitor, directory_bytes


class ThreadPoolMonitor:
    """Runs :class:`lakebench.monitor.Monitor` samples on gevent's native thread pool, every ``interval`` seconds."""

    def __init__(self, pid: int | None, directory: str | None, interval: float):
        self.monitor = Monitor(pid, directory, interval)
        self._t0 = time.monotonic()  # the Monitor's own clock start, for samples of the disk alone
        self.interval = interval
        self._greenlet = None
        self._stopped = None
        self._sampling = None  # one sample at a time: the loop's and a phase's end share the Monitor

    @property
    def active(self) -> bool:
        return self.monitor.pid is not None or self.monitor.directory is not None

    def _sample(self) -> None:
        if self.monitor.sample() is None and self.monitor.directory is not None:  # no process: disk alone
            m = self.monitor
            m.samples.append({"t": round(time.monotonic() - self._t0, 3), "phase": m.phase, "children": m.children,
                              "disk_bytes": directory_bytes(m.directory)})

    def _sample_now(self) -> None:
        """One sample on the thread pool; the calling greenlet waits for it, the others run."""
        import gevent

        with self._sampling:
            gevent.get_hub().threadpool.apply(self._sample)

    def start(self) -> None:
        import gevent
        import gevent.event
        import gevent.lock

        if not self.active:
            return
        self._stopped = gevent.event.Event()
        self._sampling = gevent.lock.Semaphore()

        def loop():
            while True:
                self._sample_now()
                if self._stopped.wait(self.interval):
                    return

        self._greenlet = gevent.spawn(loop)

    def stop(self) -> None:
        if self._greenlet is not None:
            self._stopped.set()
            self._greenlet.join()
            self._greenlet = None
            self._sample_now()  # the state at the end

    def set(self, phase: str | None = None, children: int | None = None) -> None:
        if children is not None:
            self.monitor.children = children
        if phase is not None and phase != self.monitor.phase:
            if self._greenlet is not None:
                # The state at the end of the phase, whatever the interval: an ingest shorter than one
                # interval still has a sample of what it made.
                self._sample_now()
            self.monitor.phase = phase

    @property
    def samples(self) -> list[dict]:
        return self.monitor.samples

