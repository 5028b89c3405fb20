"""The LMDB store over HTTP: ``lakebench serve`` driven by the LDP client.

The runner's worker starts ``lakebench serve`` on a free loopback port with
a fresh data directory, drives it with exactly the client and requests used
for Fedora, watches the server's process tree (master and workers) and its
data directory, and stops it afterwards (:class:`lakebench.process.ServerProcess`:
SIGTERM, then SIGKILL for what is left after 30 s).
"""
from __future__ import annotations

import sys

from lakebench import __version__, process
from lakebench.argtypes import Bounded, Choice
from lakebench.server import WORKER_CLASSES
from lakebench.systems.base import Option, SystemFailure
from lakebench.systems.ldp import LdpSystem
from lakebench.systems.lmdb import store_version
from lakebench.durability import Durability
from lakebench.work import KEPT, NONE, ON_REQUEST

READY_TIMEOUT = 60.0


class LmdbHttpSystem(LdpSystem):
    name = "lmdb-http"
    durability = Durability.DURABLE
    # lakebench serve keeps no versions and publishes no events; a DELETE leaves a tombstone (410).
    WORK = {"versions": ON_REQUEST, "events": NONE, "access": NONE, "tombstones": KEPT}
    DISK_PER_TRIPLE = 150  # 144-148 B at 2,000 and 3,000 children (docs/runs/users, docs/runs/http)
    # --system-option KEY=VALUE: the options of ``lakebench serve`` worth measuring.
    OPTIONS = {
        "server_workers": Option("processes of lakebench serve (--workers): one serving and writing, "
                                 "the others parsing request bodies", Bounded(int, 1, 64), 1),
        "worker_class": Option("gunicorn's worker (serve --worker-class)", Choice(*WORKER_CLASSES),
                               WORKER_CLASSES[0]),
        "client_timeout": Option("seconds a client may stall, gevent worker only (serve --client-timeout)",
                                 Bounded(float, 0.1, 86_400), 30.0),
    }

    @classmethod
    def check_options(cls, values: dict) -> None:
        worker = values.get("worker_class", "gevent")
        if worker != "gevent" and "client_timeout" in values:
            raise ValueError(f"client_timeout applies to the gevent worker, not {worker}")
        if worker != "gevent" and values.get("server_workers", 1) > 1:
            raise ValueError(f"server_workers above 1 adds body parsers to the gevent worker, not {worker}")

    @classmethod
    def option_values(cls, options: dict) -> dict:
        values = super().option_values(options)
        if values["worker_class"] != "gevent":
            del values["client_timeout"]  # not a setting of the other workers
        return values

    def start_server(self) -> str:
        port = process.free_port()
        self.store_dir = self.data_dir / "store"
        self.log_path = self.data_dir / "serve.log"
        command = [
            sys.executable, "-m", "lakebench.cli", "serve", "--data", str(self.store_dir),
            "--host", "127.0.0.1", "--port", str(port), "--durability", self.durability,
            "--workers", str(self.options.get("server_workers", 1)),
            "--worker-class", self.options.get("worker_class", "gevent"),
        ]
        if "client_timeout" in self.options:
            command += ["--client-timeout", str(self.options["client_timeout"])]
        self.server = process.ServerProcess.start(command, self.log_path)
        self.server_pid = self.server.pid
        base = f"http://127.0.0.1:{port}/"
        self.server.wait_ready(base, READY_TIMEOUT, what="lakebench serve", error=SystemFailure, interval=0.1)
        return base

    def disk_path(self):
        return self.store_dir

    def version_text(self) -> str | None:
        workers = self.options.get("server_workers", 1)
        parsers = f" + {workers - 1} body parser{'s' if workers > 2 else ''}" if workers > 1 else ""
        return (f"lakebench serve {__version__}, {self.options.get('worker_class', 'gevent')} x1{parsers} "
                f"({store_version()})")

    def close(self) -> None:
        super().close()
        if getattr(self, "server", None) is not None:
            self.server.stop(timeout=30)


class LmdbHttpNosyncSystem(LmdbHttpSystem):
    name = "lmdb-http-nosync"
    durability = Durability.NOSYNC
