from __future__ import annotations

import math

import pytest

from lakebench import results, table


def _run(system, run, per_child, parent_s, rss, disk=None, status="ok"):
    if status != "ok":
        return {"system": system, "run": run, "status": status, "error": "boom",
                "durability": "nosync", "transport": "in-process", "samples": []}
    record = {"system": system, "run": run, "status": "ok", "error": None,
              "durability": "nosync", "transport": "in-process", "children": 10, "literal_length": 64,
              "ingest_seconds": per_child * 10, "parent": {"seconds": parent_s, "containment_triples": 10,
                                                            "bytes": 500},
              "peak_rss_bytes": rss, "disk_bytes": disk, "triples_total": 2010,
              "samples": [{"t": 0.0, "rss_bytes": rss}]}
    record.update(results.latency_summary([per_child] * 10))
    return record


def test_latency_summary_growth_and_percentiles():
    seconds = [0.001] * 90 + [0.003] * 10
    s = results.latency_summary(seconds)
    assert s["per_resource_ms"]["max"] == 3.0
    assert s["per_resource_ms"]["p50"] == 1.0
    assert s["growth"]["first_10pct_ms"] == 1.0
    assert s["growth"]["last_10pct_ms"] == 3.0
    assert s["growth"]["ratio"] == 3.0
    assert math.isclose(s["per_resource_ms"]["mean"], 1.2)


def test_aggregate_mean_std_and_exact_counts():
    runs = [_run("a", 0, 0.001, 0.1, 100), _run("a", 1, 0.003, 0.3, 300)]
    entry = results.aggregate("a", runs)
    assert entry["status"] == "ok"
    assert entry["ingest_seconds"] == pytest.approx(0.02)
    assert entry["std"]["ingest_seconds"] == pytest.approx(0.01414, rel=1e-3)
    assert entry["parent"]["containment_triples"] == 10 and isinstance(entry["parent"]["containment_triples"], int)
    assert entry["triples_total"] == 2010
    assert len(entry["samples"]) == 2 and "samples" not in entry["runs"][0]
    # Each run keeps its own figures, nested ones too; the entry holds their means.
    assert [r["per_resource_ms"]["mean"] for r in entry["runs"]] == [1.0, 3.0]
    assert [r["parent"]["seconds"] for r in entry["runs"]] == [0.1, 0.3]
    assert entry["per_resource_ms"]["mean"] == 2.0 and entry["parent"]["seconds"] == pytest.approx(0.2)


def test_failed_run_marks_system_failed_but_keeps_figures():
    entry = results.aggregate("a", [_run("a", 0, 0.001, 0.1, 100), _run("a", 1, 0, 0, 0, status="failed")])
    assert entry["status"] == "failed" and entry["error"] == "boom"
    assert entry["successful_runs"] == 1


def test_compare_with_reference_percentages():
    a = results.aggregate("a", [_run("a", 0, 0.002, 0.2, 200, disk=1000)])
    b = results.aggregate("b", [_run("b", 0, 0.001, 0.4, 100, disk=500)])
    results.compare_with_reference([a, b], "a")
    assert a["vs_reference"]["per_resource_ms.mean"] == 100.0
    assert b["vs_reference"]["per_resource_ms.mean"] == 50.0
    assert b["vs_reference"]["parent.seconds"] == 200.0
    assert b["vs_reference"]["disk_bytes"] == 50.0


def test_write_load_and_table(tmp_path):
    a = results.aggregate("a", [_run("a", 0, 0.002, 0.2, 200, disk=1000)])
    bad = results.aggregate("z", [_run("z", 0, 0, 0, 0, status="failed")])
    results.compare_with_reference([a, bad], "a")
    doc = {"schema": 1, "systems": [a, bad]}
    results.write(tmp_path, doc, {("a", 10, 64, "", 0): [0.002] * 10})
    assert results.load(tmp_path)["systems"][0]["name"] == "a"
    assert results.load_latencies(tmp_path)[("a", 10, 64, "", 0)] == [0.002] * 10
    printed = table.text(doc)
    assert "FAILED: boom" in printed
    assert "100%" in printed


def test_case_label_names_only_what_was_swept():
    rows = [{"name": "a", "children": 10, "literal_length": 1}, {"name": "a", "children": 10, "literal_length": 64},
            {"name": "b", "children": 10, "literal_length": 1}]
    assert results.case_label(rows[1], rows) == "a (64-char literals)"
    assert results.case_label(rows[2], rows) == "b"


def test_aggregate_of_runs_the_budget_stopped_at_different_sizes():
    """Each run keeps its own size; the entry holds the size all reached, and the checkpoints all took."""
    a, b = _run("a", 0, 0.001, 0.1, 100), _run("a", 1, 0.002, 0.2, 200)
    a.update(children=10, children_requested=1000, budget_exhausted=True,
             checkpoints=[{"children": 2, "parent_seconds": 0.01, "parent_first_seconds": 0.02,
                           "containment_triples": 2, "disk_bytes": None, "rss_bytes": 100},
                          {"children": 5, "parent_seconds": 0.05, "parent_first_seconds": 0.06,
                           "containment_triples": 5, "disk_bytes": None, "rss_bytes": 300}])
    b.update(children=4, children_requested=1000, budget_exhausted=False,
             checkpoints=[{"children": 2, "parent_seconds": 0.03, "parent_first_seconds": 0.02,
                           "containment_triples": 2, "disk_bytes": None, "rss_bytes": 200}])
    entry = results.aggregate("a", [a, b])
    assert entry["children"] == 4 and isinstance(entry["children"], int)
    assert entry["std"]["children"] > 0
    assert entry["children_requested"] == 1000 and entry["budget_exhausted"] is True
    assert entry["checkpoints"] == [{"children": 2, "parent_seconds": 0.02, "parent_first_seconds": 0.02,
                                     "containment_triples": 2, "disk_bytes": None, "rss_bytes": 150}]
    results.validate({"schema": 1, "systems": [entry]})
    assert results.latency_key(entry, 1) == ("a", 1000, 64, "", 1)  # latencies.csv names the case


def test_skipped_entry_passes_the_schema_and_the_table():
    entry = results.skipped_entry("a", 1000, 64, "the budget ran out at 80 children (case 100)",
                                  {"durability": "nosync", "transport": "in-process"})
    document = {"schema": 1, "systems": [entry], "workload": {"triples_per_child": 200}}
    results.validate(document)
    row = table.rows(document)[1]
    assert row[:3] == ["a", "nosync", "not run"]
    assert table.notes(document) == ["a: not run: the budget ran out at 80 children (case 100)"]


def test_counts_that_differ_between_repeats_stay_counts():
    """A count done within a duration or a budget differs between runs: the entry keeps the fewest
    (an integer, as the schema says), not a mean the schema would refuse on load."""
    runs = [_run("a", 0, 0.001, 0.01, 100), _run("a", 1, 0.002, 0.01, 100)]
    for run, count in zip(runs, (275, 276)):
        run["operations"] = results.operations_summary({"create": [0.001] * count})
    entry = results.aggregate("a", runs)
    assert entry["operations"]["create"]["count"] == 275 and entry["std"]["operations.create.count"] > 0
    results.validate({"schema": 1, "systems": [entry]})


def test_the_table_takes_a_system_that_refused_every_operation():
    refused = _run("a", 0, 0.001, 0.01, 100)
    refused["per_resource_ms"]["mean"] = None  # every primary operation refused: nothing timed
    fine = _run("b", 0, 0.001, 0.01, 100)
    document = {"schema": 1, "workload": {"name": "update"}, "systems": [
        {**refused, "name": "a", "workload": {"name": "update", "primary": "update"},
         "operations": {"update": {"count": 0, "errors": 5, "seconds": 0.0}}},
        {**fine, "name": "b", "workload": {"name": "update", "primary": "update"},
         "operations": results.operations_summary({"update": [0.001] * 5})}]}
    rows = table.rows(document, wide=True)
    assert [row[0] for row in rows[1:]] == ["b", "a"]  # measured first, then the one that refused
    assert "refused 5 update" in "\n".join(table.notes(document))
