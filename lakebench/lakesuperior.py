"""Fetch, start, check and stop LAKEsuperior, the seed report's second system.

LAKEsuperior is a Python LDP repository on LMDB (Flask under gunicorn).  Its
last release, 1.0.0a21, is an sdist of C that Cython 0.29.6 generated, which
does not build on Python 3.11 as shipped, and whose dependencies must be
held at old versions.  This module keeps it reproducible and out of
lakebench's own environment:

* :func:`fetch` downloads the sdist with ``pip download`` into the cache
  (``~/.cache/lakebench``, like Fedora's files), checks its SHA-256 against
  :data:`SDIST_SHA256`, creates a virtualenv of its own beside it, installs
  the pinned runtime of ``lakesuperior-requirements.txt``, adapts the C to
  Python 3.11 (:mod:`lakebench.lakesuperior_py311`) and builds it.  A
  second fetch finds the finished installation and does nothing.
* :func:`start` writes a configuration (prod mode, message queue route
  off, loopback only, ``workers`` gunicorn sync workers), bootstraps the
  repository on first use, runs gunicorn in the foreground as lakebench's
  child, and waits until the LDP root ``/ldp/`` answers 200.
* :func:`status` and :func:`stop` find it again through the state file
  ``<data_dir>/lakesuperior.json``; stop ends the gunicorn master and every
  process under it.

Layout of a data directory::

    lakesuperior.json   state file: pid, port, workers, base URL (while running)
    lakesuperior.log    stdout + stderr of gunicorn (this start only)
    gunicorn.conf.py    LAKEsuperior's own gunicorn settings, kept in the foreground
    etc/                the configuration (FCREPO_CONFIG_DIR): the package's
                        etc.defaults with application.yml and gunicorn.yml set here
    repository/         the repository: ldprs_store/ (LMDB), ldpnr_store/ (binaries)
    server/             gunicorn's run/fcrepo.pid and log/ (access, error, application)

``repository/`` is what the repository costs on disk; the logs are not part
of it.
"""
from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from lakebench import lakesuperior_py311
from lakebench import argtypes, process
from lakebench.fcrepo import default_cache_dir

# -- constants --------------------------------------------------------------

VERSION = "1.0.0a21"
#: SHA-256 of ``lakesuperior-1.0.0a21.tar.gz`` as PyPI serves it; a download
#: that does not match is discarded.
SDIST_SHA256 = "eaf1dc4f4abe669457bd83753cc85c49f7348117a27ba712e385ba7ba1f18e81"
SDIST_NAME = f"lakesuperior-{VERSION}.tar.gz"
#: The pinned runtime, installed into LAKEsuperior's virtualenv.
REQUIREMENTS = Path(__file__).with_name("lakesuperior-requirements.txt")
#: The Python line the adaptation and the pins are made for.
PYTHON = (3, 11)
#: gunicorn sync workers by default: one, so that memory compares with a
#: single-process server (LAKEsuperior's own default is 2 x CPUs + 1).
DEFAULT_WORKERS = 1
#: gunicorn workers ``lakebench lakesuperior start --workers`` accepts.
WORKERS = argtypes.Bounded(int, 1, 64)

STATE_FILE = "lakesuperior.json"
LOG_FILE = "lakesuperior.log"
GUNICORN_CONF = "gunicorn.conf.py"
ETC_DIR = "etc"
REPOSITORY_DIR = "repository"
SERVER_DIR = "server"
READY_MARKER = ".lakebench-ready.json"
LDP_ROOT = "ldp/"


class LakesuperiorError(RuntimeError):
    """LAKEsuperior could not be fetched, started, found or stopped; the message says why."""


# -- fetching ---------------------------------------------------------------

@dataclass(frozen=True)
class Installation:
    """A verified, built LAKEsuperior in a virtualenv of its own."""

    version: str
    root: Path  # <cache>/lakesuperior-<version>
    sdist: Path

    @property
    def venv(self) -> Path:
        return self.root / "venv"

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def gunicorn(self) -> Path:
        return self.venv / "bin" / "gunicorn"

    @property
    def lsup_admin(self) -> Path:
        return self.venv / "bin" / "lsup-admin"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _fingerprint() -> dict:
    """What a finished installation was built from: any change rebuilds it."""
    return {
        "version": VERSION,
        "sdist_sha256": SDIST_SHA256,
        "requirements_sha256": sha256_of(REQUIREMENTS),
        "adaptation_sha256": sha256_of(Path(lakesuperior_py311.__file__)),
    }


def _say(show: bool, message: str) -> None:
    if show:
        print(f"lakebench lakesuperior: {message}", file=sys.stderr, flush=True)


def _want_progress(progress: bool | None) -> bool:
    if progress is not None:
        return progress
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _clean_env(**extra: str) -> dict:
    """The environment for LAKEsuperior's tools: nothing of lakebench's Python leaks in."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PYTHONNOUSERSITE"] = "1"
    env.update(extra)
    return env


def _run(cmd: list, what: str, log: Path, **kwargs) -> None:
    """Run a build step; its output goes to ``log``; a failure quotes the log's end."""
    with open(log, "ab") as out:
        out.write(("\n$ " + " ".join(map(str, cmd)) + "\n").encode())
        out.flush()
        done = subprocess.run([str(c) for c in cmd], stdout=out, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, **kwargs)
    if done.returncode != 0:
        raise LakesuperiorError(f"{what} failed (exit code {done.returncode}); {log} ends with:\n"
                                f"{process.log_tail(log)}")


def _check_python(python: str) -> None:
    out = subprocess.run([python, "-c", "import sys; print(sys.version_info[0], sys.version_info[1])"],
                         capture_output=True, text=True)
    try:
        found = tuple(int(x) for x in out.stdout.split())
    except ValueError:
        found = ()
    if found != PYTHON:
        raise LakesuperiorError(
            f"LAKEsuperior {VERSION} is installed with Python {PYTHON[0]}.{PYTHON[1]} (its C is adapted "
            f"to it and its dependencies pinned for it); {python} is Python "
            f"{'.'.join(map(str, found)) or '?'}")


def install_root(cache_dir: str | Path | None = None) -> Path:
    cache = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
    return cache / f"lakesuperior-{VERSION}"


def installed(cache_dir: str | Path | None = None) -> Installation | None:
    """The finished installation in the cache, or None (nothing is downloaded)."""
    cache = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
    inst = Installation(VERSION, install_root(cache), cache / SDIST_NAME)
    try:
        marker = json.loads((inst.venv / READY_MARKER).read_text())
    except (OSError, ValueError):
        return None
    if marker != _fingerprint() or not inst.python.exists() or not inst.gunicorn.exists():
        return None
    return inst


def fetch(cache_dir: str | Path | None = None, *, progress: bool | None = None,
          python: str | None = None) -> Installation:
    """Download, verify, adapt and build LAKEsuperior into its own virtualenv (once).

    ``python`` is the interpreter the virtualenv is made from (default: the
    one running lakebench; it must be Python 3.11).  Returns at once when a
    finished installation of the same sdist, pins and adaptation is in the
    cache.  Concurrent fetches wait for each other (a lock file).
    """
    cache = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    found = installed(cache)
    if found is not None:
        return found
    show = _want_progress(progress)
    with open(cache / f"lakesuperior-{VERSION}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = installed(cache)  # another process may have finished meanwhile
        if found is not None:
            return found
        return _build(cache, python or sys.executable, show)


def _build(cache: Path, python: str, show: bool) -> Installation:
    t0 = time.monotonic()
    _check_python(python)
    root = install_root(cache)
    inst = Installation(VERSION, root, cache / SDIST_NAME)
    shutil.rmtree(inst.venv, ignore_errors=True)  # a half-built one is never reused
    root.mkdir(parents=True, exist_ok=True)
    log = root / "install.log"
    log.write_text(f"# lakebench: installing LAKEsuperior {VERSION}\n")
    env = _clean_env()
    _say(show, f"creating a virtualenv for LAKEsuperior {VERSION} in {inst.venv}")
    _run([python, "-m", "venv", inst.venv], "creating the virtualenv", log, env=env)
    _say(show, "installing its pinned dependencies")
    _run([inst.python, "-m", "pip", "install", "--no-input", "-r", REQUIREMENTS],
         "installing LAKEsuperior's dependencies", log, env=env)
    _fetch_sdist(inst, log, env, show)
    with tempfile.TemporaryDirectory(prefix="build-", dir=root) as tmp:
        with tarfile.open(inst.sdist) as tar:
            if hasattr(tarfile, "data_filter"):  # refuse links and paths out of the tree
                tar.extractall(tmp, filter="data")
            else:
                tar.extractall(tmp)
        source = Path(tmp) / f"lakesuperior-{VERSION}"
        try:
            lakesuperior_py311.patch_tree(source)
        except lakesuperior_py311.PatchError as exc:
            raise LakesuperiorError(str(exc)) from None
        _say(show, "building its C extensions (adapted to Python 3.11; about a minute)")
        _run([inst.python, "-m", "pip", "install", "--no-input", "--no-deps", "--no-build-isolation",
              "--no-cache-dir", source], "building LAKEsuperior", log,
             env=_clean_env(CFLAGS=lakesuperior_py311.STRICT_CFLAGS))
    modules = ", ".join("lakesuperior." + m for m in (
        "model.base", "model.callbacks", "model.rdf.graph", "model.rdf.term", "model.rdf.triple",
        "model.structures.hash", "model.structures.keyset", "store.base_lmdb_store",
        "store.ldp_rs.lmdb_triplestore"))
    _run([inst.python, "-c", f"import {modules}"], "importing LAKEsuperior's compiled modules", log,
         env=env, cwd=root)
    (inst.venv / READY_MARKER).write_text(json.dumps(_fingerprint(), indent=2) + "\n")
    _say(show, f"LAKEsuperior {VERSION} ready in {time.monotonic() - t0:.0f} s")
    return inst


def _fetch_sdist(inst: Installation, log: Path, env: dict, show: bool) -> None:
    """The sdist into the cache, verified; a verified cached copy is used as is."""
    if inst.sdist.exists():
        if sha256_of(inst.sdist) == SDIST_SHA256:
            return
        print(f"lakebench: cached {inst.sdist} fails its checksum; downloading it again", file=sys.stderr)
        inst.sdist.unlink()
    _say(show, f"downloading the sdist of lakesuperior=={VERSION}")
    with tempfile.TemporaryDirectory(prefix="download-", dir=inst.root) as tmp:
        _run([inst.python, "-m", "pip", "download", "--no-input", "--no-deps", "--no-binary", ":all:",
              f"lakesuperior=={VERSION}", "-d", tmp], "downloading the LAKEsuperior sdist", log, env=env)
        got = Path(tmp) / SDIST_NAME
        if not got.exists():
            raise LakesuperiorError(f"pip download did not produce {SDIST_NAME}; see {log}")
        digest = sha256_of(got)
        if digest != SDIST_SHA256:
            raise LakesuperiorError(f"checksum mismatch for {SDIST_NAME}: expected SHA-256 {SDIST_SHA256}, "
                                    f"got {digest}; file discarded")
        os.replace(got, inst.sdist)


# -- configuration ----------------------------------------------------------

#: Run by LAKEsuperior's Python: the package's etc.defaults, with the settings
#: lakebench needs, into etc/ (PyYAML is in that virtualenv, not in lakebench's).
_CONFIGURE = r"""
import json, os, shutil, sys, yaml
import lakesuperior
etc, settings = sys.argv[1], json.loads(sys.argv[2])
shutil.copytree(os.path.join(lakesuperior.basedir, "etc.defaults"), etc, dirs_exist_ok=True)
for name, changes in settings.items():
    path = os.path.join(etc, name)
    with open(path) as f:
        config = yaml.safe_load(f) or {}
    for key, value in changes.items():
        target = config
        *parents, last = key.split(".")
        for part in parents:
            target = target[part]
        target[last] = value
    with open(path, "w") as f:
        f.write("# Written by lakebench from LAKEsuperior's etc.defaults.\n")
        yaml.safe_dump(config, f, default_flow_style=False, sort_keys=False)
"""

_GUNICORN_CONF = """\
# Written by lakebench.  LAKEsuperior's own gunicorn settings (lakesuperior.wsgi,
# which reads etc/gunicorn.yml: bind, workers, pid file, logs), with one change:
# in prod mode it would daemonize; here gunicorn stays in the foreground, so
# the process lakebench started is the master of every worker.
from lakesuperior.wsgi import *  # noqa: F401,F403

daemon = False
"""


def configure(inst: Installation, data_dir: Path, port: int, workers: int) -> dict:
    """Write etc/ and gunicorn.conf.py for a server on 127.0.0.1:``port``; returns the settings."""
    settings = {
        "application.yml": {
            "app_mode": "prod",
            "data_dir": str(data_dir / REPOSITORY_DIR),
            # The default route publishes every change to a STOMP broker on
            # 127.0.0.1:61613; there is none, and the seed ran without one.
            "messaging.routes": [],
        },
        "gunicorn.yml": {
            "data_dir": str(data_dir / SERVER_DIR),
            "listen_addr": "127.0.0.1",
            "listen_port": port,
            "workers": workers,
        },
        "logging.yml": {
            "handlers.logfile.filename": str(data_dir / SERVER_DIR / "log" / "lakesuperior.log"),
        },
    }
    (data_dir / SERVER_DIR / "log").mkdir(parents=True, exist_ok=True)
    (data_dir / REPOSITORY_DIR).mkdir(parents=True, exist_ok=True)
    done = subprocess.run([str(inst.python), "-c", _CONFIGURE, str(data_dir / ETC_DIR), json.dumps(settings)],
                          capture_output=True, text=True, env=_clean_env(), cwd=data_dir)
    if done.returncode != 0:
        raise LakesuperiorError(f"writing LAKEsuperior's configuration failed:\n{done.stderr.strip()}")
    (data_dir / GUNICORN_CONF).write_text(_GUNICORN_CONF)
    return settings


def bootstrap(inst: Installation, data_dir: Path) -> None:
    """``lsup-admin bootstrap`` (it asks for confirmation on stdin) on a new repository."""
    env = _clean_env(FCREPO_CONFIG_DIR=str(data_dir / ETC_DIR))
    done = subprocess.run([str(inst.lsup_admin), "bootstrap"], input="yes\n", capture_output=True,
                          text=True, env=env, cwd=data_dir, timeout=120)
    # It prints an empty "Error in sys.excepthook" at exit, with exit code 0.
    store = data_dir / REPOSITORY_DIR / "ldprs_store" / "data.mdb"
    if done.returncode != 0 or not store.exists():
        raise LakesuperiorError(f"lsup-admin bootstrap failed (exit code {done.returncode}):\n"
                                f"{(done.stdout + done.stderr).strip()[-2000:]}")


# -- the running process ----------------------------------------------------

class LakesuperiorProcess:
    """A gunicorn master running LAKEsuperior, started by :func:`start` or found by :func:`status`.

    Use as a context manager to stop it on exit.  ``base_url`` is the LDP
    root, ``http://127.0.0.1:<port>/ldp/``.
    """

    def __init__(self, *, pid: int, port: int, workers: int, data_dir: Path, create_time: float,
                 popen: subprocess.Popen | None = None):
        self.pid = pid
        self.port = port
        self.workers = workers
        self.version = VERSION
        self.data_dir = Path(data_dir)
        self.create_time = create_time  # guards against a recycled pid
        self._popen = popen

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/{LDP_ROOT}"

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    @property
    def log_path(self) -> Path:
        return self.data_dir / LOG_FILE

    @property
    def repository(self) -> Path:
        """The repository's own data (what it costs on disk)."""
        return self.data_dir / REPOSITORY_DIR

    @property
    def pid_file(self) -> Path:
        return self.data_dir / SERVER_DIR / "run" / "fcrepo.pid"

    def __repr__(self) -> str:
        return f"<LakesuperiorProcess {self.version} pid={self.pid} {self.base_url}>"

    def _process(self) -> psutil.Process | None:
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
        if self._popen is not None and self._popen.poll() is not None:
            return False
        return self._process() is not None

    def is_ready(self) -> bool:
        return process.http_status(self.base_url) == 200

    def processes(self) -> list[psutil.Process]:
        """The master and every process under it (its workers)."""
        proc = self._process()
        if proc is None:
            return []
        try:
            return [proc] + proc.children(recursive=True)
        except psutil.Error:
            return [proc]

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM to the master (gunicorn stops its workers), then SIGKILL to whatever is left.

        Every process of the tree, collected before the signal, is waited
        for; the state file goes.  Stopping a stopped server does nothing.
        """
        tree = self.processes()
        if tree:
            with contextlib.suppress(psutil.Error):
                tree[0].send_signal(signal.SIGTERM)
            _, alive = psutil.wait_procs(tree, timeout=timeout)
            for proc in alive:
                with contextlib.suppress(psutil.Error):
                    proc.kill()
            psutil.wait_procs(alive, timeout=10)
        if self._popen is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._popen.wait(timeout=1)
        if _read_state(self.data_dir).get("pid") == self.pid:
            (self.data_dir / STATE_FILE).unlink(missing_ok=True)

    def __enter__(self) -> LakesuperiorProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _read_state(data_dir: Path) -> dict:
    return process.read_state(Path(data_dir) / STATE_FILE)


def _write_state(server: LakesuperiorProcess) -> None:
    state = {
        "pid": server.pid,
        "port": server.port,
        "workers": server.workers,
        "version": server.version,
        "base_url": server.base_url,
        "create_time": server.create_time,
        "log": str(server.log_path),
    }
    process.write_state(server.data_dir / STATE_FILE, state)


def status(data_dir: str | Path = "lakesuperior-data") -> LakesuperiorProcess | None:
    """The LAKEsuperior running on ``data_dir`` per its state file, or None."""
    data_dir = Path(data_dir).resolve()
    state = _read_state(data_dir)
    try:
        server = LakesuperiorProcess(pid=int(state["pid"]), port=int(state["port"]),
                                     workers=int(state.get("workers", DEFAULT_WORKERS)), data_dir=data_dir,
                                     create_time=float(state["create_time"]))
    except (KeyError, TypeError, ValueError):
        return None
    return server if server.is_running() else None


def stop(data_dir: str | Path = "lakesuperior-data", timeout: float = 30.0) -> LakesuperiorProcess | None:
    """Stop the LAKEsuperior running on ``data_dir``; returns it, or None if none was running.

    Without a live state file, a gunicorn master named by the pid file of
    this data directory (and started with its configuration) is stopped all
    the same; a stale state file is removed.
    """
    data_dir = Path(data_dir).resolve()
    server = status(data_dir) or _from_pid_file(data_dir)
    if server is None:
        (data_dir / STATE_FILE).unlink(missing_ok=True)
        return None
    server.stop(timeout)
    return server


def _from_pid_file(data_dir: Path) -> LakesuperiorProcess | None:
    try:
        pid = int((data_dir / SERVER_DIR / "run" / "fcrepo.pid").read_text().strip())
        proc = psutil.Process(pid)
        ours = str(data_dir / GUNICORN_CONF) in " ".join(proc.cmdline())
        create_time = proc.create_time()
    except (OSError, ValueError, psutil.Error):
        return None
    if not ours:
        return None
    return LakesuperiorProcess(pid=pid, port=0, workers=0, data_dir=data_dir, create_time=create_time)


def start(port: int | None = None, data_dir: str | Path = "lakesuperior-data", workers: int = DEFAULT_WORKERS,
          timeout: float = 120.0, *, cache_dir: str | Path | None = None, progress: bool | None = None,
          detach: bool = False) -> LakesuperiorProcess:
    """Start LAKEsuperior on 127.0.0.1 and wait until ``/ldp/`` answers 200.

    Fetches it first if needed.  ``port`` None picks a free loopback port.
    Every file goes under ``data_dir`` (see the module docstring); the
    repository is bootstrapped on the first start and kept by later ones.
    ``detach`` puts gunicorn in its own session so it outlives the caller
    (the CLI's ``start``); otherwise it is stopped when Python exits.
    """
    if workers < 1:
        raise LakesuperiorError(f"workers must be at least 1, got {workers}")
    data_dir = Path(data_dir).resolve()
    running = status(data_dir)
    if running is not None:
        raise LakesuperiorError(f"LAKEsuperior is already running on {data_dir} at {running.base_url} "
                                f"(pid {running.pid}); stop it first")
    if port is not None and not process.port_is_free(port):
        raise LakesuperiorError(f"port {port} on 127.0.0.1 is already in use")
    inst = fetch(cache_dir, progress=progress)
    if port is None:
        port = process.free_port()
    data_dir.mkdir(parents=True, exist_ok=True)
    configure(inst, data_dir, port, workers)
    if not (data_dir / REPOSITORY_DIR / "ldprs_store" / "data.mdb").exists():
        bootstrap(inst, data_dir)
    pid_file = data_dir / SERVER_DIR / "run" / "fcrepo.pid"
    pid_file.unlink(missing_ok=True)  # a killed master's is stale

    cmd = [str(inst.gunicorn), "-c", str(data_dir / GUNICORN_CONF), "lakesuperior.server:fcrepo"]
    env = _clean_env(FCREPO_CONFIG_DIR=str(data_dir / ETC_DIR))
    log_path = data_dir / LOG_FILE
    with open(log_path, "wb") as log:
        log.write(("# lakebench: FCREPO_CONFIG_DIR=" + env["FCREPO_CONFIG_DIR"] + " " + " ".join(cmd) + "\n").encode())
        log.flush()
        popen = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                 cwd=data_dir, env=env, start_new_session=detach)
    try:
        create_time = psutil.Process(popen.pid).create_time()
    except psutil.Error:
        create_time = time.time()
    server = LakesuperiorProcess(pid=popen.pid, port=port, workers=workers, data_dir=data_dir,
                                 create_time=create_time, popen=popen)
    _write_state(server)
    try:
        process.wait_ready(popen, server.base_url, timeout, what="LAKEsuperior", log_path=server.log_path,
                           error=LakesuperiorError)
    except BaseException:
        server.stop(timeout=10)
        raise
    if not detach:
        process.stop_at_exit(server)
    return server


# -- command line -----------------------------------------------------------

def add_parser(subparsers) -> argparse.ArgumentParser:
    """Add ``lakebench lakesuperior fetch|start|stop|status`` to a subparsers object."""
    p = subparsers.add_parser(
        "lakesuperior",
        help="fetch, start, stop or check LAKEsuperior, the seed report's second system",
        description=(
            f"Manage a local LAKEsuperior {VERSION} (a Python LDP repository on LMDB, served by "
            "gunicorn). 'fetch' installs it once into a virtualenv of its own in the cache, never "
            "into lakebench's environment: the sdist from PyPI (SHA-256 checked), its pinned "
            "dependencies, and its C adapted to Python 3.11 and compiled (about a minute). 'start' "
            "runs it in prod mode with the message queue route off, listening on 127.0.0.1 only, "
            "with every file in the data directory; 'lakebench run --systems lakesuperior' does all "
            "of this by itself."),
    )
    p.add_argument("lsup_action", metavar="ACTION", choices=["fetch", "start", "stop", "status"],
                   help="fetch: install LAKEsuperior into the cache (nothing to do the second time); "
                        "start: bootstrap the repository if new, run it in the background and wait "
                        "until /ldp/ answers; stop: stop the server on --data and every process it "
                        "started; status: say whether one is running (exit 1 if not)")
    p.add_argument("--port", type=argtypes.PORT, default=None,
                   help=f"HTTP port on 127.0.0.1, {argtypes.PORT.range} (default: a free one)")
    p.add_argument("--data", default="lakesuperior-data", metavar="DIR",
                   help="data directory holding the configuration, repository, logs and state file "
                        "(default ./lakesuperior-data)")
    p.add_argument("--workers", type=WORKERS, default=DEFAULT_WORKERS,
                   help=f"gunicorn sync workers, {WORKERS.range} (default {DEFAULT_WORKERS}; LAKEsuperior's own default "
                        "is 2 x CPUs + 1)")
    p.add_argument("--cache", default=None, metavar="DIR",
                   help="install cache (default $LAKEBENCH_CACHE or ~/.cache/lakebench)")
    p.add_argument("--timeout", type=argtypes.START_TIMEOUT, default=120.0, metavar="SECONDS",
                   help=f"how long start waits for LAKEsuperior to answer, {argtypes.START_TIMEOUT.range} (default 120)")
    p.set_defaults(func=main)
    return p


def main(args: argparse.Namespace) -> int:
    """Run one ``lakebench lakesuperior`` action; returns the exit code."""
    try:
        return _run_action(args)
    except LakesuperiorError as e:
        print(f"lakebench lakesuperior: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("lakebench lakesuperior: interrupted", file=sys.stderr)
        return 130


def _run_action(args: argparse.Namespace) -> int:
    action = args.lsup_action
    data = Path(args.data)
    if action == "fetch":
        inst = fetch(args.cache, progress=True)
        print(f"LAKEsuperior {inst.version} ready in {inst.venv} (sdist {inst.sdist})")
        return 0
    if action == "start":
        t0 = time.monotonic()
        server = start(args.port, data, workers=args.workers, timeout=args.timeout, cache_dir=args.cache,
                       detach=True)
        print(f"LAKEsuperior {server.version} ready at {server.base_url} (pid {server.pid}, "
              f"{server.workers} worker{'s' if server.workers != 1 else ''}, {time.monotonic() - t0:.0f} s; "
              f"data {data}, log {server.log_path})")
        return 0
    if action == "stop":
        server = stop(data)
        if server is None:
            print(f"no LAKEsuperior running on {data}")
        else:
            print(f"stopped LAKEsuperior (pid {server.pid}) on {data}")
        return 0
    if action == "status":
        server = status(data)
        if server is None:
            print(f"no LAKEsuperior running on {data}")
            return 1
        state = "ready" if server.is_ready() else "not answering yet"
        print(f"LAKEsuperior {server.version} running at {server.base_url} (pid {server.pid}, "
              f"{server.workers} worker{'s' if server.workers != 1 else ''}, {state})")
        return 0
    raise LakesuperiorError(f"unknown action {action!r}")
