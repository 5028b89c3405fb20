"""The processes that evaluate clients' SPARQL Updates, and parse their bodies, apart from the server.

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
triples added), and which of the removed triples the update names (a third:
those a DELETE DATA or a DELETE template states with their predicate, and for
``rdf:type`` their class, rather than matches with a variable), so that the
server can refuse the removal of a server-managed triple the client asked
for by name and keep one a pattern merely matched.

With ``lakebench serve --workers N``, N-1 helpers of the same kind parse
the RDF bodies of PUTs and POSTs (:meth:`Sandboxes.parse`, a second pool of
the worker): the one worker, which owns the store's write batch and log,
then spends its core on the store and on HTTP, while the helpers turn
Turtle and JSON-LD into N-Triples on the others (docs/server.rst).  A body
is answered as it would be in the worker (:func:`lakebench.server.rdfbody.parse_body`:
the same 400, 409 and 415), and a body that ends its helper is a 400.

The two ends speak length-prefixed frames over the helper's stdin and
stdout (no pickle: the worker trusts nothing the helper sends but bytes).
``python -m lakebench.server.sandbox TIMEOUT`` is the helper.
"""
from __future__ import annotations

import contextlib
import os
import re
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
#: Seconds a body may take to parse (a 16 MiB Turtle body takes about one).
PARSE_TIMEOUT = 60.0
#: The largest N-Triples a parsed body may become: 64 times the default --max-body.
MAX_PARSED = 1 << 30

# The job (UPDATE: the update, the base IRI, the resource's N-Triples; PARSE, and
# PARSE_DESCRIPTION for a binary's description: the body, its media type, the
# resource's IRI), then the lengths of three payloads.
_REQUEST = struct.Struct(">BIII")
UPDATE, PARSE, PARSE_DESCRIPTION = range(3)
_ANSWER = struct.Struct(">BIII")  # status, then the lengths of three payloads
# OK: (removed, added, the removed triples the update names); ALL_NAMED: (removed,
# added), every removed triple named (the update is INSERT DATA and DELETE DATA
# only); PARSED: (the body's own triples as N-Triples, its server-managed triples
# about the resource, encoded by encode_triples); REFUSED_AS: (the HTTP status,
# the message); the others: (message,).
OK, MALFORMED, REFUSED, FAILED, ALL_NAMED, PARSED, REFUSED_AS = range(7)
#: The statuses a parse may refuse a body with (lakebench.server.rdfbody).
PARSE_REFUSALS = (400, 409, 415)
_LENGTH = struct.Struct(">I")
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"


class Sandboxes:
    """The helpers of one worker process: ``evaluate(update, before, base)``,
    or ``parse(body, media_type, subject)``; ``size`` of them at once.

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
        self._running = 0  # jobs being asked now

    def evaluate(self, update: str, before: bytes, base: str) -> tuple[bytes, bytes, bytes | None]:
        """(N-Triples removed, N-Triples added, N-Triples of the removed triples the
        update names, or None when it names all of them) when ``update`` runs on
        ``before``; RepositoryError (400, 503) when it is refused, fails or takes
        too long."""
        status, first, second, third = self._ask(UPDATE, (update.encode("utf-8"), base.encode("utf-8"), before),
                                                 _UPDATE_WORDS, MAX_ANSWER)
        if status == OK:
            return first, second, third
        if status == ALL_NAMED:
            return first, second, None
        if status in (MALFORMED, REFUSED, FAILED):
            raise RepositoryError(400, first.decode("utf-8", "replace"))
        raise _out_of_protocol(_UPDATE_WORDS)

    def parse(self, body: bytes, media_type: str, subject: str, *, description: bool = False):
        """:func:`lakebench.server.rdfbody.parse_body` of the body, in a helper: its
        :class:`~lakebench.server.rdfbody.Body`, or the RepositoryError it raised
        there (400, 409, 415); 400 if the body ended the helper, 503 if it took
        longer than ``timeout``."""
        from lakebench.server.rdfbody import Body

        job = PARSE_DESCRIPTION if description else PARSE
        status, first, second, _ = self._ask(job, (body, media_type.encode("utf-8"), subject.encode("utf-8")),
                                             _PARSE_WORDS, MAX_PARSED)
        if status == PARSED:
            managed = decode_triples(second)
            if managed is not None:
                return Body(first, managed)
        elif status == REFUSED_AS and first.isdigit() and int(first) in PARSE_REFUSALS:
            raise RepositoryError(int(first), second.decode("utf-8", "replace"))
        raise _out_of_protocol(_PARSE_WORDS)

    def free(self) -> bool:
        """Whether a job asked now would find a helper free (none waits for a slot)."""
        return self._running < self._size

    def prestart(self) -> None:
        """Start the helpers now, so the first requests do not wait for them (Unavailable if one
        cannot be started: the others are kept, and later jobs start what is missing)."""
        for _ in range(self._size - len(self._all)):
            self._idle.append(self._start())

    def _ask(self, job: int, parts: tuple[bytes, bytes, bytes], words: dict, max_answer: int):
        if not self._slots.acquire(timeout=self.timeout):
            raise RepositoryError(503, f"the server is {words['busy']} {self._size} {words['jobs']} already "
                                       f"and none ended within {self.timeout:g} s: try again later",
                                  headers=[("Retry-After", "1")])
        self._running += 1
        try:
            helper = self._take()
            deadline = time.monotonic() + self.timeout  # the job's own time, not the wait for a slot
            try:
                answer = helper.ask(job, parts, deadline, max_answer)
            except _Stopped as stopped:
                self._discard(helper)
                raise stopped.error(words) from None
            except BaseException:  # anything else mid-exchange: the pipes' state is unknown
                self._discard(helper)
                raise
            self._idle.append(helper)
        finally:
            self._running -= 1
            self._slots.release()
        return answer

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
        try:
            helper = _Helper(self.timeout, self._cooperative)
        except OSError as exc:  # fork or exec refused: EAGAIN, ENOMEM
            raise Unavailable(exc) from None
        self._all.add(helper)
        return helper

    def _discard(self, helper: _Helper) -> None:
        self._all.discard(helper)
        with contextlib.suppress(ValueError):
            self._idle.remove(helper)
        helper.kill()


class Unavailable(RepositoryError):
    """No helper process could be started (the system is out of processes or memory)."""

    def __init__(self, exc: OSError):
        super().__init__(503, f"the server cannot start a helper process now ({exc.strerror or exc}): "
                              "try again later", headers=[("Retry-After", "10")])


class _Stopped(Exception):
    """A helper that did not answer: it ran out of time, or it died."""

    def __init__(self, timeout: float, returncode: int | None):
        self.timeout = timeout
        self.returncode = returncode

    def error(self, words: dict) -> RepositoryError:
        if self.returncode is None:
            return RepositoryError(503, f"{words['stopped']} after {self.timeout:g} s, the "
                                        f"server's limit on {words['doing']} one{words['option']}",
                                   headers=[("Retry-After", "1")])
        how = f"status {self.returncode}"
        if self.returncode < 0:
            with contextlib.suppress(ValueError):
                how = signal.Signals(-self.returncode).name
        return RepositoryError(400, f"{words['failed']}: it ended the process {words['doing']} it "
                                    f"({how}; nested too deeply?)")


def _out_of_protocol(words: dict) -> RepositoryError:
    """A helper answered with what its job never answers (it is not what it should be)."""
    return RepositoryError(503, f"{words['failed']}: the process {words['doing']} it answered out of protocol",
                           headers=[("Retry-After", "1")])


# How the refusals of each kind of job read.
_UPDATE_WORDS = {"busy": "evaluating", "jobs": "updates", "stopped": "the update was stopped",
                 "doing": "evaluating", "option": " (--patch-timeout)", "failed": "the update could not be evaluated"}
_PARSE_WORDS = {"busy": "parsing", "jobs": "bodies", "stopped": "parsing the body was stopped",
                "doing": "parsing", "option": "", "failed": "the body could not be parsed"}


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

    def ask(self, job: int, parts: tuple[bytes, bytes, bytes], deadline: float,
            max_answer: int) -> tuple[int, bytes, bytes, bytes]:
        self._send(_REQUEST.pack(job, *map(len, parts)) + b"".join(parts), deadline)
        status, *lengths = _ANSWER.unpack(self._receive(_ANSWER.size, deadline))
        if sum(lengths) > max_answer:  # the helper says so itself: not one of its answers
            raise _Stopped(self._timeout, 1)
        return (status, *(self._receive(length, deadline) for length in lengths))

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


def evaluate(update: str, base: str, before: bytes) -> tuple[int, bytes, bytes, bytes]:
    """(status, payload, payload, payload) of one update on ``before`` (N-Triples), in this process."""
    import pyoxigraph as ox

    from lakebench._sparql import prepare_update
    from lakebench.server.rdfbody import one_line

    try:
        prepared = prepare_update(update, base, before)
    except SyntaxError as exc:
        return MALFORMED, f"malformed SPARQL Update: {one_line(exc)}".encode(), b"", b""
    except ValueError as exc:
        return REFUSED, one_line(exc).encode(), b"", b""
    except OSError as exc:
        return FAILED, f"SPARQL Update failed: {one_line(exc)}".encode(), b"", b""
    if isinstance(prepared, tuple):  # INSERT DATA and DELETE DATA only: the difference, made from the parse
        return (ALL_NAMED, *prepared, b"")
    canonical = prepared
    store = ox.Store()
    # ox.parse keeps blank node labels (Store.load would rename them), so a
    # removed blank node names the stored one.
    store.extend(ox.parse(before, format=ox.RdfFormat.N_TRIPLES))
    old = set(store)
    try:
        store.update(canonical)
    except (SyntaxError, ValueError, OSError, RuntimeError) as exc:
        return FAILED, f"SPARQL Update failed: {one_line(exc)}".encode(), b"", b""
    new = set(store)
    if any(quad.graph_name != ox.DefaultGraph() for quad in new):  # checked on the parse already
        return REFUSED, b"unsupported SPARQL Update: only the resource's own graph can change", b"", b""
    nt = ox.RdfFormat.N_TRIPLES
    removed = [q.triple for q in old - new]
    return (OK, ox.serialize(removed, format=nt) or b"",
            ox.serialize([q.triple for q in new - old], format=nt) or b"",
            ox.serialize(named(canonical, removed), format=nt) or b"")


#: One triple of a template in the canonical text of an update: spargebra writes
#: each on a line of its own, after a tab, its terms separated by one space (an
#: IRI or a variable holds none; a literal's line breaks are escaped).
_TEMPLATE_TRIPLE = re.compile(r"\t(\S+) (\S+) (.*) \.\Z")


def named(canonical: str, removed) -> list:
    """The triples of ``removed`` that a DELETE DATA or DELETE template of the
    update (its canonical text) names: by their predicate, and for ``rdf:type``
    by their class too.  ``DELETE WHERE { <> ?p ?o }`` names none;
    ``DELETE WHERE { <> premis:hasSize ?s }`` names the size.

    >>> import pyoxigraph as ox
    >>> t = ox.Triple(ox.NamedNode("http://h/a"), ox.NamedNode(RDF_TYPE), ox.NamedNode("http://e/C"))
    >>> named("DELETE {\\n\\t<http://h/a> ?p ?o .\\n}\\nWHERE { }", [t])
    []
    >>> named(f"DELETE {{\\n\\t<http://h/a> <{RDF_TYPE}> <http://e/C> .\\n}}\\nWHERE {{ }}", [t]) == [t]
    True
    """
    predicates, classes = set(), set()
    deleting = False
    for line in canonical.split("\n"):
        if line in ("DELETE {", "DELETE DATA {"):
            deleting = True
        elif not line.startswith("\t"):  # "}", "INSERT {", "WHERE ...": the template ended
            deleting = False
        elif deleting:
            triple = _TEMPLATE_TRIPLE.match(line)
            if triple is None or not (triple[2].startswith("<") and triple[2].endswith(">")):
                continue  # a variable predicate names nothing
            predicate, obj = triple[2][1:-1], triple[3]
            if predicate != RDF_TYPE:
                predicates.add(predicate)
            elif obj.startswith("<") and obj.endswith(">"):
                classes.add(obj[1:-1])
    import pyoxigraph as ox

    return [t for t in removed if t.predicate.value in predicates
            or (t.predicate.value == RDF_TYPE and isinstance(t.object, ox.NamedNode) and t.object.value in classes)]


def parse(job: int, body: bytes, media_type: str, subject: str) -> tuple[int, bytes, bytes, bytes]:
    """(status, payload, payload, payload) of one body's parse, in this process."""
    from lakebench.server.errors import RepositoryError
    from lakebench.server.rdfbody import parse_body

    try:
        parsed = parse_body(body, media_type, subject, description=job == PARSE_DESCRIPTION)
    except RepositoryError as exc:
        return REFUSED_AS, str(exc.status).encode(), exc.message.encode("utf-8", "replace"), b""
    return PARSED, parsed.ntriples, encode_triples(parsed.managed), b""


def encode_triples(triples) -> bytes:
    """Encoded ``(s, p, o)`` triples as one payload: each term its length, then its bytes.

    >>> decode_triples(encode_triples([(b"Ia", b"Ib", b"Lc")]))
    ((b'Ia', b'Ib', b'Lc'),)
    """
    return b"".join(_LENGTH.pack(len(term)) + term for triple in triples for term in triple)


def decode_triples(data: bytes) -> tuple[tuple[bytes, bytes, bytes], ...] | None:
    """The triples of :func:`encode_triples`; None if ``data`` is not such a payload."""
    terms, offset = [], 0
    while offset < len(data):
        if offset + _LENGTH.size > len(data):
            return None
        (length,) = _LENGTH.unpack_from(data, offset)
        offset += _LENGTH.size
        if offset + length > len(data):
            return None
        terms.append(data[offset:offset + length])
        offset += length
    if len(terms) % 3:
        return None
    return tuple(tuple(terms[i:i + 3]) for i in range(0, len(terms), 3))


def _bounded(status: int, *payloads: bytes) -> tuple[int, bytes, bytes, bytes]:
    """The answer, or a refusal if the difference is larger than MAX_ANSWER."""
    if status in (OK, ALL_NAMED) and sum(map(len, payloads)) > MAX_ANSWER:
        return REFUSED, (f"the update changes more than {MAX_ANSWER >> 20} MiB of N-Triples: "
                         "send the resource with PUT").encode(), b"", b""
    return (status, *payloads)


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
        job, *lengths = _REQUEST.unpack(head)
        first, second, third = (_read_exactly(stdin, n) if n else b"" for n in lengths)
        if None in (first, second, third):
            return 0
        # The backstop of the worker's deadline: SIGXCPU ends this process
        # if a job's CPU time goes past it.
        limit = math.ceil(_cpu_seconds() + timeout) + 1
        if hard == resource.RLIM_INFINITY or limit < hard:
            resource.setrlimit(resource.RLIMIT_CPU, (limit, hard))
        if job == UPDATE:
            status, *payloads = _bounded(*evaluate(first.decode("utf-8"), second.decode("utf-8"), third))
        elif job in (PARSE, PARSE_DESCRIPTION):
            status, *payloads = parse(job, first, second.decode("utf-8"), third.decode("utf-8"))
        else:
            return 1  # not a job of this protocol: the worker is not what it should be
        stdout.write(_ANSWER.pack(status, *map(len, payloads)) + b"".join(payloads))
        stdout.flush()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
