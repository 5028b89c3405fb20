"""``lakebench serve``: the LMDB store as a Linked Data Platform server.

The WSGI application (:mod:`lakebench.server.app`) runs under gunicorn,
a production pre-fork server, with an event-loop worker
(:mod:`lakebench.server.serving`): a slow or silent client costs a
connection slot, never a worker (``--worker-class gthread`` or ``sync``
choose gunicorn's threaded or synchronous worker instead, to measure the
choice).  One worker process serves every connection and owns the store:
its write batch and write-ahead log belong to one process.  ``--workers N``
adds N-1 processes that parse request bodies for it
(:mod:`lakebench.server.sandbox`), so the worker's core goes to the store
and to HTTP.  SIGTERM stops it gracefully (requests in flight finish).
Loopback only unless ``--host`` says otherwise.
"""
from __future__ import annotations

import argparse
import logging
import math
import sys
from pathlib import Path

from lakebench.durability import STORE_MODES, Durability

DEFAULT_PORT = 8000
#: gunicorn's worker models ``--worker-class`` chooses from, the default first
#: (:func:`lakebench.server.serving.worker_class` makes them; named here so
#: that the command line and the systems' options need not import gevent).
WORKER_CLASSES = ("gevent", "gthread", "sync")


def make_app(data: str | Path, base_url: str, durability: str, max_body: int, max_binary: int | None = None,
             log: bool | None = None, patch_timeout: float | None = None, cooperative: bool = False,
             parsers: int = 0):
    """The WSGI application; ``cooperative``: served by the gevent worker (a PATCH's
    evaluation, or a body's parse, then lets the other clients be served,
    lakebench.server.sandbox); ``parsers``: processes parsing RDF bodies for it."""
    from lakebench.server.app import LdpApplication
    from lakebench.server.binaries import DEFAULT_MAX_BINARY
    from lakebench.server.repository import Repository
    from lakebench.server.sandbox import PATCH_TIMEOUT

    timeout = PATCH_TIMEOUT if patch_timeout is None else patch_timeout
    return LdpApplication(lambda: Repository(data, base_url, durability=durability, log=log, patch_timeout=timeout,
                                             cooperative=cooperative, parsers=parsers),
                          max_body=max_body, max_binary=DEFAULT_MAX_BINARY if max_binary is None else max_binary)


def _prepare_store(data: Path, base: str, durability: str, truncate_damaged_log: bool = False) -> None:
    """Open the store (creating it, replaying its log), sweep what a crash left, close it."""
    from lakebench.server.repository import Repository

    # No worker runs yet: the temporary files of uploads a crash cut short can go.
    repository = Repository(data, base, durability=durability, truncate_damaged_log=truncate_damaged_log)
    repository.binaries.sweep_temporaries()
    repository.close()


def serve(data: Path, host: str = "127.0.0.1", port: int = DEFAULT_PORT, workers: int = 1,
          durability: str = "durable", base_url: str | None = None, max_body: int | None = None,
          access_log: bool = False, max_binary: int | None = None, client_timeout: float | None = None,
          max_connections: int | None = None, worker_class: str = "gevent",
          patch_timeout: float | None = None, truncate_damaged_log: bool = False) -> None:
    """Run the server in the foreground until SIGTERM or SIGINT."""
    from gunicorn.app.base import BaseApplication

    from lakebench.server import serving
    from lakebench.server.app import DEFAULT_MAX_BODY

    base = base_url or f"http://{host}:{port}/"
    # The store's write batch and write-ahead log belong to one process, the
    # one worker; the others a user asks for parse request bodies for it.
    if workers > 1:
        logging.getLogger("lakebench.server").info(
            "%d workers: one serves and writes (the write-ahead log, group commit), %d parse request bodies",
            workers, workers - 1)
    ldp_app = make_app(data, base, durability, DEFAULT_MAX_BODY if max_body is None else max_body,
                       max_binary, log=True, patch_timeout=patch_timeout, cooperative=worker_class == "gevent",
                       parsers=workers - 1)
    app = serving.complete_responses(ldp_app, settle=ldp_app.settle)
    # Open (and create) the store once before forking, so a bad data
    # directory is an error at start-up rather than in every worker; in a
    # child process, so that a store that crashes liblmdb is refused in one
    # line (lakebench.store.preflight).
    from lakebench.store.preflight import open_isolated

    open_isolated(data, _prepare_store, data, base, durability, truncate_damaged_log)

    options = {
        "bind": f"{host}:{port}",
        "workers": 1,
        # One event loop per worker (gevent), a greenlet per connection, with
        # timeouts and a connection cap: see lakebench.server.serving.  gthread:
        # one thread, so the store's write batch always sees the same one.
        "worker_class": serving.worker_class(worker_class, serving.CLIENT_TIMEOUT if client_timeout is None
                                             else client_timeout, on_exit=ldp_app.close),
        "threads": 1,
        "worker_connections": serving.MAX_CONNECTIONS if max_connections is None else max_connections,
        "keepalive": serving.KEEPALIVE,
        "limit_request_line": serving.LIMIT_REQUEST_LINE,
        "limit_request_fields": serving.LIMIT_REQUEST_FIELDS,
        "limit_request_field_size": serving.LIMIT_REQUEST_FIELD_SIZE,
        "control_socket_disable": True,
        # A worker that exits cleanly commits its write batch (on the thread
        # that opened it: greenlets share the worker's one thread, sync serves
        # on it; gthread's thread has done it already, see on_exit), so the
        # store at rest needs no recovery.
        "worker_exit": lambda arbiter, worker: ldp_app.close(),
        "timeout": 600,  # a 10,000-child container is streamed in well under this
        "graceful_timeout": 10,
        "accesslog": "-" if access_log else None,
        "errorlog": "-",
        "loglevel": "info",
        "proc_name": "lakebench-serve",
    }

    class _Server(BaseApplication):
        def load_config(self):
            for key, value in options.items():
                self.cfg.set(key, value)

        def load(self):
            return app

    _Server().run()


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "serve",
        help="serve an LMDB store as a Linked Data Platform repository over HTTP",
        description="Serve the LMDB store in DIR as an LDP repository (RDF sources and basic "
        "containers, binaries: GET/HEAD/PUT/POST/PATCH/DELETE/OPTIONS, Turtle, N-Triples, "
        "JSON-LD, SPARQL Update) under "
        "gunicorn. Stops cleanly on SIGTERM.",
    )
    parser.add_argument("--data", type=Path, required=True, metavar="DIR",
                        help="store directory (created if absent)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default: {DEFAULT_PORT})")
    parser.add_argument("--workers", type=int, default=1,
                        help="processes (default: 1): one gunicorn worker serves every connection and "
                        "owns the store (its write batch and write-ahead log belong to one process); "
                        "the other N-1 parse request bodies (Turtle, JSON-LD) for it, so that its "
                        "core goes to the store and to HTTP")
    parser.add_argument("--durability", choices=STORE_MODES, default=Durability.DURABLE,
                        help="durable (default): a write is answered once it is on stable storage "
                        "(the write-ahead log, fdatasynced); nosync: written to the OS, not fsynced")
    parser.add_argument("--base-url", help="public base URL of the repository; resource IRIs start "
                        "with it (default: http://HOST:PORT/)")
    parser.add_argument("--max-body", type=int, default=None,
                        help="largest request body in bytes; larger is 413 (default: 16 MiB)")
    parser.add_argument("--max-binary", type=int, default=None,
                        help="largest binary (non-RDF) body in bytes, streamed to disk; larger is 413 "
                        "(default: 64 GiB)")
    parser.add_argument("--worker-class", choices=WORKER_CLASSES, default="gevent",
                        help="gunicorn's worker: gevent (default), an event loop serving every connection "
                        "at once, with the timeouts below; gthread, one thread serving one request at a "
                        "time, with keep-alive; sync, one request at a time, the connection closed after "
                        "each response. With gthread or sync one slow client stalls a worker: they are "
                        "here to be measured against gevent")
    parser.add_argument("--client-timeout", type=float, default=None, metavar="SECONDS",
                        help="a request head must arrive within this time, and a client sending a body "
                        "or receiving a response must make progress within it, else its connection "
                        "is closed, 0.1 to 86400 (gevent worker only; default: 30)")
    parser.add_argument("--max-connections", type=int, default=None, metavar="N",
                        help="connections the worker serves at once, 1 to 100000; more wait to be "
                        "accepted (gevent and gthread workers; default: 1000)")
    parser.add_argument("--patch-timeout", type=float, default=None, metavar="SECONDS",
                        help="the longest a SPARQL Update (PATCH) may be evaluated, 0.1 to 120; a longer "
                        "one is stopped and answered 503. Updates run in a confined helper process "
                        "that cannot open a connection (default: 5)")
    parser.add_argument("--truncate-damaged-log", action="store_true",
                        help="if the store's write-ahead log is damaged in the middle, drop the "
                        "acknowledged writes after the damage and start (without it, serve refuses to "
                        "start and says which writes; lakebench check reports it too)")
    parser.add_argument("--access-log", action="store_true", help="log one line per request")
    parser.set_defaults(func=main)
    return parser


def main(args) -> int:
    if args.workers < 1 or not 0 < args.port < 65536:
        print("lakebench serve: error: --workers must be positive and --port in 1..65535", file=sys.stderr)
        return 2
    if (args.max_body is not None and args.max_body < 0) or (args.max_binary is not None and args.max_binary < 0):
        print("lakebench serve: error: --max-body and --max-binary must not be negative", file=sys.stderr)
        return 2
    if args.client_timeout is not None and not (math.isfinite(args.client_timeout)
                                                and 0.1 <= args.client_timeout <= 86400):
        print("lakebench serve: error: --client-timeout must be between 0.1 and 86400 seconds", file=sys.stderr)
        return 2
    if args.patch_timeout is not None and not (math.isfinite(args.patch_timeout)
                                               and 0.1 <= args.patch_timeout <= 120):
        # gunicorn ends a sync or gthread worker silent for 600 s, and a PATCH may run 5 times
        print("lakebench serve: error: --patch-timeout must be between 0.1 and 120 seconds", file=sys.stderr)
        return 2
    if args.max_connections is not None and not 1 <= args.max_connections <= 100_000:
        print("lakebench serve: error: --max-connections must be in 1..100000", file=sys.stderr)
        return 2
    if args.client_timeout is not None and args.worker_class != "gevent":
        print(f"lakebench serve: error: --client-timeout applies to the gevent worker, not {args.worker_class}",
              file=sys.stderr)
        return 2
    if args.workers > 1 and args.worker_class != "gevent":
        print(f"lakebench serve: error: --workers {args.workers} adds body parsers to the gevent worker; the "
              f"{args.worker_class} worker serves one request at a time, which they cannot help", file=sys.stderr)
        return 2
    if args.max_connections is not None and args.worker_class == "sync":
        print("lakebench serve: error: --max-connections does not apply to the sync worker (one connection "
              "at a time)", file=sys.stderr)
        return 2
    from lakebench._store import StoreError

    logging.basicConfig(level=logging.INFO)
    try:
        serve(args.data, host=args.host, port=args.port, workers=args.workers, durability=args.durability,
              base_url=args.base_url, max_body=args.max_body, access_log=args.access_log,
              max_binary=args.max_binary, client_timeout=args.client_timeout,
              max_connections=args.max_connections, worker_class=args.worker_class,
              patch_timeout=args.patch_timeout, truncate_damaged_log=args.truncate_damaged_log)
    except (OSError, StoreError) as exc:  # e.g. DIR is a file, or not a store
        print(f"lakebench serve: error: {exc}", file=sys.stderr)
        return 1
    return 0
