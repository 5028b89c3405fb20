"""Child processes: servers (a free port, waiting until one answers, stopping
those left at exit) and calls that may crash (:func:`call_in_child`).

One place for what Fedora, LAKEsuperior and ``lakebench serve`` all need
when lakebench starts them (:mod:`lakebench.fcrepo`,
:mod:`lakebench.lakesuperior`, :mod:`lakebench.systems.lmdb_http`), and
for C code that may die of a signal on damaged input (the store's check,
:mod:`lakebench.store.preflight`).  Everything here talks to 127.0.0.1 only.

>>> port = free_port()
>>> 1024 <= port < 65536 and port_is_free(port)
True
>>> http_status(f"http://127.0.0.1:{port}/", timeout=1) is None   # nothing listens
True
"""
from __future__ import annotations

import atexit
import faulthandler
import json
import os
import pickle
import resource
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable

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


# -- calls that may crash --------------------------------------------------------
class ChildCrashed(Exception):
    """A call run by :func:`call_in_child` killed its process: ``signal`` is the
    signal's name (``SIGBUS``, ``SIGABRT``, ...), ``detail`` the last line the
    child wrote to stderr (e.g. liblmdb's failed assertion), or ""."""

    def __init__(self, signal_name: str, detail: str = ""):
        self.signal = signal_name
        self.detail = detail
        super().__init__(f"{signal_name}: {detail}" if detail else signal_name)


class ChildFailed(Exception):
    """A call run by :func:`call_in_child` raised an exception that could not be
    sent back as it was: ``kind`` is its class name, the message its text."""

    def __init__(self, kind: str, message: str):
        self.kind = kind
        super().__init__(f"{kind}: {message}")


def call_in_child(func: Callable[..., Any], *args: Any) -> Any:
    """``func(*args)`` run in a forked child process: its result, or its exception
    raised here.  A signal that kills the child (SIGBUS, SIGSEGV, an ``abort()``)
    raises :class:`ChildCrashed` instead of killing this process.

    For C code that trusts a file it maps (liblmdb does: a damaged page can
    send it past the end of the file or into a failed assertion).  The
    result and the exception travel back pickled; the child writes no core
    file, and what it writes to stderr is kept for the message, not shown.
    Fork without exec: call it from a process whose other threads hold no
    lock the child needs, and open nothing in ``func`` that this process
    holds open (LMDB forbids using an environment across a fork).
    """
    read_fd, write_fd = os.pipe()
    stderr = tempfile.TemporaryFile()  # unlinked at once: nothing left behind
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        status = 0
        try:
            _die_with_parent(parent)
            os.close(read_fd)
            os.dup2(stderr.fileno(), 2)
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            faulthandler.disable()  # the signal must kill the child, not print a Python stack
            try:
                outcome = ("result", func(*args))
            except BaseException as exc:  # noqa: BLE001 - every failure goes back to the parent
                outcome = ("error", exc)
            try:
                data = pickle.dumps(outcome)
                pickle.loads(data)  # an exception whose class cannot be rebuilt goes back as text
            except Exception:  # noqa: BLE001
                kind, value = outcome
                name = type(value).__name__ if kind == "error" else "result"
                data = pickle.dumps(("failed", (name, str(value))))
            with os.fdopen(write_fd, "wb") as pipe:
                pipe.write(data)
        except BaseException:  # noqa: BLE001
            status = 1
        finally:
            os._exit(status)  # no atexit handlers, no flush of the parent's buffers
    os.close(write_fd)
    try:
        with os.fdopen(read_fd, "rb") as pipe:
            data = pipe.read()
        _, wait_status = os.waitpid(pid, 0)
        stderr.seek(0)
        detail = _last_line(stderr.read())
    except BaseException:  # e.g. Ctrl-C: the child must not outlive the call
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise
    finally:
        stderr.close()
    if os.WIFSIGNALED(wait_status):
        number = os.WTERMSIG(wait_status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        raise ChildCrashed(name, detail)
    if not data:
        raise ChildFailed("exit", f"the child exited with code {os.waitstatus_to_exitcode(wait_status)}"
                          + (f": {detail}" if detail else ""))
    kind, value = pickle.loads(data)
    if kind == "result":
        return value
    if kind == "failed":
        raise ChildFailed(*value)
    raise value


def _die_with_parent(parent: int) -> None:
    """Have the kernel SIGKILL this (forked) process when its parent dies, so that
    a call stuck in C is not left running when its caller is killed."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG (Linux)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def _last_line(data: bytes, limit: int = 300) -> str:
    lines = [line.strip() for line in data.decode("utf-8", "replace").splitlines() if line.strip()]
    return lines[-1][:limit] if lines else ""
