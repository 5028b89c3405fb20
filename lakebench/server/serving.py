"""How ``lakebench serve`` meets its clients: gunicorn's gevent worker, with timeouts.

(``--worker-class gthread`` and ``sync`` are gunicorn's threaded and
synchronous workers instead, kept to measure the choice against: see
:func:`worker_class`; the bounds below are the gevent worker's.)

Each worker process runs one event loop (gevent) and serves every
connection in a greenlet of its own, so a client that is silent, slow or
stalled costs one connection slot (a greenlet and a socket, a few KiB),
never the worker: the others are served meanwhile.  What bounds them:

* a connection cap (``--max-connections``, gunicorn's ``worker_connections``):
  a share of it (:data:`RESERVE`) is kept for new clients, by closing the
  connection that has been idle longest (silent since it was opened, or
  kept alive between requests) whenever a new one would take that share, so
  one client reconnecting over and over cannot keep the others out; only a
  cap full of connections in mid-request makes new ones wait in the listen
  backlog;
* the head timeout: a request line and headers must arrive in full within
  ``--client-timeout`` of the connection (or, on a kept-alive connection,
  of the request's first byte), else the connection is closed (``408`` if
  part of a head had come);
* the keep-alive timeout: an idle kept-alive connection is closed after
  ``keepalive`` seconds;
* the body and send timeouts: every read of a request body and every
  write of a response chunk (64 KiB) must make progress within
  ``--client-timeout`` (nginx's ``client_body_timeout`` and
  ``send_timeout``), else the request ends (a body cut short is a ``400``
  and nothing of it is stored) and the connection is closed;
* gunicorn's limits on the request line, the number of headers and the
  size of each, and :data:`MAX_HEADER` on every header the application
  interprets (repeated headers are joined): ``414`` and ``431``, one line.

The store's calls stay safe: all greenlets of a worker run on its one OS
thread (so the store's write batch always sees the thread that opened it;
the standard library is deliberately not monkey-patched, which would give
each greenlet a thread identity of its own), and a greenlet only yields to
another on socket I/O, which the application does outside store calls: a
request body is read in full (or streamed to a file, for a binary) before
the store is called, and :func:`complete_responses` runs every store read to
its end before the first byte of the response is sent, so no read
transaction (nor a view of the write batch) is open while a greenlet
waits for a client.
"""
from __future__ import annotations

import contextlib
import logging
import socket
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Iterator

import gevent
from gevent import socket as gsocket
from gunicorn import http, util
from gunicorn.http.errors import NoMoreData
from gunicorn.workers.ggevent import GeventWorker
from gunicorn.workers.gthread import ThreadWorker as GthreadWorker
from gunicorn.workers.sync import SyncWorker

from lakebench.server.errors import RepositoryError
from lakebench.server.responses import STATUS, FileRange

log = logging.getLogger("lakebench.server")

#: Seconds a client may take to send a request head, or stall while sending a
#: body or receiving a response (default of ``--client-timeout``).
CLIENT_TIMEOUT = 30.0
#: Connections a worker serves at once (default of ``--max-connections``).
MAX_CONNECTIONS = 1000
#: Seconds an idle kept-alive connection stays open.
KEEPALIVE = 75
#: gunicorn's limits on a request head (its defaults, stated): the request
#: line, the number of header fields, the size of one field.
LIMIT_REQUEST_LINE = 4094
LIMIT_REQUEST_FIELDS = 100
LIMIT_REQUEST_FIELD_SIZE = 8190
#: The largest value of a header the application interprets, repeated
#: headers joined (gunicorn joins them with commas).
MAX_HEADER = 16 * 1024
#: The headers the application parses; any other is passed over unread.
INTERPRETED = ("HTTP_ACCEPT", "HTTP_PREFER", "HTTP_LINK", "HTTP_IF_MATCH", "HTTP_IF_NONE_MATCH",
               "HTTP_RANGE", "HTTP_DIGEST", "HTTP_WANT_DIGEST", "HTTP_CONTENT_DISPOSITION", "HTTP_SLUG",
               "HTTP_IF_MODIFIED_SINCE", "HTTP_IF_UNMODIFIED_SINCE", "CONTENT_TYPE")
#: How often an idle connection checks whether the worker is stopping.
_IDLE_POLL = 1.0
#: A response body is held in memory up to this size before it is sent; past it, in a
#: temporary file (the parent of a million children is about 50 MB of Turtle).
SPOOL_MEMORY = 4 << 20
#: The reads of a spooled body's file as it is sent.
SPOOL_CHUNK = 64 << 10


def reserve(cap: int) -> int:
    """The connections of a cap of ``cap`` kept for new clients: a tenth, at least one.

    >>> reserve(1000), reserve(8), reserve(1)
    (100, 1, 0)
    """
    return 0 if cap <= 1 else max(1, cap // 10)


class _HeadTimeout(Exception):
    """The request head did not arrive in time."""


def worker_class(kind: str = "gevent", client_timeout: float = CLIENT_TIMEOUT, on_exit=None) -> type:
    """The worker class for gunicorn, ``kind`` of ``--worker-class``: ``gevent``,
    :class:`Worker`, an event loop, a greenlet per connection, with the timeouts
    above; ``gthread``, :class:`ThreadedWorker`, one thread serving one request at
    a time, with HTTP keep-alive (what ``lakebench serve`` ran before the gevent
    worker: one slow client stalls it); ``sync``, :class:`SynchronousWorker`, one
    request at a time, the connection closed after every response.  ``client_timeout``
    seconds (gevent); ``on_exit()`` (gthread) is called when a worker stops, on the thread
    that served its requests, which the store's write batch belongs to (gevent and sync serve
    on the worker's main thread, where gunicorn's ``worker_exit`` hook runs).

    >>> worker_class("gthread").__name__
    'LakebenchGthreadWorker'
    """
    base = {"gevent": Worker, "gthread": ThreadedWorker, "sync": SynchronousWorker}[kind]
    return type(f"Lakebench{kind.title()}Worker", (base,),
                {"client_timeout": float(client_timeout), "on_exit": staticmethod(on_exit or (lambda: None))})


class Worker(GeventWorker):
    """gunicorn's gevent worker with head, body, send and keep-alive timeouts."""

    client_timeout = CLIENT_TIMEOUT

    def patch(self):
        # Only the listening sockets become gevent's; the standard library is
        # left alone (see the module docstring: one thread identity).
        self.sockets = [gsocket.socket(s.FAMILY, socket.SOCK_STREAM, fileno=s.sock.detach())
                        for s in self.sockets]

    def init_process(self):
        util.write_error = write_error  # gunicorn's own refusals (400, 414, 431, ...) in one line
        self._open = 0
        self._idle: dict = {}  # greenlet -> its client socket, the longest idle first
        super().init_process()

    def _make_room(self) -> None:
        """A new connection: if it takes the share kept for new clients, shut
        down the connection idle longest.  Its greenlet, waiting for a request
        in _wait_readable, then reads the end of the stream and closes it; no
        exception is thrown into it (which could land mid-request)."""
        if self._open > self.worker_connections - reserve(self.worker_connections) and self._idle:
            oldest = next(iter(self._idle))
            with contextlib.suppress(OSError):
                self._idle.pop(oldest).shutdown(socket.SHUT_RDWR)

    def handle(self, listener, client, addr):
        self._open += 1
        try:
            self._make_room()
            self._handle(listener, client, addr)
        finally:
            self._open -= 1
            self._idle.pop(gevent.getcurrent(), None)

    def _handle(self, listener, client, addr):
        # Every recv and send waits at most client_timeout (gevent sockets).
        client.settimeout(self.client_timeout)
        parser = http.get_parser(self.cfg, client, addr)
        listener_name = listener.getsockname()
        req = None
        try:
            # A new connection: its first request's head must arrive within
            # client_timeout of the connection; a silent one is closed unanswered.
            deadline = time.monotonic() + self.client_timeout
            if not self._wait_readable(client, parser, deadline):
                return
            while self.alive:
                if deadline is None:  # kept alive: idle until the next request's first byte
                    if not self._wait_readable(client, parser, time.monotonic() + self.cfg.keepalive):
                        return
                    deadline = time.monotonic() + self.client_timeout
                req = None
                try:
                    with gevent.Timeout(max(0.001, deadline - time.monotonic()), _HeadTimeout):
                        req = next(parser)
                except _HeadTimeout:  # part of a head came: say why before closing
                    _write_quietly(client, 408, "Request Timeout",
                                   f"the request head did not arrive within {self.client_timeout:g} s")
                    return
                self.handle_request(listener_name, req, client, addr)  # StopIteration: close
                # An unread body (a refused request) is drained, boundedly, or the connection closes.
                if not parser.finish_body(deadline=time.monotonic() + self.client_timeout):
                    return
                deadline = None
        except (NoMoreData, StopIteration):
            pass
        except gevent.GreenletExit:
            pass
        except TimeoutError:
            self.log.debug("client %s stalled for %g s: connection closed", addr, self.client_timeout)
        except OSError as exc:  # reset, broken pipe: the client went away
            self.log.debug("connection from %s ended: %s", addr, exc)
        except Exception as exc:
            self.handle_error(req, client, addr, exc)
        finally:
            util.close(client)

    def _wait_readable(self, client, parser, end: float) -> bool:
        """Until the next request's first byte (True), or ``end`` or the worker's
        stop (False)."""
        if _buffered(parser):  # pipelined: already here
            return True
        me = gevent.getcurrent()
        self._idle[me] = client  # the first one _make_room may shut down while it waits
        try:
            while self.alive:
                left = end - time.monotonic()
                if left <= 0:
                    return False
                try:
                    gsocket.wait_read(client.fileno(), timeout=min(left, _IDLE_POLL))
                    return True
                except TimeoutError:
                    continue
            return False
        finally:
            self._idle.pop(me, None)


class ThreadedWorker(GthreadWorker):
    """gunicorn's gthread worker with one thread (one request at a time) and keep-alive.

    The store's write batch belongs to that thread, so ``on_exit`` runs there
    too, queued behind the last request when the worker stops.
    """

    on_exit = staticmethod(lambda: None)

    def init_process(self):
        util.write_error = write_error
        super().init_process()

    def get_thread_pool(self):
        return _ClosingPool(self.on_exit)


class _ClosingPool(ThreadPoolExecutor):
    """One thread; at shutdown it runs ``on_exit`` last, and the worker waits for it."""

    def __init__(self, on_exit):
        super().__init__(max_workers=1)
        self._on_exit = on_exit

    def shutdown(self, wait=True, **kwargs):
        with contextlib.suppress(RuntimeError):  # already shut down
            self.submit(self._on_exit)
        super().shutdown(wait=True, **kwargs)


class SynchronousWorker(SyncWorker):
    """gunicorn's sync worker: one request at a time on the worker's main thread, no keep-alive."""

    def init_process(self):
        util.write_error = write_error
        super().init_process()


def _buffered(parser) -> bool:
    buf = parser.unreader.buf
    buf.seek(0, 2)
    return buf.tell() > 0


def write_error(sock, status_int, reason, mesg):
    """gunicorn's error answer, as one line of plain text (replaces ``gunicorn.util.write_error``)."""
    _write_quietly(sock, status_int, reason, mesg, raise_errors=True)


def _write_quietly(sock, status: int, reason: str, message: str, raise_errors: bool = False) -> None:
    line = " ".join(f"{reason}: {message}".split()) if message else reason
    if len(line) > 300:
        line = line[:297] + "..."
    body = (line + "\n").encode("utf-8", "replace")
    head = (f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\n"
            f"Content-Type: text/plain; charset=utf-8\r\nContent-Length: {len(body)}\r\n\r\n")
    try:
        util.write_nonblock(sock, head.encode("latin-1") + body)
    except OSError:
        if raise_errors:
            raise


def complete_responses(app, settle=lambda: None, spool_memory: int = SPOOL_MEMORY):
    """WSGI middleware: the bounds on interpreted headers, and every response
    body produced in full before its first byte is sent.

    A representation is read from the store in one stretch, with no client
    I/O in between, so a greenlet never waits on a socket while it holds a
    store transaction.  It is held in memory up to ``spool_memory`` bytes and
    past that in a temporary file (:class:`Spooled`), so a representation of
    any size costs the worker bounded memory.  A binary's bytes (a
    :class:`FileRange`, read from its file, not the store) are streamed.

    Then ``settle()`` returns once every write the response may show is
    durable (the store's group commit: a read may have seen writes whose
    flush is still running); if it raises RepositoryError, that is the answer.
    """

    def application(environ, start_response):
        for key in INTERPRETED:
            value = environ.get(key)
            if value is not None and len(value) > MAX_HEADER:
                name = key.removeprefix("HTTP_").replace("_", "-").title()
                message = f"the {name} header is over {MAX_HEADER} bytes\n".encode()
                start_response("431 Request Header Fields Too Large",
                               [("Content-Type", "text/plain; charset=utf-8"),
                                ("Content-Length", str(len(message)))])
                return [message]
        body = app(environ, start_response)
        if isinstance(body, (list, tuple, FileRange)):
            return _settled(body, settle, start_response)
        spooled = Spooled(spool_memory)
        try:
            for chunk in body:
                spooled.write(chunk)
            return _settled(spooled, settle, start_response)
        except RepositoryError as exc:  # the spool's file could not be written
            spooled.close()
            return _refusal(exc, start_response)
        except Exception:
            spooled.close()
            log.exception("error producing the response to %s %s", environ.get("REQUEST_METHOD"),
                          environ.get("PATH_INFO"))
            start_response("500 Internal Server Error", [("Content-Type", "text/plain; charset=utf-8")],
                           sys.exc_info())
            return [b"internal server error\n"]
        finally:
            close = getattr(body, "close", None)
            if close is not None:
                close()

    return application


class Spooled:
    """A response body produced in full before it is sent: held in memory up to ``memory``
    bytes, and past that in an unnamed temporary file (``TMPDIR``), so that the memory it takes
    stays bounded however large it grows; iterated, it yields the body again.

    >>> body = Spooled(memory=4)
    >>> for chunk in (b"ab", b"cd", b"ef"):
    ...     body.write(chunk)
    >>> body.on_disk, body.size, b"".join(body)
    (True, 6, b'abcdef')
    >>> body.close()
    """

    def __init__(self, memory: int = SPOOL_MEMORY):
        self._memory = memory
        self._held: list[bytes] = []
        self._held_bytes = 0
        self._file = None
        #: The body's bytes so far.
        self.size = 0

    @property
    def on_disk(self) -> bool:
        """Whether the body went past its memory, to its file."""
        return self._file is not None

    def write(self, chunk: bytes) -> None:
        if not chunk:
            return
        self.size += len(chunk)
        if self._file is None and self._held_bytes + len(chunk) <= self._memory:
            self._held.append(chunk)
            self._held_bytes += len(chunk)
            return
        try:
            if self._file is None:
                self._file = tempfile.TemporaryFile()
                for held in self._held:
                    self._file.write(held)
                self._held, self._held_bytes = [], 0
            self._file.write(chunk)
            self._file.flush()  # a full disk is said now, not halfway through sending
        except OSError as exc:  # a full or failing temporary directory: not the client's doing
            raise RepositoryError(503, f"the server cannot hold this representation of {self.size:,} bytes "
                                       f"now: its temporary file failed ({exc.strerror or exc})",
                                  headers=[("Retry-After", "10")]) from None

    def __iter__(self) -> Iterator[bytes]:
        if self._file is None:
            yield from self._held
            return
        self._file.seek(0)
        while chunk := self._file.read(SPOOL_CHUNK):
            yield chunk

    def close(self) -> None:
        """Drop the body (the server calls it once the response is sent)."""
        if self._file is not None:
            self._file.close()
            self._file = None
        self._held, self._held_bytes = [], 0


def _settled(body, settle, start_response):
    try:
        settle()
    except RepositoryError as exc:
        close = getattr(body, "close", None)
        if close is not None:
            close()
        return _refusal(exc, start_response)
    return body


def _refusal(exc: RepositoryError, start_response) -> list[bytes]:
    """The answer of a response refused after the application's own start_response."""
    message = (exc.message + "\n").encode()
    start_response(STATUS[exc.status],
                   [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(message))),
                    *exc.headers], sys.exc_info())
    return [message]
