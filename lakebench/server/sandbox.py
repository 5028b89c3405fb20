"""The processes that evaluate clients' SPARQL Updates, apart from the server.

A PATCH's update is evaluated in a helper process of the worker, never in
the worker itself:

* the helper is confined before it reads an update (:func:`lakebench._sparql.confine`):
  it cannot create a socket, so no form of update, nor anything a future
  pyoxigraph does, can make the server open a connection on a client's
  behalf, nor reach into the worker to use one of its sockets (no ptrace,
  no /proc/PID/mem writes, no pidfd_getfd).  It runs as the worker's user:
  the confinement is of the network and of the worker, not of the files;
* its core dumps are off and its address space is bounded (HELPER_MEMORY),
  and a difference larger than MAX_ANSWER is refused;
* the worker waits for the answer at most ``timeout`` seconds (``--patch-timeout``),
  then kills the helper and answers 503: an update that would join for hours
  costs the worker that long, no longer, and under the gevent worker the other
  clients are served meanwhile; a CPU limit in the helper is the backstop;
* an update that crashes the evaluator (a stack overflow) ends the helper,
  not the worker: the client gets a 400 and the next update a new helper.

In the helper, the update is parsed and checked by :func:`lakebench._sparql.prepare_update`
(the operations the Fedora API needs, on the resource's own graph, nested at
most ``MAX_DEPTH`` deep).  An update made only of INSERT DATA and DELETE
DATA (what the ``update`` workload and most clients send) is applied there,
from the parse, to the resource's triples; any other runs in pyoxigraph, the
canonical text of the parse on an in-memory copy of the resource.  The
answer is the difference, as two N-Triples documents (triples removed,
triples added).

The two ends speak length-prefixed frames over the helper's stdin and
stdout (no pickle: the worker trusts nothing the helper sends but bytes).
``python -m lakebench.server.sandbox TIMEOUT`` is the helper.
"""
from __future__ import annotations

import contextlib
import os
import select
import signal
import struct
import subprocess
import sys
import threading
import time

from lakebench.server.errors import RepositoryError

#: Seconds an update may take, by default (``--patch-timeout``).
PATCH_TIMEOUT = 5.0
#: Helpers a worker keeps at most: updates evaluated at once (gevent worker).
HELPERS = 4
#: The largest difference an update may make, in N-Triples bytes (removed and
#: added together): a cross product or a string doubled at each step is refused.
MAX_ANSWER = 64 << 20
#: The address space a helper may take (its 1 GiB stack, reserved, included).
HELPER_MEMORY = 4 << 30

_REQUEST = struct.Struct(">III")  # lengths of the update, the base IRI, the resource's N-Triples
_ANSWER = struct.Struct(">BII")  # status, then the lengths of two payloads
OK, MALFORMED, REFUSED, FAILED = range(4)


class Sandboxes:
    """The helpers of one worker process: ``evaluate(update, before, base)``.

    ``cooperative``: the worker is gevent's, so waiting for a helper yields
    to the other greenlets (else it blocks the thread, as everything does
    in the threaded and synchronous workers).
    """

    def __init__(self, timeout: float = PATCH_TIMEOUT, cooperative: bool = False, size: int = HELPERS):
        self.timeout = float(timeout)
        self._cooperative = cooperative
        self._idle: list[_Helper] = []
        self._all: set[_Helper] = set()
        if cooperative:
            from gevent.lock import BoundedSemaphore
        else:
            from threading import BoundedSemaphore
        self._slots = BoundedSemaphore(size)
        self._size = size

    def evaluate(self, update: str, before: bytes, base: str) -> tuple[bytes, bytes]:
        """(N-Triples removed, N-Triples added) when ``update`` runs on ``before``;
        RepositoryError (400, 503) when it is refused, fails or takes too long."""
        if not self._slots.acquire(timeout=self.timeout):
            raise RepositoryError(503, f"the server is evaluating {self._size} updates already and none "
                                       f"ended within {self.timeout:g} s: try again later",
                                  headers=[("Retry-After", "1")])
        try:
            helper = self._take()
            deadline = time.monotonic() + self.timeout  # the update's own time, not the wait for a slot
            try:
                status, first, second = helper.ask(update, base, before, deadline)
            except _Stopped as stopped:
                self._discard(helper)
                raise stopped.error() from None
            except BaseException:  # anything else mid-exchange: the pipes' state is unknown
                self._discard(helper)
                raise
            self._idle.append(helper)
        finally:
            self._slots.release()
        if status == OK:
            return first, second
        raise RepositoryError(400, first.decode("utf-8", "replace"))

    def _take(self) -> _Helper:
        """An idle helper that is still alive, or a new one."""
        while self._idle:
            helper = self._idle.pop()
            if helper.process.poll() is None:
                return helper
            self._discard(helper)  # died while idle (the OOM killer, say): not this update's doing
        return self._start()

    def close(self) -> None:
        """End every helper (the worker stops)."""
        for helper in list(self._all):
            self._discard(helper)

    def _start(self) -> _Helper:
        helper = _Helper(self.timeout, self._cooperative)
        self._all.add(helper)
        return helper

    def _discard(self, helper: _Helper) -> None:
        self._all.discard(helper)
        with contextlib.suppress(ValueError):
            self._idle.remove(helper)
        helper.kill()


class _Stopped(Exception):
    """A helper that did not answer: it ran out of time, or it died."""

    def __init__(self, timeout: float, returncode: int | None):
        self.timeout = timeout
        self.returncode = returncode

    def error(self) -> RepositoryError:
        if self.returncode is None:
            return RepositoryError(503, f"the update was stopped after {self.timeout:g} s, the "
                                        "server's limit on evaluating one (--patch-timeout)",
                                   headers=[("Retry-After", "1")])
        how = f"status {self.returncode}"
        if self.returncode < 0:
            with contextlib.suppress(ValueError):
                how = signal.Signals(-self.returncode).name
        return RepositoryError(400, f"the update could not be evaluated: it ended the process "
                                    f"evaluating it ({how}; nested too deeply?)")


class _Helper:
    """One helper process and its two pipes (non-blocking on the worker's side)."""

    def __init__(self, timeout: float, cooperative: bool):
        self._timeout = timeout
        self._cooperative = cooperative
        # The helper inherits no descriptor but its pipes (close_fds), and only
        # the environment it needs to find the package.
        env = {key: os.environ[key] for key in ("PATH", "PYTHONPATH", "LANG", "HOME") if key in os.environ}
        self.process = subprocess.Popen(
            # -P: the working directory is not put on sys.path.
            [sys.executable, "-P", "-m", "lakebench.server.sandbox", repr(timeout)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True, env=env)
        self._to = self.process.stdin.fileno()
        self._from = self.process.stdout.fileno()
        os.set_blocking(self._to, False)
        os.set_blocking(self._from, False)

    def ask(self, update: str, base: str, before: bytes, deadline: float) -> tuple[int, bytes, bytes]:
        parts = [update.encode("utf-8"), base.encode("utf-8"), before]
        self._send(_REQUEST.pack(*map(len, parts)) + b"".join(parts), deadline)
        status, first_length, second_length = _ANSWER.unpack(self._receive(_ANSWER.size, deadline))
        if first_length + second_length > MAX_ANSWER:  # the helper says so itself: not one of its answers
            raise _Stopped(self._timeout, 1)
        first = self._receive(first_length, deadline)
        second = self._receive(second_length, deadline)
        return status, first, second

    def _send(self, data: bytes, deadline: float) -> None:
        view = memoryview(data)
        while view:
            self._wait(self._to, write=True, deadline=deadline)
            try:
                view = view[os.write(self._to, view):]
            except BlockingIOError:
                continue
            except BrokenPipeError:
                raise self._died() from None

    def _receive(self, size: int, deadline: float) -> bytes:
        chunks, left = [], size
        while left:
            self._wait(self._from, write=False, deadline=deadline)
            try:
                chunk = os.read(self._from, min(left, 1 << 20))
            except BlockingIOError:
                continue
            if not chunk:
                raise self._died()
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def _wait(self, fd: int, write: bool, deadline: float) -> None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise _Stopped(self._timeout, None)
        if self._cooperative:
            from gevent.socket import wait_read, wait_write

            try:
                (wait_write if write else wait_read)(fd, timeout=left)
            except TimeoutError:  # gevent's socket.timeout
                raise _Stopped(self._timeout, None) from None
            return
        poll = select.poll()
        poll.register(fd, select.POLLOUT if write else select.POLLIN)
        if not poll.poll(left * 1000):
            raise _Stopped(self._timeout, None)

    def _died(self) -> _Stopped:
        try:
            returncode = self.process.wait(timeout=self._timeout)
        except subprocess.TimeoutExpired:
            returncode = None
        return _Stopped(self._timeout, returncode if returncode is not None else 1)

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError):
                pipe.close()


# -- the helper's side ---------------------------------------------------------

def _read_exactly(stream, size: int) -> bytes | None:
    data = stream.read(size)
    if len(data) < size:
        return None  # the worker closed the pipe: it is stopping
    return data


def evaluate(update: str, base: str, before: bytes) -> tuple[int, bytes, bytes]:
    """(status, payload, payload) of one update on ``before`` (N-Triples), in this process."""
    import pyoxigraph as ox

    from lakebench._sparql import prepare_update
    from lakebench.server.rdfbody import one_line

    try:
        prepared = prepare_update(update, base, before)
    except SyntaxError as exc:
        return MALFORMED, f"malformed SPARQL Update: {one_line(exc)}".encode(), b""
    except ValueError as exc:
        return REFUSED, one_line(exc).encode(), b""
    except OSError as exc:
        return FAILED, f"SPARQL Update failed: {one_line(exc)}".encode(), b""
    if isinstance(prepared, tuple):  # INSERT DATA and DELETE DATA only: the difference, made from the parse
        return (OK, *prepared)
    canonical = prepared
    store = ox.Store()
    # ox.parse keeps blank node labels (Store.load would rename them), so a
    # removed blank node names the stored one.
    store.extend(ox.parse(before, format=ox.RdfFormat.N_TRIPLES))
    old = set(store)
    try:
        store.update(canonical)
    except (SyntaxError, ValueError, OSError, RuntimeError) as exc:
        return FAILED, f"SPARQL Update failed: {one_line(exc)}".encode(), b""
    new = set(store)
    if any(quad.graph_name != ox.DefaultGraph() for quad in new):  # checked on the parse already
        return REFUSED, b"unsupported SPARQL Update: only the resource's own graph can change", b""
    nt = ox.RdfFormat.N_TRIPLES
    return (OK, ox.serialize([q.triple for q in old - new], format=nt) or b"",
            ox.serialize([q.triple for q in new - old], format=nt) or b"")


def _bounded(status: int, first: bytes, second: bytes) -> tuple[int, bytes, bytes]:
    """The answer, or a refusal if the difference is larger than MAX_ANSWER."""
    if status == OK and len(first) + len(second) > MAX_ANSWER:
        return REFUSED, (f"the update changes more than {MAX_ANSWER >> 20} MiB of N-Triples: "
                         "send the resource with PUT").encode(), b""
    return status, first, second


def _cpu_seconds() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


#: The stack of the helper's thread: a long chain of UNIONs or joins, which
#: the parser builds in a loop, is dropped recursively (reserved, not committed).
HELPER_STACK = 1 << 30


def main(argv: list[str]) -> int:
    from lakebench._sparql import confine

    confine()
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crash leaves no core of a client's data
    _, hard = resource.getrlimit(resource.RLIMIT_AS)  # lowered, never raised past what it inherits
    memory = HELPER_MEMORY if hard == resource.RLIM_INFINITY else min(HELPER_MEMORY, hard)
    resource.setrlimit(resource.RLIMIT_AS, (memory, hard))
    timeout = float(argv[0])
    status: list[int] = []
    # The largest stack the address space allows, from HELPER_STACK down.
    for stack in (HELPER_STACK, HELPER_STACK >> 2, HELPER_STACK >> 4):
        threading.stack_size(stack)
        helper = threading.Thread(target=lambda: status.append(_serve(timeout)), name="sandbox")
        try:
            helper.start()
        except RuntimeError:  # cannot map that stack
            continue
        helper.join()
        break
    return status[0] if status else 1


def _serve(timeout: float) -> int:
    import math
    import resource

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    while True:
        head = _read_exactly(stdin, _REQUEST.size)
        if head is None:
            return 0
        lengths = _REQUEST.unpack(head)
        update, base, before = (_read_exactly(stdin, n) if n else b"" for n in lengths)
        if None in (update, base, before):
            return 0
        # The backstop of the worker's deadline: SIGXCPU ends this process
        # if an update's CPU time goes past it.
        limit = math.ceil(_cpu_seconds() + timeout) + 1
        if hard == resource.RLIM_INFINITY or limit < hard:
            resource.setrlimit(resource.RLIMIT_CPU, (limit, hard))
        status, first, second = _bounded(*evaluate(update.decode("utf-8"), base.decode("utf-8"), before))
        stdout.write(_ANSWER.pack(status, len(first), len(second)) + first + second)
        stdout.flush()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
