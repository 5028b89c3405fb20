"""The ``update`` and ``read`` workloads: run as a user runs them, records checked.

Each runs through ``lakebench run`` on the in-process stores and on
``lmdb-http`` (a real ``lakebench serve``): every update must be read back
as sent, every GET must hold its child.  Systems that lose an update or a
triple show it in the record.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from lakebench import results, systems
from lakebench.runner import RunConfig, run
from lakebench.systems.base import Retrieval
from lakebench.systems.memory import MemorySystem
from tests.test_cli_bounds import _refused, lakebench

SYSTEMS = "lmdb,oxigraph,memory,lmdb-http"
CHILDREN = 20


def _run_cli(out: Path, *argv: str) -> dict:
    done = lakebench("run", "--systems", SYSTEMS, "--children", str(CHILDREN), "--seed", "5",
                     "--tail-seconds", "0", "--checkpoints", "none", "--quiet", "--out", str(out), *argv)
    assert done.returncode == 0, done.stderr[-3000:]
    return {s["name"]: s for s in results.load(out)["systems"]}


@pytest.fixture(scope="module")
def updated(tmp_path_factory):
    return _run_cli(tmp_path_factory.mktemp("update"), "--workload", "update", "--updates", "30")


@pytest.fixture(scope="module")
def read(tmp_path_factory):
    return _run_cli(tmp_path_factory.mktemp("read"), "--workload", "read", "--reads", "30", "--cold-reads", "0")


@pytest.mark.parametrize("name", SYSTEMS.split(","))
def test_every_update_held(updated, name):
    entry = updated[name]
    assert entry["status"] == "ok", entry.get("error")
    assert entry["workload"]["params"] == {"updates": 30, "replaced": 10}
    assert entry["updates"] == {"requested": 30, "replaced_per_update": 10, "applied": 30, "verified": 30,
                                "stale": 0}
    assert entry["sent"] == {"children": CHILDREN, "triples": CHILDREN * 200, "updates": 30,
                             "triples_replaced": 300}
    # A system that counts its own triples holds those sent (lmdb-http does not count them).
    counted = {} if name == "lmdb-http" else {"triples": CHILDREN * 200}
    assert entry["held"] == {"children": CHILDREN, "updates": 30, **counted}
    assert entry["operations"]["update"]["count"] == 30
    assert entry["operations"]["update"].get("errors", 0) == 0
    assert entry["operations"]["create"]["count"] == CHILDREN
    assert "get parent" in entry["operations"]
    assert entry["per_resource_ms"]["mean"] == pytest.approx(entry["operations"]["update"]["mean_ms"], rel=1e-3)
    if name != "lmdb-http":
        assert entry["triples_total"] == CHILDREN * 201  # an update replaces, it neither adds nor drops


@pytest.mark.parametrize("name", SYSTEMS.split(","))
def test_every_read_holds_its_child(read, name):
    entry = read[name]
    assert entry["status"] == "ok", entry.get("error")
    assert entry["reads"] == {"requested": 30, "ok": 30, "checked": 30, "cold_requested": 0, "cold": False,
                              "cold_done": 0, "cold_ok": 0}
    counted = {} if name == "lmdb-http" else {"triples": CHILDREN * 200}
    assert entry["held"] == {"children": CHILDREN, "reads": 30, **counted}
    assert entry["operations"]["get child"]["count"] == 30
    assert entry["operations"]["get child"]["per_second"] > 0
    assert "get child cold" not in entry["operations"]


class _Forgetful(MemorySystem):
    """Acknowledges every update, keeps none; its GETs lose a child's last triple."""

    name = "forgetful"

    def replace_literals(self, path, replacements):
        pass

    def get_resource(self, path):
        got = super().get_resource(path)
        return Retrieval(b"\n".join(got.body.splitlines()[:-1]), got.parent_uri, got.content_type)


def _run(tmp_path, workload: str, params: dict) -> dict:
    config = RunConfig(systems=["forgetful"], children=5, out=tmp_path, tail_seconds=0, interval=0.1,
                       progress=False, checkpoints=None, workload=workload, workload_params=params)
    return run(config, log=lambda *_: None)["systems"][0]


@pytest.fixture
def forgetful(monkeypatch):
    monkeypatch.setitem(systems.SYSTEMS, "forgetful", "tests.test_workload_update_read:_Forgetful")
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parents[1]))  # the worker imports this module


def test_lost_updates_and_triples_show(tmp_path, forgetful):
    entry = _run(tmp_path / "u", "update", {"updates": 4})
    assert entry["status"] == "ok", entry.get("error")
    assert entry["updates"]["applied"] == 4 and entry["updates"]["verified"] == 0
    assert entry["updates"]["stale"] == 4 and entry["held"]["updates"] == 0
    entry = _run(tmp_path / "r", "read", {"reads": 3, "cold_reads": 0})
    assert entry["reads"]["checked"] == 3 and entry["reads"]["ok"] == 0


def test_cold_reads_are_cold_or_absent(tmp_path):
    """With root the page cache is dropped before each cold read; without, none is made or called cold."""
    config = RunConfig(systems=["memory"], children=3, out=tmp_path, tail_seconds=0, interval=0.1,
                       progress=False, checkpoints=None, workload="read", workload_params={"reads": 2, "cold_reads": 1})
    entry = run(config, log=lambda *_: None)["systems"][0]
    reads = entry["reads"]
    assert reads["cold_requested"] == 1
    if reads["cold"]:
        assert reads["cold_done"] == reads["cold_ok"] == entry["operations"]["get child cold"]["count"] == 1
    else:
        assert reads["cold_done"] == 0 and "get child cold" not in entry["operations"]


@pytest.mark.parametrize("argv", [
    ["--workload", "update", "--updates", "0"],
    ["--workload", "update", "--updates", "100001"],
    ["--workload", "update", "--updates", "ten"],
    ["--workload", "update", "--replaced", "0"],
    ["--workload", "read", "--reads", "0"],
    ["--workload", "read", "--cold-reads", "-1"],
    ["--workload", "read", "--updates", "5"],
])
def test_bad_options_refused(argv, tmp_path):
    line = _refused(lakebench("run", "--systems", "memory", "--children", "2", "--out", str(tmp_path), *argv))
    assert "--updates" in line or "--replaced" in line or "--reads" in line or "--cold-reads" in line


@pytest.mark.parametrize("name", ["lmdb-nosync", "oxigraph", "memory", "lmdb-http-nosync"])
def test_replaced_literals_escape_alike(tmp_path, name):
    """Literals that every serializer must escape are deleted and inserted as the store holds them."""
    from lakebench.dataset import DataSet
    from lakebench.workloads.read import literals_held

    dataset = DataSet(children=2, triples=8, seed=1)
    system = systems.load(name)(tmp_path, dataset)
    try:
        system.setup()
        for child in dataset:
            system.create_child(system.prepare(child))
        child = dataset.child(1)
        literals = [t for t in child.triples if not t[2]]  # lit#p0 twice, lit#p1 twice
        (p0, old0, _), (p1, old1, _) = literals[:2]
        tricky = ['a"b\\c\nd\te', "\U0001F600 \u05d0 \\u0041 'q'"]
        system.replace_literals(child.path, [(p0, old0, tricky[0]), (p1, old1, tricky[1])])
        held = literals_held(system.get_resource(child.path))
    finally:
        system.close()
    assert held == {p0: set(tricky), literals[2][0]: {literals[2][1], literals[3][1]}}

