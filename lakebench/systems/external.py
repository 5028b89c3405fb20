"""What the external servers lakebench installs and runs (Fedora, LAKEsuperior) share.

* :class:`RunningServer`: one such server on 127.0.0.1, started in its data
  directory or found again there through its state file, so that one
  command starts it and another, later, stops it;
* :class:`Command`: ``lakebench NAME fetch|start|stop|status``, written once;
  each server's folder gives a small description (its own options, how to
  fetch and start it) as ``COMMAND`` in its ``server.py``, where the
  registry (``SERVERS`` in :mod:`lakebench.systems`) finds it;
* the download cache and checksums both installers use.

The process itself (log, readiness, pid guard, stopping the tree) is
:class:`lakebench.process.ServerProcess`.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from lakebench import argtypes
from lakebench.process import ServerProcess, http_status, port_is_free, stop_at_exit


def default_cache_dir() -> Path:
    """``$LAKEBENCH_CACHE`` if set, else ``~/.cache/lakebench``."""
    env = os.environ.get("LAKEBENCH_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "lakebench"


def cache_dir(given: str | Path | None) -> Path:
    """The cache a caller named, else :func:`default_cache_dir`."""
    return Path(given).expanduser() if given else default_cache_dir()


def want_progress(progress: bool | None) -> bool:
    """Progress lines only when asked, or by default when a person watches stderr."""
    if progress is not None:
        return progress
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False


def file_digest(path: Path, algorithm: str) -> str:
    """Hex digest of a file, read in chunks (Fedora's war is about 49 MB)."""
    digest = hashlib.new(algorithm)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class RunningServer:
    """An external server on 127.0.0.1, started by :meth:`launch` or found again by :meth:`find`.

    A subclass names its messages, files and LDP root, and the exception its
    failures raise.  Use it as a context manager to stop it on exit.
    """

    title = "?"  # in messages: "Fedora"
    state_file = "?"  # in the data directory while it runs: pid, port, version, base URL
    log_file = "?"  # stdout and stderr of this start
    root = ""  # the LDP root under the port: "rest/"
    error: type[Exception] = RuntimeError

    def __init__(self, process: ServerProcess, data_dir: Path):
        self.process = process
        self.data_dir = Path(data_dir)
        self.port = int(process.state["port"])
        self.version = str(process.state["version"])

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def name(self) -> str:
        """The server as errors and ``stop`` name it."""
        return f"{self.title} {self.version}"

    def details(self) -> list[str]:
        """What ``start`` and ``status`` say of it beside its pid (e.g. its workers)."""
        return []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/{self.root}"

    @property
    def log_path(self) -> Path:
        return self.data_dir / self.log_file

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.version} pid={self.pid} {self.base_url}>"

    def is_running(self) -> bool:
        """Whether the server is alive (it may still be booting)."""
        return self.process.is_running()

    def is_ready(self) -> bool:
        """Whether the LDP root answers 200 now."""
        return http_status(self.base_url) == 200

    def processes(self) -> list:
        """The server and every process under it."""
        return self.process.processes()

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the whole tree (SIGTERM, then SIGKILL after ``timeout`` s); the state file goes.
        Stopping a stopped server does nothing."""
        self.process.stop(timeout)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- found through the data directory ----------------------------------
    @classmethod
    def find(cls, data_dir: str | Path):
        """The server running on ``data_dir`` per its state file, or None."""
        data_dir = Path(data_dir).resolve()
        process = ServerProcess.find(data_dir / cls.state_file)
        if process is None:
            return None
        try:
            return cls(process, data_dir)
        except (KeyError, TypeError, ValueError):  # a state file lakebench did not write
            return None

    @classmethod
    def unrecorded(cls, data_dir: Path):
        """A server running on ``data_dir`` without a state file, found some other way; None here."""
        return None

    @classmethod
    def stop_in(cls, data_dir: str | Path, timeout: float = 30.0):
        """Stop the server running on ``data_dir``; returns it, or None if none was running
        (a stale state file is removed)."""
        data_dir = Path(data_dir).resolve()
        server = cls.find(data_dir) or cls.unrecorded(data_dir)
        if server is None:
            (data_dir / cls.state_file).unlink(missing_ok=True)
            return None
        server.stop(timeout)
        return server

    # -- started ---------------------------------------------------------------
    @classmethod
    def refuse_busy(cls, data_dir: Path, port: int | None) -> None:
        """Raise ``cls.error`` if a server already runs on ``data_dir`` or ``port`` is taken."""
        running = cls.find(data_dir)
        if running is not None:
            raise cls.error(f"{running.name} is already running on {data_dir} at {running.base_url} "
                            f"(pid {running.pid}); stop it first")
        if port is not None and not port_is_free(port):
            raise cls.error(f"port {port} on 127.0.0.1 is already in use")

    @classmethod
    def launch(cls, argv: list, data_dir: Path, state: dict, *, timeout: float, detach: bool,
               cwd: Path | None = None, env: dict | None = None, shown_env: tuple[str, ...] = (),
               interval: float = 0.2):
        """Run ``argv`` and return once the LDP root answers 200.

        ``state`` (``port``, ``version``, ...) goes into the state file, written
        before the wait so that ``stop`` from another shell finds a booting
        server.  The log's first line is the command, with the ``shown_env``
        variables of ``env``.  ``detach``: see :meth:`ServerProcess.start`;
        a server not detached is stopped when this Python process exits.
        On failure (``cls.error``, the end of the log quoted) nothing is left running.
        """
        data_dir = Path(data_dir)
        state = {**state, "base_url": f"http://127.0.0.1:{state['port']}/{cls.root}"}
        header = "# lakebench: " + " ".join([*(f"{k}={(env or {})[k]}" for k in shown_env), *map(str, argv)])
        process = ServerProcess.start(argv, data_dir / cls.log_file, cwd=cwd, env=env, detach=detach,
                                      header=header, state_path=data_dir / cls.state_file, state=state)
        server = cls(process, data_dir)
        process.wait_ready(server.base_url, timeout, what=server.name, error=cls.error, interval=interval)
        if not detach:
            stop_at_exit(server)
        return server


# -- lakebench NAME fetch|start|stop|status ---------------------------------------
@dataclass(frozen=True, eq=False)  # eq=False: hashed by identity, as argparse's func
class Command:
    """``lakebench NAME fetch|start|stop|status`` for one external server.

    The options every server takes (``--port --data --cache --timeout``),
    the messages and the exit codes are the same for all; a server gives
    its texts, its own options, and how to fetch and start it.  Calling the
    command with the parsed arguments runs it and returns the exit code.
    """

    name: str  # the sub-command; the data directory defaults to ./NAME-data
    server: type[RunningServer]
    help: str
    description: str
    actions: str  # what each ACTION does
    holds: str  # what the data directory holds
    cache: str  # "download" or "install"
    timeout: float  # start's default --timeout
    fetch: Callable[[argparse.Namespace], str]  # fetches; returns the line to print
    start: Callable[[argparse.Namespace, Path], RunningServer]  # starts detached on the data directory
    options: tuple[tuple[str, dict], ...] = ()  # its own: (flag, add_argument keywords)
    action_dest: str = "action"

    def add_parser(self, subparsers) -> argparse.ArgumentParser:
        """Add ``lakebench NAME fetch|start|stop|status`` to a subparsers object."""
        p = subparsers.add_parser(self.name, help=self.help, description=self.description)
        p.add_argument(self.action_dest, metavar="ACTION", choices=["fetch", "start", "stop", "status"],
                       help=self.actions)
        p.add_argument("--port", type=argtypes.PORT, default=None,
                       help=f"HTTP port on 127.0.0.1, {argtypes.PORT.range} (default: a free one)")
        p.add_argument("--data", default=f"{self.name}-data", metavar="DIR",
                       help=f"data directory holding {self.holds} (default ./{self.name}-data)")
        for flag, keywords in self.options:
            p.add_argument(flag, **keywords)
        p.add_argument("--cache", default=None, metavar="DIR",
                       help=f"{self.cache} cache (default $LAKEBENCH_CACHE or ~/.cache/lakebench)")
        p.add_argument("--timeout", type=argtypes.START_TIMEOUT, default=self.timeout, metavar="SECONDS",
                       help=f"how long start waits for {self.server.title} to answer, "
                            f"{argtypes.START_TIMEOUT.range} (default {self.timeout:g})")
        p.set_defaults(func=self)
        return p

    def __call__(self, args: argparse.Namespace) -> int:
        """Run one action; the exit code (2 with one line on stderr when the server fails)."""
        try:
            return self._run(getattr(args, self.action_dest), args, Path(args.data))
        except self.server.error as e:
            print(f"lakebench {self.name}: error: {e}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print(f"lakebench {self.name}: interrupted", file=sys.stderr)
            return 130

    def _run(self, action: str, args: argparse.Namespace, data: Path) -> int:
        title = self.server.title
        if action == "fetch":
            print(self.fetch(args))
            return 0
        if action == "start":
            t0 = time.monotonic()
            server = self.start(args, data)
            said = [f"pid {server.pid}", *server.details(),
                    f"{time.monotonic() - t0:.0f} s; data {data}, log {server.log_path}"]
            print(f"{title} {server.version} ready at {server.base_url} ({', '.join(said)})")
            return 0
        if action == "stop":
            server = self.server.stop_in(data)
            print(f"no {title} running on {data}" if server is None else
                  f"stopped {server.name} (pid {server.pid}) on {data}")
            return 0
        if action == "status":
            server = self.server.find(data)
            if server is None:
                print(f"no {title} running on {data}")
                return 1
            said = [f"pid {server.pid}", *server.details(), "ready" if server.is_ready() else "not answering yet"]
            print(f"{title} {server.version} running at {server.base_url} ({', '.join(said)})")
            return 0
        raise self.server.error(f"unknown action {action!r}")
