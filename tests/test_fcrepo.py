"""Tests for lakebench.systems.fcrepo: fetching, starting and stopping Fedora.

The first part needs no JVM: downloads are served by a local http.server on
127.0.0.1, processes are plain Python children.  The tests marked
``fcrepo`` start a real Fedora (4.7.5, and 6.1.0 when ``slow`` tests run)
once per version and talk LDP to it.
"""
from __future__ import annotations

import argparse
import functools
import hashlib
import http.server
import json
import shutil
import socket
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import psutil
import pytest

from lakebench import process
from lakebench.systems import fcrepo

JETTY_KEY = ("org.eclipse.jetty", "jetty-runner", fcrepo.JETTY_RUNNER_VERSION, "jar")
FAKE_WAR = b"not really a war, but bytes to checksum\n" * 1000
FAKE_JAR = b"not really a jar\n" * 100


def sha1(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


# -- a fake Maven repository on loopback -------------------------------------

class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep test output clean
        pass


@pytest.fixture
def maven(tmp_path, monkeypatch):
    """A Maven-layout directory served over HTTP on 127.0.0.1; yields (root, base_url)."""
    root = tmp_path / "repo"
    root.mkdir()
    monkeypatch.setenv("no_proxy", "127.0.0.1")  # never route the test server through a proxy
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def publish(root: Path, group: str, artifact: str, version: str, ext: str, data: bytes,
            sha1_text: str | None = None) -> None:
    """Put an artifact (and optionally its .sha1 file) into the fake repository."""
    d = root.joinpath(*group.split("."), artifact, version)
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{artifact}-{version}.{ext}").write_bytes(data)
    if sha1_text is not None:
        (d / f"{artifact}-{version}.{ext}.sha1").write_text(sha1_text)


def publish_fake_release(root: Path, monkeypatch, version: str = "9.9.9", war_sha1: str | None = None):
    """A fake war ``version`` with a .sha1 file, and a fake jetty-runner pinned to its hash."""
    publish(root, "org.fcrepo", "fcrepo-webapp", version, "war", FAKE_WAR,
            war_sha1 if war_sha1 is not None else sha1(FAKE_WAR) + "  fcrepo-webapp.war\n")
    publish(root, "org.eclipse.jetty", "jetty-runner", fcrepo.JETTY_RUNNER_VERSION, "jar", FAKE_JAR)
    monkeypatch.setitem(fcrepo.PINNED_SHA1, JETTY_KEY, sha1(FAKE_JAR))


def leftovers(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.iterdir()) if cache.exists() else []


# -- fetching ---------------------------------------------------------------

def test_maven_url():
    assert fcrepo.maven_url("org.fcrepo", "fcrepo-webapp", "4.7.5", "war") == (
        "https://repo1.maven.org/maven2/org/fcrepo/fcrepo-webapp/4.7.5/fcrepo-webapp-4.7.5.war")


def test_default_cache_dir_follows_env(monkeypatch, tmp_path):
    monkeypatch.setenv("LAKEBENCH_CACHE", str(tmp_path / "c"))
    assert fcrepo.default_cache_dir() == tmp_path / "c"
    monkeypatch.delenv("LAKEBENCH_CACHE")
    assert fcrepo.default_cache_dir() == Path.home() / ".cache" / "lakebench"


def test_fetch_verifies_against_sha1_file_and_then_works_offline(maven, monkeypatch, tmp_path):
    root, url = maven
    publish_fake_release(root, monkeypatch)
    cache = tmp_path / "cache"
    art = fcrepo.fetch("9.9.9", cache, repository=url, progress=False)
    assert art.war.read_bytes() == FAKE_WAR
    assert art.jetty_runner.read_bytes() == FAKE_JAR
    assert leftovers(cache) == sorted([art.war.name, art.war.name + ".sha1", art.jetty_runner.name])
    # Offline (nothing answers at this address): the cached, verified files are used.
    again = fcrepo.fetch("9.9.9", cache, repository=f"http://127.0.0.1:{process.free_port()}/",
                         progress=False)
    assert again == art


def test_checksum_mismatch_raises_and_leaves_no_file(maven, monkeypatch, tmp_path):
    root, url = maven
    publish_fake_release(root, monkeypatch, war_sha1="0" * 40 + "\n")
    cache = tmp_path / "cache"
    with pytest.raises(fcrepo.FedoraError, match="checksum mismatch"):
        fcrepo.fetch("9.9.9", cache, repository=url, progress=False)
    # Only the (small) checksum file itself remains: no war, no partial download.
    assert leftovers(cache) == ["fcrepo-webapp-9.9.9.war.sha1"]


def test_pinned_checksum_is_enforced(maven, tmp_path):
    # The pinned jetty-runner hash is the real one, so a substitute jar is refused.
    root, url = maven
    publish(root, "org.fcrepo", "fcrepo-webapp", "9.9.9", "war", FAKE_WAR, sha1(FAKE_WAR))
    publish(root, "org.eclipse.jetty", "jetty-runner", fcrepo.JETTY_RUNNER_VERSION, "jar", FAKE_JAR)
    cache = tmp_path / "cache"
    with pytest.raises(fcrepo.FedoraError, match=fcrepo.PINNED_SHA1[JETTY_KEY]):
        fcrepo.fetch("9.9.9", cache, repository=url, progress=False)
    assert not (cache / f"jetty-runner-{fcrepo.JETTY_RUNNER_VERSION}.jar").exists()
    assert not [n for n in leftovers(cache) if n.endswith(".part")]


def test_corrupt_cached_file_is_downloaded_again(maven, monkeypatch, tmp_path):
    root, url = maven
    publish_fake_release(root, monkeypatch)
    cache = tmp_path / "cache"
    art = fcrepo.fetch("9.9.9", cache, repository=url, progress=False)
    art.war.write_bytes(b"truncated")
    assert fcrepo.fetch("9.9.9", cache, repository=url, progress=False).war.read_bytes() == FAKE_WAR


class _TruncatingHandler(http.server.BaseHTTPRequestHandler):
    """Promises 100,000 bytes, sends 1,000, hangs up: a connection lost mid-download."""

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "100000")
        self.end_headers()
        self.wfile.write(b"x" * 1000)
        self.wfile.flush()
        self.close_connection = True

    def log_message(self, *args):
        pass


def test_interrupted_download_leaves_no_file(tmp_path, monkeypatch):
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _TruncatingHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/a.war"
        with pytest.raises(fcrepo.FedoraError, match="broke off"):
            fcrepo.download(url, tmp_path / "a.war", progress=False)
    finally:
        server.shutdown()
        server.server_close()
    assert leftovers(tmp_path) == []


def test_unreadable_cached_sha1_file_is_dropped(maven, monkeypatch, tmp_path):
    root, url = maven
    publish_fake_release(root, monkeypatch)
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "fcrepo-webapp-9.9.9.war.sha1").write_text("<html>proxy error</html>")
    with pytest.raises(fcrepo.FedoraError, match="no SHA-1"):
        fcrepo.fetch("9.9.9", cache, repository=url, progress=False)
    assert fcrepo.fetch("9.9.9", cache, repository=url, progress=False).war.read_bytes() == FAKE_WAR


def test_missing_artifact_is_a_clear_error(maven, tmp_path):
    _, url = maven
    with pytest.raises(fcrepo.FedoraError, match="HTTP 404"):
        fcrepo.fetch("0.0.0", tmp_path / "cache", repository=url, progress=False)


def test_progress_only_when_asked(maven, monkeypatch, tmp_path, capsys):
    root, url = maven
    publish_fake_release(root, monkeypatch)
    fcrepo.fetch("9.9.9", tmp_path / "quiet", repository=url, progress=False)
    assert capsys.readouterr().err == ""
    fcrepo.fetch("9.9.9", tmp_path / "loud", repository=url, progress=True)
    err = capsys.readouterr().err
    assert "downloading" in err and "100%" in err
    # Default: only when stderr is a terminal, which it is not under pytest's capture.
    fcrepo.fetch("9.9.9", tmp_path / "default", repository=url)
    assert capsys.readouterr().err == ""


# -- starting without a JVM ---------------------------------------------------

def test_free_port_is_a_bindable_loopback_port():
    port = process.free_port()
    assert 1024 <= port <= 65535
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))  # still free


def test_missing_java_says_how_to_install_it(tmp_path):
    with pytest.raises(fcrepo.FedoraError, match="apt-get install -y openjdk-17-jre-headless"):
        fcrepo.start(data_dir=tmp_path / "data", java="no-such-java-here", cache_dir=tmp_path / "cache")
    assert not (tmp_path / "cache").exists()  # failed before any download


def test_busy_port_is_refused(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        with pytest.raises(fcrepo.FedoraError, match="in use"):
            fcrepo.start(port=s.getsockname()[1], data_dir=tmp_path / "data", java=sys.executable,
                         cache_dir=tmp_path / "cache")


def test_unsupported_version(tmp_path):
    with pytest.raises(fcrepo.FedoraError, match="not supported"):
        fcrepo.start("5.1.1", data_dir=tmp_path / "data", java=sys.executable)


def test_activemq_config_has_no_network_connectors(tmp_path):
    xml = """<?xml version="1.0" encoding="UTF-8"?>
<beans><broker brokerName="localhost">
  <persistenceAdapter><kahaDB directory="${fcrepo.activemq.directory:ActiveMQ/kahadb}"/></persistenceAdapter>
  <transportConnectors>
    <transportConnector name="openwire" uri="tcp://0.0.0.0:61616"/>
    <transportConnector name="stomp" uri="stomp://0.0.0.0:61613"/>
  </transportConnectors>
</broker></beans>
"""
    war = tmp_path / "fake.war"
    with zipfile.ZipFile(war, "w") as z:
        z.writestr("WEB-INF/classes/config/activemq.xml", xml)
    out = fcrepo.write_activemq_config(war, tmp_path / "activemq.xml").read_text()
    assert "transportConnector" not in out and "0.0.0.0" not in out
    assert 'brokerName="localhost"' in out and "kahaDB" in out


def test_every_data_location_is_under_the_data_dir(tmp_path):
    art = fcrepo.FedoraArtifacts("4.7.5", Path("/c/w.war"), Path("/c/j.jar"), Path("/c"))
    data = tmp_path / "data"
    cmd = fcrepo.java_command("java", art, art.war, data, 8080, "1g")
    props = dict(a[2:].split("=", 1) for a in cmd if a.startswith("-D"))
    for key in ("fcrepo.home", "fcrepo.object.directory", "fcrepo.binary.directory",
                "fcrepo.activemq.directory", "java.io.tmpdir",
                "com.arjuna.ats.arjuna.objectstore.objectStoreDir",
                "com.arjuna.ats.arjuna.common.ObjectStoreEnvironmentBean.default.objectStoreDir"):
        assert Path(props[key]).is_relative_to(data), key
    assert props["fcrepo.activemq.configuration"] == (data / "activemq.xml").as_uri()
    assert props["fcrepo.modeshape.configuration"] == "classpath:/config/file-simple/repository.json"
    assert cmd[cmd.index("--host") + 1] == "127.0.0.1" and cmd[cmd.index("--port") + 1] == "8080"
    assert "-Xmx1g" in cmd and "--add-opens=java.base/java.lang=ALL-UNNAMED" in cmd


# -- stopping, status and state files without a JVM ---------------------------

def fake_fedora(data_dir: Path, *, ignore_term: bool = False) -> subprocess.Popen:
    """A Python child standing in for the JVM, registered in data_dir/fedora.json."""
    code = "import signal, sys, time\n"
    if ignore_term:
        code += "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    code += "print('ready', flush=True)\ntime.sleep(120)\n"
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "ready"  # signal handler is in place
    data_dir.mkdir(parents=True, exist_ok=True)
    state = {"pid": child.pid, "port": 1, "version": "4.7.5", "base_url": "http://127.0.0.1:1/rest/",
             "create_time": psutil.Process(child.pid).create_time()}
    (data_dir / "fedora.json").write_text(json.dumps(state))
    return child


def test_stop_from_another_process_uses_the_state_file(tmp_path):
    child = fake_fedora(tmp_path)
    try:
        found = fcrepo.status(tmp_path)
        assert found is not None and found.pid == child.pid and found.port == 1
        assert fcrepo.stop(tmp_path, timeout=10) is not None
        assert child.wait(5) is not None
        assert not (tmp_path / "fedora.json").exists()
        assert fcrepo.status(tmp_path) is None
    finally:
        child.kill()
        child.wait()


def test_stop_falls_back_to_sigkill(tmp_path):
    child = fake_fedora(tmp_path, ignore_term=True)
    try:
        t0 = time.monotonic()
        fcrepo.stop(tmp_path, timeout=1)
        elapsed = time.monotonic() - t0
        # stop() reaped the child itself, so Popen cannot see the exit code.
        assert not psutil.pid_exists(child.pid)
        assert 1 <= elapsed < 5  # SIGTERM was ignored for the whole timeout, then SIGKILL
    finally:
        child.kill()
        child.wait()


def test_stale_state_file_is_not_running(tmp_path):
    child = fake_fedora(tmp_path)
    child.kill()
    child.wait()
    assert fcrepo.status(tmp_path) is None
    assert fcrepo.stop(tmp_path) is None
    assert not (tmp_path / "fedora.json").exists()


def test_recycled_pid_is_not_mistaken_for_fedora(tmp_path):
    # Our own pid with a wrong start time: some other process now has that pid.
    state = {"pid": psutil.Process().pid, "port": 1, "version": "4.7.5", "create_time": 12345.0}
    (tmp_path / "fedora.json").write_text(json.dumps(state))
    assert fcrepo.status(tmp_path) is None


# -- command line -------------------------------------------------------------

def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="lakebench")
    fcrepo.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["fcrepo", *argv])


def test_cli_defaults():
    args = parse("start")
    assert (args.fcrepo_action, args.fcrepo_version, args.port, args.data, args.heap, args.cache) == (
        "start", "4.7.5", None, "fcrepo-data", "2g", None)
    assert args.func is fcrepo.main


def test_cli_status_and_stop_when_nothing_runs(tmp_path, capsys):
    assert fcrepo.main(parse("status", "--data", str(tmp_path))) == 1
    assert fcrepo.main(parse("stop", "--data", str(tmp_path))) == 0
    assert "no Fedora running" in capsys.readouterr().out


def test_cli_error_is_one_line_and_exit_2(tmp_path, capsys):
    assert fcrepo.main(parse("start", "--version", "5.0.0", "--data", str(tmp_path))) == 2
    err = capsys.readouterr().err
    assert err.startswith("lakebench fcrepo: error: ") and "Traceback" not in err


# -- a real Fedora --------------------------------------------------------------

TURTLE = {"Content-Type": "text/turtle"}
LDP_CONTAINS = "http://www.w3.org/ns/ldp#contains"


@pytest.fixture(scope="module", params=["4.7.5", pytest.param("6.1.0", marks=pytest.mark.slow)])
def fedora(request, fedora_server):
    """A real Fedora of each version, the session's (test_fedora_stop_ends_the_jvm, last, stops it)."""
    if shutil.which("java") is None:
        pytest.skip("java is not installed (apt-get install -y openjdk-17-jre-headless)")
    return fedora_server(request.param)


@pytest.mark.fcrepo
def test_fedora_state_file_and_status(fedora):
    state = json.loads((fedora.data_dir / "fedora.json").read_text())
    assert (state["pid"], state["port"], state["base_url"]) == (fedora.pid, fedora.port, fedora.base_url)
    found = fcrepo.status(fedora.data_dir)
    assert found is not None and found.pid == fedora.pid and found.is_ready()


@pytest.mark.fcrepo
def test_fedora_ldp_containment(fedora):
    requests = pytest.importorskip("requests")
    import rdflib

    logged_before = fedora.log_path.stat().st_size  # the server is the session's: this test's lines only
    parent = fedora.base_url + "parent"
    r = requests.put(parent, data='<> <http://purl.org/dc/terms/title> "parent" .', headers=TURTLE)
    assert r.status_code == 201, r.text
    for i in (1, 2, 3):
        body = f'<> <http://purl.org/dc/terms/title> "child {i}" ; <http://example.org/n> {i} .'
        r = requests.put(f"{parent}/c{i}", data=body, headers=TURTLE)
        assert r.status_code == 201, r.text
    r = requests.get(parent, headers={"Accept": "text/turtle"})
    assert r.status_code == 200
    g = rdflib.Graph().parse(data=r.text, format="turtle", publicID=parent)
    contained = set(g.objects(rdflib.URIRef(parent), rdflib.URIRef(LDP_CONTAINS)))
    assert contained == {rdflib.URIRef(f"{parent}/c{i}") for i in (1, 2, 3)}
    assert len(list(g.triples((None, rdflib.URIRef(LDP_CONTAINS), None)))) == 3
    # The loopback-only ActiveMQ setup must not break the JMS publishing each change triggers.
    with open(fedora.log_path, "rb") as log:
        log.seek(logged_before)
        errors = [line for line in log.read().decode(errors="replace").splitlines() if line.startswith("ERROR")]
    assert errors == []


@pytest.mark.fcrepo
def test_fedora_listens_on_loopback_only(fedora):
    proc = psutil.Process(fedora.pid)
    conns = proc.net_connections("inet") if hasattr(proc, "net_connections") else proc.connections("inet")
    listening = [c.laddr for c in conns if c.status == psutil.CONN_LISTEN]
    assert fedora.port in {a.port for a in listening}
    exposed = [a for a in listening if a.ip not in ("127.0.0.1", "::1", "::ffff:127.0.0.1")]
    assert exposed == [], f"Fedora listens beyond loopback: {exposed}"


@pytest.mark.fcrepo
def test_fedora_stop_ends_the_jvm(fedora):
    # Runs last in the module: the fixture's own stop is then a no-op.
    pid = fedora.pid
    t0 = time.monotonic()
    fedora.stop()
    print(f"stopped in {time.monotonic() - t0:.1f} s")
    assert not fedora.is_running()
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert not (fedora.data_dir / "fedora.json").exists()


@pytest.mark.fcrepo
@pytest.mark.slow
def test_cli_start_status_stop_across_processes(tmp_path):
    """``lakebench fcrepo start`` returns with Fedora running; a later process stops it."""
    if shutil.which("java") is None:
        pytest.skip("java is not installed (apt-get install -y openjdk-17-jre-headless)")
    data = tmp_path / "data"

    def cli(*argv: str) -> subprocess.CompletedProcess:
        code = ("import argparse, sys; from lakebench.systems import fcrepo\n"
                "p = argparse.ArgumentParser(prog='lakebench'); fcrepo.add_parser(p.add_subparsers())\n"
                "a = p.parse_args(sys.argv[1:]); sys.exit(a.func(a))\n")
        return subprocess.run([sys.executable, "-c", code, "fcrepo", *argv, "--data", str(data)],
                              capture_output=True, text=True, timeout=240,
                              cwd=Path(fcrepo.__file__).parents[3])

    started = cli("start", "--heap", "1g")
    assert started.returncode == 0, started.stderr
    assert "ready at http://127.0.0.1:" in started.stdout
    pid = json.loads((data / "fedora.json").read_text())["pid"]
    try:
        status = cli("status")
        assert status.returncode == 0 and "ready" in status.stdout
        again = cli("start")
        assert again.returncode == 2 and "already running" in again.stderr
        stopped = cli("stop")
        assert stopped.returncode == 0 and f"pid {pid}" in stopped.stdout
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        assert cli("status").returncode == 1
    finally:
        fcrepo.stop(data)


def test_fedora_6_autoversioning_is_an_option_and_changes_what_it_declares(tmp_path):
    from lakebench.dataset import DataSet
    from lakebench.systems.fcrepo.system import Fcrepo6System

    art = fcrepo.FedoraArtifacts("6.1.0", Path("/c/w.war"), Path("/c/j.jar"), Path("/c"))
    on = dict(a[2:].split("=", 1) for a in fcrepo.java_command("java", art, art.war, tmp_path, 8080, "1g") if a.startswith("-D"))
    off = dict(a[2:].split("=", 1) for a in fcrepo.java_command("java", art, art.war, tmp_path, 8080, "1g",
                                                               autoversioning=False) if a.startswith("-D"))
    assert "fcrepo.autoversioning.enabled" not in on  # Fedora's default: a version of every change
    assert off["fcrepo.autoversioning.enabled"] == "false"
    dataset = DataSet(children=1)
    assert Fcrepo6System(tmp_path, dataset).declared_work()["versions"] == "per change"
    assert Fcrepo6System(tmp_path, dataset, {"autoversioning": "off"}).declared_work()["versions"] == "on request"
    assert Fcrepo6System(tmp_path, dataset, {"autoversioning": "off"}).start_options() == {"autoversioning": False}
    # A Fedora of the user's (--system-url): its owner's configuration, not lakebench's
    assert Fcrepo6System(tmp_path, dataset, {"system_url": "http://h/rest/"}).declared_work() == {}
