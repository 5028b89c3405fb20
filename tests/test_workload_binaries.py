"""The ``binaries`` workload (issue 11): binaries PUT, read back, verified; not applicable in-process.

``lakebench run`` runs as a user runs it, against a real ``lakebench serve``
(``lmdb-http``); a system that loses or alters bytes must show it in the record.
"""
from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from lakebench import results, systems
from lakebench.runner import RunConfig, run
from lakebench.systems.lmdb_http import LmdbHttpNosyncSystem
from tests.test_cli_bounds import _refused, lakebench

SIZES = {"binary_size=1024": 1024, "binary_size=65536": 65536}


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("binaries")
    done = subprocess.run([sys.executable, "-m", "lakebench.cli", "run", "--workload", "binaries",
                           "--systems", "lmdb-http,memory", "--children", "20", "--binary-size", "1K,64K",
                           "--tail-seconds", "0", "--quiet", "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    return done, out


def test_the_run_succeeds_and_says_what_was_verified(cli_run):
    done, _ = cli_run
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert ("lmdb-http (binary_size=1024): 20 binaries of 1,024 B: PUT " in done.stdout
            and "; 20 of 20 read back verified, 0 mismatched" in done.stdout)
    assert "B/triple" not in done.stdout  # no graphs were sent: no bytes per triple, nor a note about them
    assert "memory (binary_size=65536): not run: not applicable: memory stores no binaries" in done.stdout


def test_one_case_per_size_each_verified(cli_run):
    _, out = cli_run
    document = results.load(out)  # checked against results.FIELDS
    lmdb = [s for s in document["systems"] if s["name"] == "lmdb-http"]
    assert [s["variant"] for s in lmdb] == list(SIZES)
    assert document["workload"]["sweep"]["variant"] == list(SIZES)
    for entry in lmdb:
        size = SIZES[entry["variant"]]
        assert entry["status"] == "ok", entry.get("error")
        assert entry["workload"] == {"name": "binaries", "primary": "put binary", "params": {"binary_size": size}}
        binaries = entry["binaries"]
        assert binaries["size_bytes"] == size and binaries["count"] == 20
        assert binaries["sampled"] == 20 and binaries["verified"] == 20 and binaries["mismatched"] == 0
        assert binaries["put_mb_per_s"] > 0 and binaries["get_mb_per_s"] > 0
        assert entry["sent"] == {"binaries": 20, "bytes": 20 * size, "verified": 20}
        assert entry["held"] == {"binaries": 20, "verified": 20}
        assert entry["parent"]["containment_triples"] == 20
        operations = entry["operations"]
        assert operations["put binary"]["count"] == 20 and operations["put binary"]["errors"] == 0
        assert operations["get binary"]["count"] == 20 and operations["get binary"]["errors"] == 0
        assert operations["get parent"]["count"] >= 1
        assert "generate binary" not in operations  # the harness's own work is generate_seconds
        assert entry["generation"] == "inline" and entry["generate_seconds"] >= 0
        assert entry["children"] == 20
        assert entry["ingest_seconds"] == pytest.approx(operations["put binary"]["seconds"], abs=1e-5)
        # Disk holds at least the bytes sent (files beside the store).
        assert entry["disk_bytes"] >= 20 * size


def test_in_process_systems_are_not_applicable(cli_run):
    _, out = cli_run
    memory = [s for s in results.load(out)["systems"] if s["name"] == "memory"]
    assert [s["variant"] for s in memory] == list(SIZES)
    for entry in memory:
        assert entry["status"] == "skipped"
        assert entry["skip_reason"].startswith("not applicable:")


def test_latencies_are_the_puts_of_each_case(cli_run):
    _, out = cli_run
    with open(out / "latencies.csv") as f:
        rows = list(csv.DictReader(f))
    for variant in SIZES:
        assert len([r for r in rows if r["system"] == "lmdb-http" and r["variant"] == variant]) == 20
    assert {r["system"] for r in rows} == {"lmdb-http"}


class _Lossy(LmdbHttpNosyncSystem):
    """Acknowledges binary 3 without sending it, and alters the bytes of binary 5 when they are read."""

    name = "lossy"

    def create_binary(self, path, data, content_type):
        if not path.endswith("/b00000003"):
            super().create_binary(path, data, content_type)

    def get_binary(self, path):
        data = super().get_binary(path)
        return bytes([data[0] ^ 1]) + data[1:] if path.endswith("/b00000005") else data


def test_lost_and_altered_binaries_show(tmp_path, monkeypatch):
    monkeypatch.setitem(systems.SYSTEMS, "lossy", "tests.test_workload_binaries:_Lossy")
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parents[1]))  # the worker imports this module
    config = RunConfig(systems=["lossy"], children=10, out=tmp_path, tail_seconds=0, interval=0.1,
                       progress=False, workload="binaries", workload_params={"binary_size": 1000})
    entry = run(config, log=lambda *_: None)["systems"][0]
    assert entry["status"] == "ok", entry.get("error")
    assert entry["sent"] == {"binaries": 10, "bytes": 10_000, "verified": 10}
    assert entry["held"] == {"binaries": 9, "verified": 8}
    from lakebench import table
    assert table.held_against_sent(entry) == "binaries 9/10; verified 8/10"  # the table says so
    assert entry["binaries"]["sampled"] == 10
    assert (entry["binaries"]["verified"], entry["binaries"]["mismatched"]) == (8, 1)
    assert entry["operations"]["get binary"]["errors"] == 1
    assert "404" in entry["first_error"]
    json.dumps(entry)


@pytest.mark.parametrize("size, message", [("0", "must be from 1 to 256M, got 0"),
                                           ("1Q", "not a size"), ("257M", "must be from 1 to 256M"),
                                           ("1K,1024", "a value is given twice: 1K,1024")])
def test_a_size_out_of_range_is_one_line(size, message):
    line = _refused(lakebench("run", "--workload", "binaries", "--systems", "lmdb-http", "--children", "2",
                              "--binary-size", size, "--tail-seconds", "0", "--quiet"))
    assert "--binary-size" in line and message in line


def test_binary_size_belongs_to_the_binaries_workload():
    line = _refused(lakebench("run", "--workload", "flat", "--systems", "memory", "--children", "2",
                              "--binary-size", "1K", "--tail-seconds", "0", "--quiet"))
    assert "--binary-size applies to the binaries workload" in line


def test_help_states_the_range():
    done = lakebench("run", "--help")
    assert "1 to 256M" in " ".join(done.stdout.split())


@pytest.mark.fcrepo
def test_fedora_6_takes_binaries(tmp_path):
    config = RunConfig(systems=["fcrepo6"], children=10, out=tmp_path, tail_seconds=0, interval=0.5,
                       progress=False, workload="binaries", workload_params={"binary_size": 1024})
    entry = run(config, log=lambda *_: None)["systems"][0]
    assert entry["status"] == "ok", entry.get("error")
    assert entry["held"] == {"binaries": 10, "verified": 10}
    assert entry["binaries"]["mismatched"] == 0
