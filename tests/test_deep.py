"""The ``deep`` workload: a small hierarchy, binary leaves over HTTP, RDF leaves in-process."""
from __future__ import annotations

import pytest

from lakebench import results, systems
from lakebench.runner import RunConfig, run
from lakebench.systems.lmdb import LmdbSystem
from tests.test_cli_bounds import _refused, lakebench

DEEP = ["--workload", "deep", "--depth", "2", "--fan-out", "4", "--batch", "4", "--tail-seconds", "0", "--quiet"]


@pytest.fixture(scope="module")
def document(tmp_path_factory):
    out = tmp_path_factory.mktemp("deep")
    done = lakebench("run", *DEEP, "--systems", "lmdb-http,lmdb,oxigraph,memory", "--out", str(out), timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    return results.load(out)


@pytest.mark.parametrize("name, leaf", [("lmdb-http", "binary"), ("lmdb", "rdf"), ("oxigraph", "rdf"),
                                        ("memory", "rdf")])
def test_the_tree_is_built_read_and_held(document, name, leaf):
    entry = next(s for s in document["systems"] if s["name"] == name)
    assert entry["status"] == "ok", entry.get("error")
    deep = entry["deep"]
    assert (deep["depth"], deep["fan_out"], deep["leaf"]) == (2, 4, leaf)
    # 4 + 16 containers, a leaf in each of the 16 at the bottom.
    assert {k: entry["sent"][k] for k in ("containers", "leaves")} == {"containers": 20, "leaves": 16}
    assert entry["held"] == entry["sent"]
    assert entry["children"] == 20 and entry["ingest_seconds"] > 0  # the tree is the workload's size
    # The three reads after every 4 containers: at 4, 8, 12, 16 and 20.
    assert [point["containers"] for point in deep["series"]] == [4, 8, 12, 16, 20]
    assert [point["leaves"] for point in deep["series"]] == [3, 6, 9, 12, 16]
    assert all(point["resources"] == point["containers"] + point["leaves"] for point in deep["series"])
    assert all(point[key] > 0 for point in deep["series"]
               for key in ("list_top_ms", "list_middle_ms", "get_leaf_ms"))
    assert deep["leaf_reads"] == deep["leaf_reads_verified"] == 5
    ops = entry["operations"]
    assert ops["create container"]["count"] == 20 and ops["create leaf"]["count"] == 16
    assert ops["list top"]["count"] == ops["list middle"]["count"] == ops["get leaf"]["count"] == 5
    assert not any(op.get("errors") for op in ops.values())
    assert entry["per_resource_ms"]["mean"] == pytest.approx(ops["create container"]["mean_ms"], rel=1e-3)
    assert entry["parent"]["containment_triples"] == 4  # the level-1 containers


class _LosesLeaves(LmdbSystem):
    """Acknowledges every leaf, keeps every other one."""

    def create_resource(self, child, path):
        if child.index % 2 == 0:
            super().create_resource(child, path)


def test_a_system_that_loses_leaves_shows_it(tmp_path, monkeypatch):
    monkeypatch.setitem(systems.SYSTEMS, "loses-leaves", "tests.test_deep:_LosesLeaves")
    config = RunConfig(systems=["loses-leaves"], out=tmp_path, tail_seconds=0, progress=False,
                       workload="deep", workload_params={"depth": 2, "fan_out": 4, "batch": 4})
    entry = run(config, log=lambda *_: None)["systems"][0]
    assert entry["status"] == "ok", entry.get("error")
    assert {k: entry["sent"][k] for k in ("containers", "leaves")} == {"containers": 20, "leaves": 16}
    assert {k: entry["held"][k] for k in ("containers", "leaves")} == {"containers": 20, "leaves": 8}
    assert entry["deep"]["leaf_reads_verified"] < entry["deep"]["leaf_reads"]
    assert entry["held"]["leaf_reads"] < entry["sent"]["leaf_reads"]  # shown in the table's held / sent


def test_binary_leaves_are_not_applicable_in_process(tmp_path):
    config = RunConfig(systems=["lmdb"], out=tmp_path, tail_seconds=0, progress=False,
                       workload="deep", workload_params={"depth": 1, "fan_out": 2, "leaf": "binary"})
    entry = run(config, log=lambda *_: None)["systems"][0]
    assert entry["status"] == "skipped"
    assert entry["skip_reason"] == "not applicable: lmdb stores no binaries"


@pytest.mark.parametrize("options, expected", [
    (["--depth", "0"], "--depth: must be from 1 to 8, got 0"),
    (["--fan-out", "0"], "--fan-out: must be from 1 to 100,000, got 0"),
    (["--batch", "0"], "--batch: must be from 1 to 10,000,000, got 0"),
    (["--leaf", "text"], "--leaf: must be one of auto, binary, rdf, got 'text'"),
    (["--depth", "5", "--fan-out", "100"], "--depth 5 --fan-out 100 makes 10,101,010,100 containers, "
                                           "over the 10,000,000 allowed"),
])
def test_bad_options_are_one_line(tmp_path, options, expected):
    done = lakebench("run", "--workload", "deep", "--systems", "lmdb", "--quiet", *options,
                     "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert expected in _refused(done)
    assert not (tmp_path / "out" / "results.json").exists()
