"""The ``versions`` workload, run as a user runs it on a real ``lakebench serve``: every version
taken is listed, the one read back of each child holds the child as it was then; a system that
keeps no versions is not applicable; a server that returns a wrong version shows it."""
from __future__ import annotations

from pathlib import Path

import pytest

from lakebench import results, systems
from lakebench.runner import RunConfig, run
from lakebench.systems.base import Retrieval
from lakebench.systems.lmdb_http import LmdbHttpNosyncSystem
from tests.test_cli_bounds import lakebench

CHILDREN = 12


def _run(out, *argv: str) -> dict:
    done = lakebench("run", "--workload", "versions", "--children", str(CHILDREN), "--seed", "3",
                     "--versioned", "4", "--versions", "2", "--changed", "5", "--tail-seconds", "0",
                     "--checkpoints", "none", "--quiet", "--out", str(out), *argv)
    assert done.returncode == 0, done.stderr[-3000:]
    return {s["name"]: s for s in results.load(out)["systems"]}


def test_every_version_is_taken_listed_and_read_as_it_was(tmp_path):
    entries = _run(tmp_path / "out", "--systems", "lmdb-http-nosync,lmdb-nosync")
    entry = entries["lmdb-http-nosync"]
    assert entry["status"] == "ok", entry.get("error")
    assert entry["versions"] == {**entry["versions"], "versioned": 4, "per_resource": 2, "changed_per_version": 5,
                                 "requested": 8, "created": 8, "listings": 8, "listed_short": 0, "held": 8,
                                 "sampled": 4, "verified": 4, "mismatched": 0}
    assert entry["versions"]["list_first_ms"] > 0 and entry["versions"]["list_last_ms"] > 0
    assert entry["sent"]["versions"] == 8 and entry["held"]["versions"] == 8
    operations = entry["operations"]
    assert operations["create version"]["count"] == 8 and operations["update"]["count"] == 8
    assert operations["list versions"]["count"] == 8 and operations["get version"]["count"] == 4
    assert entry["per_resource_ms"]["mean"] == pytest.approx(operations["create version"]["mean_ms"], rel=1e-3)
    assert entries["lmdb-nosync"]["status"] == "skipped"
    assert "keeps no versions" in entries["lmdb-nosync"]["skip_reason"]


class _LossyVersions(LmdbHttpNosyncSystem):
    """Takes and lists versions, but each one it reads back lacks its last line."""

    name = "lossy-versions"

    def get_version(self, path, url):
        got = super().get_version(path, url)
        return Retrieval(b"\n".join(got.body.strip().splitlines()[:-1]), got.parent_uri, got.content_type)


def test_a_wrong_version_shows(tmp_path, monkeypatch):
    monkeypatch.setitem(systems.SYSTEMS, "lossy-versions", "tests.test_workload_versions:_LossyVersions")
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parents[1]))  # the worker imports this module
    config = RunConfig(systems=["lossy-versions"], children=3, out=tmp_path, tail_seconds=0, interval=0.1,
                       progress=False, checkpoints=None, workload="versions",
                       workload_params={"versioned": 3, "versions": 2, "changed": 3})
    entry = run(config, log=lambda *_: None)["systems"][0]
    assert entry["status"] == "ok", entry.get("error")
    versions = entry["versions"]
    assert versions["sampled"] == 3 and versions["verified"] == 0 and versions["mismatched"] == 3
    assert versions["created"] == 6 and versions["listed_short"] == 0
