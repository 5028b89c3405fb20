"""Start, find and stop LAKEsuperior, and ``lakebench lakesuperior fetch|start|stop|status``.

:func:`start` configures the data directory, bootstraps the repository on
first use, runs gunicorn in the foreground as lakebench's child and waits
until the LDP root ``/ldp/`` answers 200; :func:`status` and :func:`stop`
find it again through ``<data_dir>/lakesuperior.json`` (or gunicorn's own
pid file); stop ends the gunicorn master and every process under it.  The
process is a :class:`lakebench.process.ServerProcess`.
"""
from __future__ import annotations

from pathlib import Path

import psutil

from lakebench import process
from lakebench.process import ServerProcess
from lakebench.systems.external import Command, RunningServer
from lakebench.systems.lakesuperior.config import (DEFAULT_WORKERS, ETC_DIR, GUNICORN_CONF, REPOSITORY_DIR,
                                                   SERVER_DIR, WORKERS, bootstrap, configure)
from lakebench.systems.lakesuperior.install import VERSION, LakesuperiorError, clean_env, fetch

STATE_FILE = "lakesuperior.json"
LOG_FILE = "lakesuperior.log"
LDP_ROOT = "ldp/"


def pid_file(data_dir: Path) -> Path:
    """gunicorn's own pid file (``server/run/fcrepo.pid``)."""
    return data_dir / SERVER_DIR / "run" / "fcrepo.pid"


class LakesuperiorProcess(RunningServer):
    """A gunicorn master running LAKEsuperior, started by :func:`start` or found by
    :func:`status`; ``base_url`` is the LDP root, ``http://127.0.0.1:<port>/ldp/``."""

    title = "LAKEsuperior"
    state_file = STATE_FILE
    log_file = LOG_FILE
    root = LDP_ROOT
    error = LakesuperiorError

    def __init__(self, process: ServerProcess, data_dir: Path):
        super().__init__(process, data_dir)
        self.workers = int(process.state.get("workers", DEFAULT_WORKERS))

    @property
    def name(self) -> str:
        # One version only; and a server found through its pid file records none.
        return self.title

    def details(self) -> list[str]:
        return [f"{self.workers} worker{'s' if self.workers != 1 else ''}"]

    @property
    def repository(self) -> Path:
        """The repository's own data (what it costs on disk)."""
        return self.data_dir / REPOSITORY_DIR

    @property
    def pid_file(self) -> Path:
        return pid_file(self.data_dir)

    @classmethod
    def unrecorded(cls, data_dir: Path) -> LakesuperiorProcess | None:
        """The gunicorn master named by the pid file of ``data_dir``, if started with its configuration."""
        try:
            pid = int(pid_file(data_dir).read_text().strip())
            proc = psutil.Process(pid)
            ours = str(data_dir / GUNICORN_CONF) in " ".join(proc.cmdline())
            create_time = proc.create_time()
        except (OSError, ValueError, psutil.Error):
            return None
        if not ours:
            return None
        found = ServerProcess(pid, create_time, state_path=data_dir / STATE_FILE,
                              state={"port": 0, "workers": 0, "version": VERSION})
        return cls(found, data_dir)


def status(data_dir: str | Path = "lakesuperior-data") -> LakesuperiorProcess | None:
    """The LAKEsuperior running on ``data_dir`` per its state file, or None."""
    return LakesuperiorProcess.find(data_dir)


def stop(data_dir: str | Path = "lakesuperior-data", timeout: float = 30.0) -> LakesuperiorProcess | None:
    """Stop the LAKEsuperior running on ``data_dir``; returns it, or None if none was running.

    Without a live state file, a gunicorn master named by the pid file of
    this data directory (and started with its configuration) is stopped all
    the same; a stale state file is removed.
    """
    return LakesuperiorProcess.stop_in(data_dir, timeout)


def start(port: int | None = None, data_dir: str | Path = "lakesuperior-data", workers: int = DEFAULT_WORKERS,
          timeout: float = 120.0, *, cache_dir: str | Path | None = None, progress: bool | None = None,
          detach: bool = False) -> LakesuperiorProcess:
    """Start LAKEsuperior on 127.0.0.1 and wait until ``/ldp/`` answers 200.

    Fetches it first if needed.  ``port`` None picks a free loopback port.
    Every file goes under ``data_dir`` (see :mod:`lakebench.systems.lakesuperior`);
    the repository is bootstrapped on the first start and kept by later ones.
    ``detach`` puts gunicorn in its own session so it outlives the caller
    (the CLI's ``start``); otherwise it is stopped when Python exits.
    """
    if workers < 1:
        raise LakesuperiorError(f"workers must be at least 1, got {workers}")
    data_dir = Path(data_dir).resolve()
    LakesuperiorProcess.refuse_busy(data_dir, port)
    inst = fetch(cache_dir, progress=progress)
    if port is None:
        port = process.free_port()
    data_dir.mkdir(parents=True, exist_ok=True)
    configure(inst, data_dir, port, workers)
    if not (data_dir / REPOSITORY_DIR / "ldprs_store" / "data.mdb").exists():
        bootstrap(inst, data_dir)
    pid_file(data_dir).unlink(missing_ok=True)  # a killed master's is stale
    argv = [inst.gunicorn, "-c", data_dir / GUNICORN_CONF, "lakesuperior.server:fcrepo"]
    return LakesuperiorProcess.launch(argv, data_dir, {"port": port, "workers": workers, "version": VERSION},
                                      cwd=data_dir, env=clean_env(FCREPO_CONFIG_DIR=str(data_dir / ETC_DIR)),
                                      shown_env=("FCREPO_CONFIG_DIR",), timeout=timeout, detach=detach)


def _fetch(args) -> str:
    inst = fetch(args.cache, progress=True)
    return f"LAKEsuperior {inst.version} ready in {inst.venv} (sdist {inst.sdist})"


def _start(args, data: Path) -> LakesuperiorProcess:
    return start(args.port, data, workers=args.workers, timeout=args.timeout, cache_dir=args.cache, detach=True)


#: ``lakebench lakesuperior fetch|start|stop|status``.
COMMAND = Command(
    name="lakesuperior", server=LakesuperiorProcess, action_dest="lsup_action", timeout=120.0,
    help="fetch, start, stop or check LAKEsuperior, the seed report's second system",
    description=(
        f"Manage a local LAKEsuperior {VERSION} (a Python LDP repository on LMDB, served by "
        "gunicorn). 'fetch' installs it once into a virtualenv of its own in the cache, never "
        "into lakebench's environment: the sdist from PyPI (SHA-256 checked), its pinned "
        "dependencies, and its C adapted to Python 3.11 and compiled (about a minute). 'start' "
        "runs it in prod mode with the message queue route off, listening on 127.0.0.1 only, "
        "with every file in the data directory; 'lakebench run --systems lakesuperior' does all "
        "of this by itself."),
    actions="fetch: install LAKEsuperior into the cache (nothing to do the second time); "
            "start: bootstrap the repository if new, run it in the background and wait "
            "until /ldp/ answers; stop: stop the server on --data and every process it "
            "started; status: say whether one is running (exit 1 if not)",
    holds="the configuration, repository, logs and state file", cache="install",
    options=(
        ("--workers", dict(type=WORKERS, default=DEFAULT_WORKERS,
                           help=f"gunicorn sync workers, {WORKERS.range} (default {DEFAULT_WORKERS}; "
                                "LAKEsuperior's own default is 2 x CPUs + 1)")),
    ),
    fetch=_fetch, start=_start)
