"""lmdb-http: the runner starts `lakebench serve`, drives it over HTTP, stops it."""
from __future__ import annotations

import pytest

from lakebench.runner import RunConfig, run
from lakebench.systems.lmdb_http import LmdbHttpNosyncSystem


@pytest.mark.parametrize("driver", ["client", "locust"])
def test_lmdb_http_in_the_runner(tmp_path, driver):
    config = RunConfig(systems=["lmdb-http-nosync"], children=40, out=tmp_path, tail_seconds=0.5,
                       interval=0.1, progress=False, driver=driver, users=2 if driver == "locust" else 1,
                       keep_data=True, page_size=15)
    doc = run(config, log=lambda *_: None)
    entry = doc["systems"][0]
    assert entry["status"] == "ok", entry["error"]
    assert entry["driver"] == driver and entry["transport"] == "http"
    assert entry["children"] == 40
    assert entry["parent"]["containment_triples"] == 40
    assert entry["peak_rss_bytes"] > 20_000_000  # the server's process tree, not unknown
    assert entry["disk_bytes"] > 0 and entry["cpu_seconds"] > 0
    if driver == "locust":
        assert set(entry["parent"]["variants_seconds"]) == {"full", "omit_containment", "minimal"}
        assert entry["users"] == 2
        # Two users overlap their requests: the running time is the wall time.
        assert entry["ingest_seconds"] == entry["ingest_wall_seconds"]
        assert "paged" not in entry["parent"]  # Locust's users do not walk pages
    else:
        assert entry["ingest_seconds"] < entry["ingest_wall_seconds"]
        # The parent walked in pages of 15: 15 + 15 + 10 children, each on one page.
        paged = entry["parent"]["paged"]
        assert paged["paged"] and paged["page_size"] == 15
        assert paged["pages"] == 3 and paged["containment_triples"] == 40
        assert 0 < paged["first_seconds"] < paged["walk_seconds"]
        assert entry["operations"]["get parent page"]["count"] == 3
    # The server stopped cleanly and left a consistent store behind.
    from lakebench.store import check

    assert check(tmp_path / "data" / "lmdb-http-nosync-0" / "store") == []
    log = (tmp_path / "data" / "lmdb-http-nosync-0" / "serve.log").read_text()
    assert "Traceback" not in log


def test_locust_driver_refuses_in_process_systems(tmp_path):
    from lakebench.cli import main

    assert main(["run", "--systems", "lmdb", "--driver", "locust", "--out", str(tmp_path)]) == 2


class _FailingHttp(LmdbHttpNosyncSystem):
    def create_child(self, child):
        if child.index == 3:
            raise RuntimeError("client gave up")
        super().create_child(child)


def test_a_failing_run_stops_its_server(tmp_path, monkeypatch):
    import os

    import psutil

    from lakebench import systems

    monkeypatch.setitem(systems.SYSTEMS, "failing-http", "tests.systems.test_lmdb_http:_FailingHttp")
    monkeypatch.setenv("PYTHONPATH", str(__import__("pathlib").Path(__file__).parents[2]))
    config = RunConfig(systems=["failing-http"], children=10, out=tmp_path, tail_seconds=0,
                       interval=0.1, progress=False, keep_data=True)
    doc = run(config, log=lambda *_: None)
    assert doc["systems"][0]["status"] == "failed"
    assert "client gave up" in doc["systems"][0]["error"]
    store = str(tmp_path / "data")
    left = [p for p in psutil.process_iter(["cmdline"])
            if p.info["cmdline"] and "serve" in p.info["cmdline"] and any(store in a for a in p.info["cmdline"])]
    assert left == [], f"servers left running: {[p.pid for p in left]} (we are {os.getpid()})"
