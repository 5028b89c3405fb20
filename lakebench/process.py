"""Child processes: servers (:class:`ServerProcess`: started, awaited, found
again, stopped) and calls that may crash (:func:`call_in_child`).

One place for what Fedora, LAKEsuperior and ``lakebench serve`` all need
when lakebench starts them (:mod:`lakebench.systems.fcrepo`,
:mod:`lakebench.systems.lakesuperior`, :mod:`lakebench.systems.lmdb_http`,
the server tests), and for C code that may die of a signal on damaged
input (the store's check, :mod:`lakebench.store.preflight`).  Everything
here talks to 127.0.0.1 only.

>>> port = free_port()
>>> 1024 <= port < 65536 and port_is_free(port)
True
>>> http_status(f"http://127.0.0.1:{port}/", timeout=1) is None   # nothing listens
True
"""
from __future__ import annotations

import atexit
import contextlib
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

import psutil

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


def log_tail(path: Path | None, lines: int = 20) -> str:
    """The last lines of a server's log, indented, for an error message."""
    try:
        text = Path(path).read_text(errors="replace") if path is not None else ""
    except OSError:
        return "(no log)"
    tail = text.splitlines()[-lines:]
    return "\n".join("    " + line for line in tail) if tail else "(log is empty)"


# -- servers ---------------------------------------------------------------------
class ServerProcess:
    """A server lakebench runs as a child process (:meth:`start`), or found again
    from its state file by another lakebench process (:meth:`find`).

    ``pid`` and ``create_time`` together name it: a pid read from a state file
    may since have been given to an unrelated process, which must never be
    signalled, so a process whose start time differs is taken as gone.  Only
    the process that started the server holds its ``Popen``: it waits through
    it (which reaps the child and keeps its exit code); any other polls with
    psutil.  A context manager: the server is stopped on exit.
    """

    def __init__(self, pid: int, create_time: float, *, popen: subprocess.Popen | None = None,
                 log_path: str | Path | None = None, state_path: str | Path | None = None,
                 state: dict | None = None):
        self.pid = pid
        self.create_time = create_time
        self.log_path = Path(log_path) if log_path is not None else None
        self.state_path = Path(state_path) if state_path is not None else None
        #: What the state file holds beside pid, create_time and log (port, version, ...).
        self.state = dict(state or {})
        self._popen = popen

    @classmethod
    def start(cls, argv: list, log_path: str | Path, *, cwd: str | Path | None = None, env: dict | None = None,
              detach: bool = False, append: bool = False, header: str | None = None,
              state_path: str | Path | None = None, state: dict | None = None) -> ServerProcess:
        """Run ``argv`` (stdin closed, stdout and stderr to ``log_path``) and return at once.

        The log is truncated (``append``: added to), and ``header``, if given,
        is its first line.  ``detach`` starts the server in a session of its
        own: Ctrl-C in the caller's terminal does not reach it, and it
        outlives the caller.  With ``state_path`` the state file is written
        now, before the server is ready, so that a ``stop`` from another
        process finds a server that is still booting.
        """
        with open(log_path, "ab" if append else "wb") as log:
            if header is not None:
                log.write((header + "\n").encode())
                log.flush()
            popen = subprocess.Popen([str(a) for a in argv], stdin=subprocess.DEVNULL, stdout=log,
                                     stderr=subprocess.STDOUT, cwd=cwd, env=env, start_new_session=detach)
        try:
            create_time = psutil.Process(popen.pid).create_time()
        except psutil.Error:
            create_time = time.time()  # already gone: wait_ready says so
        server = cls(popen.pid, create_time, popen=popen, log_path=log_path, state_path=state_path, state=state)
        if state_path is not None:
            _write_state(Path(state_path), {"pid": server.pid, "create_time": create_time,
                                             "log": str(server.log_path), **server.state})
        return server

    @classmethod
    def find(cls, state_path: str | Path) -> ServerProcess | None:
        """The server a state file names if that very process still runs; else None
        (no file, an unreadable one, or its pid ended or reused)."""
        state = _read_state(Path(state_path))
        try:
            pid, create_time = int(state.pop("pid")), float(state.pop("create_time"))
        except (KeyError, TypeError, ValueError):
            return None
        log = state.pop("log", None)
        server = cls(pid, create_time, log_path=log, state_path=state_path, state=state)
        return server if server.is_running() else None

    def wait_ready(self, url: str, timeout: float, *, what: str, error: Callable[[str], Exception] = RuntimeError,
                   ready: tuple[int, ...] = (200,), interval: float = 0.2) -> None:
        """Return once a GET of ``url`` answers one of the ``ready`` statuses.

        If the server exits first, or ``timeout`` seconds pass, or the wait is
        interrupted (Ctrl-C), it is stopped, never left half-started, and
        ``error(message)`` raised (the interruption itself for Ctrl-C).  The
        message's first line says what happened; the lines after it quote the
        end of the log, so a caller that shows one line can keep the rest aside.
        """
        deadline = time.monotonic() + timeout
        try:
            while True:
                if not self.is_running():
                    raise error(f"{what} exited with code {self.returncode} while starting\n"
                                f"{self.log_path} ends with:\n{log_tail(self.log_path)}")
                if http_status(url, timeout=5) in ready:
                    return
                if time.monotonic() > deadline:
                    raise error(f"{what} did not answer {' or '.join(map(str, ready))} at {url} within {timeout:g} s\n"
                                f"{self.log_path} ends with:\n{log_tail(self.log_path)}")
                time.sleep(interval)
        except BaseException:
            self.stop(timeout=10)
            raise

    @property
    def returncode(self) -> int | None:
        """The exit code, once ended, of a server this process started; None otherwise."""
        return self._popen.poll() if self._popen is not None else None

    def process(self) -> psutil.Process | None:
        """The live server process, or None if it ended (a zombie counts as ended) or its pid
        now names another process."""
        try:
            proc = psutil.Process(self.pid)
            if abs(proc.create_time() - self.create_time) > 1.0 or proc.status() == psutil.STATUS_ZOMBIE:
                return None
            return proc
        except psutil.Error:
            return None

    def processes(self) -> list[psutil.Process]:
        """The server and every process under it (gunicorn's workers, say)."""
        proc = self.process()
        if proc is None:
            return []
        try:
            return [proc] + proc.children(recursive=True)
        except psutil.Error:
            return [proc]

    def is_running(self) -> bool:
        """Whether the server process is alive (it may still be booting)."""
        if self._popen is not None and self._popen.poll() is not None:
            return False
        return self.process() is not None

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM, up to ``timeout`` seconds for the whole tree to end, then SIGKILL to what is left.

        Only the server itself gets SIGTERM: it stops its own children in its
        own way (gunicorn's master its workers).  The tree is collected
        before, so a child the server failed to stop is still waited for and
        killed.  The state file goes (if it still names this process).
        Returns :attr:`returncode`.  Stopping a stopped server does nothing.
        """
        tree = self.processes()
        if tree:
            _send(tree[:1], signal.SIGTERM)
            left = self._wait(tree, timeout)
            _send(left, signal.SIGKILL)
            self._wait(left, 10.0)
        return self._ended()

    def kill(self) -> int | None:
        """SIGKILL the server and every process under it, as a crash would (no handler runs,
        nothing is flushed); returns once all are gone, so that the port and the files are free."""
        tree = self.processes()
        _send(tree, signal.SIGKILL)  # the server first: it cannot start another child meanwhile
        self._wait(tree, 10.0)
        return self._ended()

    def _wait(self, procs: list[psutil.Process], timeout: float) -> list[psutil.Process]:
        """Those of ``procs`` still alive after at most ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        popen = self._popen
        ours = [p for p in procs if p.pid == self.pid] if popen is not None else []
        if popen is not None and ours:  # our own child: waited for through Popen (reaped, exit code kept)
            procs = [p for p in procs if p.pid != self.pid]
            try:
                popen.wait(timeout)
                ours = []
            except subprocess.TimeoutExpired:
                pass
        _, alive = psutil.wait_procs(procs, timeout=max(0.0, deadline - time.monotonic()))
        return ours + alive

    def _ended(self) -> int | None:
        if self.state_path is not None and _read_state(self.state_path).get("pid") == self.pid:
            self.state_path.unlink(missing_ok=True)
        return self.returncode

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _send(procs: list[psutil.Process], sig: int) -> None:
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.send_signal(sig)


def _read_state(path: Path) -> dict:
    """A server's state file, or {} when absent or unreadable."""
    try:
        state = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def _write_state(path: Path, state: dict) -> None:
    """Write a server's state file atomically (a reader sees the old or the new one)."""
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
