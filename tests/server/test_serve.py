"""``lakebench serve``: start-up, shutdown, logging, binding (lakebench/server/__init__.py)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import psutil
import pytest

from .conftest import PACKAGE_ROOT, check_store, free_port

ACCESS_LINE = re.compile(r'"(GET|HEAD|PUT|POST|DELETE|OPTIONS) /\S* HTTP/1\.1" \d{3} ')


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": PACKAGE_ROOT}
    return subprocess.run([sys.executable, "-m", "lakebench.cli", "serve", *args], env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_sigterm_exits_0_quickly_with_a_kept_alive_connection(serve):
    server = serve("--workers", "2")
    conn = server.connection()
    assert server.request("GET", "/", connection=conn).status == 200  # stays open (keep-alive)
    started = time.monotonic()
    assert server.stop() == 0
    elapsed = time.monotonic() - started
    conn.close()
    assert elapsed < 6, f"took {elapsed:.1f} s to stop"
    assert "Shutting down" in server.log()
    # Several workers: one serves and writes with the log, the other parses bodies (said at start-up).
    assert "2 workers: one serves and writes" in server.log()


def test_sigterm_while_idle_is_fast(serve):
    server = serve()
    started = time.monotonic()
    assert server.stop() == 0
    assert time.monotonic() - started < 4


def test_data_survives_a_restart(serve, tmp_path):
    data = tmp_path / "store"
    server = serve("--durability", "durable", data=data)
    assert server.request("PUT", "/keep", '<> <http://e/p> "x" .', {"Content-Type": "text/turtle"}).status == 201
    etag = server.request("HEAD", "/keep").header("ETag")
    assert server.stop() == 0
    assert check_store(data) == []
    server = serve(data=data, port=server.port)  # same port: same IRIs
    r = server.request("GET", "/keep")
    assert r.status == 200 and b'"x"' in r.body and r.header("ETag") == etag


@pytest.mark.parametrize("durability", ["durable", "nosync"])
def test_a_clean_stop_commits_the_write_batch(serve, tmp_path, durability):
    from lakebench.store import LmdbStore

    data = tmp_path / "store"
    server = serve("--durability", durability, data=data)
    for k in range(3):
        assert server.request("PUT", f"/kept{k}", '<> <http://e/p> "x" .',
                              {"Content-Type": "text/turtle"}).status == 201
    assert os.path.getsize(data / "wal") > 0  # acknowledged through the log
    assert server.stop() == 0
    assert os.path.getsize(data / "wal") == 0, server.log()  # committed to data.mdb at the worker's exit
    with LmdbStore(data, readonly=True) as store:  # a read-only open refuses a store that needs recovery
        assert store.count(p="http://e/p") == 3


@pytest.mark.parametrize("worker_class, keep_alive", [("gthread", True), ("sync", False)])
def test_other_worker_classes_serve_and_commit_at_a_clean_stop(serve, tmp_path, worker_class, keep_alive):
    from lakebench.store import LmdbStore

    data = tmp_path / "store"
    server = serve("--worker-class", worker_class, data=data)
    assert server.request("PUT", "/w", '<> <http://e/p> "x" .', {"Content-Type": "text/turtle"}).status == 201
    r = server.request("GET", "/w")
    assert r.status == 200 and b'"x"' in r.body
    assert (r.header("Connection") == "close") is not keep_alive  # sync closes after every response
    assert server.stop() == 0
    assert f"Using worker: Lakebench{worker_class.title()}Worker" in server.log()
    # gthread's one thread holds the write batch: it commits there, not on the main thread.
    assert os.path.getsize(data / "wal") == 0, server.log()
    assert "Traceback" not in server.log()
    with LmdbStore(data, readonly=True) as store:
        assert store.count(p="http://e/p") == 1


@pytest.mark.parametrize("access_log", [False, True])
def test_access_log_only_when_asked(serve, access_log):
    server = serve(*(["--access-log"] if access_log else []))
    for method, path in (("GET", "/"), ("HEAD", "/"), ("OPTIONS", "/"), ("GET", "/missing")):
        server.request(method, path)
    assert server.stop() == 0
    lines = [line for line in server.log().splitlines() if ACCESS_LINE.search(line)]
    if access_log:
        # One line per request: the readiness probe of the fixture, then our four.
        assert len(lines) == 5, lines
        assert [ACCESS_LINE.search(line).group(1) for line in lines[-4:]] == ["GET", "HEAD", "OPTIONS", "GET"]
        assert '"GET /missing HTTP/1.1" 404' in lines[-1]
    else:
        assert lines == []


def test_listens_on_loopback_only_by_default(serve):
    server = serve()
    listening = [c.laddr for c in psutil.Process(server.proc.pid).net_connections(kind="inet")
                 if c.status == psutil.CONN_LISTEN]
    assert listening and all(addr.ip == "127.0.0.1" for addr in listening), listening
    assert f"Listening at: http://127.0.0.1:{server.port}" in server.log()


@pytest.mark.parametrize("args", [["--workers", "0"], ["--port", "0"], ["--port", "70000"],
                                  ["--max-body", "-1"], ["--max-binary", "-1"], ["--durability", "sometimes"],
                                  ["--client-timeout", "0"], ["--client-timeout", "nan"],
                                  ["--client-timeout", "inf"], ["--max-connections", "0"],
                                  ["--worker-class", "eventlet"], ["--worker-class", "sync", "--client-timeout", "5"],
                                  ["--worker-class", "sync", "--max-connections", "5"],
                                  ["--worker-class", "gthread", "--workers", "2"]])
def test_bad_arguments_exit_2(tmp_path, args):
    result = run_cli("--data", str(tmp_path / "d"), *args)
    assert result.returncode == 2, result
    assert "error" in result.stderr


def test_unusable_data_directory_is_an_error_not_a_traceback(tmp_path):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    not_a_store = tmp_path / "junk"
    not_a_store.mkdir()
    (not_a_store / "data.mdb").write_text("not lmdb")
    for data in (not_a_dir, not_a_store):
        result = run_cli("--data", str(data), "--port", str(free_port()))
        assert result.returncode == 1, result
        assert result.stderr.startswith("lakebench serve: error:") and "Traceback" not in result.stderr
