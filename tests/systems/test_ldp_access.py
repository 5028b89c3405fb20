"""Credentials and TLS for a server lakebench does not start (``--system-url``).

The end-to-end tests run ``lakebench run --systems ldp`` as a user would (a
subprocess), against ``lakebench serve`` behind a proxy that needs HTTP Basic
credentials (:mod:`tests.auth_proxy`), with both drivers; each then looks for
the password, and the header carrying it, in everything the run left: its
output, results.json, latencies.csv, the logs, the report, and the command
line of every process while the requests were being sent.
"""
from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from lakebench.systems.base import (NO_ACCESS, PASSWORD_VARIABLE, USER_VARIABLE, WORKER_VARIABLE, HttpAccess,
                                    netrc_credentials)
from tests.auth_proxy import files_holding, make_ca, start_auth_server

ROOT = Path(__file__).resolve().parents[2]
USER = "bench-user"


def _environment(**variables: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in (USER_VARIABLE, PASSWORD_VARIABLE, WORKER_VARIABLE)}
    env["PYTHONPATH"] = str(ROOT)
    env.update({k: v for k, v in variables.items() if v is not None})
    return env


def lakebench_run(url: str, out: Path, driver: str, *extra: str, env: dict) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "lakebench.cli", "run", "--systems", "ldp", "--system-url", url,
            "--children", "30", "--parent", f"p-{out.name}", "--out", str(out), "--tail-seconds", "0",
            "--interval", "0.2", "--quiet", "--driver", driver, *(["--users", "2"] if driver == "locust" else []),
            *extra]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, cwd=out.parent)


def failure_line(done: subprocess.CompletedProcess) -> str:
    """The one line the run printed for its failed system as it failed (the table repeats it)."""
    (line,) = [line for line in done.stdout.splitlines() if line.strip().startswith("FAILED:")]
    return line


def assert_nowhere(server, out: Path, done: subprocess.CompletedProcess, *more: bytes) -> None:
    """Neither the password nor its header in the run's output, its files, the report, or any argv."""
    found = files_holding(out, server.secrets + list(more))
    for secret in server.secrets + list(more):
        for name, text in (("stdout", done.stdout), ("stderr", done.stderr)):
            if secret.decode() in text:
                found.append(f"{name}: {secret[:3]!r}...")
    assert found == []
    assert server.tally.argv_hits == []


@pytest.fixture(scope="module")
def auth_server(tmp_path_factory):
    password = "pw-" + secrets.token_hex(12)
    server = start_auth_server(tmp_path_factory.mktemp("auth-serve"), USER, password)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def ca_files(tmp_path_factory):
    made = make_ca(tmp_path_factory.mktemp("ca"))
    if made is None:
        pytest.skip("needs the openssl command to make a CA (cryptography and trustme are not installed)")
    return made


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory, ca_files):
    ca, cert, key = ca_files
    password = "pw-" + secrets.token_hex(12)
    server = start_auth_server(tmp_path_factory.mktemp("tls-serve"), USER, password, tls=(cert, key))
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.parametrize("driver", ["client", "locust"])
def test_a_run_with_credentials_succeeds_and_writes_them_nowhere(auth_server, tmp_path, driver):
    auth_server.tally.reset()
    out = tmp_path / f"auth-{driver}"
    done = lakebench_run(auth_server.url, out, driver,
                         env=_environment(**{USER_VARIABLE: USER, PASSWORD_VARIABLE: auth_server.password}))
    assert done.returncode == 0, done.stdout + done.stderr
    (entry,) = json.loads((out / "results.json").read_text())["systems"]
    assert entry["status"] == "ok", entry["error"]
    assert entry["children"] == 30 and entry["parent"]["containment_triples"] == 30
    assert entry["operations"]["create"]["count"] == 30
    assert not entry["operations"]["create"].get("errors")
    # Every request carried the credentials (Locust's users' too), and the proxy looked at every
    # process's command line while lakebench was sending them.
    assert auth_server.tally.refused == 0
    assert auth_server.tally.forwarded >= 30 and auth_server.tally.argv_scans >= 30
    report = subprocess.run([sys.executable, "-m", "lakebench.cli", "report", str(out)], env=_environment(),
                            capture_output=True, text=True, timeout=300)
    assert report.returncode == 0, report.stderr
    assert (out / "report" / "index.rst").is_file()
    assert_nowhere(auth_server, out, done)
    assert auth_server.password not in report.stdout + report.stderr


@pytest.mark.parametrize("driver", ["client", "locust"])
def test_without_credentials_the_run_fails_in_one_line(auth_server, tmp_path, driver):
    auth_server.tally.reset()
    out = tmp_path / f"none-{driver}"
    done = lakebench_run(auth_server.url, out, driver, env=_environment())
    assert done.returncode == 1, done.stdout + done.stderr
    assert ("HTTP 401: the server needs credentials: set LAKEBENCH_SYSTEM_USER and LAKEBENCH_SYSTEM_PASSWORD"
            in failure_line(done))
    (entry,) = json.loads((out / "results.json").read_text())["systems"]
    assert entry["status"] == "failed" and "the server needs credentials" in entry["error"]
    assert "\n" not in entry["error"]
    assert auth_server.tally.forwarded == 0 and auth_server.tally.refused >= 1


@pytest.mark.parametrize("driver", ["client", "locust"])
def test_a_wrong_password_is_refused_and_written_nowhere(auth_server, tmp_path, driver):
    auth_server.tally.reset()
    wrong = "wrong-" + secrets.token_hex(12)
    out = tmp_path / f"wrong-{driver}"
    done = lakebench_run(auth_server.url, out, driver,
                         env=_environment(**{USER_VARIABLE: USER, PASSWORD_VARIABLE: wrong}))
    assert done.returncode == 1
    line = failure_line(done)
    assert ("HTTP 401: the server refused the credentials in LAKEBENCH_SYSTEM_USER and "
            "LAKEBENCH_SYSTEM_PASSWORD") in line
    assert list((out / "logs").iterdir())  # the failure's traceback is kept: it must not hold them either
    import base64

    header = base64.b64encode(f"{USER}:{wrong}".encode())
    assert_nowhere(auth_server, out, done, wrong.encode(), header)


def test_credentials_from_a_netrc_file(auth_server, tmp_path):
    auth_server.tally.reset()
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine 127.0.0.1\n  login {USER}\n  password {auth_server.password}\n")
    netrc.chmod(0o600)
    out = tmp_path / "netrc-run"
    done = lakebench_run(auth_server.url, out, "client", "--system-netrc", str(netrc), env=_environment())
    assert done.returncode == 0, done.stdout + done.stderr
    (entry,) = json.loads((out / "results.json").read_text())["systems"]
    assert entry["status"] == "ok" and entry["children"] == 30
    assert auth_server.tally.refused == 0
    assert_nowhere(auth_server, out, done)


@pytest.mark.parametrize("driver", ["client", "locust"])
def test_tls_verified_against_the_given_ca(tls_server, ca_files, tmp_path, driver):
    ca, _, _ = ca_files
    tls_server.tally.reset()
    out = tmp_path / f"tls-{driver}"
    done = lakebench_run(tls_server.url, out, driver, "--system-ca", str(ca),
                         env=_environment(**{USER_VARIABLE: USER, PASSWORD_VARIABLE: tls_server.password}))
    assert done.returncode == 0, done.stdout + done.stderr
    (entry,) = json.loads((out / "results.json").read_text())["systems"]
    assert entry["status"] == "ok", entry["error"]
    assert entry["children"] == 30 and entry["parent"]["containment_triples"] == 30
    assert tls_server.tally.refused == 0 and tls_server.tally.forwarded >= 30
    assert_nowhere(tls_server, out, done)


def test_tls_without_the_ca_is_not_verified_and_fails(tls_server, tmp_path):
    tls_server.tally.reset()
    out = tmp_path / "tls-no-ca"
    done = lakebench_run(tls_server.url, out, "client",
                         env=_environment(**{USER_VARIABLE: USER, PASSWORD_VARIABLE: tls_server.password}))
    assert done.returncode == 1
    line = failure_line(done)
    assert "TLS: the server's certificate is not verified" in line and "--system-ca" in line
    assert tls_server.tally.forwarded == 0  # nothing was sent over an unverified connection


# -- what the command line reads, and refuses -------------------------------------------------

def test_credentials_from_the_environment():
    env = {USER_VARIABLE: "alice", PASSWORD_VARIABLE: "s3cret"}
    access = HttpAccess.resolve("https://fedora.example/rest/", environ=env)
    assert (access.user, access.password) == ("alice", "s3cret")
    assert access.headers() == {"Authorization": "Basic YWxpY2U6czNjcmV0"}
    assert "s3cret" not in repr(access) and "s3cret" not in str(access)
    assert HttpAccess.resolve("https://fedora.example/rest/", environ={}) == NO_ACCESS


def test_the_worker_gets_the_access_in_its_environment_not_its_argv(tmp_path):
    from lakebench.runner import worker_environment

    access = HttpAccess("alice", "s3cret", source="test")
    env = worker_environment(access, {USER_VARIABLE: "alice", PASSWORD_VARIABLE: "s3cret", "PATH": "/bin"})
    assert set(env) == {"PATH", WORKER_VARIABLE}
    assert HttpAccess.from_environment(env) == access
    assert WORKER_VARIABLE not in env  # read once, gone: no server the worker starts inherits it


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o620])
def test_a_netrc_file_others_may_read_or_change_is_refused(tmp_path, mode):
    netrc = tmp_path / "netrc"
    netrc.write_text("machine fedora.example login alice password s3cret\n")
    netrc.chmod(mode)
    with pytest.raises(ValueError, match=f"others may read or change it \\(mode {mode:o}\\): chmod 600") as caught:
        netrc_credentials(netrc, "fedora.example")
    assert "s3cret" not in str(caught.value)


def test_netrc_entries(tmp_path):
    netrc = tmp_path / "netrc"
    netrc.write_text("machine fedora.example login alice password s3cret\ndefault login bob password other\n")
    netrc.chmod(0o600)
    assert netrc_credentials(netrc, "fedora.example") == ("alice", "s3cret")
    assert netrc_credentials(netrc, "elsewhere.example") == ("bob", "other")  # the default entry
    netrc.write_text("machine fedora.example login alice password s3cret\n")
    with pytest.raises(ValueError, match="no entry for elsewhere.example"):
        netrc_credentials(netrc, "elsewhere.example")
    netrc.write_text("machine fedora.example login alice s3cret\n")  # a password without its keyword
    with pytest.raises(ValueError, match=r"not a netrc file \(line \d+\)") as caught:
        netrc_credentials(netrc, "fedora.example")
    assert "s3cret" not in str(caught.value)  # the netrc module's own message quotes the token


@pytest.mark.parametrize("url, kwargs, env, fragment", [
    ("http://fedora.example/rest/", {}, {USER_VARIABLE: "a", PASSWORD_VARIABLE: "s3cret"}, "clear text"),
    ("https://fedora.example/rest/", {}, {USER_VARIABLE: "a"}, "LAKEBENCH_SYSTEM_PASSWORD is empty or not set"),
    ("https://fedora.example/rest/", {}, {PASSWORD_VARIABLE: "s3cret"}, "LAKEBENCH_SYSTEM_USER is empty"),
    ("https://fedora.example/rest/", {}, {USER_VARIABLE: "a:b", PASSWORD_VARIABLE: "s3cret"}, "cannot hold ':'"),
    ("https://a:s3cret@fedora.example/", {}, {}, "holds credentials"),
    ("https://fedora.example/", {"insecure_http": True}, {}, "applies to an http://"),
    ("http://fedora.example/", {"insecure_http": True}, {}, "none are given"),
    ("http://fedora.example/", {"ca_file": "/etc/hostname"}, {}, "is not https://"),
    ("https://fedora.example/", {"ca_file": "/etc/hostname"}, {}, "no PEM CA certificate"),
    ("https://fedora.example/", {"ca_file": "/no/such/ca.pem"}, {}, "No such file"),
])
def test_refusals(url, kwargs, env, fragment):
    with pytest.raises(ValueError, match=fragment) as caught:
        HttpAccess.resolve(url, environ=env, **kwargs)
    assert "s3cret" not in str(caught.value) and "\n" not in str(caught.value)


def test_plain_http_with_credentials_to_loopback_or_when_allowed():
    env = {USER_VARIABLE: "a", PASSWORD_VARIABLE: "s3cret"}
    assert HttpAccess.resolve("http://127.0.0.1:8080/rest/", environ=env).user == "a"
    assert HttpAccess.resolve("http://localhost:8080/rest/", environ=env).user == "a"
    assert HttpAccess.resolve("http://fedora.lan/rest/", environ=env, insecure_http=True).user == "a"


def test_a_server_lakebench_starts_gets_no_credentials(tmp_path):
    """lmdb-http starts its own server: the access the worker was given is not sent to it."""
    from lakebench.dataset import DataSet
    from lakebench.systems.lmdb_http import LmdbHttpNosyncSystem

    system = LmdbHttpNosyncSystem(tmp_path, DataSet(children=2))
    system.access = HttpAccess("alice", "s3cret", source="test")
    try:
        system.connect()
        assert system.access == NO_ACCESS and system.http.access == NO_ACCESS
    finally:
        system.close()
