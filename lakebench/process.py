"""Child servers: a free port, waiting until one answers, stopping those left at exit.

One place for what Fedora, LAKEsuperior and ``lakebench serve`` all need
when lakebench starts them (:mod:`lakebench.fcrepo`,
:mod:`lakebench.lakesuperior`, :mod:`lakebench.systems.lmdb_http`).
Everything here talks to 127.0.0.1 only.

>>> port = free_port()
>>> 1024 <= port < 65536 and port_is_free(port)
True
>>> http_status(f"http://127.0.0.1:{port}/", timeout=1) is None   # nothing listens
True
"""
from __future__ import annotations

import atexit
import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Callable

# Loopback requests must never go through an HTTP proxy from the environment.
_LOCAL_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_is_free(port: int) -> bool:
    """Whether ``port`` can be bound on 127.0.0.1 now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def http_status(url: str, timeout: float = 5.0) -> int | None:
    """HTTP status of a GET, or None if nothing answered."""
    try:
        with _LOCAL_OPENER.open(url, timeout=timeout) as response:
            return response.status
    except urllib.error.HTTPError as e:
        return e.code
    except (urllib.error.URLError, OSError):
        return None


def log_tail(path: Path, lines: int = 20) -> str:
    """The last lines of a server's log, indented, for an error message."""
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return "(no log)"
    tail = text.splitlines()[-lines:]
    return "\n".join("    " + line for line in tail) if tail else "(log is empty)"


def wait_ready(popen: subprocess.Popen, url: str, timeout: float, *, what: str, log_path: Path,
               error: Callable[[str], Exception], interval: float = 0.2) -> None:
    """Return once ``url`` answers 200; raise ``error(message)`` if the process
    exits first or ``timeout`` seconds pass.

    The message's first line says what happened; the lines after it quote the
    end of the log, so a caller that shows one line can keep the rest aside.
    """
    deadline = time.monotonic() + timeout
    while True:
        code = popen.poll()
        if code is not None:
            raise error(f"{what} exited with code {code} while starting\n"
                        f"{log_path} ends with:\n{log_tail(log_path)}")
        if http_status(url, timeout=5) == 200:
            return
        if time.monotonic() > deadline:
            raise error(f"{what} did not answer 200 at {url} within {timeout:g} s\n"
                        f"{log_path} ends with:\n{log_tail(log_path)}")
        time.sleep(interval)


def read_state(path: Path) -> dict:
    """A server's state file (pid, port, ...), or {} when absent or unreadable."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}


def write_state(path: Path, state: dict) -> None:
    """Write a server's state file atomically (a reader sees the old or the new one)."""
    path = Path(path)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(state, indent=2) + "\n")
    os.replace(tmp, path)


# Servers started attached belong to this Python process: those still running
# when it exits are stopped, so a forgotten stop() leaves no server behind.
_ATTACHED: list = []


def stop_at_exit(server) -> None:
    """Stop ``server`` (anything with ``is_running()`` and ``stop(timeout=)``) when
    this process exits, if it still runs then."""
    _ATTACHED.append(server)


@atexit.register
def _stop_attached() -> None:
    for server in _ATTACHED:
        if server.is_running():
            server.stop(timeout=10)
