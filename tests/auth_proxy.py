"""A real server that needs HTTP Basic credentials, for the tests of credentials and TLS.

``lakebench serve`` on a loopback port, behind a small threaded HTTP proxy
(``http.server``) that answers 401 to any request without the expected
``Authorization`` header and forwards the others; optionally over TLS, with
a certificate signed by a CA made for the test (:func:`make_ca`, with the
``openssl`` command).  Each time it forwards a request, the proxy also
reads the command line of every process of the machine (``/proc/*/cmdline``:
what ``ps`` shows), so a test can assert that the password was in none of
them while lakebench's processes were sending it.
"""
from __future__ import annotations

import base64
import http.client
import http.server
import os
import shutil
import ssl
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from lakebench.process import ServerProcess, free_port

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
              "proxy-authorization", "proxy-authenticate", "content-length"}


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@dataclass
class Tally:
    """What the proxy saw: requests refused and forwarded, and command lines holding a secret."""

    refused: int = 0
    forwarded: int = 0
    argv_scans: int = 0
    argv_hits: list = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reset(self) -> None:
        with self.lock:
            self.refused = self.forwarded = self.argv_scans = 0
            self.argv_hits = []


def command_lines_holding(secrets: list[bytes]) -> list[str]:
    """The command lines (``/proc/PID/cmdline``) of this machine's processes that hold one of ``secrets``."""
    hits = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read()
        except OSError:  # gone, or not ours to read
            continue
        if any(secret in argv for secret in secrets):
            hits.append(f"{pid}: {argv[:200]!r}")
    return hits


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _handle(self) -> None:
        server = self.server
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if self.headers.get("Authorization") != server.expected:
            with server.tally.lock:
                server.tally.refused += 1
            message = b"credentials needed"
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="lakebench test"')
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(message)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(message)
            return
        hits = command_lines_holding(server.secrets)  # while the client that sent them runs
        with server.tally.lock:
            server.tally.forwarded += 1
            server.tally.argv_scans += 1
            server.tally.argv_hits += hits
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP | {"authorization", "host"}}
        upstream = http.client.HTTPConnection("127.0.0.1", server.upstream_port, timeout=120)
        try:
            upstream.request(self.command, self.path, body=body if length else None, headers=headers)
            response = upstream.getresponse()
            data = response.read()
        finally:
            upstream.close()
        self.send_response(response.status)
        for key, value in response.getheaders():
            if key.lower() not in HOP_BY_HOP:
                self.send_header(key, value)
        self.send_header("Content-Length", response.getheader("Content-Length", "0") if self.command == "HEAD"
                         else str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_HEAD = do_PUT = do_POST = do_PATCH = do_DELETE = do_OPTIONS = _handle


@dataclass
class AuthServer:
    """``lakebench serve`` behind the proxy: ``url`` (the proxy's), ``user``, ``password``, ``tally``."""

    url: str
    user: str
    password: str
    tally: Tally
    proxy: http.server.ThreadingHTTPServer
    serve: ServerProcess

    @property
    def secrets(self) -> list[bytes]:
        """What must appear nowhere: the password, and the header that carries it."""
        return [self.password.encode(), basic(self.user, self.password).split()[1].encode()]

    def stop(self) -> None:
        self.proxy.shutdown()
        self.proxy.server_close()
        self.serve.stop(timeout=30)


def start_auth_server(data_dir: Path, user: str, password: str, tls: tuple[Path, Path] | None = None) -> AuthServer:
    """Start ``lakebench serve`` on ``data_dir`` and the proxy before it (``tls``: the proxy's certificate
    chain and key, for https)."""
    proxy = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    proxy.daemon_threads = True
    if tls is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(tls[0]), str(tls[1]))
        proxy.socket = context.wrap_socket(proxy.socket, server_side=True)
    url = f"{'https' if tls else 'http'}://127.0.0.1:{proxy.server_address[1]}/"
    port = free_port()
    serve = ServerProcess.start(
        [sys.executable, "-m", "lakebench.cli", "serve", "--data", str(data_dir / "store"), "--host", "127.0.0.1",
         "--port", str(port), "--durability", "nosync", "--base-url", url],
        data_dir / "serve.log")
    serve.wait_ready(f"http://127.0.0.1:{port}/", 60, what="lakebench serve", interval=0.1)
    tally = Tally()
    proxy.expected = basic(user, password)
    proxy.upstream_port = port
    proxy.tally = tally
    server = AuthServer(url, user, password, tally, proxy, serve)
    proxy.secrets = server.secrets
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    return server


def make_ca(directory: Path) -> tuple[Path, Path, Path] | None:
    """A CA made for the test and a certificate it signed for 127.0.0.1 and localhost:
    ``(ca.pem, server chain .pem, server key)``; None when the ``openssl`` command is missing."""
    openssl = shutil.which("openssl")
    if openssl is None:
        return None
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, ca, key, csr, cert = (directory / n for n in ("ca.key", "ca.pem", "server.key", "server.csr", "server.pem"))
    ext = directory / "server.ext"
    ext.write_text("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
                   "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n"
                   "authorityKeyIdentifier=keyid\nsubjectKeyIdentifier=hash\n")

    def run(*args: str) -> None:
        subprocess.run([openssl, *args], check=True, capture_output=True)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(ca_key), "-out", str(ca), "-days", "2",
        "-subj", "/CN=lakebench test CA", "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign", "-addext", "subjectKeyIdentifier=hash")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr), "-subj", "/CN=127.0.0.1")
    run("x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial", "-out", str(cert),
        "-days", "2", "-sha256", "-extfile", str(ext))
    return ca, cert, key


def files_holding(root: Path, secrets: list[bytes]) -> list[str]:
    """Every file under ``root`` that holds one of ``secrets``, and which (the test's failure says where)."""
    hits = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        data = path.read_bytes()
        hits += [f"{path}: {secret[:3]!r}..." for secret in secrets if secret in data]
    return hits
