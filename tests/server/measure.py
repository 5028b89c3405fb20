"""Time ``lakebench serve`` with one keep-alive client (not collected by pytest).

    python -m tests.server.measure [--children 1000] [--repeat 1]

For each configuration a fresh server and data directory: PUT N workload
children (200 triples each, bodies built before the clock starts) one by
one through a urllib3 pool (one connection, kept alive when the server
allows it), then GET the parent a few times.  Configurations:

* ``serve``: ``lakebench serve`` as shipped (gunicorn's gevent worker with
  timeouts, :mod:`lakebench.server.serving`), nosync and durable;
* ``gthread``: the same application under gunicorn's ``gthread`` worker with
  one thread and keep-alive (what ``lakebench serve`` ran before the gevent
  worker: one slow client stalls it);
* ``sync``: the same application under gunicorn's ``sync`` worker, which
  closes the connection after every response (so each PUT opens a new one).

``--configs serve-nosync,gthread-nosync,serve-durable,gthread-durable
--repeat 3`` interleaves the serving models on one machine.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import urllib3

from lakebench.workload import Workload

from .conftest import PACKAGE_ROOT, Server, free_port

MAX_CHILDREN = 2000


class GunicornServer(Server):
    """The same WSGI application under ``gunicorn -k sync`` or ``-k gthread --threads 1``."""

    def __init__(self, data: Path, log: Path, durable: bool, worker: str = "sync"):
        super().__init__(data, log)
        self.durable = durable
        self.worker = worker

    def start(self, timeout: float = 30.0) -> "Server":
        env = {**os.environ, "PYTHONPATH": PACKAGE_ROOT}
        factory = f"lakebench.server:make_app({str(self.data)!r}, {self.base!r}, {self.durable}, {16 << 20})"
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "gunicorn", "-k", self.worker, "-w", "1", "-b", f"127.0.0.1:{self.port}",
                 "--timeout", "600",
                 *(["--threads", "1", "--keep-alive", "75"] if self.worker == "gthread" else []), factory],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if self.request("GET", "/", timeout=2).status == 200:
                    return self
            except OSError:
                time.sleep(0.1)
        self.kill()
        raise RuntimeError(self.log())


def measure(server: Server, bodies: list[tuple[str, bytes]], retrievals: int = 3) -> dict:
    pool = urllib3.HTTPConnectionPool("127.0.0.1", server.port, maxsize=1, block=True, retries=False)
    ttl = {"Content-Type": "text/turtle"}
    assert pool.request("PUT", "/parent", body=b"", headers=ttl).status == 201
    times = []
    started = time.perf_counter()
    for path, body in bodies:
        t0 = time.perf_counter()
        r = pool.request("PUT", path, body=body, headers=ttl)
        times.append(time.perf_counter() - t0)
        assert r.status == 201, (r.status, r.data[:200])
    total = time.perf_counter() - started
    gets = {}
    for accept in ("text/turtle", "application/n-triples"):
        samples, size = [], 0
        for _ in range(retrievals):
            t0 = time.perf_counter()
            r = pool.request("GET", "/parent", headers={"Accept": accept}, preload_content=True)
            samples.append(time.perf_counter() - t0)
            size = len(r.data)
            assert r.status == 200 and r.data.count(b"/parent/c") >= len(bodies)
        gets[accept] = (statistics.median(samples), size)
    pool.close()
    times.sort()
    return {
        "put_mean_ms": 1000 * statistics.fmean(times),
        "put_p50_ms": 1000 * times[len(times) // 2],
        "put_p95_ms": 1000 * times[int(len(times) * 0.95)],
        "put_max_ms": 1000 * times[-1],
        "ingest_s": total,
        "get_ttl_ms": 1000 * gets["text/turtle"][0],
        "get_ttl_bytes": gets["text/turtle"][1],
        "get_nt_ms": 1000 * gets["application/n-triples"][0],
        "bytes_on_disk": sum(f.stat().st_size for f in server.data.glob("*.mdb")),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--children", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--configs", default="serve-nosync,serve-durable,gthread-nosync,gthread-durable")
    args = parser.parse_args(argv)
    if not 0 < args.children <= MAX_CHILDREN:
        parser.error(f"--children must be in 1..{MAX_CHILDREN}")
    w = Workload(children=args.children, seed=0, parent="parent")
    bodies = [("/" + c.path, c.turtle) for c in w]
    print(f"{args.children} children of {w.triples} triples, "
          f"{sum(len(b) for _, b in bodies) / len(bodies):.0f} bytes of Turtle each")
    header = (f"{'config':18} {'PUT mean':>9} {'p50':>7} {'p95':>7} {'max':>7} {'ingest':>8} "
              f"{'GET ttl':>8} {'GET nt':>8} {'body':>9} {'disk':>9}")
    print(header)
    for _ in range(args.repeat):
        for config in args.configs.split(","):
            worker, durability = config.split("-")
            with tempfile.TemporaryDirectory(prefix="lakebench-measure-") as tmp:
                tmp = Path(tmp)
                if worker == "serve":
                    server = Server(tmp / "data", tmp / "log", "--durability", durability, port=free_port())
                else:
                    server = GunicornServer(tmp / "data", tmp / "log", durability == "durable", worker)
                server.start()
                try:
                    m = measure(server, bodies)
                finally:
                    server.stop()
                print(f"{config:18} {m['put_mean_ms']:7.2f}ms {m['put_p50_ms']:5.2f}ms {m['put_p95_ms']:5.2f}ms "
                      f"{m['put_max_ms']:5.1f}ms {m['ingest_s']:7.2f}s {m['get_ttl_ms']:6.1f}ms "
                      f"{m['get_nt_ms']:6.1f}ms {m['get_ttl_bytes'] / 1024:7.0f}KiB "
                      f"{m['bytes_on_disk'] / 2**20:7.1f}MiB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
