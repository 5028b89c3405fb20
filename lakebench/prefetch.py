"""Children built ahead of the timed loop, by a producer process.

The runner's worker creates children one at a time and times each
``create_child`` alone; building a child (its N-Triples and Turtle) is never
inside those times, but done inline it is inside the run's wall time, one
child after the other.  Where a core is free (:func:`core_free`), a producer
process builds the children instead, in order, while the worker stores them:

* the runner starts the producer (``python -m lakebench.prefetch
  WORKLOAD_JSON FD``) next to the worker, not under it, so the monitor never
  counts the producer's CPU or memory as the system's;
* the producer writes one frame per child into a pipe: a header
  (:data:`HEADER`: index, N-Triples length, Turtle length, seconds spent
  building that child) then the two serializations; the pipe is the bounded queue: its capacity (raised to
  one of :data:`PIPE_SIZES`) is how far ahead the producer can run, and a
  full pipe blocks it;
* after the last child it writes a frame with index -1 whose payload is
  ``{"generate_seconds": ...}``: its own time spent building children;
* the worker reads the frames with :class:`ChildFeed`, which hands out
  :class:`~lakebench.dataset.Child` objects holding the bytes received;
  a worker that stops before the last child (``--budget``) calls
  :meth:`ChildFeed.stop`, which closes the pipe (the producer, blocked on
  it, then ends) and returns the building time of the children it took.

Timing stays with the runner: the producer only measures its own work.
"""
from __future__ import annotations

import fcntl
import json
import os
import struct
import subprocess
import sys
import time

from lakebench.dataset import Child, DataSet

#: Frame header: child index (-1: the end), N-Triples bytes, Turtle bytes,
#: seconds the producer spent building the child (so a consumer that stops
#: early still knows the building time of what it took).
HEADER = struct.Struct("<qQQd")
#: Pipe capacities asked for, largest first: 8 MiB (about 130 children
#: ahead at 64-character literals, 14 at 1,024) rides out the moments a busy
#: machine does not run the producer; Linux lets an unprivileged process
#: have 1 MiB (``/proc/sys/fs/pipe-max-size``); else the default 64 KiB.
PIPE_SIZES = (8 << 20, 1 << 20)
#: The consumer's read buffer.
READ_BUFFER = 1 << 20
END = -1


def core_free() -> bool:
    """Whether this process may run on more than one core (a producer then runs beside the worker)."""
    try:
        return len(os.sched_getaffinity(0)) > 1
    except AttributeError:  # not Linux
        return (os.cpu_count() or 1) > 1


def dataset_arguments(dataset: DataSet) -> dict:
    """The dataset as keyword arguments of :class:`DataSet` (what the producer is given)."""
    return {"children": dataset.children, "triples": dataset.triples, "literal_length": dataset.literal_length,
            "seed": dataset.seed, "parent": dataset.parent, "base": dataset.base}


def start_producer(dataset: DataSet) -> tuple[subprocess.Popen, int]:
    """Start a producer of ``dataset``'s children; returns it and the pipe's read end (to pass to the consumer)."""
    read_fd, write_fd = os.pipe()
    for size in PIPE_SIZES:
        try:
            fcntl.fcntl(write_fd, fcntl.F_SETPIPE_SZ, size)
            break
        except OSError:  # above this system's limit: try the next size
            continue
    proc = subprocess.Popen(
        [sys.executable, "-m", "lakebench.prefetch", json.dumps(dataset_arguments(dataset)), str(write_fd)],
        pass_fds=(write_fd,), stdin=subprocess.DEVNULL)
    os.close(write_fd)
    return proc, read_fd


def stop_producer(proc: subprocess.Popen) -> None:
    """Wait for the producer; end it if the consumer stopped reading (a failed run) and it still waits."""
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.terminate()
        proc.wait()


def produce(dataset: DataSet, fd: int) -> None:
    """Write every child of ``dataset`` into ``fd``, in index order, then the end frame."""
    generate_seconds = 0.0
    with os.fdopen(fd, "wb", buffering=0) as pipe:
        for index in range(dataset.children):
            t0 = time.perf_counter()
            child = dataset.child(index)
            ntriples, turtle = child.ntriples, child.turtle
            seconds = time.perf_counter() - t0
            generate_seconds += seconds
            pipe.write(HEADER.pack(index, len(ntriples), len(turtle), seconds))
            pipe.write(ntriples)
            pipe.write(turtle)
        payload = json.dumps({"generate_seconds": round(generate_seconds, 6)}).encode()
        pipe.write(HEADER.pack(END, len(payload), 0, 0.0) + payload)


class ChildFeed:
    """The consumer's side: children in index order, as the producer wrote them.

    >>> w = DataSet(children=3, triples=8, literal_length=5, seed=4)
    >>> read_fd, write_fd = os.pipe()
    >>> produce(w, write_fd)  # 3 small children fit in the pipe: no process needed here
    >>> feed = ChildFeed(w, read_fd)
    >>> [feed.next().ntriples == w.child(i).ntriples for i in range(3)]
    [True, True, True]
    >>> feed.close() > 0  # the producer's generate_seconds
    True
    >>> read_fd, write_fd = os.pipe()
    >>> produce(w, write_fd)
    >>> feed = ChildFeed(w, read_fd)
    >>> _ = feed.next()
    >>> feed.stop() > 0  # the first child's building time; the rest are never read
    True
    """

    def __init__(self, dataset: DataSet, fd: int):
        self.dataset = dataset
        self._pipe = os.fdopen(fd, "rb", buffering=READ_BUFFER)
        self.next_index = 0
        self.generate_seconds = 0.0  # the producer's building time of the children taken so far

    def _read(self, size: int) -> bytes:
        data = self._pipe.read(size)
        if len(data) != size:
            raise RuntimeError(f"the producer of children stopped after child {self.next_index - 1}")
        return data

    def next(self) -> Child:
        """The next child, with both serializations."""
        index, nt_size, turtle_size, seconds = HEADER.unpack(self._read(HEADER.size))
        if index != self.next_index:
            raise RuntimeError(f"the producer sent child {index}, child {self.next_index} was due")
        self.next_index += 1
        self.generate_seconds += seconds
        ntriples = self._read(nt_size)
        return self.dataset.prepared_child(index, ntriples, self._read(turtle_size))

    def close(self) -> float:
        """Read the end frame and close; the producer's seconds spent building children."""
        try:
            index, size, _, _ = HEADER.unpack(self._read(HEADER.size))
            if index != END:
                raise RuntimeError(f"the producer sent child {index} after the last one")
            return json.loads(self._read(size))["generate_seconds"]
        finally:
            self._pipe.close()

    def stop(self) -> float:
        """Stop reading before the last child; the producer's building time of the children taken."""
        self._pipe.close()
        return self.generate_seconds


def _main(argv: list[str]) -> int:
    dataset = DataSet(**json.loads(argv[0]))
    try:
        produce(dataset, int(argv[1]))
    except BrokenPipeError:  # the consumer is gone (its run failed): nothing left to do
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
