"""Start, find and stop Fedora, and ``lakebench fcrepo fetch|start|stop|status``.

:func:`start` runs Fedora on a loopback port with every data location under
one data directory and waits until ``/rest/``  answers; :func:`status` and
:func:`stop` find it again through ``<data_dir>/fedora.json``, so that one
shell starts it and another stops it.  The process is a
:class:`lakebench.process.ServerProcess`.
"""
from __future__ import annotations

from pathlib import Path

from lakebench import argtypes, process
from lakebench.systems.external import Command, RunningServer
from lakebench.systems.fcrepo.config import HOME_DIR, find_java, java_command, prepare_data_dir
from lakebench.systems.fcrepo.install import DEFAULT_VERSION, FedoraError, fedora_line, fetch, prepare_webapp

STATE_FILE = "fedora.json"
LOG_FILE = "fcrepo.log"


class FedoraProcess(RunningServer):
    """A Fedora JVM started by :func:`start` or found by :func:`status`; ``base_url`` is
    the LDP root, ``http://127.0.0.1:<port>/rest/``."""

    title = "Fedora"
    state_file = STATE_FILE
    log_file = LOG_FILE
    root = "rest/"
    error = FedoraError

    @property
    def home(self) -> Path:
        """The repository's own data (what it costs on disk)."""
        return self.data_dir / HOME_DIR


def status(data_dir: str | Path = "fcrepo-data") -> FedoraProcess | None:
    """The Fedora running on ``data_dir`` per its state file, or None."""
    return FedoraProcess.find(data_dir)


def stop(data_dir: str | Path = "fcrepo-data", timeout: float = 30.0) -> FedoraProcess | None:
    """Stop the Fedora running on ``data_dir``; returns it, or None if none was running.

    A stale state file (its process gone) is removed.
    """
    return FedoraProcess.stop_in(data_dir, timeout)


def start(version: str = DEFAULT_VERSION, port: int | None = None, data_dir: str | Path = "fcrepo-data",
          heap: str = "2g", java: str = "java", timeout: float = 180.0, *,
          cache_dir: str | Path | None = None, progress: bool | None = None,
          detach: bool = False, autoversioning: bool = True) -> FedoraProcess:
    """Start Fedora ``version`` on 127.0.0.1 and wait until ``/rest/`` answers 200.

    ``port`` None picks a free loopback port.  Every file Fedora writes goes
    under ``data_dir`` (see :mod:`lakebench.systems.fcrepo` for the layout);
    data survives a stop and a new start on the same directory.  ``detach``
    puts the JVM in its own session so it outlives the caller's terminal
    and the calling Python process (the CLI's ``start``); otherwise Ctrl-C
    in the terminal reaches it too, and it is stopped when Python exits.
    ``autoversioning`` False turns Fedora 6's version of every change off.

    Raises FedoraError if Java is missing, the port is taken, a Fedora is
    already running on ``data_dir``, or Fedora does not come up in
    ``timeout`` seconds (the message names the log and quotes its end).
    """
    fedora_line(version)  # reject unsupported versions before any download
    java_path = find_java(java)  # fail before a 49 MB download, not after
    data_dir = Path(data_dir).resolve()
    FedoraProcess.refuse_busy(data_dir, port)
    artifacts = fetch(version, cache_dir, progress=progress)
    webapp = prepare_webapp(artifacts)
    if port is None:
        port = process.free_port()  # chosen after the download, to narrow the window for a clash
    prepare_data_dir(artifacts, data_dir)
    command = java_command(java_path, artifacts, webapp, data_dir, port, heap, autoversioning=autoversioning)
    return FedoraProcess.launch(command, data_dir,
                                {"port": port, "version": version}, cwd=data_dir / HOME_DIR,
                                timeout=timeout, detach=detach, interval=0.5)


def _fetch(args) -> str:
    a = fetch(args.fcrepo_version, args.cache)
    return f"Fedora {a.version}: {a.war} and {a.jetty_runner.name} ready in {a.cache_dir}"


def _start(args, data: Path) -> FedoraProcess:
    return start(args.fcrepo_version, args.port, data, heap=args.heap, timeout=args.timeout,
                 cache_dir=args.cache, detach=True)


#: ``lakebench fcrepo fetch|start|stop|status``.
COMMAND = Command(
    name="fcrepo", server=FedoraProcess, action_dest="fcrepo_action", timeout=180.0,
    help="fetch, start, stop or check the reference Fedora repository",
    description="Manage a local Fedora Commons repository, the benchmark's reference system. "
                "It listens on 127.0.0.1 only and keeps all its files in the data directory.",
    actions="fetch: download the war and Jetty runner into the cache; "
            "start: run Fedora in the background and wait until it answers; "
            "stop: stop the Fedora running on --data; "
            "status: say whether one is running (exit 1 if not)",
    holds="the repository, log and state file", cache="download",
    options=(
        ("--version", dict(dest="fcrepo_version", default=DEFAULT_VERSION, metavar="VERSION",
                           help=f"Fedora version: 4.x or 6.x (default {DEFAULT_VERSION}; 6.1.0 also tested)")),
        ("--heap", dict(type=argtypes.JVM_HEAP, default="2g",
                        help=f"maximum JVM heap, as for java -Xmx, {argtypes.JVM_HEAP.range} (default 2g)")),
    ),
    fetch=_fetch, start=_start)
