"""What a PATCH costs, next to a PUT of the same resource (not collected by pytest).

    python -m tests.server.measure_patch [--children 200] [--durability nosync]

A fresh ``lakebench serve``; N workload children (200 triples each) are PUT,
then each is, in turn: replaced by PUT (the same body), PATCHed with INSERT
DATA (one triple), DELETE DATA (that triple), DELETE/INSERT WHERE (renaming
one predicate), and read by GET.  One keep-alive client; bodies and updates
are built before the clock starts.  In-process, the same PATCH is split into
its parts: reading the resource, running the update on the in-memory copy,
and the store write.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import urllib3

from lakebench.server import patch as sparql_patch
from lakebench.server.repository import Repository
from lakebench.workload import Workload

from .conftest import Server, free_port

TTL = {"Content-Type": "text/turtle"}
UPDATE = {"Content-Type": "application/sparql-update"}
FORMS = {
    "PUT (replace)": None,
    "PATCH INSERT DATA": 'INSERT DATA { <> <http://e/added> "x" }',
    "PATCH DELETE DATA": 'DELETE DATA { <> <http://e/added> "x" }',
    "PATCH DELETE/INSERT WHERE": "DELETE { <> ?p ?o } INSERT { <> <http://e/renamed> ?o } "
                                 "WHERE { <> ?p ?o FILTER(?p = <http://e/added>) }",
}


def over_http(children: int, durability: str) -> dict[str, list[float]]:
    w = Workload(children=children, seed=0, parent="parent")
    bodies = [("/" + c.path, c.turtle) for c in w]
    with tempfile.TemporaryDirectory(prefix="lakebench-patch-") as tmp:
        server = Server(Path(tmp) / "data", Path(tmp) / "log", "--durability", durability, port=free_port()).start()
        pool = urllib3.HTTPConnectionPool("127.0.0.1", server.port, maxsize=1, block=True, retries=False)
        try:
            assert pool.request("PUT", "/parent", body=b"", headers=TTL).status == 201
            for path, body in bodies:
                assert pool.request("PUT", path, body=body, headers=TTL).status == 201
            times: dict[str, list[float]] = {name: [] for name in [*FORMS, "GET"]}
            for path, body in bodies:
                for name, update in FORMS.items():
                    t0 = time.perf_counter()
                    if update is None:
                        r = pool.request("PUT", path, body=body, headers=TTL)
                    else:
                        r = pool.request("PATCH", path, body=update.encode(), headers=UPDATE)
                    times[name].append(time.perf_counter() - t0)
                    assert r.status == 204, (name, r.status, r.data[:200])
                t0 = time.perf_counter()
                assert pool.request("GET", path).status == 200
                times["GET"].append(time.perf_counter() - t0)
            return times
        finally:
            pool.close()
            server.stop()


def in_process(children: int) -> dict[str, list[float]]:
    w = Workload(children=children, seed=0, parent="parent", base="http://test.example/")
    with tempfile.TemporaryDirectory(prefix="lakebench-patch-") as tmp:
        repo = Repository(Path(tmp) / "s", "http://test.example/", durable=False)
        repo.put("http://test.example/parent", b"", "text/turtle")
        times: dict[str, list[float]] = {"read": [], "update in memory": [], "whole patch": []}
        for c in w:
            repo.put(c.uri, c.turtle.encode() if isinstance(c.turtle, str) else c.turtle, "text/turtle",
                     container=False)
            update = FORMS["PATCH INSERT DATA"]
            t0 = time.perf_counter()
            with repo.store.read() as txn:
                before = repo._ntriples(txn, c.uri)
            t1 = time.perf_counter()
            sparql_patch.run(update, before, c.uri)
            t2 = time.perf_counter()
            repo.patch(c.uri, update)
            t3 = time.perf_counter()
            times["read"].append(t1 - t0)
            times["update in memory"].append(t2 - t1)
            times["whole patch"].append(t3 - t2)
        repo.close()
        return times


def report(title: str, times: dict[str, list[float]]) -> None:
    print(title)
    for name, samples in times.items():
        samples = sorted(samples)
        print(f"  {name:28} mean {1000 * statistics.fmean(samples):6.2f} ms   "
              f"p50 {1000 * samples[len(samples) // 2]:6.2f} ms   p95 {1000 * samples[int(len(samples) * .95)]:6.2f} ms")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--children", type=int, default=200)
    parser.add_argument("--durability", choices=("nosync", "durable"), default="nosync")
    args = parser.parse_args(argv)
    report(f"over HTTP, {args.durability}, {args.children} children of 200 triples:",
           over_http(args.children, args.durability))
    report("in-process (nosync), PATCH INSERT DATA split:", in_process(args.children))
    return 0


if __name__ == "__main__":
    sys.exit(main())
