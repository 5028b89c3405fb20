"""The mixed workload: Locust users creating, patching and reading children against lmdb-http."""
from __future__ import annotations

import importlib.util
import json

import pytest

from lakebench.cli import main

pytestmark = pytest.mark.skipif(importlib.util.find_spec("locust") is None, reason="needs locust")


def test_mixed_counts_check_out_and_in_process_systems_are_not_applicable(tmp_path):
    # No --driver: the mixed workload runs with Locust only, so that is its driver.
    code = main(["run", "--workload", "mixed", "--systems", "lmdb-http-nosync,memory", "--children", "20",
                 "--users", "4", "--operations", "200", "--retrievals", "2", "--tail-seconds", "0",
                 "--interval", "0.2", "--quiet", "--out", str(tmp_path)])
    assert code == 0
    document = json.loads((tmp_path / "results.json").read_text())
    http, memory = document["systems"]
    assert memory["status"] == "skipped" and memory["skip_reason"].startswith("not applicable")
    assert http["status"] == "ok", http.get("error")
    assert http["driver"] == "locust" and http["users"] == 4
    operations = http["operations"]
    kinds = ("create child", "patch child", "get child", "get parent (mixed)")
    assert all(operations[kind]["count"] > 0 for kind in kinds), operations
    assert sum(operations[kind]["count"] + operations[kind]["errors"] for kind in kinds) == 200
    assert http["mixed"]["operations"] == 200 and http["mixed"]["users"] == 4
    assert http["mixed"]["weights"] == {"create": 4, "patch": 2, "get": 3, "parent": 1}
    # Every acknowledged PUT is contained, nothing else; every patched child checked holds its last value.
    assert http["sent"]["children"] == 20 + operations["create child"]["count"]
    assert http["held"]["children"] == http["sent"]["children"] == http["parent"]["containment_triples"]
    assert http["sent"]["patches"] == operations["patch child"]["count"]
    assert http["sent"]["patched_checked"] > 0
    assert http["held"]["patched_checked"] == http["sent"]["patched_checked"]
    assert operations["get parent"]["count"] == 2  # --retrievals applies to the Locust driver
    assert http["workload"]["params"]["duration"] is None  # the operation count ended the run


def test_mixed_for_a_duration(tmp_path):
    code = main(["run", "--workload", "mixed", "--systems", "lmdb-http-nosync", "--children", "5",
                 "--users", "2", "--duration", "2", "--weights", "patch=1,get=1", "--tail-seconds", "0",
                 "--interval", "0.2", "--quiet", "--out", str(tmp_path)])
    assert code == 0
    entry = json.loads((tmp_path / "results.json").read_text())["systems"][0]
    assert entry["status"] == "ok", entry.get("error")
    assert "create child" not in entry["operations"] and entry["held"]["children"] == 5
    assert entry["mixed"]["duration_seconds"] >= 2 and entry["mixed"]["operations"] > 0
    assert entry["held"]["patched_checked"] == entry["sent"]["patched_checked"] > 0


@pytest.mark.parametrize("weights", ["create=0", "create=x", "delete=1", "create=1001"])
def test_bad_weights_are_a_usage_error(tmp_path, weights, capsys):
    assert main(["run", "--workload", "mixed", "--systems", "lmdb-http", "--weights", weights,
                 "--out", str(tmp_path)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_mixed_runs_with_locust_only(tmp_path):
    assert main(["run", "--workload", "mixed", "--systems", "lmdb-http", "--driver", "client",
                 "--out", str(tmp_path)]) == 2
