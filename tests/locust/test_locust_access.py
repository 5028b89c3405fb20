"""The locustfiles and lakebench's Locust clients with credentials and TLS.

Against ``lakebench serve`` behind a proxy that needs HTTP Basic credentials
(:mod:`tests.auth_proxy`).  Locust runs in subprocesses (importing it
monkey-patches a process with gevent).
"""
from __future__ import annotations

import json
import secrets
import subprocess
import sys
import textwrap

import pytest

from lakebench.systems.base import PASSWORD_VARIABLE, USER_VARIABLE
from tests.auth_proxy import files_holding, start_auth_server
from tests.locust.test_locustfiles import INGEST, RETRIEVE, ROOT, csv_counts, needs_locust
# The same servers and CA files as the LDP client's tests (module fixtures, one per module that uses them).
from tests.systems.test_ldp_access import USER, _environment, auth_server, ca_files  # noqa: F401

pytestmark = needs_locust


def locust(locustfile, host: str, *args: str, cwd, env: dict, timeout: float = 120) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "locust", "-f", str(locustfile), "--host", host, "--headless", *args]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def tls(tmp_path_factory, ca_files):
    ca, cert, key = ca_files
    server = start_auth_server(tmp_path_factory.mktemp("tls-serve"), USER, "pw-" + secrets.token_hex(12),
                               tls=(cert, key))
    try:
        yield server, ca
    finally:
        server.stop()


@pytest.mark.alone  # the read mix runs for 2 s: GETs of children within them
def test_the_ingest_locustfile_with_credentials_then_the_read_mix(auth_server, tmp_path):
    auth_server.tally.reset()
    env = _environment(**{USER_VARIABLE: USER, PASSWORD_VARIABLE: auth_server.password})
    done = locust(INGEST, auth_server.url, "-u", "2", "-r", "2", "--children", "20", "--parent", "lf",
                  "--csv", "lf", "--html", "lf.html", "--lakebench-out", "lf.json", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    doc = json.loads((tmp_path / "lf.json").read_text())
    assert doc["complete"] and doc["created"] == 20 and doc["failures"] == []
    assert doc["retrievals"]["full"]["contains"] == 20
    assert csv_counts(tmp_path / "lf_stats.csv")[("PUT", "PUT child")] == (20, 0)
    reads = locust(RETRIEVE, auth_server.url, "-u", "2", "-r", "2", "-t", "2s", "--parent", "lf", "--csv", "rd",
                   cwd=tmp_path, env=env, timeout=60)
    assert reads.returncode == 0, reads.stderr[-3000:]
    got, failed = csv_counts(tmp_path / "rd_stats.csv")[("GET", "GET child")]
    assert got > 0 and failed == 0
    assert auth_server.tally.refused == 0 and auth_server.tally.argv_hits == []
    assert files_holding(tmp_path, auth_server.secrets) == []  # the CSVs, the HTML report, the record
    for text in (done.stdout, done.stderr, reads.stdout, reads.stderr):
        assert auth_server.password not in text


def test_without_credentials_the_locustfile_says_so(auth_server, tmp_path):
    done = locust(INGEST, auth_server.url, "-u", "1", "-r", "1", "--children", "5", "--parent", "nc",
                  cwd=tmp_path, env=_environment())
    assert done.returncode == 1
    assert "HTTP 401: the server needs credentials" in done.stderr


def test_credentials_in_the_host_url_are_refused(auth_server, tmp_path):
    host = auth_server.url.replace("://", f"://{USER}:{auth_server.password}@")
    done = locust(INGEST, host, "-u", "1", "-r", "1", "--children", "5", "--parent", "ui", "--lakebench-out",
                  "ui.json", cwd=tmp_path, env=_environment())
    assert done.returncode == 1
    assert "--host holds credentials (user:password@)" in done.stderr
    assert not (tmp_path / "ui.json").exists() or auth_server.password not in (tmp_path / "ui.json").read_text()


CLIENTS = textwrap.dedent("""
    import json, sys
    from locust.env import Environment
    from lakebench.locust.ingest import ingest_user_class
    from lakebench.locust.ldp_requests import stats_session
    from lakebench.systems.base import HttpAccess

    url, user, password, ca = sys.argv[1:5]
    out = {}
    for name, access in (("no ca", HttpAccess(user, password, source="test")),
                         ("ca", HttpAccess(user, password, ca_file=ca, source="test"))):
        environment = Environment(host=url)
        environment.lakebench_access = access
        session = stats_session(environment, url, access)
        user_client = type("User", (ingest_user_class(),), {"host": url})(environment).client
        for kind, client in (("session", session), ("user", user_client)):
            response = client.request("GET", url)
            error = getattr(response, "error", None)
            out[f"{kind}, {name}"] = [response.status_code, type(error).__name__ if error else None]
    print(json.dumps(out))
""")


def test_locust_clients_verify_tls_and_send_the_credentials(tls, tmp_path):
    """Locust's FastHttpUser verifies no certificate by default: lakebench's users and sessions do, against
    the CA given (else the system's, which do not know the test's CA), and send the credentials."""
    server, ca = tls
    server.tally.reset()
    done = subprocess.run([sys.executable, "-c", CLIENTS, server.url, USER, server.password, str(ca)],
                          env=_environment(), capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    for kind in ("session", "user"):
        status, error = out[f"{kind}, no ca"]
        assert status == 0 and error and "SSL" in error, out  # not verified: nothing sent
        assert out[f"{kind}, ca"] == [200, None], out
    assert server.tally.forwarded == 2 and server.tally.refused == 0
