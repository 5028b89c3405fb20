"""The machine's own stalls, with no store: the floor under a write's slowest times.

For SECONDS, two loops run side by side, each in a process of its own:

* the disk: a 4 KiB ``pwrite`` and an ``fdatasync``, over and over, in a 16 MiB file
  in DIR (a durable write's log flush, with nothing else on the disk);
* the processor: a 1 ms sleep, over and over, and how much later than asked it returns
  (the pauses of the scheduler and of the hypervisor, which no program on the machine
  escapes).

Prints one JSON line: for each loop, its count, its times in ms (mean, p50, p95, p99,
p99.9, max: lakebench.results.stats, as for the writes), how many took over 5, 20 and
50 ms, and the slowest eight.  The slowest write a store can promise on a machine is no
better than these; docs/store.rst (item 3) gives what this machine did.

    .venv/bin/python scripts/machine-stalls.py --seconds 600 --dir /var/tmp/stalls

DIR is made if missing; the file is removed after.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time
from pathlib import Path

from lakebench.results.stats import latency_summary, rounded

FILE_BYTES = 16 << 20
WRITE_BYTES = 4096
SLEEP_SECONDS = 0.001


def disk_loop(path: str, seconds: float) -> list[float]:
    """The time of each 4 KiB pwrite + fdatasync, written round the file, for ``seconds``."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.pwrite(fd, b"\0" * FILE_BYTES, 0)  # written, not only allocated: no extent to convert
        os.fsync(fd)
        block, times, offset = os.urandom(WRITE_BYTES), [], 0
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            began = time.perf_counter()
            os.pwrite(fd, block, offset)
            os.fdatasync(fd)
            times.append(time.perf_counter() - began)
            offset = (offset + WRITE_BYTES) % FILE_BYTES
        return times
    finally:
        os.close(fd)
        os.unlink(path)


def sleep_loop(seconds: float) -> list[float]:
    """How much later than SLEEP_SECONDS each sleep returned, for ``seconds``."""
    late = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        began = time.perf_counter()
        time.sleep(SLEEP_SECONDS)
        late.append(time.perf_counter() - began - SLEEP_SECONDS)
    return late


def summary(times: list[float]) -> dict:
    return {"count": len(times), "ms": latency_summary(times)["per_resource_ms"],
            **{f"over_{ms}_ms": sum(t > ms / 1000 for t in times) for ms in (5, 20, 50)},
            "slowest_ms": [rounded(t * 1000) for t in sorted(times)[-8:][::-1]]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=600.0, help="how long each loop runs (default 600)")
    parser.add_argument("--dir", required=True, help="where the disk loop writes its file (on the store's disk)")
    args = parser.parse_args()
    if args.seconds <= 0:
        parser.error("--seconds must be positive")
    Path(args.dir).mkdir(parents=True, exist_ok=True)
    path = str(Path(args.dir) / f"stalls-{os.getpid()}.dat")
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        disk = pool.apply_async(disk_loop, (path, args.seconds))
        sleep = pool.apply_async(sleep_loop, (args.seconds,))
        result = {"seconds": args.seconds, "disk_write_flush": summary(disk.get()), "sleep_late": summary(sleep.get())}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
