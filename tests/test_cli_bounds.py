"""Issue 16, case 8: `lakebench run` refuses nonsense, and a system it cannot reach is one line.

Every numeric option is finite and within the range its --help states,
else exit code 2 and one line before anything runs.  A server nobody
listens for, or one that does not start, leaves a FAILED row and one line
naming a log that holds the rest: no traceback in the run's output.

The commands run as a user runs them (``python -m lakebench.cli`` in a
process of its own), each with a small workload and a time limit, so that
a value wrongly accepted costs seconds, not the machine.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from lakebench.process import free_port

SMALL = ["--systems", "memory", "--children", "2", "--tail-seconds", "0", "--quiet"]


def lakebench(*argv: str, timeout: float = 120, env: dict | None = None, cwd: Path | None = None,
              limit_memory: bool = True) -> subprocess.CompletedProcess:
    """Run the command in a session of its own, all of which is killed if it outlives ``timeout``.

    At most 2 GB of address space (not for a JVM): a value wrongly accepted
    must fail, not swap, and a run that would never end must not outlive the test.
    """
    command = [sys.executable, "-m", "lakebench.cli", *argv]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                          cwd=cwd, start_new_session=True, preexec_fn=_limit_memory if limit_memory else None) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the CLI and the worker it started
            proc.communicate()
            raise
    return subprocess.CompletedProcess(command, proc.returncode, stdout, stderr)


def _limit_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def _refused(done: subprocess.CompletedProcess, command: str = "run") -> str:
    assert "Traceback" not in done.stderr + done.stdout
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"lakebench {command}: error: ")
    return lines[0]


@pytest.mark.parametrize("option, value, expected", [
    ("--triples", "999999999999", "--triples: must be from 4 to 100,000, got 999999999999"),
    ("--literal-length", "99999999999999999999", "--literal-length: must be from 1 to 1,048,576"),
    ("--literal-length", "64,2000000", "--literal-length: must be from 1 to 1,048,576, got 2000000"),
    ("--tail-seconds", "nan", "--tail-seconds: not a finite number: 'nan'"),
    ("--tail-seconds", "inf", "--tail-seconds: not a finite number: 'inf'"),
    ("--tail-seconds", "-1", "--tail-seconds: must be from 0 to 3,600"),
    ("--interval", "nan", "--interval: not a finite number: 'nan'"),
    ("--interval", "inf", "--interval: not a finite number: 'inf'"),
    ("--interval", "0", "--interval: must be from 0.01 to 60, got 0"),
    ("--interval", "1e-9", "--interval: must be from 0.01 to 60"),
    ("--children", "99999999999", "--children: must be from 1 to 10,000,000"),
    ("--retrievals", "99999999999999", "--retrievals: must be from 1 to 1,000"),
    ("--repeat", "100000", "--repeat: must be from 1 to 1,000"),
    ("--users", "0", "--users: must be from 1 to 1,000"),
    ("--seed", "1e400", "--seed: not an integer"),
    ("--fcrepo-heap", "nonsense", "--fcrepo-heap: not a JVM heap size"),
    ("--fcrepo-heap", "1k", "--fcrepo-heap: must be from 64m to 1t"),
    ("--system-url", "localhost:8080", "--system-url: not an http:// or https:// URL"),
    ("--budget", "0", "--budget: must be from 1s to 168h, got 0"),
    ("--budget", "0.5s", "--budget: must be from 1s to 168h, got 0.5s"),
    ("--budget", "8d", "--budget: not a duration (e.g. 90s, 20m, 1h30m, or seconds): '8d'"),
    ("--budget", "inf", "--budget: not a duration"),
    ("--budget", "nan", "--budget: not a duration"),
    ("--budget", "169h", "--budget: must be from 1s to 168h, got 169h"),
    ("--budget", "9" * 400, "--budget: not a finite duration"),
    ("--budget", "30s20m", "--budget: not a duration"),
    ("--checkpoints", "often", "--checkpoints: not an integer: 'often' (expected auto, none, or children"),
    ("--checkpoints", "0,1000", "--checkpoints: must be from 1 to 10,000,000, got 0"),
])
def test_run_refuses_a_value_out_of_range_in_one_line(tmp_path, option, value, expected):
    done = lakebench("run", *SMALL, "--out", str(tmp_path / "out"), option, value, cwd=tmp_path)
    assert expected in _refused(done)
    assert not (tmp_path / "out" / "results.json").exists()


def test_run_refuses_a_child_too_large_to_build(tmp_path):
    # Each within its own range, together 50,000 literals of 1 MiB in every child.
    done = lakebench("run", *SMALL, "--out", str(tmp_path), "--triples", "100000", "--literal-length", "1048576",
                     cwd=tmp_path)
    assert "literal characters" in _refused(done)


@pytest.mark.parametrize("argv, expected", [
    (["fcrepo", "--port", "70000"], "--port: must be from 1 to 65,535"),
    (["fcrepo", "--heap", "nonsense"], "--heap: not a JVM heap size"),
    (["fcrepo", "--timeout", "inf"], "--timeout: not a finite number"),
    (["lakesuperior", "--workers", "0"], "--workers: must be from 1 to 64"),
    (["lakesuperior", "--timeout", "nan"], "--timeout: not a finite number"),
])
def test_server_commands_refuse_a_value_out_of_range(tmp_path, argv, expected):
    # Options are checked before any action; 'status' keeps a value wrongly
    # accepted from starting a server (as 'start' would).
    command, *options = argv
    done = lakebench(command, "status", "--data", str(tmp_path / "data"), *options, cwd=tmp_path)
    assert expected in _refused(done, command)


def test_help_states_the_ranges():
    text = " ".join(lakebench("run", "--help").stdout.split())
    for stated in ("4 to 100,000", "1 to 1,048,576", "1 to 10,000,000", "0.01 to 60 s", "0 to 3,600 s",
                   "64m to 1t", "16,777,216 literal characters per child", "1s to 168h"):
        assert stated in text, stated


# -- a system that cannot be reached or started ----------------------------------------

def _one_failed_line(done: subprocess.CompletedProcess, out: Path, system: str) -> str:
    """The run's output: no traceback; the FAILED line names a log that holds the whole failure."""
    assert done.returncode == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr + done.stdout
    failed = [line for line in done.stdout.splitlines() if line.strip().startswith("FAILED:")]
    assert len(failed) == 1, done.stdout
    log = out / "logs" / f"{system}-0.log"
    assert failed[0].endswith(f"(log: {log})")
    assert "Traceback" in log.read_text(encoding="utf-8")  # kept, out of the way
    entry = json.loads((out / "results.json").read_text(encoding="utf-8"))["systems"][0]
    assert entry["status"] == "failed" and "\n" not in entry["error"] and entry["log"] == f"logs/{system}-0.log"
    assert f"{system}  " in done.stdout and "FAILED: " in done.stdout.split("Reference:")[1]  # the table's row
    return failed[0]


@pytest.mark.parametrize("system", ["ldp", "fcrepo"])
def test_unreachable_system_url_is_one_line_and_the_log(tmp_path, system):
    # Nobody listens on a port just found free; fcrepo given a URL starts no JVM.
    url = f"http://127.0.0.1:{free_port()}/rest/"
    done = lakebench("run", "--systems", system, "--system-url", url, "--children", "2", "--tail-seconds", "0",
                     "--quiet", "--out", str(tmp_path))
    line = _one_failed_line(done, tmp_path, system)
    assert "cannot connect (Connection refused)" in line


@pytest.mark.fcrepo
@pytest.mark.skipif(shutil.which("java") is None, reason="needs java to run Fedora")
def test_fedora_that_does_not_start_is_one_line_and_the_log(tmp_path):
    # A JVM option the JVM does not know: it exits at once, as with a bad heap size.
    env = {**os.environ, "JAVA_TOOL_OPTIONS": "-XX:+LakebenchNoSuchOption"}
    done = lakebench("run", "--systems", "fcrepo", "--children", "2", "--tail-seconds", "0", "--quiet",
                     "--out", str(tmp_path), env=env, timeout=600, limit_memory=False)
    line = _one_failed_line(done, tmp_path, "fcrepo")
    assert "exited with code 1 while starting" in line
    assert "LakebenchNoSuchOption" in (tmp_path / "logs" / "fcrepo-0.log").read_text(encoding="utf-8")
