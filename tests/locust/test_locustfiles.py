"""Tests for locustfiles/ and lakebench.locust: the workload through Locust.

Importing Locust monkey-patches a process with gevent, so this module never
imports it: Locust runs in subprocesses (``python -m locust -f ...`` and a
``python -c`` for the library entry point).  A small fake LDP server (a
thread here) checks failures and links without Java; the tests marked
``fcrepo`` run against a real Fedora 4.7.5 started once for the module.
"""
from __future__ import annotations

import csv
import http.server
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
INGEST = ROOT / "locustfiles" / "ingest.py"
RETRIEVE = ROOT / "locustfiles" / "retrieve.py"

needs_locust = pytest.mark.skipif(importlib.util.find_spec("locust") is None,
                                  reason="needs locust (pip install locust)")
needs_java = pytest.mark.skipif(shutil.which("java") is None, reason="needs java to run Fedora")


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def run_locust(locustfile: Path, host: str, *args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "locust", "-f", str(locustfile), "--host", host, "--headless", *args]
    return subprocess.run(cmd, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout)


def csv_counts(path: Path) -> dict[tuple[str, str], tuple[int, int]]:
    """(Type, Name) -> (requests, failures) from Locust's ``*_stats.csv``."""
    with open(path, newline="") as f:
        return {(row["Type"], row["Name"]): (int(row["Request Count"]), int(row["Failure Count"]))
                for row in csv.DictReader(f)}


GETS = [("GET", "GET parent (full)"), ("GET", "GET parent (omit containment)"),
        ("GET", "GET parent (minimal container)")]


# -- a fake LDP server: failures and links, without Java ------------------------

class FakeLdp(http.server.BaseHTTPRequestHandler):
    """PUT/HEAD/GET under /rest/; every child whose index % 7 == 3 is refused with 500."""

    protocol_version = "HTTP/1.1"
    LINK = re.compile(rb"<\.\./([\w-]+)/(c\d{8})>")

    def log_message(self, *args):
        pass

    def _reply(self, status: int, body: bytes = b"", content_type: str = "text/plain") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self):
        with self.server.lock:
            exists = self.path in self.server.resources
        self._reply(200 if exists else 404)

    def do_PUT(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        match = re.fullmatch(r"/rest/([\w-]+)/c(\d{8})", self.path)
        with self.server.lock:
            if match is None:  # the parent
                self.server.resources[self.path] = []
                return self._reply(201)
            index = int(match.group(2))
            for parent, slug in self.LINK.findall(body):
                if f"/rest/{parent.decode()}/{slug.decode()}" not in self.server.resources:
                    self.server.dangling.append((index, slug.decode()))
            if index % 7 == 3:
                return self._reply(500, b"refused on purpose")
            self.server.resources[self.path] = []
            self.server.resources[f"/rest/{match.group(1)}"].append(f"c{match.group(2)}")
        self._reply(201)

    def do_GET(self):
        with self.server.lock:
            children = self.server.resources.get(self.path)
        if children is None:
            return self._reply(404)
        lines = [f"<> <http://www.w3.org/ns/ldp#contains> <{self.path.rsplit('/', 1)[1]}/{c}> ." for c in children]
        if "PreferContainment" in self.headers.get("Prefer", "") or "Minimal" in self.headers.get("Prefer", ""):
            lines = []
        self._reply(200, ("\n".join(lines) + "\n").encode(), "text/turtle")


@pytest.fixture
def fake_ldp():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeLdp)
    server.daemon_threads = True
    server.lock = threading.Lock()
    server.resources = {}
    server.dangling = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server, f"http://127.0.0.1:{server.server_address[1]}/rest/"
    finally:
        server.shutdown()
        server.server_close()


@needs_locust
def test_failed_puts_are_locust_failures_and_links_only_to_created(fake_ldp, tmp_path):
    server, base = fake_ldp
    n = 40
    done = run_locust(INGEST, base, "-u", "3", "-r", "3", "--children", str(n), "--parent", "fk",
                      "--csv", "fk", "--lakebench-out", "fk.json", cwd=tmp_path)
    assert done.returncode == 1, done.stderr[-3000:]  # Locust's exit code when requests failed
    refused = [k for k in range(n) if k % 7 == 3]
    counts = csv_counts(tmp_path / "fk_stats.csv")
    assert counts[("PUT", "PUT child")] == (n, len(refused))
    doc = json.loads((tmp_path / "fk.json").read_text())
    assert doc["complete"] and doc["created"] == n - len(refused)
    assert sorted(r["index"] for r in doc["failures"]) == refused
    assert all(r["status"] == 500 for r in doc["failures"])
    assert sorted(r["index"] for r in doc["requests"]) == list(range(n))
    assert doc["retrievals"]["full"]["contains"] == n - len(refused)
    assert server.dangling == []  # every internal link named a child that existed


@needs_locust
@pytest.mark.alone  # the read mix runs for 2 s: GETs of children within them
def test_forked_workers_share_one_dispenser_then_the_read_mix(fake_ldp, tmp_path):
    """Master and two workers (``--processes 2``) send each index once; then the read mix reads what exists."""
    server, base = fake_ldp
    n = 30
    done = run_locust(INGEST, base, "-u", "2", "-r", "2", "--processes", "2", "--children", str(n), "--parent", "pw",
                      "--csv", "pw", "--lakebench-out", "pw.json", cwd=tmp_path)
    assert done.returncode == 1, done.stderr[-3000:]  # the refused children are failures
    refused = [k for k in range(n) if k % 7 == 3]
    assert csv_counts(tmp_path / "pw_stats.csv")[("PUT", "PUT child")] == (n, len(refused))
    doc = json.loads((tmp_path / "pw.json").read_text())
    assert doc["mode"] == "master" and doc["complete"]
    assert sorted(r["index"] for r in doc["requests"]) == list(range(n))
    assert all("node" in r for r in doc["requests"])
    assert doc["retrievals"]["full"]["contains"] == n - len(refused)
    assert server.dangling == []

    reads = run_locust(RETRIEVE, base, "-u", "2", "-r", "2", "-t", "2s", "--parent", "pw", "--csv", "rd",
                       cwd=tmp_path, timeout=60)
    assert reads.returncode == 0, reads.stderr[-3000:]
    got, failed = csv_counts(tmp_path / "rd_stats.csv")[("GET", "GET child")]
    assert got > 0 and failed == 0


# -- against a real Fedora ------------------------------------------------------

@pytest.fixture(scope="module")
def fedora(fedora_server):
    return fedora_server()


def containment(base_url: str, parent: str) -> int:
    import urllib3

    from lakebench.runner import count_containment
    from lakebench.systems.base import Retrieval

    url = base_url + parent
    resp = urllib3.request("GET", url, headers={"Accept": "text/turtle"}, retries=False)
    assert resp.status == 200
    return count_containment(Retrieval(body=resp.data, parent_uri=url,
                                       content_type=resp.headers.get("Content-Type", "text/turtle")))


@pytest.mark.fcrepo
@needs_java
@needs_locust
@pytest.mark.alone  # the read mix runs for 2 s: GETs of children within them
def test_ingest_headless_against_fedora(fedora, tmp_path):
    n = 30
    done = run_locust(INGEST, fedora.base_url, "-u", "3", "-r", "3", "--children", str(n), "--parent", "lc",
                      "--csv", "lc", "--html", "lc.html", "--lakebench-out", "lc.json",
                      "--server-pid", str(fedora.pid), "--data-dir", str(fedora.home),
                      "--monitor-interval", "0.25", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert containment(fedora.base_url, "lc") == n
    counts = csv_counts(tmp_path / "lc_stats.csv")
    assert counts[("PUT", "PUT child")] == (n, 0)
    for key in GETS:
        assert counts[key] == (1, 0)
    assert (tmp_path / "lc.html").stat().st_size > 0
    doc = json.loads((tmp_path / "lc.json").read_text())
    assert doc["complete"] and doc["created"] == n and doc["users"] == 3
    assert len(doc["latencies"]) == n and all(s > 0 for s in doc["latencies"])
    ends = [r["end"] for r in doc["requests"]]
    assert ends == sorted(ends)  # completion order
    assert doc["retrievals"]["full"]["contains"] == n
    assert doc["retrievals"]["omit_containment"]["contains"] == 0
    assert doc["retrievals"]["minimal"]["contains"] == 0
    assert doc["samples"] and doc["samples"][-1]["rss_bytes"] > 100_000_000  # the JVM
    assert doc["samples"][-1]["disk_bytes"] > 0

    # The same parent again is refused at once, clearly.
    again = run_locust(INGEST, fedora.base_url, "-u", "1", "-r", "1", "--children", "3", "--parent", "lc",
                       cwd=tmp_path, timeout=60)
    assert again.returncode != 0
    assert "already exists" in again.stderr
    assert containment(fedora.base_url, "lc") == n

    # The read mix on what was just created.
    reads = run_locust(RETRIEVE, fedora.base_url, "-u", "2", "-r", "2", "-t", "2s", "--parent", "lc",
                       "--csv", "rd", cwd=tmp_path, timeout=60)
    assert reads.returncode == 0, reads.stderr[-3000:]
    counts = csv_counts(tmp_path / "rd_stats.csv")
    assert counts[("GET", "GET child")][0] > 0 and counts[("GET", "GET child")][1] == 0


@pytest.mark.alone  # locust's processes against Fedora within a time limit, which other workers' load stretches
@pytest.mark.fcrepo
@needs_java
@needs_locust
def test_ingest_with_processes_creates_exactly_n(fedora, tmp_path):
    n = 30
    done = run_locust(INGEST, fedora.base_url, "-u", "3", "-r", "3", "--processes", "2", "--children", str(n),
                      "--parent", "pr", "--csv", "pr", "--lakebench-out", "pr.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert containment(fedora.base_url, "pr") == n
    counts = csv_counts(tmp_path / "pr_stats.csv")
    assert counts[("PUT", "PUT child")] == (n, 0)
    for key in GETS:
        assert counts[key] == (1, 0)
    doc = json.loads((tmp_path / "pr.json").read_text())
    assert doc["mode"] == "master"
    assert sorted(r["index"] for r in doc["requests"]) == list(range(n))
    # Both workers took part (a worker that re-registers after a missed
    # heartbeat on a loaded machine comes back under a new id, hence >=).
    assert len({r["node"] for r in doc["requests"]}) >= 2


LIBRARY_RUN = """
import json, sys
from lakebench.locust import LoadTestError
from lakebench.locust.driver import ingest_with_locust
from lakebench.dataset import DataSet
base, pid = sys.argv[1], int(sys.argv[2])
r = ingest_with_locust(base, DataSet(children=20, seed=3, parent="lib"), users=2, server_pid=pid,
                       monitor_interval=0.25)
out = {"latencies": r["latencies"], "failures": r["failures"], "samples": len(r["samples"]),
       "retrievals": {k: {"bytes": v["bytes"], "body": len(v["body"]), "contains": v["contains"],
                          "seconds": v["seconds"]} for k, v in r["retrievals"].items()}}
try:
    ingest_with_locust(base, DataSet(children=2, parent="lib"))
except LoadTestError as exc:
    out["again"] = str(exc)
print(json.dumps(out))
"""


@pytest.mark.fcrepo
@needs_java
@needs_locust
def test_library_entry_point(fedora, tmp_path):
    done = subprocess.run([sys.executable, "-c", LIBRARY_RUN, fedora.base_url, str(fedora.pid)],
                          cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(out["latencies"]) == 20 and out["failures"] == []
    assert set(out["retrievals"]) == {"full", "omit_containment", "minimal"}
    assert out["retrievals"]["full"]["contains"] == 20
    assert all(v["body"] == v["bytes"] > 0 and v["seconds"] > 0 for v in out["retrievals"].values())
    assert out["samples"] > 0
    assert "already exists" in out["again"]
    assert containment(fedora.base_url, "lib") == 20
