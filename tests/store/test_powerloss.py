"""Power loss: every write not covered by a flush is dropped, and the store
must open, pass ``check`` and hold every acknowledged child in full.

A writer process ingests children under ``iotrace.c`` (LD_PRELOAD), which
records each write and flush to the store's files; after each ingest
returns, the writer appends the child's number to ``acks`` (traced too, so
the trace says what had been acknowledged at any point).  The replayer
(``powerloss/replay.py``) then rebuilds, at many points of the trace, a
disk a power cut could have left there, and a verifier process opens each
one as the store's next start would (recovering from the log), and checks
it.  A control run with the log's flushes switched off must lose
acknowledged children: the harness can see a loss.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lakebench.store import check
from tests.store.powerloss.replay import Disk, read_trace

pytestmark = [pytest.mark.powerloss, pytest.mark.slow]

HERE = Path(__file__).parent / "powerloss"
CHILDREN, TRIPLES = 48, 20
MODES = {  # name -> (durable, log, filing lag, writers, batch written in place)
    # the durable log, its batch written with pwrite, committed unflushed and flushed on a
    # thread of its own (lakebench.store.commitsync; no id filed in t2i: too few)
    "log": (True, True, None, 1, False),
    "log-filing": (True, True, 32, 1, False),    # the same, filing ids in t2i at several batch commits
    "commit": (True, False, None, 1, False),     # LMDB's fsync per commit, no log
    # 8 writers (greenlets, the flush at the end of the loop's turn, as the server
    # runs them): their writes share flushes (group commit)
    "log-group": (True, True, None, 8, False),
    # the default durable mode: the batch written through the map (MDB_WRITEMAP), its pages
    # seen by the tracer
    "log-in-place": (True, True, 32, 1, True),
    "log-unflushed": (False, True, None, 1, None),  # the control: nothing is flushed
}

WRITER = textwrap.dedent("""
    import os, sys
    from lakebench.store import LmdbStore
    from lakebench.dataset import LDP_CONTAINS, DataSet
    path, durable, log, n, triples = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1", int(sys.argv[4]), int(sys.argv[5])
    lag = {} if sys.argv[6] == "None" else {"filing_lag": int(sys.argv[6])}
    writers = int(sys.argv[7])
    writemap = {"None": None, "True": True, "False": False}[sys.argv[8]]
    w = DataSet(children=n, triples=triples, seed=5)
    parent = w.parent_uri
    waiting = {}
    if writers > 1:
        import gevent
        from lakebench.server.cooperation import GEVENT
        waiting = {"waiting": GEVENT}
    # A small map and small batches: the trace holds map growth and several batch commits.
    store = LmdbStore(path, durability="durable" if durable else "nosync", log=log, map_size=1 << 18, batch_writes=8,
                      writemap=writemap, **lag, **waiting)
    assert writemap is None or store.env.writemap == writemap, "the batch is not written as asked"
    acks = os.open(os.path.join(path, "acks"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)

    def ingest(first):
        for i in range(first, n, writers):
            child = w.child(i)
            store.ingest(child.ntriples, child.uri, extra=[(parent, LDP_CONTAINS, child.uri, parent)])
            os.write(acks, f"{i}\\n".encode())   # acknowledged

    if writers > 1:
        gevent.joinall([gevent.spawn(ingest, k) for k in range(writers)], raise_error=True)
        assert store.log_flushes["flushes"] < n, store.log_flushes  # they did share flushes
    else:
        ingest(0)
    store.close()
""")

VERIFIER = textwrap.dedent("""
    import json, sys
    from lakebench.store import LmdbStore, check
    from lakebench.dataset import LDP_CONTAINS, DataSet
    n, triples = int(sys.argv[1]), int(sys.argv[2])
    w = DataSet(children=n, triples=triples, seed=5)
    parent = w.parent_uri
    for line in sys.stdin:
        image = json.loads(line)
        problems = []
        # Opened as the next start would (recovery), but for the work on the pages past the
        # last committed one (cached ahead, mapped writable ahead): it changes no byte, and
        # for each of some 240 images it took most of the test's time, in the kernel.
        with LmdbStore(image["dir"], cache_ahead=0, map_ahead=0) as store:
            contained = {q[2] for q in store.quads(parent, LDP_CONTAINS, None, parent)}
            for i in image["acked"]:
                uri = w.child(i).uri
                if store.count(graph=uri) != triples or b"I" + uri.encode() not in contained:
                    problems.append(f"acknowledged child {i} is not there in full")
            for g in store.contexts():
                if g != b"I" + parent.encode() and store.count(graph=g) != triples:
                    problems.append(f"a partial child: {g!r}")
        problems += list(check(image["dir"]))
        print(json.dumps({"dir": image["dir"], "problems": problems}), flush=True)
""")


@pytest.fixture(scope="module")
def iotrace(tmp_path_factory) -> Path:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("needs a C compiler (build-essential) to build the I/O tracer")
    lib = tmp_path_factory.mktemp("iotrace") / "iotrace.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-o", str(lib),
                    str(HERE / "iotrace.c"), "-ldl", "-lpthread"], check=True)
    return lib


def _trace(tmp_path: Path, lib: Path, durable: bool, log: bool, lag: int | None,
           writers: int = 1, writemap: bool | None = None, maps_seen: bool = True) -> tuple[list, Path]:
    store = (tmp_path / "store").resolve()
    store.mkdir()
    trace = tmp_path / "trace.bin"
    env = {**os.environ, "LD_PRELOAD": str(lib), "IOTRACE_DIR": str(store), "IOTRACE_LOG": str(trace),
           "IOTRACE_MAPS": "1" if maps_seen else "0"}
    subprocess.run([sys.executable, "-c", WRITER, str(store), str(int(durable)), str(int(log)),
                    str(CHILDREN), str(TRIPLES), str(lag), str(writers), str(writemap)], env=env, check=True,
                   timeout=300)
    return read_trace(trace), store


def _crash_points(events: list, rng: random.Random, count: int) -> list[int]:
    """Right before and right after each flush (where acknowledgements turn on), and others."""
    flushes = [i for i, e in enumerate(events) if e.kind in "SDR"]
    points = {max(i - 1, 0) for i in flushes} | set(flushes)
    points |= {rng.randrange(len(events)) for _ in range(count // 4)}
    points = sorted(points)
    if len(points) > count:
        points = sorted(rng.sample(points, count))
    return points + [len(events) - 1]  # and the end: everything acknowledged


def _images(events, root: Path, rng: random.Random, count: int) -> list[dict]:
    """Disks after power losses at chosen points, each written to a directory of its own."""
    disk, images = Disk(), []
    points = set(_crash_points(events, rng, count))
    for index, event in enumerate(events):
        disk.apply(event)
        if index not in points:
            continue
        for draw in range(2):  # two different draws of which unflushed pages made it
            target = root / f"crash-{index:06d}-{draw}"
            target.mkdir(parents=True)
            for name, data in disk.power_loss(rng, skip={"acks", "lock.mdb"}).items():
                (target / name).parent.mkdir(parents=True, exist_ok=True)
                (target / name).write_bytes(data)
            acked = [int(x) for x in disk.cached("acks").split()]
            images.append({"dir": str(target), "acked": acked, "event": index})
    return images


def _verify(images: list[dict]) -> dict[str, list[str]]:
    """Problems per image; an image whose opening kills the verifier (a damaged
    file LMDB cannot read) is a problem too, and the rest go on in a new one."""
    results: dict[str, list[str]] = {}
    todo = list(images)
    while todo:
        proc = subprocess.run([sys.executable, "-c", VERIFIER, str(CHILDREN), str(TRIPLES)],
                              input="".join(json.dumps(i) + "\n" for i in todo), capture_output=True,
                              text=True, timeout=600)
        for line in proc.stdout.splitlines():
            reply = json.loads(line)
            results[reply["dir"]] = reply["problems"]
        todo = [i for i in todo if i["dir"] not in results]
        if todo:  # the first of them stopped the verifier
            tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
            results[todo[0]["dir"]] = [f"the store could not be opened (exit {proc.returncode}): {tail}"]
            todo = todo[1:]
    return results


@pytest.mark.parametrize("mode", ["log", "log-filing", "commit", "log-group", "log-in-place"])
def test_power_loss_keeps_every_acknowledged_write(tmp_path, iotrace, mode):
    durable, log, lag, writers, writemap = MODES[mode]
    events, store = _trace(tmp_path, iotrace, durable, log, lag, writers, writemap)
    assert any(e.kind == "S" for e in events) and any(e.name == "data.mdb" for e in events)
    if writemap:  # the batch's pages came through the map, and each flush was an msync of the committed range
        assert any(e.kind == "R" and e.name == "data.mdb" for e in events)
    if log:
        assert any(e.name == "wal" for e in events)
    images = _images(events, tmp_path / "images", random.Random(7), count=120)
    results = _verify(images)
    failures = {d: p for d, p in results.items() if p}
    assert not failures, f"{len(failures)} of {len(images)} power losses lost data: {failures}"
    # The points covered acknowledgements that were only in the log at the time.
    assert any(i["acked"] for i in images) and max(len(i["acked"]) for i in images) == CHILDREN
    if lag is not None:  # ids were filed in t2i during the trace
        assert check(store).summary["hash_entries"] > 0


def test_the_harness_sees_a_loss_when_nothing_is_flushed(tmp_path, iotrace):
    durable, log, lag, writers, writemap = MODES["log-unflushed"]
    events, _ = _trace(tmp_path, iotrace, durable, log, lag, writers, writemap)
    images = _images(events, tmp_path / "images", random.Random(7), count=120)
    results = _verify(images)
    assert any(problems for problems in results.values()), "no power loss lost anything: the harness is blind"


def test_the_harness_needs_the_writes_through_the_map(tmp_path, iotrace):
    """The control of the in-place mode: with the map's writes hidden from the trace, the batch
    commits the log was cut back after are missing, and acknowledged children are lost."""
    durable, log, lag, writers, writemap = MODES["log-in-place"]
    events, _ = _trace(tmp_path, iotrace, durable, log, lag, writers, writemap, maps_seen=False)
    assert not any(e.kind == "R" for e in events)
    images = _images(events, tmp_path / "images", random.Random(7), count=20)  # one loss is enough
    results = _verify(images)
    assert any(problems for problems in results.values()), "nothing was lost without the map's writes"
