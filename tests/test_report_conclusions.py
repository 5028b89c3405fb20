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
