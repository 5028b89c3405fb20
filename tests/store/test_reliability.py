"""Crash safety (SIGKILL during ingest) and snapshot isolation (a reader
while another process writes)."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time

from lakebench.store import LmdbStore, check
from lakebench.store.terms import iri
from lakebench.dataset import LDP_CONTAINS, DataSet

WRITER = textwrap.dedent("""
    import sys
    from lakebench.store import LmdbStore
    from lakebench.dataset import LDP_CONTAINS, DataSet
    path, start, durability = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    w = DataSet(children=100_000, seed=3)
    parent = w.parent_uri
    store = LmdbStore(path, durability=durability, map_size=1 << 20)  # small: the map grows under the writes
    print("READY", flush=True)
    for i in range(start, w.children):
        child = w.child(i)
        store.ingest(child.ntriples, child.uri, extra=[(parent, LDP_CONTAINS, child.uri, parent)])
        print("ACK", i, flush=True)
""")


def _writer(path, start, durability):
    return subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(start), durability],
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})


def test_sigkill_during_ingest_loses_no_acknowledged_child(tmp_path):
    path = tmp_path / "store"
    w = DataSet(children=100_000, seed=3)
    rng = random.Random(11)
    acked: list[int] = []
    start = 0
    only_in_log = 0  # rounds killed while acknowledged children were in the log alone
    for round_ in range(12):
        proc = _writer(path, start, "durable")
        assert proc.stdout.readline().strip() == "READY"
        deadline = time.monotonic() + rng.uniform(0.02, 0.4)
        os.set_blocking(proc.stdout.fileno(), False)
        buffered = ""
        while time.monotonic() < deadline:
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        buffered = proc.stdout.read() or ""
        proc.stdout.close()
        # Only whole lines: the kill may cut the last one short ("ACK 1" of "ACK 12").
        whole_lines = buffered.split("\n")[:-1]
        acked += [int(line.split()[1]) for line in whole_lines if line.startswith("ACK ")]
        problems = check(path)
        assert problems == [], f"round {round_}"  # the log too: whole records, in sequence
        only_in_log += problems.summary["log_pending"] > 0
        with LmdbStore(path) as store:  # a writable open recovers what is only in the log
            parent = w.parent_uri
            contained = {q[2] for q in store.quads(parent, LDP_CONTAINS, None, parent)}
            for i in acked:  # every acknowledged child, in full
                uri = w.child(i).uri
                assert store.count(graph=uri) == 200, (round_, i)
                assert b"I" + uri.encode() in contained
            # any child present is whole (the one being written when killed, maybe)
            graphs = {c for c in store.contexts() if c != b"I" + parent.encode()}
            assert all(store.count(graph=c) == 200 for c in graphs)
            assert len(graphs) == len(contained)
            start = len(graphs)
    assert len(acked) >= 10
    assert only_in_log > 0  # recovery from the log was exercised


def test_reader_sees_a_consistent_snapshot_while_another_process_writes(tmp_path):
    path = tmp_path / "store"
    w = DataSet(children=100_000, seed=3)
    parent, contains = iri(w.parent_uri), iri(LDP_CONTAINS)
    LmdbStore(path, durability="nosync").close()
    proc = _writer(path, 0, "nosync")
    try:
        assert proc.stdout.readline().strip() == "READY"
        proc.stdout.readline()  # the first child is in
        store = LmdbStore(path, readonly=True)
        seen = set()
        # Until the reads have seen the store grow a few times (a loaded machine
        # may write slowly), within a bound.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(seen) <= 3:
            with store.read() as txn:
                n = txn.count(parent, contains, None, parent)
                time.sleep(0.02)  # the writer commits meanwhile
                quads = list(txn.quads())
                assert txn.count(parent, contains, None, parent) == n
            assert len(quads) == n * 201  # every child whole, with its containment triple
            seen.add(n)
        store.close()
        assert len(seen) > 3  # the reads did see the store grow
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
    assert check(path) == []
