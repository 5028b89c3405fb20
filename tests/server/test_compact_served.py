"""A served store, compacted between two runs of the server, serves the same resources."""
from __future__ import annotations

import subprocess
import sys

from .conftest import check_store

NT = {"Accept": "application/n-triples"}
TTL = {"Content-Type": "text/turtle"}
UPDATE = {"Content-Type": "application/sparql-update"}


def test_a_compacted_store_serves_what_it_served(serve, tmp_path):
    data = tmp_path / "store"
    server = serve(data=data)
    server.request("PUT", "/box", "", TTL)
    for i in range(5):
        assert server.request("PUT", f"/box/c{i}", f'<> <http://e/p> "v0" ; <http://e/n> {i} .', TTL).status == 201
    for k in range(1, 40):  # literals replaced again and again: their terms stay behind
        i = k % 5
        update = f'DELETE WHERE {{ <> <http://e/p> ?o }} ; INSERT DATA {{ <> <http://e/p> "v{k}" }}'
        assert server.request("PATCH", f"/box/c{i}", update, UPDATE).status == 204
    paths = ["/box"] + [f"/box/c{i}" for i in range(5)]
    before = {p: (r.status, r.body, r.header("ETag")) for p in paths for r in [server.request("GET", p, headers=NT)]}
    assert server.stop() == 0
    out = subprocess.run([sys.executable, "-m", "lakebench.cli", "compact", str(data)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert check_store(data) == []
    again = serve(data=data, port=server.port)  # the same base URL: the same resource IRIs
    after = {p: (r.status, r.body, r.header("ETag")) for p in paths for r in [again.request("GET", p, headers=NT)]}
    assert after == before
