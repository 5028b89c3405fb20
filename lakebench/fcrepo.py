"""Fetch, start, check and stop a real Fedora Commons repository.

Fedora is the benchmark's reference system: the other peers are measured
against what a real LDP server does.  This module keeps that reference
reproducible and self-contained:

* :func:`fetch` downloads the Fedora war and a Jetty runner from Maven
  Central into a cache, verifying SHA-1 checksums;
* :func:`start` runs them on a loopback port with *every* data location
  under one data directory, and waits until ``/rest/`` answers;
* :func:`status` and :func:`stop` find a running Fedora again through the
  state file ``<data_dir>/fedora.json``, so the CLI can start Fedora in one
  shell and stop it from another.

Layout of a data directory::

    fcrepo.log      stdout + stderr of the JVM (this start only)
    fedora.json     state file: pid, port, version, base URL (while running)
    activemq.xml    loopback-safe ActiveMQ broker configuration (4.x only)
    logging.properties  java.util.logging settings that mute a known harmless warning
    home/           the repository itself (fcrepo.home and all its stores)
    tmp/            java.io.tmpdir: Jetty's unpacked war, scratch; emptied at start

``home/`` is what the repository costs on disk; ``tmp/`` is not part of it.

Two lines of Fedora are supported, as the notes in ``notes/fedora.md``
describe: 4.x (ModeShape; 4.7.5 is the default and the tested one) and 6.x
(OCFL; 6.1.0 is the tested one).
"""
from __future__ import annotations

import argparse
import hashlib
import http.client
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

import psutil

from lakebench import argtypes, process

# -- constants --------------------------------------------------------------

MAVEN_CENTRAL = "https://repo1.maven.org/maven2/"
DEFAULT_VERSION = "4.7.5"
JETTY_RUNNER_VERSION = "9.4.58.v20250814"

#: Checksums pinned in lakebench for the artifacts it is tested with, so a
#: compromised or corrupted mirror cannot substitute them.  Other versions
#: are checked against the ``.sha1`` file Maven Central publishes beside them.
PINNED_SHA1 = {
    ("org.fcrepo", "fcrepo-webapp", "4.7.5", "war"): "243df71ceef8dca9309f230f2abb31c195368c5c",
    ("org.eclipse.jetty", "jetty-runner", JETTY_RUNNER_VERSION, "jar"):
        "4be8777479cb7aa5ec422c872e27e0f268e98b86",
}

STATE_FILE = "fedora.json"
LOG_FILE = "fcrepo.log"
ACTIVEMQ_FILE = "activemq.xml"
JUL_FILE = "logging.properties"
HOME_DIR = "home"
TMP_DIR = "tmp"

JAVA_INSTALL_HINT = "install a Java runtime with: apt-get install -y openjdk-17-jre-headless"


class FedoraError(RuntimeError):
    """Fedora could not be fetched, started, found or stopped; the message says why."""


# -- fetching ---------------------------------------------------------------

@dataclass(frozen=True)
class FedoraArtifacts:
    """Verified local copies of what it takes to run one Fedora version."""

    version: str
    war: Path  # org.fcrepo:fcrepo-webapp:<version>:war
    jetty_runner: Path  # org.eclipse.jetty:jetty-runner:<JETTY_RUNNER_VERSION>:jar
    cache_dir: Path


def default_cache_dir() -> Path:
    """``$LAKEBENCH_CACHE`` if set, else ``~/.cache/lakebench``."""
    env = os.environ.get("LAKEBENCH_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "lakebench"


def maven_url(group: str, artifact: str, version: str, ext: str, repository: str = MAVEN_CENTRAL) -> str:
    """The URL of one artifact in a Maven 2 layout repository."""
    base = repository if repository.endswith("/") else repository + "/"
    return f"{base}{group.replace('.', '/')}/{artifact}/{version}/{artifact}-{version}.{ext}"


def sha1_of(path: Path) -> str:
    """Hex SHA-1 of a file, read in chunks (the war is about 49 MB)."""
    digest = hashlib.sha1()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _want_progress(progress: bool | None) -> bool:
    """Progress lines only when asked, or by default when a person watches stderr."""
    if progress is not None:
        return progress
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False


def download(url: str, dest: Path, sha1: str | None = None, progress: bool | None = None) -> Path:
    """Download ``url`` to ``dest``, checking the SHA-1 if one is given.

    The bytes go to a temporary file beside ``dest`` that is renamed into
    place only once complete and verified, so an interrupted or corrupted
    download never leaves a file that looks good.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    show = _want_progress(progress)
    fd, tmp_name = tempfile.mkstemp(prefix=dest.name + ".", suffix=".part", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        digest = hashlib.sha1()
        try:
            response = urllib.request.urlopen(url, timeout=60)
        except urllib.error.HTTPError as e:
            raise FedoraError(f"cannot download {url}: HTTP {e.code} {e.reason}") from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise FedoraError(f"cannot download {url}: {reason}") from None
        with response, os.fdopen(fd, "wb") as out:
            fd = -1  # now owned by `out`
            total = int(response.headers.get("Content-Length") or 0)
            done, next_report = 0, 10
            if show:
                size = f" ({total / 1e6:.0f} MB)" if total else ""
                print(f"downloading {url}{size}", file=sys.stderr, flush=True)
            while True:
                try:
                    chunk = response.read(1 << 20)
                except (OSError, http.client.HTTPException) as e:
                    raise FedoraError(f"download of {url} broke off: {e!r}") from None
                if not chunk:
                    break
                out.write(chunk)
                digest.update(chunk)
                done += len(chunk)
                if show and total and done * 100 >= next_report * total:
                    print(f"  {dest.name}: {done * 100 // total}%", file=sys.stderr, flush=True)
                    next_report = done * 100 // total // 10 * 10 + 10
            if total and done != total:
                raise FedoraError(f"download of {url} broke off after {done} of {total} bytes")
        got = digest.hexdigest()
        if sha1 is not None and got != sha1.lower():
            raise FedoraError(f"checksum mismatch for {url}: expected SHA-1 {sha1}, got {got}; file discarded")
        os.chmod(tmp, 0o644)  # mkstemp makes it private; the cache is shared
        os.replace(tmp, dest)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    return dest


def _parse_sha1_file(text: str, url: str) -> str:
    """The hash in a Maven ``.sha1`` file (``<hex>`` or ``<hex>  <filename>``)."""
    match = re.match(r"\s*([0-9a-fA-F]{40})\b", text)
    if not match:
        raise FedoraError(f"no SHA-1 found in {url}")
    return match.group(1).lower()


def _fetch_artifact(group: str, artifact: str, version: str, ext: str, cache_dir: Path,
                    repository: str, progress: bool | None) -> Path:
    """One artifact into the cache, verified; a cached verified copy is used offline."""
    url = maven_url(group, artifact, version, ext, repository)
    dest = cache_dir / f"{artifact}-{version}.{ext}"
    expected = PINNED_SHA1.get((group, artifact, version, ext))
    if expected is None:
        # Not pinned here: trust Maven Central's own checksum file, cached
        # beside the artifact so a later offline run can still verify it.
        sha1_path = dest.with_name(dest.name + ".sha1")
        if not sha1_path.exists():
            download(url + ".sha1", sha1_path, progress=False)
        try:
            expected = _parse_sha1_file(sha1_path.read_text(errors="replace"), url + ".sha1")
        except FedoraError:
            sha1_path.unlink()  # unusable: fetch it afresh next time
            raise
    if dest.exists():
        if sha1_of(dest) == expected:
            return dest
        print(f"lakebench: cached {dest} fails its checksum; downloading it again", file=sys.stderr)
        dest.unlink()
    return download(url, dest, expected, progress)


def fetch(version: str = DEFAULT_VERSION, cache_dir: str | Path | None = None, *,
          progress: bool | None = None, repository: str = MAVEN_CENTRAL) -> FedoraArtifacts:
    """Download (or find in the cache) the Fedora war and the Jetty runner.

    ``progress``: True/False forces percentage lines on stderr on/off; None
    shows them only when stderr is a terminal.  ``repository`` is the Maven
    repository base URL (tests point it at a local server).
    """
    cache = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    war = _fetch_artifact("org.fcrepo", "fcrepo-webapp", version, "war", cache, repository, progress)
    jar = _fetch_artifact("org.eclipse.jetty", "jetty-runner", JETTY_RUNNER_VERSION, "jar",
                          cache, repository, progress)
    return FedoraArtifacts(version=version, war=war, jetty_runner=jar, cache_dir=cache)


# -- helpers for starting ---------------------------------------------------

def find_java(java: str = "java") -> str:
    """The path of the ``java`` executable, or a FedoraError saying how to install one."""
    found = shutil.which(java)
    if found is None:
        raise FedoraError(f"Java not found ({java!r} is not an executable on PATH); "
                          f"Fedora needs Java 11 or later: {JAVA_INSTALL_HINT}")
    return found


def _line(version: str) -> int:
    """The Fedora line (4 or 6) whose start-up recipe fits ``version``."""
    major = version.split(".", 1)[0]
    if major in ("4", "6"):
        return int(major)
    raise FedoraError(f"Fedora {version} is not supported: lakebench knows how to run "
                      f"the 4.x line (tested with 4.7.5) and the 6.x line (tested with 6.1.0)")


def write_activemq_config(war: Path, dest: Path) -> Path:
    """Write the war's ActiveMQ broker configuration without its network connectors.

    Fedora 4's default ``config/activemq.xml`` opens OpenWire and STOMP on
    0.0.0.0:61616 and 0.0.0.0:61613, exposing the reference on every
    interface and making two Fedoras collide.  Fedora itself reaches the
    broker in-VM (``vm://localhost``), so the connectors can simply go: the
    broker and the JMS publishing Fedora does on every change stay as in a
    stock installation, but nothing listens.
    """
    with zipfile.ZipFile(war) as z:
        try:
            original = z.read("WEB-INF/classes/config/activemq.xml").decode("utf-8")
        except KeyError:
            raise FedoraError(f"{war} has no WEB-INF/classes/config/activemq.xml; "
                              f"cannot make its JMS broker loopback-only") from None
    config, n = re.subn(r"\s*<transportConnectors>.*?</transportConnectors>", "", original, flags=re.S)
    if n != 1 or "transportConnector" in config:
        # Refuse rather than silently start a broker open to the network.
        raise FedoraError(f"unexpected ActiveMQ configuration in {war}: "
                          f"cannot remove its transport connectors")
    note = ("\n<!-- Written by lakebench from the war's config/activemq.xml with the transport\n"
            "     connectors removed: Fedora uses the broker in-VM, and nothing listens. -->\n")
    config = config.replace("?>", "?>" + note, 1)
    dest.write_text(config, encoding="utf-8")
    return dest


# Jersey in the 4.x war looks for JAXB and javax.activation, which left the
# JDK in Java 11; it works without them but logs ~20,000 lines of stack
# traces per start, which would bury any real error in the log.
JUL_CONFIG = """\
# Written by lakebench: java.util.logging as the JDK default, but without
# Jersey's start-up warnings about JAXB / javax.activation missing on Java 11+.
handlers = java.util.logging.ConsoleHandler
.level = INFO
java.util.logging.ConsoleHandler.level = ALL
org.glassfish.jersey.internal.Errors.level = SEVERE
"""


def prepare_webapp(artifacts: FedoraArtifacts) -> Path:
    """The web application Jetty should run for this version.

    4.x: the war itself.  6.x: the war unpacked once into the cache with
    ``WEB-INF/no-auth-web.xml`` in place of ``web.xml``, since the default
    descriptor demands BASIC auth with no realm under jetty-runner.
    """
    if _line(artifacts.version) == 4:
        return artifacts.war
    target = artifacts.cache_dir / f"fcrepo-webapp-{artifacts.version}-noauth"
    if (target / "WEB-INF" / "web.xml").exists():
        return target
    # Unpack beside the target and rename, so a half-unpacked tree is never used.
    tmp = Path(tempfile.mkdtemp(prefix=target.name + ".", dir=artifacts.cache_dir))
    try:
        with zipfile.ZipFile(artifacts.war) as z:
            z.extractall(tmp)
        no_auth = tmp / "WEB-INF" / "no-auth-web.xml"
        if not no_auth.exists():
            raise FedoraError(f"{artifacts.war} has no WEB-INF/no-auth-web.xml; "
                              f"cannot run Fedora {artifacts.version} without authentication")
        shutil.copyfile(no_auth, tmp / "WEB-INF" / "web.xml")
        os.chmod(tmp, 0o755)  # mkdtemp makes it private; the cache is shared
        try:
            os.rename(tmp, target)
        except OSError:
            if not (target / "WEB-INF" / "web.xml").exists():  # not a concurrent winner
                raise
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def java_command(java: str, artifacts: FedoraArtifacts, webapp: Path, data_dir: Path,
                 port: int, heap: str) -> list[str]:
    """The full command line that runs Fedora with every data location under ``data_dir``."""
    home = data_dir / HOME_DIR
    arjuna = home / "arjuna"
    props = {
        "fcrepo.home": home,
        # Arjuna (the transaction manager) defaults its object store to the
        # user's home directory; both property spellings are read.
        "com.arjuna.ats.arjuna.common.ObjectStoreEnvironmentBean.default.objectStoreDir": arjuna,
        "com.arjuna.ats.arjuna.objectstore.objectStoreDir": arjuna,
        "java.io.tmpdir": data_dir / TMP_DIR,
        "java.util.logging.config.file": data_dir / JUL_FILE,
        "fcrepo.log": "WARN",
    }
    if _line(artifacts.version) == 4:
        props.update({
            "fcrepo.modeshape.configuration": "classpath:/config/file-simple/repository.json",
            "fcrepo.object.directory": home / "objects",
            "fcrepo.binary.directory": home / "binaries",
            "fcrepo.activemq.directory": home / "activemq",
            "fcrepo.activemq.configuration": (data_dir / ACTIVEMQ_FILE).as_uri(),
        })
    else:
        # Fedora 6 keeps its OCFL root, H2 database and staging under
        # fcrepo.home; JMS off means no broker.  Its H2 URL asks for
        # FILE_LOCK=SOCKET, which opens a lock-watchdog server socket on every
        # interface unless H2 is told its bind address.
        props.update({
            "fcrepo.auth.enabled": "false",
            "fcrepo.jms.enabled": "false",
            "h2.bindAddress": "127.0.0.1",
        })
    return [
        java, f"-Xmx{heap}",
        # Libraries in both wars reflect into java.lang, closed since Java 16.
        "--add-opens=java.base/java.lang=ALL-UNNAMED",
        *(f"-D{k}={v}" for k, v in props.items()),
        "-jar", str(artifacts.jetty_runner),
        "--host", "127.0.0.1", "--port", str(port), "--path", "/", str(webapp),
    ]


# -- the running process ----------------------------------------------------

class FedoraProcess:
    """A Fedora JVM started by :func:`start` or found by :func:`status`.

    Use as a context manager to stop it on exit.  ``base_url`` is the LDP
    root, ``http://127.0.0.1:<port>/rest/``.
    """

    def __init__(self, *, pid: int, port: int, version: str, data_dir: Path,
                 create_time: float, popen: subprocess.Popen | None = None):
        self.pid = pid
        self.port = port
        self.version = version
        self.data_dir = Path(data_dir)
        self.create_time = create_time  # guards against a recycled pid
        self._popen = popen  # set only in the process that started it

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/rest/"

    @property
    def log_path(self) -> Path:
        return self.data_dir / LOG_FILE

    @property
    def home(self) -> Path:
        """The repository's own data (what it costs on disk)."""
        return self.data_dir / HOME_DIR

    def __repr__(self) -> str:
        return f"<FedoraProcess {self.version} pid={self.pid} {self.base_url}>"

    def _process(self) -> psutil.Process | None:
        """The live JVM, or None if it is gone (or the pid now names another process)."""
        try:
            proc = psutil.Process(self.pid)
            if abs(proc.create_time() - self.create_time) > 1.0:
                return None
            if proc.status() == psutil.STATUS_ZOMBIE:
                return None
            return proc
        except psutil.Error:
            return None

    def is_running(self) -> bool:
        """Whether the JVM is alive (it may still be booting)."""
        if self._popen is not None and self._popen.poll() is not None:
            return False
        return self._process() is not None

    def is_ready(self) -> bool:
        """Whether ``/rest/`` answers 200 now."""
        return process.http_status(self.base_url) == 200

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM, wait up to ``timeout`` seconds, then SIGKILL as a last resort.

        Also removes the state file.  Stopping a stopped Fedora does nothing.
        """
        proc = self._process()
        if proc is not None:
            try:
                proc.send_signal(signal.SIGTERM)
                try:
                    self._wait(proc, timeout)
                except psutil.TimeoutExpired:
                    proc.kill()
                    self._wait(proc, 10.0)
            except psutil.NoSuchProcess:
                pass
        if self._popen is not None:
            self._popen.poll()  # reap it if psutil has not
        state = self.data_dir / STATE_FILE
        if _read_state(self.data_dir).get("pid") == self.pid:
            state.unlink(missing_ok=True)

    def _wait(self, proc: psutil.Process, timeout: float) -> None:
        # Our own child is reaped through Popen; a process started elsewhere is polled.
        if self._popen is not None:
            try:
                self._popen.wait(timeout)
            except subprocess.TimeoutExpired:
                raise psutil.TimeoutExpired(timeout, self.pid) from None
        else:
            proc.wait(timeout)

    def __enter__(self) -> FedoraProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _read_state(data_dir: Path) -> dict:
    return process.read_state(Path(data_dir) / STATE_FILE)


def _write_state(fedora: FedoraProcess) -> None:
    state = {
        "pid": fedora.pid,
        "port": fedora.port,
        "version": fedora.version,
        "base_url": fedora.base_url,
        "create_time": fedora.create_time,
        "log": str(fedora.log_path),
    }
    process.write_state(fedora.data_dir / STATE_FILE, state)


def status(data_dir: str | Path = "fcrepo-data") -> FedoraProcess | None:
    """The Fedora running on ``data_dir`` per its state file, or None."""
    data_dir = Path(data_dir).resolve()
    state = _read_state(data_dir)
    try:
        fedora = FedoraProcess(pid=int(state["pid"]), port=int(state["port"]),
                               version=str(state["version"]), data_dir=data_dir,
                               create_time=float(state["create_time"]))
    except (KeyError, TypeError, ValueError):
        return None
    return fedora if fedora.is_running() else None


def stop(data_dir: str | Path = "fcrepo-data", timeout: float = 30.0) -> FedoraProcess | None:
    """Stop the Fedora running on ``data_dir``; returns it, or None if none was running.

    A stale state file (its process gone) is removed.
    """
    fedora = status(data_dir)
    if fedora is None:
        (Path(data_dir) / STATE_FILE).unlink(missing_ok=True)
        return None
    fedora.stop(timeout)
    return fedora


def start(version: str = DEFAULT_VERSION, port: int | None = None, data_dir: str | Path = "fcrepo-data",
          heap: str = "2g", java: str = "java", timeout: float = 180.0, *,
          cache_dir: str | Path | None = None, progress: bool | None = None,
          detach: bool = False) -> FedoraProcess:
    """Start Fedora ``version`` on 127.0.0.1 and wait until ``/rest/`` answers 200.

    ``port`` None picks a free loopback port.  Every file Fedora writes goes
    under ``data_dir`` (see the module docstring for the layout); data
    survives a stop and a new start on the same directory.  ``detach``
    puts the JVM in its own session so it outlives the caller's terminal
    and the calling Python process (the CLI's ``start``); otherwise Ctrl-C
    in the terminal reaches it too, and it is stopped when Python exits.

    Raises FedoraError if Java is missing, the port is taken, a Fedora is
    already running on ``data_dir``, or Fedora does not come up in
    ``timeout`` seconds (the message names the log and quotes its end).
    """
    _line(version)  # reject unsupported versions before any download
    java_path = find_java(java)  # fail before a 49 MB download, not after
    data_dir = Path(data_dir).resolve()
    running = status(data_dir)
    if running is not None:
        raise FedoraError(f"Fedora {running.version} is already running on {data_dir} "
                          f"at {running.base_url} (pid {running.pid}); stop it first")
    if port is not None and not process.port_is_free(port):
        raise FedoraError(f"port {port} on 127.0.0.1 is already in use")

    artifacts = fetch(version, cache_dir, progress=progress)
    webapp = prepare_webapp(artifacts)
    if port is None:
        port = process.free_port()  # chosen after the download, to narrow the window for a clash

    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / HOME_DIR).mkdir(exist_ok=True)
    # tmp holds only scratch (Jetty unpacks the war there on every start),
    # so clear what a killed JVM left behind rather than let it pile up.
    shutil.rmtree(data_dir / TMP_DIR, ignore_errors=True)
    (data_dir / TMP_DIR).mkdir()
    (data_dir / JUL_FILE).write_text(JUL_CONFIG)
    if _line(version) == 4:
        write_activemq_config(artifacts.war, data_dir / ACTIVEMQ_FILE)

    cmd = java_command(java_path, artifacts, webapp, data_dir, port, heap)
    log_path = data_dir / LOG_FILE
    with open(log_path, "wb") as log:
        log.write(("# lakebench: " + " ".join(cmd) + "\n").encode())
        log.flush()
        popen = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                 cwd=data_dir / HOME_DIR, start_new_session=detach)
    try:
        create_time = psutil.Process(popen.pid).create_time()
    except psutil.Error:
        create_time = time.time()  # already gone; the wait below reports it
    fedora = FedoraProcess(pid=popen.pid, port=port, version=version, data_dir=data_dir,
                           create_time=create_time, popen=popen)
    # Written before the wait so that `stop` from another shell finds a booting Fedora.
    _write_state(fedora)
    try:
        process.wait_ready(popen, fedora.base_url, timeout, what=f"Fedora {fedora.version}",
                           log_path=fedora.log_path, error=FedoraError, interval=0.5)
    except BaseException:  # also Ctrl-C: never leave a half-started JVM behind
        fedora.stop(timeout=10)
        raise
    if not detach:
        process.stop_at_exit(fedora)
    return fedora


# -- command line -----------------------------------------------------------

def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``lakebench fcrepo fetch|start|stop|status`` to a subparsers object."""
    p = subparsers.add_parser(
        "fcrepo",
        help="fetch, start, stop or check the reference Fedora repository",
        description="Manage a local Fedora Commons repository, the benchmark's reference system. "
                    "It listens on 127.0.0.1 only and keeps all its files in the data directory.",
    )
    p.add_argument("fcrepo_action", metavar="ACTION", choices=["fetch", "start", "stop", "status"],
                   help="fetch: download the war and Jetty runner into the cache; "
                        "start: run Fedora in the background and wait until it answers; "
                        "stop: stop the Fedora running on --data; "
                        "status: say whether one is running (exit 1 if not)")
    p.add_argument("--version", dest="fcrepo_version", default=DEFAULT_VERSION, metavar="VERSION",
                   help=f"Fedora version: 4.x or 6.x (default {DEFAULT_VERSION}; 6.1.0 also tested)")
    p.add_argument("--port", type=argtypes.PORT, default=None,
                   help=f"HTTP port on 127.0.0.1, {argtypes.PORT.range} (default: a free one)")
    p.add_argument("--data", default="fcrepo-data", metavar="DIR",
                   help="data directory holding the repository, log and state file (default ./fcrepo-data)")
    p.add_argument("--heap", type=argtypes.JVM_HEAP, default="2g",
                   help=f"maximum JVM heap, as for java -Xmx, {argtypes.JVM_HEAP.range} (default 2g)")
    p.add_argument("--cache", default=None, metavar="DIR",
                   help="download cache (default $LAKEBENCH_CACHE or ~/.cache/lakebench)")
    p.add_argument("--timeout", type=argtypes.START_TIMEOUT, default=180.0, metavar="SECONDS",
                   help=f"how long start waits for Fedora to answer, {argtypes.START_TIMEOUT.range} (default 180)")
    p.set_defaults(func=main)
    return p


def main(args: argparse.Namespace) -> int:
    """Run one ``lakebench fcrepo`` action; returns the exit code."""
    try:
        return _run(args)
    except FedoraError as e:
        print(f"lakebench fcrepo: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("lakebench fcrepo: interrupted", file=sys.stderr)
        return 130


def _run(args: argparse.Namespace) -> int:
    action = args.fcrepo_action
    data = Path(args.data)
    if action == "fetch":
        a = fetch(args.fcrepo_version, args.cache)
        print(f"Fedora {a.version}: {a.war} and {a.jetty_runner.name} ready in {a.cache_dir}")
        return 0
    if action == "start":
        t0 = time.monotonic()
        fedora = start(args.fcrepo_version, args.port, data, heap=args.heap, timeout=args.timeout,
                       cache_dir=args.cache, detach=True)
        print(f"Fedora {fedora.version} ready at {fedora.base_url} (pid {fedora.pid}, "
              f"{time.monotonic() - t0:.0f} s; data {data}, log {fedora.log_path})")
        return 0
    if action == "stop":
        fedora = stop(data)
        if fedora is None:
            print(f"no Fedora running on {data}")
        else:
            print(f"stopped Fedora {fedora.version} (pid {fedora.pid}) on {data}")
        return 0
    if action == "status":
        fedora = status(data)
        if fedora is None:
            print(f"no Fedora running on {data}")
            return 1
        state = "ready" if fedora.is_ready() else "not answering yet"
        print(f"Fedora {fedora.version} running at {fedora.base_url} (pid {fedora.pid}, {state})")
        return 0
    raise FedoraError(f"unknown action {action!r}")
