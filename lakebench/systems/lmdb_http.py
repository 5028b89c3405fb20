"""The LMDB store over HTTP: ``lakebench serve`` driven by the LDP client.

The runner's worker starts ``lakebench serve`` on a free loopback port with
a fresh data directory, drives it with exactly the client and requests used
for Fedora, watches the server's process tree (master and workers) and its
data directory, and stops it with SIGTERM afterwards.
"""
from __future__ import annotations

import signal
import subprocess
import sys

from lakebench import process
from lakebench.systems.base import SystemFailure
from lakebench.systems.ldp import LdpSystem

READY_TIMEOUT = 60.0


class LmdbHttpSystem(LdpSystem):
    name = "lmdb-http"
    durability = "durable"

    def start_server(self) -> str:
        port = process.free_port()
        self.store_dir = self.data_dir / "store"
        self.log_path = self.data_dir / "serve.log"
        command = [
            sys.executable, "-m", "lakebench.cli", "serve", "--data", str(self.store_dir),
            "--host", "127.0.0.1", "--port", str(port), "--durability", self.durability,
            "--workers", str(self.options.get("server_workers", 1)),
        ]
        self._log = open(self.log_path, "wb")
        self.server = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL)
        self.server_pid = self.server.pid
        base = f"http://127.0.0.1:{port}/"
        try:
            process.wait_ready(self.server, base, READY_TIMEOUT, what="lakebench serve", log_path=self.log_path,
                               error=SystemFailure, interval=0.1)
        except SystemFailure:
            self.close()
            raise
        return base

    def disk_path(self):
        return self.store_dir

    def close(self) -> None:
        super().close()
        server = getattr(self, "server", None)
        if server is not None and server.poll() is None:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        if getattr(self, "_log", None) is not None:
            self._log.close()


class LmdbHttpNosyncSystem(LmdbHttpSystem):
    name = "lmdb-http-nosync"
    durability = "nosync"
