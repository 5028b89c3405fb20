from __future__ import annotations

import csv
import time

import pytest

from lakebench import figures, results, systems, table
from lakebench.runner import RunConfig, run
from lakebench.systems.base import Retrieval, System
from lakebench.systems.memory import MemorySystem


@pytest.fixture(scope="module")
def document(tmp_path_factory):
    out = tmp_path_factory.mktemp("results")
    config = RunConfig(systems=["memory", "oxigraph"], children=30, seed=2, out=out,
                       tail_seconds=0.5, interval=0.1, progress=False, reference="oxigraph")
    doc = run(config, log=lambda *_: None)
    doc["_out"] = out
    return doc


@pytest.mark.parametrize("name", ["memory", "oxigraph"])
def test_every_field_recorded(document, name):
    entry = next(s for s in document["systems"] if s["name"] == name)
    assert entry["status"] == "ok", entry.get("error")
    assert entry["children"] == 30
    assert entry["parent"]["containment_triples"] == 30
    assert entry["parent"]["bytes"] > 30 * 40
    assert entry["triples_total"] == 30 * 200 + 30
    # What was sent and held counts the triples the memory table shows: one count, not "not counted".
    assert entry["held"] == {"children": 30, "triples": 30 * 200} and entry["sent"]["triples"] == 30 * 200
    pr = entry["per_resource_ms"]
    assert 0 < pr["p50"] <= pr["p95"] <= pr["max"]
    assert entry["ingest_seconds"] == pytest.approx(pr["mean"] * 30 / 1000, rel=1e-3)
    assert entry["growth"]["ratio"] > 0
    assert entry["peak_rss_bytes"] > 10_000_000
    assert entry["peak_rss_anon_bytes"] > 0
    assert entry["cpu_seconds"] >= 0
    phases = {s["phase"] for s in entry["samples"][0]}
    assert "ingest" in phases or "tail" in phases
    assert "tail" in phases  # monitoring goes on after the load
    assert entry["samples"][0][-1]["children"] == 30
    assert entry["generation"] in ("producer", "inline")  # producer where a second core is free
    assert entry["generate_seconds"] > 0


def test_disk_only_for_on_disk_systems(document):
    by_name = {s["name"]: s for s in document["systems"]}
    assert by_name["memory"]["disk_bytes"] is None
    assert by_name["oxigraph"]["disk_bytes"] > 1000
    assert by_name["oxigraph"]["durability"] == "nosync"


def test_reference_percentages(document):
    by_name = {s["name"]: s for s in document["systems"]}
    assert document["reference"] == "oxigraph"
    assert by_name["oxigraph"]["vs_reference"]["per_resource_ms.mean"] == 100.0
    assert by_name["memory"]["vs_reference"]["per_resource_ms.mean"] > 0


def test_files_written(document):
    out = document["_out"]
    assert results.load(out)["workload"]["children"] == 30
    with open(out / "latencies.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 60
    assert {r["system"] for r in rows} == {"memory", "oxigraph"}
    assert not (out / "data").exists()  # data directories removed unless --keep-data
    env = document["environment"]
    assert env["cores_logical"] >= 1 and env["python"] and env["libraries"]["rdflib"]


class _Exploding(System):
    name = "exploding"
    durability = "volatile"

    def setup(self):
        pass

    def create_child(self, child):
        if child.index == 3:
            raise RuntimeError("disk on fire")

    def retrieve_parent(self):
        raise AssertionError("not reached")


def test_failing_system_reported_others_kept(tmp_path, monkeypatch):
    monkeypatch.setitem(systems.SYSTEMS, "exploding", "tests.test_runner:_Exploding")
    # The worker is a fresh interpreter: it must be able to import this module.
    monkeypatch.setenv("PYTHONPATH", str(__import__("pathlib").Path(__file__).parents[1]))
    config = RunConfig(systems=["exploding", "memory"], children=5, out=tmp_path,
                       tail_seconds=0, interval=0.1, progress=False)
    doc = run(config, log=lambda *_: None)
    by_name = {s["name"]: s for s in doc["systems"]}
    assert by_name["exploding"]["status"] == "failed"
    assert "disk on fire" in by_name["exploding"]["error"]
    assert by_name["memory"]["status"] == "ok"
    assert results.load(tmp_path)["systems"][1]["parent"]["containment_triples"] == 5


def test_repeat_gives_mean_and_std(tmp_path):
    config = RunConfig(systems=["memory"], children=10, repeat=2, out=tmp_path,
                       tail_seconds=0, interval=0.1, progress=False)
    doc = run(config, log=lambda *_: None)
    entry = doc["systems"][0]
    assert entry["repeat"] == 2 and len(entry["runs"]) == 2 and len(entry["samples"]) == 2
    assert "ingest_seconds" in entry["std"]


def test_sweep_of_sizes_and_literal_lengths(tmp_path):
    config = RunConfig(systems=["memory", "lmdb-nosync"], children=[6, 12], literal_length=[1, 100],
                       out=tmp_path, tail_seconds=0, interval=0.1, progress=False, reference="lmdb-nosync")
    doc = run(config, log=lambda *_: None)
    cases = {(s["name"], s["children"], s["literal_length"]) for s in doc["systems"]}
    assert cases == {(n, c, l) for n in ("memory", "lmdb-nosync") for c in (6, 12) for l in (1, 100)}
    assert all(s["parent"]["containment_triples"] == s["children"] for s in doc["systems"])
    # Each case is compared with the reference's row of the same case.
    assert all(s["vs_reference"]["per_resource_ms.mean"] == 100.0
               for s in doc["systems"] if s["name"] == "lmdb-nosync")
    assert doc["workload"]["sweep"] == {"children": [6, 12], "literal_length": [1, 100]}
    series = results.load_latencies(tmp_path)
    assert len(series[("memory", 12, 100, "", 0)]) == 12 and len(series[("memory", 6, 1, "", 0)]) == 6
    # Longer literals make a bigger store.
    disk = {(s["children"], s["literal_length"]): s["disk_bytes"] for s in doc["systems"] if s["name"] == "lmdb-nosync"}
    assert disk[(12, 100)] >= disk[(12, 1)]
    assert "memory (12 children, 100-char literals)" in table.text(doc)
    # The in-process store reports its batch commits (one, at close, for so few children) and its
    # tables' bytes (before that commit: the Bloom filter of its first write, no cached term yet),
    # and its writes' time filing term ids (a look at the sweep, each, part of the write); memory nothing.
    assert all(s["internals"]["batch_commits"]["count"] == 1 for s in doc["systems"] if s["name"] == "lmdb-nosync")
    assert all(s["internals"]["heap_bytes"]["bloom_filter"] > 0 for s in doc["systems"] if s["name"] == "lmdb-nosync")
    assert all(0 < s["internals"]["term_filing"]["seconds"] < s["ingest_seconds"]
               for s in doc["systems"] if s["name"] == "lmdb-nosync")
    # Its log's flushes: one record a child (and the parent's), none flushed without fsync.
    assert all(s["internals"]["log_flushes"]["writes"] > s["children"] and s["internals"]["log_flushes"]["flushes"] == 0
               for s in doc["systems"] if s["name"] == "lmdb-nosync")
    assert not any("internals" in s for s in doc["systems"] if s["name"] == "memory")


def test_a_durable_store_reports_the_log_flushes_its_writes_waited_for(tmp_path):
    config = RunConfig(systems=["lmdb"], children=20, out=tmp_path, tail_seconds=0, interval=0.1, progress=False)
    entry = run(config, log=lambda *_: None)["systems"][0]
    flushes = entry["internals"]["log_flushes"]
    # one flush at least per acknowledged write, each inside a write's time
    assert flushes["flushes"] >= 20 and flushes["writes"] > 20 and flushes["failures"] == 0
    assert 0 < flushes["max_seconds"] and set(flushes["over_ms"]) == {"5", "20", "50"}
    assert flushes["over_ms"]["50"] <= flushes["over_ms"]["20"] <= flushes["over_ms"]["5"] <= flushes["flushes"]
    results.validate(results.load(tmp_path))


def test_cold_cache_retrievals(tmp_path):
    import os

    config = RunConfig(systems=["lmdb-nosync"], children=5, out=tmp_path, tail_seconds=0, interval=0.1,
                       progress=False, cold=True)
    doc = run(config, log=lambda *_: None)
    entry = doc["systems"][0]
    assert doc["settings"]["cache"] == "cold"
    # Root may drop the page cache; anyone else gets warm retrievals, said so.
    can_drop = os.geteuid() == 0 and os.access("/proc/sys/vm/drop_caches", os.W_OK)
    assert entry["parent"]["cache"] == ("cold" if can_drop else "warm")


def test_children_built_inline_when_asked(tmp_path):
    config = RunConfig(systems=["lmdb-nosync"], children=12, out=tmp_path, tail_seconds=0, interval=0.1,
                       progress=False, prefetch=False)
    entry = run(config, log=lambda *_: None)["systems"][0]
    assert entry["status"] == "ok", entry.get("error")
    assert entry["generation"] == "inline" and entry["generate_seconds"] > 0
    assert entry["triples_total"] == 12 * 200 + 12


# -- the budget and the checkpoints (issue 13) -------------------------------

#: A budget no store spends on 5 children, and none stays within for 20,000.
BUDGET = 0.2


@pytest.fixture(scope="module")
def budget_run(tmp_path_factory):
    """A real sweep under a tiny budget: 5 children finish, 20,000 stop early, 30,000 are not run."""
    out = tmp_path_factory.mktemp("budget")
    config = RunConfig(systems=["lmdb-nosync", "memory"], children=[5, 20_000, 30_000], out=out,
                       tail_seconds=0, interval=0.1, progress=False, budget_seconds=BUDGET,
                       checkpoints=[2, 3, 20, 50])
    document = run(config, log=lambda *_: None)
    return out, document


def _entry(document, name, children):
    return next(s for s in document["systems"] if s["name"] == name and results.case_children(s) == children)


@pytest.mark.alone  # budget_run: a run under a budget of wall time
@pytest.mark.parametrize("name", ["lmdb-nosync", "memory"])
def test_budget_stops_the_ingest_and_marks_it(budget_run, name):
    out, document = budget_run
    small, large = _entry(document, name, 5), _entry(document, name, 20_000)
    assert small["status"] == "ok" and large["status"] == "ok", large.get("error")
    assert small["budget_exhausted"] is False and small["children"] == small["children_requested"] == 5
    assert large["budget_exhausted"] is True and large["children_requested"] == 20_000
    assert 0 < large["children"] < 20_000
    assert large["ingest_seconds"] >= BUDGET  # it stopped on the child that spent the budget
    # The retrievals ran at the size reached, and the system holds exactly that.
    assert large["parent"]["containment_triples"] == large["children"]
    assert large["triples_total"] == large["children"] * 201
    assert len(results.load_latencies(out)[(name, 20_000, 64, "", 0)]) == large["children"]
    assert document["settings"]["budget_seconds"] == BUDGET


@pytest.mark.alone  # budget_run
@pytest.mark.parametrize("name", ["lmdb-nosync", "memory"])
def test_a_larger_case_is_not_run_once_the_budget_ran_out(budget_run, name):
    _, document = budget_run
    skipped = _entry(document, name, 30_000)
    reached = _entry(document, name, 20_000)["children"]
    assert skipped["status"] == "skipped" and skipped["runs"] == []
    assert skipped["skip_reason"] == f"the budget ran out at {reached:,} children (case 20,000)"
    assert skipped["durability"] == _entry(document, name, 5)["durability"]


@pytest.mark.alone  # budget_run
def test_the_table_says_where_the_budget_stopped(budget_run):
    _, document = budget_run
    notes = table.notes(document)
    large = _entry(document, "lmdb-nosync", 20_000)
    assert (f"lmdb-nosync (20,000 children): stopped at {large['children']:,} children after "
            f"{figures.duration(large['ingest_seconds'])} (budget spent)") in notes
    assert not any(n.startswith("lmdb-nosync (5 children)") for n in notes)  # within budget: unmarked
    assert any(n.startswith("memory (30,000 children): not run: the budget ran out at ") for n in notes)


@pytest.mark.alone  # budget_run
def test_checkpoints_recorded_and_kept_out_of_the_ingest_time(budget_run):
    out, document = budget_run
    series = results.load_latencies(out)
    assert document["settings"]["checkpoints"] == [2, 3, 20, 50]
    for entry in document["systems"]:
        if entry["status"] != "ok":
            continue
        points = entry["checkpoints"]
        sizes = [p["children"] for p in points]
        assert sizes == sorted(set(sizes)) and set(sizes) <= {2, 3, 20, 50}
        assert all(n < entry["children"] for n in sizes)  # the end is the final retrieval's
        if entry["children"] > 3:
            assert sizes[:2] == [2, 3]
        for p in points:
            assert p["containment_triples"] == p["children"]
            assert p["parent_seconds"] > 0 and p["parent_first_seconds"] > 0
            assert (p["disk_bytes"] is None) == (entry["name"] == "memory")
            assert p["rss_bytes"] > 0
        # The ingest time is the per-child times and nothing else.
        latencies = series[results.latency_key(entry, 0)]
        assert entry["ingest_seconds"] == pytest.approx(sum(latencies), abs=1e-4)
        # Sent on in chunks as they came (20,000 children: two), summarized by the parent.
        record = entry["runs"][0]
        assert len(latencies) == entry["children"] == record["operations"]["create"]["count"]
        # (latencies.csv keeps a time to 0.1 us: a figure computed from it may differ in its last digit)
        assert record["per_resource_ms"] == pytest.approx(
            results.latency_summary(latencies)["per_resource_ms"], rel=1e-3)
        assert record["operations"]["create"] == pytest.approx(
            results.operations_summary({"create": latencies})["create"], rel=1e-3)
        assert entry["checkpoint_seconds"] > 0
    assert results.load(out)["systems"]  # the whole document passes the schema


class _SlowParent(MemorySystem):
    """rdflib in memory, whose parent takes 50 ms to read: checkpoints that cost more than the ingest."""

    name = "slow-parent"

    def retrieve_parent(self):
        time.sleep(0.05)
        return super().retrieve_parent()


def test_checkpoint_reads_are_outside_the_ingest_wall_time(tmp_path, monkeypatch):
    monkeypatch.setitem(systems.SYSTEMS, "slow-parent", "tests.test_runner:_SlowParent")
    monkeypatch.setenv("PYTHONPATH", str(__import__("pathlib").Path(__file__).parents[1]))
    config = RunConfig(systems=["slow-parent"], children=8, out=tmp_path, tail_seconds=0, interval=0.1,
                       progress=False, checkpoints=[1, 2, 4], retrievals=3)
    entry = run(config, log=lambda *_: None)["systems"][0]
    assert entry["status"] == "ok", entry.get("error")
    assert [p["children"] for p in entry["checkpoints"]] == [1, 2, 4]
    # Nine reads of at least 50 ms each happened during the ingest loop; none is in its figures.
    assert entry["checkpoint_seconds"] >= 9 * 0.05
    assert entry["ingest_wall_seconds"] < entry["checkpoint_seconds"]
    assert entry["budget_exhausted"] is False and entry["children"] == 8


def test_no_checkpoints_when_turned_off(tmp_path):
    config = RunConfig(systems=["memory"], children=6, out=tmp_path, tail_seconds=0, interval=0.1,
                       progress=False, checkpoints=None)
    document = run(config, log=lambda *_: None)
    assert document["settings"]["checkpoints"] == [] and document["settings"]["budget_seconds"] is None
    assert document["systems"][0]["checkpoints"] == []


def test_budget_stops_a_locust_ingest_too(tmp_path):
    import importlib.util

    if importlib.util.find_spec("locust") is None:  # not imported here: Locust monkey-patches its importer
        pytest.skip("locust is not installed")
    config = RunConfig(systems=["lmdb-http-nosync"], children=20_000, out=tmp_path, tail_seconds=0,
                       interval=0.2, progress=False, driver="locust", budget_seconds=BUDGET)
    document = run(config, log=lambda *_: None)
    entry = document["systems"][0]
    assert entry["status"] == "ok", entry.get("error")
    assert entry["budget_exhausted"] is True and 0 < entry["children"] < 20_000
    assert entry["parent"]["containment_triples"] == entry["children"]
    assert entry["checkpoints"] == [] and document["settings"]["checkpoints"] == []  # Locust takes none


def test_one_value_of_a_sweepable_option_is_no_variant():
    one = RunConfig(systems=["lmdb-http"], workload="binaries", workload_params={"binary_size": [65536]})
    two = RunConfig(systems=["lmdb-http"], workload="binaries", workload_params={"binary_size": [1024, 65536]})
    assert [c.variant for c in one.cases()] == [""] and dict(one.cases()[0].params) == {"binary_size": 65536}
    assert [c.variant for c in two.cases()] == ["binary_size=1024", "binary_size=65536"]


def test_a_users_sweep_is_a_case_per_user_count_after_the_other_swept_options():
    one = RunConfig(systems=["lmdb-http"], driver="locust", users=[8])
    assert [(c.variant, c.users) for c in one.cases()] == [("", 8)]  # one user count: a plain setting
    sweep = RunConfig(systems=["lmdb-http"], driver="locust", users=[1, 2],
                      workload_params={"parents": ["shared", "per-user"]})
    assert [(c.variant, c.users, dict(c.params)) for c in sweep.cases()] == [
        ("parents=shared,users=1", 1, {"parents": "shared"}), ("parents=shared,users=2", 2, {"parents": "shared"}),
        ("parents=per-user,users=1", 1, {"parents": "per-user"}),
        ("parents=per-user,users=2", 2, {"parents": "per-user"})]


def test_a_case_that_would_not_fit_on_the_disk_is_not_run(tmp_path, monkeypatch):
    """A system's disk per triple (as measured) decides, before the case starts: the others still run."""
    import shutil
    from collections import namedtuple

    from lakebench import runner

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(runner.shutil, "disk_usage", lambda path: usage(1 << 40, 0, 10 << 20))  # 10 MiB free
    config = RunConfig(systems=["lmdb-nosync", "memory"], children=5, out=tmp_path, tail_seconds=0, interval=0.1)
    lines: list[str] = []
    document = run(config, log=lines.append)
    by_name = {e["name"]: e for e in document["systems"]}
    assert by_name["memory"]["status"] == "ok"  # no disk to need
    assert by_name["lmdb-nosync"]["status"] == "skipped"
    assert by_name["lmdb-nosync"]["skip_reason"].startswith("not enough disk: it would need about ")
    assert "(150 B a triple, as measured, and a margin), 10.5 MB free" in by_name["lmdb-nosync"]["skip_reason"]
    assert any(line.startswith("== lmdb-nosync:") and "not enough disk" in line for line in lines)
    assert shutil.disk_usage is runner.shutil.disk_usage  # (the module's own, patched for this test only)


class _WholeParentPages(MemorySystem):
    """Answers the paging client with the whole parent, as a system that does not page does."""

    def first_page(self, page_size):
        from lakebench.systems.base import Page

        return Page(self.retrieve_parent(), None, paged=False)


class _LoopingPages(MemorySystem):
    """Pages whose next link leads back to the first: a walk that would never end."""

    def first_page(self, page_size):
        from lakebench.systems.base import Page

        return Page(self.retrieve_parent(), "page-2")

    def next_page(self, url):
        from lakebench.systems.base import Page

        return Page(self.retrieve_parent(), "page-2" if url == "page-1" else "page-1")


def test_a_walk_not_paged_or_looping_is_said_so(tmp_path, monkeypatch):
    monkeypatch.setitem(systems.SYSTEMS, "whole-parent", "tests.test_runner:_WholeParentPages")
    monkeypatch.setitem(systems.SYSTEMS, "looping-pages", "tests.test_runner:_LoopingPages")
    monkeypatch.setenv("PYTHONPATH", str(__import__("pathlib").Path(__file__).parents[1]))
    config = RunConfig(systems=["whole-parent", "looping-pages", "memory"], children=6, out=tmp_path,
                       tail_seconds=0, interval=0.1, progress=False, page_size=2)
    by_name = {e["name"]: e for e in run(config, log=lambda *_: None)["systems"]}
    whole = by_name["whole-parent"]
    assert whole["status"] == "ok", whole.get("error")
    assert whole["parent"]["paged"]["paged"] is False and whole["parent"]["paged"]["containment_triples"] == 6
    assert "get parent page" not in whole["operations"]  # the whole parent is no page's time
    assert by_name["looping-pages"]["status"] == "failed"
    assert "next links loop" in by_name["looping-pages"]["error"]
    assert "paged" not in by_name["memory"]["parent"]  # no pages in-process: no walk


class _Body(bytes):
    """A representation that counts how many are alive."""

    alive = 0

    def __new__(cls, data):
        cls.alive += 1
        return super().__new__(cls, data)

    def __del__(self):
        type(self).alive -= 1


class _OneCopy(MemorySystem):
    """rdflib in memory, whose parent read fails if the reader still holds the last one it read."""

    name = "one-copy"

    def retrieve_parent(self):
        if _Body.alive:  # in process, a copy still held is the system's memory
            raise AssertionError(f"{_Body.alive} earlier representation(s) of the parent still held")
        got = super().retrieve_parent()
        return Retrieval(body=_Body(got.body), parent_uri=got.parent_uri, content_type=got.content_type)


def test_the_parent_read_again_lets_the_last_one_go_first(tmp_path, monkeypatch):
    monkeypatch.setitem(systems.SYSTEMS, "one-copy", "tests.test_runner:_OneCopy")
    monkeypatch.setenv("PYTHONPATH", str(__import__("pathlib").Path(__file__).parents[1]))
    config = RunConfig(systems=["one-copy"], children=4, out=tmp_path, tail_seconds=0, interval=0.1,
                       progress=False, checkpoints=None, retrievals=3)
    entry = run(config, log=lambda *_: None)["systems"][0]
    assert entry["status"] == "ok", entry.get("error")
    assert entry["parent"]["containment_triples"] == 4 and len(entry["parent"]["all_seconds"]) == 3


def test_the_clock_keeps_a_time_in_eight_bytes():
    """In process, the times a driver keeps share the system's private memory: a list of floats
    (32 bytes a time) grew it by 32 MB a million children."""
    import tracemalloc

    from lakebench.drivers import ClientDriver

    driver = ClientDriver(spec=None, events=None)  # its clock needs neither
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(200_000):
            driver.time("create", int)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(driver.outcome.times["create"]) == driver.outcome.created() == 200_000
    assert grown < 10 * 200_000


def test_a_sent_kinds_times_go_on_in_chunks_of_bounded_size():
    from lakebench.workloads.base import Outcome

    chunks = []
    outcome = Outcome()
    outcome.send_as_filed("create", chunks.append, 10)
    outcome.times["create"].flush()
    assert chunks == [] and outcome.created() == 0  # nothing filed, nothing sent
    seconds = [i / 1000 for i in range(25)]
    outcome.series("create").extend(seconds[:24])
    outcome.series("create").append(seconds[24])
    assert [len(c) for c in chunks] == [10, 10]  # sent as they came; five still pending
    assert outcome.created() == 25 and outcome.last("create") == seconds[-1]
    assert outcome.total_seconds("create") == pytest.approx(sum(seconds), abs=1e-12)
    outcome.times["create"].flush()
    assert [len(c) for c in chunks] == [10, 10, 5] and sum(chunks, []) == seconds
    assert all(isinstance(c, list) for c in chunks)
    with pytest.raises(ValueError, match="already has times"):
        outcome.send_as_filed("create", chunks.append, 10)


def test_the_primary_kinds_times_leave_the_worker_as_they_are_filed():
    """A million children are a million times: kept in the worker, an in-process system's private
    memory, they grew it by 8 MB a million (24 MB at three million)."""
    import tracemalloc

    from lakebench.drivers import ClientDriver

    received = []
    driver = ClientDriver(spec=None, events=None)
    driver.outcome.send_as_filed("create", received.append, 10_000)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(200_000):
            driver.time("create", int)
            if received:  # what the parent does with a chunk is not the worker's memory
                received.pop()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert driver.outcome.created() == 200_000
    assert grown < 200_000  # under a byte a time (an array of them: 8 bytes a time)
