"""The report's growth line judges growth by one figure, the results' own (issue 29's leftovers).

``growth.ratio`` (:data:`lakebench.figures.GROWTH`) is the mean of the last 10% of children over
that of the first 10%; the medians of the same tenths are given beside it.  When the two disagree
the line must not contradict itself ("stayed flat (1.00x) ...: each child costs more as children
accumulate").  The cases are built from synthetic per-child times, nothing is measured.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from lakebench import results
from lakebench.report import conclusions
from lakebench.report.data import ReportData
from lakebench.results import stats

ACCUMULATE = "each child costs more as children accumulate"
PAUSES = "the mean grew through a few long pauses, the typical child did not"


def _data(first: list[float], middle: list[float], last: list[float], name: str = "sys") -> ReportData:
    """One system's one run of ``first + middle + last`` per-child times (ms), as the report reads it."""
    series = [ms / 1000 for ms in first + middle + last]
    assert len(first) == len(last) == len(series) // 10  # the tenths the statistics take
    run = {"system": name, "run": 0, "status": "ok", "children": len(series), "literal_length": 64,
           "durability": "nosync", "transport": "in-process", **stats.latency_summary(series)}
    entry = results.aggregate(name, [run])
    document = {"workload": {"name": "flat", "literal_length": 64}, "systems": [entry]}
    return ReportData(Path("synthetic"), document, {results.latency_key(entry, 0): series})


def _growth_line(data: ReportData) -> str:
    (line,) = [line for line in conclusions.conclusions(data) if line.startswith("**Growth, ")]
    return line


def _ratios(data: ReportData) -> tuple[float, float]:
    (entry,) = data.systems
    return entry["growth"]["ratio"], data.median_growth(entry)[2]


# The first tenth: nine children at 1 ms and one slow one; the last tenth: every child at 1.3 ms.
TYPICAL_GREW_MEAN_FLAT = ([1.0] * 9 + [4.0], [1.1] * 80, [1.3] * 10)   # means 1.3 -> 1.3, medians 1.0 -> 1.3
TYPICAL_GREW_MEAN_FELL = ([1.0] * 9 + [10.0], [1.1] * 80, [1.3] * 10)  # means 1.9 -> 1.3, medians 1.0 -> 1.3


def test_growth_conclusion_mean_flat_median_grew_is_not_called_accumulating():
    data = _data(*TYPICAL_GREW_MEAN_FLAT)
    mean, median = _ratios(data)
    assert mean == pytest.approx(1.0) and median == pytest.approx(1.3)  # the disagreement built
    line = _growth_line(data)
    assert "stayed flat (1.00x)" in line and "median 1.30x" in line
    assert ACCUMULATE not in line and PAUSES not in line, line


def test_growth_conclusion_mean_fell_median_grew_is_not_called_accumulating():
    data = _data(*TYPICAL_GREW_MEAN_FELL)
    mean, median = _ratios(data)
    assert mean < 1 - conclusions.FLAT and median > 1 + conclusions.FLAT
    line = _growth_line(data)
    assert "fell to" in line and "median 1.30x" in line
    assert ACCUMULATE not in line and PAUSES not in line, line


def test_growth_conclusion_mean_grew_says_whether_the_typical_child_did():
    # mean and median both grew: each child costs more
    line = _growth_line(_data([1.0] * 10, [1.2] * 80, [1.5] * 10))
    assert "grew 1.50x" in line and line.endswith(ACCUMULATE + "."), line
    # the mean grew through a few pauses only, the median stayed put
    line = _growth_line(_data([1.0] * 10, [1.0] * 80, [1.0] * 9 + [6.0]))
    assert "grew 1.50x" in line and "median 1.00x" in line and line.endswith(PAUSES + "."), line


def test_growth_conclusion_both_flat_adds_nothing():
    line = _growth_line(_data([1.0] * 10, [1.0] * 80, [1.02] * 10))
    assert "stayed flat" in line and ACCUMULATE not in line and PAUSES not in line, line


# -- a sweep of sizes under a budget: compared where more than one system finished -------------

def _case(name: str, asked: int, reached: int, mean_ms: float, seconds: float) -> dict:
    """One system's case of a size sweep as the results hold it (budget spent when ``reached < asked``)."""
    return {"name": name, "status": "ok", "children": reached, "children_requested": asked,
            "budget_exhausted": reached < asked, "literal_length": 64, "durability": "nosync",
            "transport": "in-process", "repeat": 1, "ingest_seconds": seconds,
            "per_resource_ms": {"mean": mean_ms, "p95": mean_ms * 2, "p999": mean_ms * 5, "max": mean_ms * 9},
            "triples_total": reached * 201, "parent": {"seconds": reached / 1e5}}


def _sweep_data() -> ReportData:
    systems = [
        _case("fast", 1_000, 1_000, 1.0, 1.0), _case("quick", 1_000, 1_000, 2.0, 2.0),
        _case("slow", 1_000, 1_000, 9.0, 9.0),
        _case("fast", 10_000, 10_000, 1.0, 10.0), _case("quick", 10_000, 10_000, 2.0, 20.0),
        _case("slow", 10_000, 3_000, 10.0, 30.0),  # stopped short: 3,000 children in the 30 s budget
        _case("fast", 100_000, 30_000, 1.0, 30.0), _case("quick", 100_000, 15_000, 2.0, 30.0),
        {"name": "slow", "status": "skipped", "children_requested": 100_000, "literal_length": 64,
         "skip_reason": "the budget ran out at 3,000 children (case 10,000)"},
    ]
    document = {"workload": {"name": "flat", "literal_length": 64, "children": 1_000},
                "settings": {"budget_seconds": 30.0}, "systems": systems}
    return ReportData(Path("synthetic"), document, {})


def test_a_size_sweep_is_compared_at_the_largest_size_two_systems_finished():
    lines = conclusions.conclusions(_sweep_data())
    (compared,) = [line for line in lines if line.startswith("**Compared at ")]
    assert compared.startswith("**Compared at 10,000 children**")
    (ingest,) = [line for line in lines if line.startswith("**Ingest**")]
    # fast and quick finished 10,000; slow stopped at 3,000 and is not ranked against them
    assert "created 10,000 children fastest" in ingest and "2.00x as long" in ingest
    assert "slow" not in ingest
    # the triples held differ only because the sizes reached do: no "Check" line
    assert not [line for line in lines if line.startswith("**Check**")]
    (budget,) = [line for line in lines if line.startswith("**Budget**")]
    assert "slow (10,000 children) stopped at 3,000 children" in budget


def test_systems_that_stopped_at_different_sizes_are_not_said_to_hold_different_data():
    data = _sweep_data()
    data.document["systems"] = [e for e in data.systems if e.get("children_requested") == 100_000]
    lines = conclusions.conclusions(data)
    assert not [line for line in lines if line.startswith("**Check**")]
    (ingest,) = [line for line in lines if line.startswith("**Ingest**")]
    assert "created its children fastest" in ingest  # no one size to name


def test_without_a_budget_the_size_compared_says_no_budget():
    data = _sweep_data()
    data.document["settings"] = {}
    data.document["systems"] = [e for e in data.systems if e.get("children_requested") != 10_000]
    # fast and quick at 1,000; at 100,000 each stopped short (as a failure or skip would leave them)
    (line,) = [line for line in conclusions.conclusions(data) if line.startswith("**Compared at ")]
    assert line.startswith("**Compared at 1,000 children**") and "budget" not in line
