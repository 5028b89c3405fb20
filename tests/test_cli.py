from __future__ import annotations

import os
import subprocess
import sys

import pytest

from lakebench.cli import main


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["run", "--systems", "nosuch"], "unknown system 'nosuch'"),
        (["run", "--systems", "memory,memory"], "named twice"),
        (["run", "--children", "0"], "must be from 1 to 10,000,000, got 0"),
        (["run", "--children", "-5"], "must be from 1 to"),
        (["run", "--children", "many"], "not an integer"),
        (["run", "--children", "10,0"], "must be from 1 to"),
        (["run", "--children", "10,10"], "given twice"),
        (["run", "--literal-length", "0"], "must be from 1 to"),
        (["run", "--repeat", "0"], "must be from 1 to"),
        (["run", "--systems", "memory", "--reference", "oxigraph"], "not among"),
        (["run", "--out", "/proc/no/such/dir"], "cannot write results"),
        (["run", "--triples", "2"], "must be from 4 to"),
        (["run", "--parent", "a/b"], "one path segment"),
        (["run", "--systems", "ldp"], "needs --system-url"),
        (["run", "--systems", "lmdb-http", "--system-option", "worker_class=foo"],
         "--system-option worker_class=foo: must be gevent, gthread or sync, got 'foo'"),
        (["run", "--systems", "lmdb-http", "--system-option", "no_such=1"], "--system-option no_such: no system"),
        (["run", "--systems", "memory", "--system-option", "worker_class=sync"], "memory takes no option"),
        (["run", "--systems", "lmdb-http", "--system-option", "server_workers=0"], "must be from 1 to 64, got 0"),
        (["run", "--systems", "lmdb-http", "--system-option", "worker_class=sync", "--system-option",
          "client_timeout=5"], "client_timeout applies to the gevent worker, not sync"),
        (["run", "--systems", "lmdb-http", "--system-option", "worker_class=sync", "--system-option",
          "server_workers=2"], "server_workers above 1 adds body parsers to the gevent worker, not sync"),
        (["run", "--systems", "lmdb-http", "--system-option", "worker_class"], "expected KEY=VALUE"),
        (["run", "--systems", "memory", "--users", "4"], "--users 4 needs the Locust driver"),
        (["run", "--systems", "lmdb-http", "--users", "0"], "--users: must be from 1 to 1,000, got 0"),
        (["run", "--systems", "lmdb-http", "--users", "a"], "--users: not an integer: 'a'"),
        (["run", "--systems", "lmdb-http", "--users", "2,2"], "a value is given twice"),
        (["run", "--systems", "lmdb-http", "--users", "1,2"], "--users 1,2 needs the Locust driver (--driver locust)"),
        (["run", "--workload", "read", "--systems", "lmdb-http", "--users", "1,2"],
         "the read workload runs with lakebench's own client only (one user); the workloads Locust runs: flat, mixed"),
        (["run", "--systems", "lmdb-http", "--parents", "per-user"], "--parents applies with --driver locust, not client"),
        (["run", "--systems", "lmdb-http", "--driver", "locust", "--parents", "each"],
         "--parents: must be shared or per-user, got 'each'"),
        (["run", "--workload", "mixed", "--systems", "lmdb-http", "--parents", "per-user"],
         "--parents applies to the flat workload(s), not to mixed"),
        (["frobnicate"], "invalid choice"),
        (["table", "/nonexistent-results"], "no results.json"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, fragment, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert fragment in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_unwritable_out_for_non_root(tmp_path, capsys):
    if os.geteuid() == 0:
        pytest.skip("root can write anywhere; /proc case above covers the error path")
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    assert main(["run", "--out", str(locked / "x")]) == 2


def test_help_lists_systems():
    out = subprocess.run([sys.executable, "-m", "lakebench.cli", "run", "--help"],
                         capture_output=True, text=True, check=True).stdout
    assert "memory" in out and "oxigraph" in out and "--children" in out


def test_help_lists_every_system_option():
    from lakebench import systems

    out = " ".join(subprocess.run([sys.executable, "-m", "lakebench.cli", "run", "--help"],
                                  capture_output=True, text=True, check=True).stdout.split())
    for name in systems.SYSTEMS:
        for key, option in systems.load(name).OPTIONS.items():
            assert f"{key}:" in out and option.type.range in out.replace("- ", "-"), key


def test_a_system_option_reaches_the_server_and_the_results(tmp_path, capsys):
    from lakebench import results

    rc = main(["run", "--systems", "lmdb-http-nosync,memory", "--children", "20", "--system-option",
               "worker-class=gthread", "--keep-data", "--checkpoints", "none", "--out", str(tmp_path),
               "--tail-seconds", "0", "--quiet"])
    assert rc == 0
    document = results.load(tmp_path)
    http, memory = document["systems"]
    assert http["system_options"] == {"server_workers": 1, "worker_class": "gthread"}  # no client_timeout
    assert "system_options" not in memory  # takes none
    (log,) = (tmp_path / "data").glob("lmdb-http-nosync*/serve.log")
    assert "Using worker: LakebenchGthreadWorker" in log.read_text()


def test_run_end_to_end_prints_table(tmp_path, capsys):
    rc = main(["run", "--systems", "memory,oxigraph", "--children", "12", "--out", str(tmp_path),
               "--tail-seconds", "0", "--quiet"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "per child" in out and "oxigraph" in out and "memory" in out
    assert (tmp_path / "results.json").exists()
    assert main(["table", str(tmp_path)]) == 0


def test_run_with_a_budget_stops_marks_and_skips(tmp_path, capsys):
    # No store creates 20,000 children of 200 triples in a second; 3 take milliseconds.
    rc = main(["run", "--systems", "lmdb-nosync", "--children", "3,20000,30000", "--budget", "1s",
               "--checkpoints", "none", "--out", str(tmp_path), "--tail-seconds", "0", "--quiet"])
    assert rc == 0  # a case not run because of the budget is not a failure
    out = capsys.readouterr().out
    assert "Budget: 1s of ingest per system and case." in out
    assert "stopped at " in out and " children after " in out
    assert "not run: the budget ran out at " in out and "(case 20,000)" in out
    assert main(["table", str(tmp_path)]) == 0
    assert "stopped at " in capsys.readouterr().out


@pytest.mark.parametrize("text, seconds", [("90s", 90), ("20m", 1200), ("1h", 3600), ("1h30m", 5400), ("45", 45)])
def test_budget_durations(text, seconds):
    from lakebench.cli import build_parser

    args = build_parser().parse_args(["run", "--budget", text])
    assert args.budget == seconds
