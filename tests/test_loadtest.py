"""Tests for lakebench.loadtest and locustfiles/: the workload through Locust.

Importing Locust monkey-patches a process with gevent, so this module never
imports it: Locust runs in subprocesses (``python -m locust -f ...`` and a
``python -c`` for the library entry point).  The dispenser is tested as
plain Python.  A small fake LDP server (a thread here) checks failures and
links without Java; the tests marked ``fcrepo`` run against a real Fedora
4.7.5 started once for the module.
"""
from __future__ import annotations

import csv
import http.server
import importlib.util
import json
import os
import random
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from lakebench.loadtest import BlockQueue, IndexDispenser, Ledger, LoadTestError, block_size

ROOT = Path(__file__).resolve().parent.parent
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


# -- the dispenser, without any server ------------------------------------------

def test_dispenser_hands_out_each_index_once():
    d = IndexDispenser(10)
    got = [list(d.take(n)) for n in (3, 0, 4, 5, 2)]
    assert got == [[0, 1, 2], [], [3, 4, 5, 6], [7, 8, 9], []]
    assert d.remaining == 0


def test_block_size_is_guided_and_capped():
    assert block_size(1000, consumers=2, want=8) == 8
    assert block_size(10, consumers=2, want=8) == 3  # ceil(10 / 4)
    assert block_size(1, consumers=5, want=8) == 1
    assert block_size(1000, consumers=1, want=500, cap=16) == 16
    assert block_size(1000, consumers=1, want=0) == 1


@pytest.mark.parametrize("first_alone", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_ledger_with_several_consumers_no_duplicates_no_gaps(seed, first_alone):
    """Workers ask for blocks and complete indices in a random interleaving."""
    rng = random.Random(seed)
    total = 137
    ledger = Ledger(total, cap=rng.choice([0, 5]), first_alone=first_alone)
    queues = [BlockQueue() for _ in range(4)]
    in_flight: list[int] = []
    finished_calls = 0
    created: list[int] = []
    while not ledger.finished:
        i = rng.randrange(len(queues))
        q = queues[i]
        if in_flight and rng.random() < 0.5:  # some PUT completes
            index = in_flight.pop(rng.randrange(len(in_flight)))
            created.append(index)
            finished_calls += ledger.complete({"index": index, "ok": True})
            continue
        index = q.pop()
        if index is None and not q.exhausted:
            block = ledger.grant(want=rng.randint(1, 6), consumers=len(queues))
            if block is None:  # the first child is out alone: nothing else may start
                assert first_alone and in_flight == [0] and not created
                continue
            q.add(block)
            index = q.pop()
        if index is not None:
            in_flight.append(index)
    assert finished_calls == 1  # exactly one completion was the last
    assert sorted(created) == list(range(total))
    assert len(ledger.records) == total
    assert all(len(q.queue) == 0 for q in queues)  # nothing granted was left unused
    assert ledger.grant(want=10) == range(0)


def test_first_alone_holds_every_grant_until_the_first_completes():
    ledger = Ledger(10, first_alone=True)
    assert ledger.grant(want=5) == range(0, 1)
    assert ledger.grant(want=5) is None and ledger.waiting
    ledger.complete({"index": 0})
    assert ledger.grant(want=5) == range(1, 6)
    assert not ledger.waiting
    one = Ledger(1, first_alone=True)
    assert one.grant() == range(0, 1) and one.grant() is None
    one.complete({"index": 0})
    assert one.grant() == range(0)  # exhausted, not waiting


def test_ledger_refuses_duplicate_and_unknown_completions():
    ledger = Ledger(3)
    ledger.grant(2)
    ledger.complete({"index": 0})
    with pytest.raises(LoadTestError, match="twice"):
        ledger.complete({"index": 0})
    with pytest.raises(LoadTestError, match="without being granted"):
        ledger.complete({"index": 2})


def test_aborted_ledger_grants_nothing():
    ledger = Ledger(5)
    ledger.abort("parent exists")
    assert ledger.grant(3) == range(0)


def test_block_queue_marks_exhaustion():
    q = BlockQueue()
    q.add(range(4, 6))
    assert (q.pop(), q.pop(), q.pop(), q.exhausted) == (4, 5, None, False)
    q.add(range(0))
    assert q.exhausted


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


# -- against a real Fedora ------------------------------------------------------

@pytest.fixture(scope="module")
def fedora(tmp_path_factory):
    from lakebench import fcrepo

    with fcrepo.start(data_dir=tmp_path_factory.mktemp("fedora")) as server:
        yield server


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
from lakebench.loadtest import LoadTestError, ingest_with_locust
from lakebench.workload import Workload
base, pid = sys.argv[1], int(sys.argv[2])
r = ingest_with_locust(base, Workload(children=20, seed=3, parent="lib"), users=2, server_pid=pid,
                       monitor_interval=0.25)
out = {"latencies": r["latencies"], "failures": r["failures"], "samples": len(r["samples"]),
       "retrievals": {k: {"bytes": v["bytes"], "body": len(v["body"]), "contains": v["contains"],
                          "seconds": v["seconds"]} for k, v in r["retrievals"].items()}}
try:
    ingest_with_locust(base, Workload(children=2, parent="lib"))
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


@needs_locust
def test_client_ceiling_runs(tmp_path):
    done = subprocess.run([sys.executable, "-m", "lakebench.loadtest", "ceiling", "--seconds", "1", "--user", "fast"],
                          cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["user"] == "FastHttpUser" and got["failures"] == 0
    assert got["requests_per_second"] > 100 and got["client_cpu_us_per_request"] > 0


def test_doctests_of_loadtest():
    import doctest

    import lakebench.loadtest

    result = doctest.testmod(lakebench.loadtest)
    assert result.attempted > 0 and result.failed == 0
