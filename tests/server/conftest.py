"""Fixtures of the server tests.

Two ways to reach the server:

* ``serve(...)`` starts a real ``lakebench serve`` (gunicorn) in a
  subprocess, on a free loopback port, with a fresh data directory, and
  stops it with SIGTERM at the end of the test (``server`` is one such,
  shared by a module); the process is a :class:`lakebench.process.ServerProcess`;
* ``repository`` / ``wsgi`` drive :class:`Repository` and the WSGI
  application in-process, for what needs no sockets.
"""
from __future__ import annotations

import http.client
import io
import os
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import lakebench
from lakebench.process import ServerProcess, free_port  # noqa: F401 - the tests import free_port from here
from lakebench.server.app import LdpApplication
from lakebench.server.repository import LDP, Repository

#: The directory holding the ``lakebench`` package the tests import, so the
#: subprocess runs the same code.
PACKAGE_ROOT = str(Path(lakebench.__file__).resolve().parent.parent)
TEST_BASE = "http://test.example/"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
LDP_CONTAINS = LDP + "contains"
FEDORA = "http://fedora.info/definitions/v4/repository#"
#: The dates the server keeps of every resource.
SERVER_DATES = (FEDORA + "created", FEDORA + "lastModified")


@dataclass
class Response:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    def header(self, name: str) -> str | None:
        return self.headers.get(name)


class Server:
    """One ``lakebench serve`` subprocess (its own session)."""

    def __init__(self, data: Path, log: Path, *args: str, port: int | None = None):
        self.data = Path(data)
        self.log_path = Path(log)
        self.args = list(args)
        self.port = port or free_port()
        self.proc: ServerProcess | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self, timeout: float = 30.0) -> "Server":
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [PACKAGE_ROOT, env.get("PYTHONPATH")]))
        env.pop("PYTHONWARNINGS", None)
        self.proc = ServerProcess.start(
            [sys.executable, "-m", "lakebench.cli", "serve", "--data", str(self.data), "--port", str(self.port),
             *self.args], self.log_path, env=env, append=True, detach=True)
        self.proc.wait_ready(self.base, timeout, what="lakebench serve", interval=0.1)
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.is_running()

    def stop(self, timeout: float = 20.0) -> int:
        """SIGTERM to gunicorn's master (SIGKILL for what is left after ``timeout``); its exit code."""
        assert self.proc is not None
        return self.proc.stop(timeout)

    def kill(self) -> None:
        """SIGKILL the master and its workers at once; returns when none is left holding the store."""
        if self.proc is not None:
            self.proc.kill()

    # -- requests ----------------------------------------------------------
    def connection(self, timeout: float = 30.0) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method: str, path: str, body: bytes | str | None = None,
                headers: dict | None = None, timeout: float = 30.0,
                connection: http.client.HTTPConnection | None = None) -> Response:
        """One request (on ``connection``, else a new one); the path is sent as is."""
        conn = connection or self.connection(timeout)
        try:
            if isinstance(body, str):
                body = body.encode("utf-8")
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            return Response(resp.status, resp.headers, resp.read())
        finally:
            if connection is None:
                conn.close()

    def raw(self, data: bytes, *, shutdown: bool = False, timeout: float = 30.0) -> Response:
        """Send ``data`` verbatim on a new connection (half-closed if ``shutdown``)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as sock:
            sock.sendall(data)
            if shutdown:
                sock.shutdown(socket.SHUT_WR)
            resp = http.client.HTTPResponse(sock, method=data.split(b" ", 1)[0].decode())
            resp.begin()
            return Response(resp.status, resp.headers, resp.read())


@pytest.fixture
def serve(tmp_path):
    """``serve(*args, data=None, port=None)``: a started server; all stopped at the end."""
    pytest.importorskip("gunicorn")
    servers: list[Server] = []

    def start(*args: str, data: Path | None = None, port: int | None = None) -> Server:
        n = len(servers)
        server = Server(data or tmp_path / f"data{n}", tmp_path / f"serve{n}.log", *args, port=port)
        servers.append(server)
        return server.start()

    yield start
    for server in servers:
        if server.running:
            server.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One server (nosync) shared by a test module; tests use distinct paths."""
    pytest.importorskip("gunicorn")
    tmp = tmp_path_factory.mktemp("server")
    srv = Server(tmp / "data", tmp / "serve.log", "--durability", "nosync").start()
    yield srv
    if srv.running:
        srv.stop()


# -- in-process ---------------------------------------------------------------
@pytest.fixture
def repository(tmp_path):
    repo = Repository(tmp_path / "store", TEST_BASE, durability="nosync")
    yield repo
    repo.close()


@dataclass
class WsgiResponse:
    status: int
    headers: dict
    iterable: object = field(repr=False)

    @property
    def body(self) -> bytes:
        try:
            return b"".join(self.iterable)
        finally:
            if hasattr(self.iterable, "close"):
                self.iterable.close()


def call(app, method: str, path: str, body: bytes = b"", headers: dict | None = None) -> WsgiResponse:
    """Call the WSGI application as a server would; the body is left unread."""
    raw, (path, _, query) = path, path.partition("?")
    environ = {
        "REQUEST_METHOD": method, "PATH_INFO": path, "RAW_URI": raw, "QUERY_STRING": query,
        "SERVER_NAME": "test.example", "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.input": io.BytesIO(body), "wsgi.url_scheme": "http", "wsgi.errors": sys.stderr,
        "CONTENT_LENGTH": str(len(body)) if body else "",
    }
    for name, value in (headers or {}).items():
        key = name.upper().replace("-", "_")
        environ[key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else "HTTP_" + key] = value
    captured = {}

    def start_response(status, headers, exc_info=None):
        captured["status"] = int(status.split()[0])
        captured["headers"] = {k.lower(): v for k, v in headers}

    iterable = app(environ, start_response)
    return WsgiResponse(captured["status"], captured["headers"], iterable)


@pytest.fixture
def wsgi(repository):
    """``wsgi(method, path, body=b"", headers=None)`` against the app over ``repository``."""
    app = LdpApplication(lambda: repository, max_body=1 << 20)
    return lambda *a, **k: call(app, *a, **k)


# -- checks -----------------------------------------------------------------------
def check_store(path) -> list[str]:
    """The store's own consistency check, on a read-only open; [] when consistent."""
    try:
        from lakebench.store import check
    except ImportError:  # the facade is not there: the core's check directly
        check = None
    if check is not None:
        return list(check(path))
    from lakebench import _store

    env = _store.Environment(path, readonly=True, map_size=0)
    try:
        with env.begin() as txn:
            problems, _summary = txn.check()
        return list(problems)
    finally:
        env.close()


def graph_of(body: bytes, content_type: str, base: str | None = None):
    """An rdflib Graph of a response body."""
    import rdflib

    fmt = {"text/turtle": "turtle", "application/n-triples": "nt",
           "application/ld+json": "json-ld"}[content_type.split(";")[0].strip()]
    return rdflib.Graph().parse(data=body, format=fmt, publicID=base)


def user_triples(graph):
    """The graph without the server-managed triples (LDP types, ldp:contains, dates)."""
    import rdflib

    out = rdflib.Graph()
    for s, p, o in graph:
        if str(p) in (LDP_CONTAINS, *SERVER_DATES) or (str(p) == RDF_TYPE and str(o).startswith(LDP)):
            continue
        out.add((s, p, o))
    return out


def contained(server: Server, path: str) -> list[str]:
    """The objects of the container's ldp:contains, in N-Triples, duplicates kept."""
    resp = server.request("GET", path, headers={"Accept": "application/n-triples"})
    assert resp.status == 200, resp
    out = []
    for line in resp.body.decode().splitlines():
        if f"<{LDP_CONTAINS}>" in line:
            out.append(line.split(f"<{LDP_CONTAINS}>")[1].strip().rstrip(".").strip()[1:-1])
    return out
