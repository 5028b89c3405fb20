"""What the Locust driver alone can send: its ceiling, against a trivial loopback server.

::

    python -m lakebench.ceiling ceiling --seconds 5                 # GET, both clients
    python -m lakebench.ceiling ceiling --method PUT --body-bytes 22000

docs/locust.rst ("The driver is not the bottleneck") gives its figures.
:func:`client_ceiling` imports Locust, which monkey-patches the process
with gevent: call it in a process of its own, as the command line does.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path


def serve_trivial(port: int = 0) -> None:
    """A minimal HTTP/1.1 keep-alive server on 127.0.0.1 (prints its port, serves forever).

    It parses just enough (headers, ``Content-Length`` body) to answer every
    request at once: 201 to a PUT, ``200 ok`` otherwise.  It exists to show
    what the load driver alone can send.
    """
    import asyncio

    class Protocol(asyncio.Protocol):
        def connection_made(self, transport):
            self.transport = transport
            self.buffer = b""

        def data_received(self, data):
            buffer = self.buffer + data
            while True:
                end = buffer.find(b"\r\n\r\n")
                if end < 0:
                    break
                head = buffer[:end]
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                if len(buffer) < end + 4 + length:
                    break
                buffer = buffer[end + 4 + length:]
                if head.startswith(b"PUT"):
                    self.transport.write(b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
                else:
                    self.transport.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok")
            self.buffer = buffer

    async def main():
        server = await asyncio.get_running_loop().create_server(Protocol, "127.0.0.1", port)
        print(server.sockets[0].getsockname()[1], flush=True)
        await server.serve_forever()

    asyncio.run(main())


def _package_env() -> dict:
    """Environment for a child Python that must import this lakebench (installed or not)."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def client_ceiling(seconds: float = 5.0, user: str = "fast", method: str = "GET", body_bytes: int = 0,
                   users: int = 1) -> dict:
    """Requests per second ``users`` Locust users send to a trivial loopback server.

    ``user`` is ``"fast"`` (FastHttpUser, geventhttpclient) or ``"http"``
    (HttpUser, requests).  The server runs in its own process; the result
    gives the rate, and the client's CPU time per request, which is the
    driver's cost whatever the server: ``1e6 / client_cpu_us_per_request``
    is what one core of driver could send.  Imports Locust (monkey-patches
    this process): call it in a process of its own, e.g.
    ``python -m lakebench.ceiling ceiling``.
    """
    import gevent
    import psutil
    from locust import FastHttpUser, HttpUser, constant, task
    from locust.env import Environment

    from lakebench.results import stats

    base = {"fast": FastHttpUser, "http": HttpUser}[user]
    body = b"x" * body_bytes if body_bytes else None

    class CeilingUser(base):
        wait_time = constant(0)

        def on_start(self):
            if user == "http":
                self.client.trust_env = False  # never through a proxy from the environment

        @task
        def hit(self):
            self.client.request(method, "/", data=body, name="ceiling")

    server = subprocess.Popen([sys.executable, "-c", "from lakebench.ceiling import serve_trivial; serve_trivial()"],
                              stdout=subprocess.PIPE, text=True, env=_package_env())
    try:
        port = int(server.stdout.readline())
        server_proc = psutil.Process(server.pid)
        env = Environment(user_classes=[CeilingUser], host=f"http://127.0.0.1:{port}")
        runner = env.create_local_runner()
        cpu0, srv0 = time.process_time(), sum(server_proc.cpu_times()[:2])
        t0 = time.perf_counter()
        runner.start(users, users)
        gevent.sleep(seconds)
        runner.quit()
        elapsed = time.perf_counter() - t0
        cpu, srv = time.process_time() - cpu0, sum(server_proc.cpu_times()[:2]) - srv0
    finally:
        server.terminate()
        server.wait(10)
    total = env.stats.total
    n = total.num_requests
    return {
        "user": base.__name__,
        "users": users,
        "method": method,
        "body_bytes": body_bytes,
        "seconds": round(elapsed, 3),
        "requests": n,
        "failures": total.num_failures,
        "requests_per_second": stats.rate(n, elapsed, 1),
        "mean_ms": round(total.avg_response_time, 3),
        "client_cpu_seconds": round(cpu, 3),
        "client_cpu_us_per_request": round(cpu / n * 1e6, 1) if n else None,
        "server_cpu_seconds": round(srv, 3),
    }


def _main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lakebench.ceiling",
                                     description="what the Locust driver alone can send to a trivial loopback server")
    sub = parser.add_subparsers(dest="command", required=True)
    ceiling = sub.add_parser("ceiling", help="measure what one Locust user can send to a trivial loopback server")
    ceiling.add_argument("--seconds", type=float, default=5.0)
    ceiling.add_argument("--user", choices=["fast", "http"], action="append",
                         help="client class(es) to measure (default both)")
    ceiling.add_argument("--method", default="GET")
    ceiling.add_argument("--body-bytes", type=int, default=0)
    ceiling.add_argument("--users", type=int, default=1)
    sub.add_parser("serve-trivial", help="run the trivial server (prints its port)")
    args = parser.parse_args(argv)
    if args.command == "serve-trivial":
        serve_trivial()
        return 0
    for kind in args.user or ["fast", "http"]:
        print(json.dumps(client_ceiling(args.seconds, kind, args.method, args.body_bytes, args.users)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(_main())
