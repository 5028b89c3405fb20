"""A full disk under a running server: 507 for every write that does not fit,
reads go on, writes resume once space is freed, nothing acknowledged is lost.

The disk is a small tmpfs mounted for the test, so it needs root (skipped
otherwise, with the reason).
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from lakebench.store import LmdbStore, check
from lakebench.dataset import DataSet

from ..conftest import fill_disk as _fill
from .conftest import LDP_CONTAINS

#: Free bytes left beside the filler: room for a few dozen children.
HEADROOM = 2 << 20


@pytest.mark.parametrize("durability", ["durable", "nosync"])
def test_a_full_disk_answers_507_keeps_reads_and_loses_nothing(serve, small_disk, durability):
    data = small_disk / "store"
    server = serve("--durability", durability, data=data)
    assert server.request("PUT", "/c", "", {"Content-Type": "text/turtle"}).status == 201
    workload = DataSet(parent="c")
    filler = _fill(small_disk, HEADROOM)

    acknowledged, refused = [], []
    for child in workload:
        r = server.request("PUT", "/" + child.path, child.turtle, {"Content-Type": "text/turtle"})
        assert r.status in (201, 507), (r.status, r.body)
        if r.status == 201:
            acknowledged.append(child)
            continue
        refused.append(r)
        if len(refused) == 3:
            break
        if child.index > 2000:
            pytest.fail("the disk never filled up")
    assert acknowledged, "the headroom took no child at all"
    for r in refused:  # one line that says why
        lines = r.body.decode().strip().splitlines()
        assert len(lines) == 1 and "space" in lines[0]
    # A binary the disk has no room for (small enough that the socket buffers
    # hold it all, so the early answer is not lost to a reset).
    binary = server.request("PUT", "/c/blob", os.urandom(200_000), {"Content-Type": "application/octet-stream"})
    assert binary.status == 507, binary.body
    assert server.running

    # Reads go on while the disk is full.
    listing = server.request("GET", "/c", headers={"Accept": "application/n-triples"})
    assert listing.status == 200
    assert listing.body.count(LDP_CONTAINS.encode()) == len(acknowledged)
    assert server.request("GET", "/" + acknowledged[-1].path).status == 200

    # Space again: writes resume.
    filler.unlink()
    later = DataSet(parent="c", seed=workload.seed + 1)
    resumed = 0
    for child in later:
        r = server.request("PUT", f"/c/again{child.index}", child.turtle, {"Content-Type": "text/turtle"})
        assert r.status == 201, r.body
        resumed += 1
        if resumed == 5:
            break
    assert server.stop() == 0
    assert "Traceback" not in server.log()

    assert check(data) == []
    with LmdbStore(data) as store:  # recovers what the log alone holds
        for child in acknowledged:
            graph = server.base + child.path
            assert store.count(graph=graph) > 0, graph
        assert store.count(s=server.base + "c", p=LDP_CONTAINS) == len(acknowledged) + resumed
    done = subprocess.run([sys.executable, "-m", "lakebench.cli", "check", str(data)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
