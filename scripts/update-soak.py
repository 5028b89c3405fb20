"""A steady update load on a fixed working set, with the server's memory and file sampled.

Starts ``lakebench serve --durability nosync`` on DATA, PUTs 100 resources of
the seed's shape (50 external IRIs, 50 links to the other resources, 100
random 64-character literals), then for SECONDS sends, one request at a
time, 80% PATCHes (DELETE DATA and INSERT DATA of 10 of a resource's
literals, replaced by new random ones) and 20% PUTs of a whole resource.
Every 10 s it writes a row to OUT.csv: the requests so far, the worker's
RssAnon and RSS, the PATCH helpers' RssAnon, and the size of data.mdb.  At
the end it stops the server and runs ``lakebench check`` on DATA.

    .venv/bin/python scripts/update-soak.py --data /tmp/soak --seconds 600 --out soak.csv

docs/store.rst ("Compaction") gives what it measured.
"""
from __future__ import annotations

import argparse
import csv
import os
import random
import subprocess
import sys
import time

import psutil
import urllib3

from lakebench.process import ServerProcess, free_port

CHILDREN = 100
ALPHABET = "abcdefghijklmnopqrstuvwxyzéèàùçøåæœ你好世界ÄÖÜß0123456789"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="store directory for the server (created)")
    parser.add_argument("--seconds", type=float, default=600.0, help="how long the load lasts (default: 600)")
    parser.add_argument("--out", required=True, help="the CSV of samples")
    args = parser.parse_args()

    port = free_port()
    base = f"http://127.0.0.1:{port}/"
    server = ServerProcess.start([sys.executable, "-m", "lakebench.cli", "serve", "--data", args.data,
                                  "--port", str(port), "--durability", "nosync"], os.devnull, detach=True)
    http = urllib3.PoolManager(maxsize=1, retries=False)
    rng = random.Random(1)

    def literal() -> str:
        return "".join(rng.choice(ALPHABET) for _ in range(64))

    def put(i: int) -> dict[int, str]:
        literals = {k: literal() for k in range(100)}
        lines = [f"<> <http://e/p{k}> <http://ext.org/{i}/{k}> ." for k in range(50)]
        lines += [f"<> <http://e/r{k}> <{base}c{(i + k) % CHILDREN}> ." for k in range(50)]
        lines += [f'<> <http://e/l{k}> "{v}" .' for k, v in literals.items()]
        r = http.request("PUT", f"{base}c{i}", body="\n".join(lines).encode(), headers={"Content-Type": "text/turtle"})
        assert r.status in (201, 204), r.data
        return literals

    try:
        server.wait_ready(base, 30, what="lakebench serve", interval=0.1)
        held = {i: put(i) for i in range(CHILDREN)}
        rows, requests, start, next_sample = [], 0, time.monotonic(), 0.0
        while time.monotonic() - start < args.seconds:
            i = rng.randrange(CHILDREN)
            if rng.random() < 0.8:
                new = {k: literal() for k in rng.sample(range(100), 10)}
                deleted = " ".join(f'<> <http://e/l{k}> "{held[i][k]}" .' for k in new)
                inserted = " ".join(f'<> <http://e/l{k}> "{v}" .' for k, v in new.items())
                r = http.request("PATCH", f"{base}c{i}", body=f"DELETE DATA {{ {deleted} }} ; INSERT DATA {{ {inserted} }}"
                                 .encode(), headers={"Content-Type": "application/sparql-update"})
                assert r.status == 204, r.data
                held[i].update(new)
            else:
                held[i] = put(i)
            requests += 1
            elapsed = time.monotonic() - start
            if elapsed >= next_sample:
                rows.append(_sample(server.pid, args.data, elapsed, requests))
                print(rows[-1], flush=True)
                next_sample += 10
    finally:
        server.stop(timeout=60)
    with open(args.out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return subprocess.run([sys.executable, "-m", "lakebench.cli", "check", args.data]).returncode


def _rss_anon(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    return 0


def _sample(master: int, data: str, elapsed: float, requests: int) -> dict:
    processes = psutil.Process(master).children(recursive=True)
    workers = [p for p in processes if "sandbox" not in " ".join(p.cmdline())]
    helpers = [p for p in processes if "sandbox" in " ".join(p.cmdline())]
    return {"seconds": round(elapsed, 1), "requests": requests,
            "worker_rss_anon": sum(_rss_anon(p.pid) for p in workers),
            "worker_rss": sum(p.memory_info().rss for p in workers),
            "helper_rss_anon": sum(_rss_anon(p.pid) for p in helpers),
            "data_mdb": os.path.getsize(os.path.join(data, "data.mdb"))}


if __name__ == "__main__":
    sys.exit(main())
