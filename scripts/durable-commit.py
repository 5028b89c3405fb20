"""The store's batch commit, in-process: the time of each write and of the batch commits.

Ingests N children of the seed workload under one parent into a new LmdbStore in
DIR, one write each (what ``lakebench run --systems lmdb`` times, without the
harness), and prints one JSON line: the writes' mean / p50 / p95 / p99 / p99.9 /
max in ms and last/first tenth (lakebench.results.stats), the batch commits
(``LmdbStore.batch_commits``: their time on the writer's thread, and, durable,
their flushes on a thread of their own), the same figures of the writes that
commit a batch and of those that follow a batch commit, the writing thread's major
page faults (all writes', and those of the writes after a commit), the process's
private memory at the end (RssAnon), and the ten slowest writes, each (when it took
``--slow-ms`` or more) with where its time went on the writing thread: on a processor,
waiting for one (the run queue), and neither (asleep: the disk, a lock; or taken by the
hypervisor), its context switches and page faults, and its time in the write-ahead log's
flush (``log_flush_ms``, the disk's, mostly asleep) and whether it began while the last
batch commit's flush ran (``during_flush``); ``slow_writes`` sums those; for each of the ten,
its place in its batch (0: the first write after a commit; in the first batch, the first
child, after the parent's write);
``log_flushes``, all the log's flushes (``LmdbStore.log_flushes``: how many took over 5, 20
and 50 ms, the longest).
``--mode``: ``durable`` (the default store), ``durable-pwrite`` (the batch written with
pwrite rather than through the map), ``nosync``; ``--write-back N``: nosync, the committed
pages' write-back started after every N batch commits (0: left to the kernel's writeback);
``--filing-max IDS``: the bound on a generation of term ids filed into t2i at once
(smaller: more rewrites of its leaves); ``--filing-lag IDS``: the fewest unfiled ids that make a
generation (both at 2^30: no id filed into t2i in a million children, its table of unfiled ids
holding them all); ``--young-level`` / ``--no-young-level``: the sweeps file into t2i's young
level, copied into t2i one pass every few generations (LmdbStore's default), or into t2i itself;
``--index-stage QUADS``: the index entries staged
and put in order (Environment's ``index_stage``).  By tenth of the children: ``tenths_ms``, the mean
write; ``filing_ms_per_child``, the part of it spent filing due term ids into t2i or its young
level and copying them (``LmdbStore.term_filing``); ``written_kib_per_child``, the bytes the process wrote (pages
dirtied) a child; ``cpu_ms_per_child``, the processor time a child, user and kernel, of the
writing thread and (in all) of the process's other threads.

    .venv/bin/python scripts/durable-commit.py --children 150000 --mode durable --dir /tmp/dc

docs/store.rst ("Durability and concurrency") gives what it measured.  DIR is
removed first and after.
"""
from __future__ import annotations

import argparse
import bisect
import json
import os
import resource
import shutil
import sys
import time

import psutil

from lakebench._store import CACHE_AHEAD, DEFAULT_INDEX_STAGE, MAP_AHEAD
from lakebench.dataset import LDP_CONTAINS, DataSet
from lakebench.results.stats import latency_summary, mean
from lakebench.store import DEFAULT_BATCH_WRITES, UNSYNCED_BATCH_WRITES, WRITE_BACK_EVERY, LmdbStore
from lakebench.store.lmdb_store import DEFAULT_FILING_LAG, DEFAULT_FILING_MAX, YOUNG_LEVEL
from lakebench.store.terms import iri

MODES = {"durable": ("durable", None), "durable-pwrite": ("durable", False), "nosync": ("nosync", None)}


def private_memory_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no RssAnon in /proc/self/status")


class ThreadClock:
    """The calling thread's nanoseconds on a processor (its CPU clock), in the run queue
    (``/proc/thread-self/schedstat``, brought up to date each time the thread is switched
    in) and its ``getrusage`` counters."""

    def __init__(self):
        self._fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY)

    def read(self) -> tuple[int, ...]:
        run_queue = int(os.pread(self._fd, 128, 0).split()[1])
        usage = resource.getrusage(resource.RUSAGE_THREAD)
        return (time.thread_time_ns(), run_queue, usage.ru_nvcsw, usage.ru_nivcsw, usage.ru_minflt,
                usage.ru_majflt)

    def close(self) -> None:
        os.close(self._fd)


def tenth_mark(store: LmdbStore | None) -> tuple[float, ...]:
    """What the figures by tenth are read from, at the start and after each tenth: the bytes
    this process has caused to be written (counted when a page is dirtied, a page of the map
    included), the store's seconds filing term ids into t2i (``LmdbStore.term_filing``; 0
    before it opens), and the writing thread's and the whole process's user and kernel seconds."""
    thread = resource.getrusage(resource.RUSAGE_THREAD)
    process = resource.getrusage(resource.RUSAGE_SELF)
    return (psutil.Process().io_counters().write_bytes, store.term_filing["seconds"] if store else 0.0,
            thread.ru_utime, thread.ru_stime, process.ru_utime, process.ru_stime)


def per_child_by_tenth(marks: list[tuple[float, ...]], tenth: int) -> dict:
    """The figures a child, tenth by tenth, between ``tenth_mark`` readings: the bytes written
    (KiB), the ms filing term ids, and the processor ms of the writing thread (user and kernel)
    and of the other threads (the process's less the writer's; in all only, since the kernel
    splits a thread's time and the process's between user and kernel each on its own samples)."""
    spans = [[b - a for a, b in zip(before, after)] for before, after in zip(marks, marks[1:])]

    def ms(seconds: float) -> float:
        return round(seconds / tenth * 1000, 4)

    return {"filing_ms_per_child": [ms(s[1]) for s in spans],
            "written_kib_per_child": [round(s[0] / tenth / 1024, 1) for s in spans],
            "cpu_ms_per_child": {"writer_user": [ms(s[2]) for s in spans], "writer_kernel": [ms(s[3]) for s in spans],
                                 "others": [ms(max(0.0, s[4] + s[5] - s[2] - s[3])) for s in spans]}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--children", type=int, default=150_000, help="children to write (default 150,000)")
    parser.add_argument("--mode", choices=sorted(MODES), default="durable", help="the store's mode (default durable)")
    parser.add_argument("--dir", required=True, help="the store's directory (removed first and after)")
    parser.add_argument("--cache-ahead", type=int, default=CACHE_AHEAD,
                        help="bytes past the last committed page cached after each batch commit "
                             f"(LmdbStore's cache_ahead; default {CACHE_AHEAD:,}; 0: none)")
    parser.add_argument("--map-ahead", type=int, default=MAP_AHEAD,
                        help="durable: bytes past the last committed page mapped writable after each batch "
                             f"commit's flush (LmdbStore's map_ahead; default {MAP_AHEAD:,}; 0: none)")
    parser.add_argument("--batch-writes", type=int, default=None,
                        help="writes a batch commits at most (LmdbStore's batch_writes; default the store's: "
                             f"{DEFAULT_BATCH_WRITES:,} durable, {UNSYNCED_BATCH_WRITES:,} nosync)")
    parser.add_argument("--write-back", type=int, default=WRITE_BACK_EVERY, metavar="N",
                        help="nosync: start writing the committed pages back after every N batch commits "
                             f"(LmdbStore's write_back; default {WRITE_BACK_EVERY}; 0: leave them to the "
                             "kernel's writeback)")
    parser.add_argument("--filing-max", type=int, default=DEFAULT_FILING_MAX, metavar="IDS",
                        help="the most unfiled term ids a sweep files into t2i at once (LmdbStore's filing_max; "
                             f"default {DEFAULT_FILING_MAX:,}): smaller, each t2i leaf is rewritten more often")
    parser.add_argument("--filing-lag", type=int, default=None, metavar="IDS",
                        help="the fewest unfiled term ids that make a generation (LmdbStore's filing_lag; "
                             f"default {DEFAULT_FILING_LAG:,}, or --filing-max when smaller)")
    parser.add_argument("--young-level", action=argparse.BooleanOptionalAction, default=YOUNG_LEVEL,
                        help="file new term ids into t2i's young level and merge it into t2i (LmdbStore's "
                             f"young_level; default {'on' if YOUNG_LEVEL else 'off'})")
    parser.add_argument("--index-stage", type=int, default=DEFAULT_INDEX_STAGE, metavar="QUADS",
                        help="the quads whose posc and ospc entries a write transaction stages before it sorts "
                             f"them and puts them a share at each write (Environment's index_stage; default "
                             f"{DEFAULT_INDEX_STAGE:,}; 0: each write's put at once)")
    parser.add_argument("--slow-ms", type=float, default=10.0,
                        help="a write that took this long or more keeps its thread's accounting (default 10)")
    args = parser.parse_args()
    slow_seconds = args.slow_ms / 1000
    durability, writemap = MODES[args.mode]
    shutil.rmtree(args.dir, ignore_errors=True)
    dataset = DataSet(children=args.children)
    parent, contains = iri(dataset.parent_uri), iri(LDP_CONTAINS)
    seconds, after_commit = [], []
    faults = []  # the writing thread's major page faults in each write (outside its clock)
    slow = {}  # write index -> its thread's accounting, for the writes of --slow-ms or more
    log_flush = {}  # write index -> its seconds in the log's flush (the disk's), for the same writes
    during_flush = set()  # those of the same writes that began while a batch commit's flush ran
    clock = ThreadClock()
    tenth = max(1, args.children // 10)
    marks = [tenth_mark(None)]  # at the start and after each tenth
    filing_lag = min(DEFAULT_FILING_LAG, args.filing_max) if args.filing_lag is None else args.filing_lag
    try:
        store = LmdbStore(args.dir, durability=durability, writemap=writemap, cache_ahead=args.cache_ahead,
                          batch_writes=args.batch_writes, write_back=args.write_back, map_ahead=args.map_ahead,
                          filing_lag=filing_lag, filing_max=args.filing_max,
                          young_level=args.young_level)
        store.env.index_stage = args.index_stage
        batch_writes = store.batch_writes
        store.write(lambda txn: txn.add_graph(parent))
        committed = store.batch_commits["count"]  # batch commits so far (the parent's write may commit one)
        for i, child in enumerate(dataset):
            uri, body = iri(child.uri), child.ntriples
            flushed = store.log_flushes["seconds"]  # the log's flushes so far, outside the write's clock
            flushing = store.flushing  # whether the last batch commit's flush still runs
            at_start = clock.read()
            began = time.perf_counter()
            store.ingest(body, uri, extra=[(parent, contains, uri, parent)])
            seconds.append(time.perf_counter() - began)
            at_end = clock.read()
            faults.append(at_end[5] - at_start[5])
            if seconds[-1] >= slow_seconds:
                slow[i] = [a - b for a, b in zip(at_end, at_start)]
                log_flush[i] = store.log_flushes["seconds"] - flushed
                if flushing:
                    during_flush.add(i)
            if store.batch_commits["count"] != committed:  # this write committed the batch
                committed = store.batch_commits["count"]
                after_commit.append(i + 1)
            if (i + 1) % tenth == 0:
                marks.append(tenth_mark(store))
            if i % 50_000 == 0:
                print(f"{i:,} children", file=sys.stderr, flush=True)
        private = private_memory_bytes()
        store.close()
        commits = store.batch_commits  # the last one at close included
    finally:
        clock.close()
        shutil.rmtree(args.dir, ignore_errors=True)
    after = [seconds[i] for i in after_commit if i < len(seconds)]
    committing = {i - 1 for i in after_commit}  # the writes that committed a batch
    slowest = sorted(range(len(seconds)), key=seconds.__getitem__, reverse=True)[:10]

    def place_in_batch(i: int) -> int:
        """How many writes of its batch came before write ``i`` (0: the first after a commit;
        the parent's write, in the first batch, not counted)."""
        k = bisect.bisect_right(after_commit, i)
        return i - (after_commit[k - 1] if k else 0)

    def accounted(i: int) -> dict:
        """Where write ``i``'s time went on its thread (for a write of --slow-ms or more)."""
        if i not in slow:
            return {}
        on_cpu, run_queue, voluntary, involuntary, minor, _ = slow[i]
        return {"on_cpu_ms": round(on_cpu / 1e6, 3), "run_queue_ms": round(run_queue / 1e6, 3),
                "log_flush_ms": round(log_flush[i] * 1000, 3), "during_flush": i in during_flush,
                "asleep_ms": round(seconds[i] * 1000 - (on_cpu + run_queue) / 1e6, 3),
                "switches": {"voluntary": voluntary, "involuntary": involuntary}, "minor_faults": minor}

    print(json.dumps({"mode": args.mode, "children": args.children, "cache_ahead": args.cache_ahead,
                      "map_ahead": args.map_ahead if durability == "durable" else None,
                      "write_back": args.write_back if durability == "nosync" else None, "batch_writes": batch_writes,
                      **latency_summary(seconds),
                      # the writes that committed a batch (the commit on the writing thread, in them)
                      "committing_ms": latency_summary([seconds[i] for i in sorted(committing)])["per_resource_ms"]
                      if committing else None,
                      # the write that follows each batch commit (it meets the commit's flush)
                      "after_commit_ms": latency_summary(after)["per_resource_ms"] if after else None,
                      # a write's first touch of a page the page cache lacks (a new page of the
                      # map, unless cached ahead): all writes', and those after a commit
                      "major_faults": sum(faults),
                      "filing_max": args.filing_max, "filing_lag": filing_lag, "young_level": args.young_level,
                      "tenths_ms": [round(mean(seconds[k * tenth:(k + 1) * tenth]) * 1000, 4)
                                    for k in range(len(marks) - 1)],
                      # by tenth: filing term ids, bytes written (pages dirtied, the map's included), processor time
                      **per_child_by_tenth(marks, tenth),
                      "term_filing": store.term_filing,
                      "after_commit_major_faults": sum(faults[i] for i in after_commit if i < len(faults)),
                      "batch_commits": commits, "log_flushes": store.log_flushes, "rss_anon_bytes": private,
                      # writes of --slow-ms or more, by where their time went
                      "slow_writes": {"count": len(slow),
                                      "on_cpu_ms": round(sum(s[0] for s in slow.values()) / 1e6, 1),
                                      "run_queue_ms": round(sum(s[1] for s in slow.values()) / 1e6, 1),
                                      "log_flush_ms": round(sum(log_flush.values()) * 1000, 1),
                                      "during_flush": len(during_flush),
                                      "ms": round(sum(seconds[i] for i in slow) * 1000, 1)},
                      # the ten slowest writes: which child, how long, whether it committed a batch,
                      # and where the time went on the writing thread
                      "slowest": [{"child": i + 1, "ms": round(seconds[i] * 1000, 3), "committed": i in committing,
                                   "place_in_batch": place_in_batch(i),
                                   "major_faults": faults[i], **accounted(i)} for i in slowest]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
