"""Every statistic lakebench computes over measured times, and their rounding.

The figures of results.json (:func:`latency_summary`, :func:`operations_summary`),
the means of repeated runs, the Locust record and the report's charts all
call these functions, so a figure has one formula wherever it appears;
tests/test_stats_in_one_place.py keeps it so.  Percentiles interpolate
linearly between sorted values; means are exact sums over the count
(:func:`statistics.fmean`).
"""
from __future__ import annotations

import math
import statistics
from typing import Sequence


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile of already sorted values.

    >>> percentile([1.0, 2.0, 3.0, 4.0], 50)
    2.5
    """
    if not sorted_values:
        return math.nan
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def median(values: Sequence[float]) -> float:
    """The middle value, or the mean of the two middle ones (:func:`statistics.median`, as numpy's).

    >>> median([3.0, 1.0, 2.0, 10.0])
    2.5
    """
    return statistics.median(values)


def mean(values: Sequence[float]) -> float:
    """The mean, summed exactly (:func:`statistics.fmean`)."""
    return statistics.fmean(values)


def stdev(values: Sequence[float]) -> float:
    """The sample standard deviation (:func:`statistics.stdev`; at least two values)."""
    return statistics.stdev(values)


def rate(count: float, seconds: float, digits: int, unit: float = 1) -> float | None:
    """``count / seconds / unit`` rounded to ``digits`` (``unit=10**6``: MB/s of bytes); None without time.

    >>> rate(3, 2.0, 3), rate(2_000_000, 0.5, 3, unit=1_000_000), rate(5, 0.0, 3)
    (1.5, 4.0, None)
    """
    return round(count / seconds / unit, digits) if seconds > 0 else None


def rounded(value: float | None, digits: int = 4) -> float | None:
    """``round(value, digits)``; None for None and NaN (a figure that could not be measured)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return round(value, digits)


def latency_summary(seconds: Sequence[float]) -> dict:
    """mean / p50 / p95 / p99 / p99.9 (``p999``) / max in milliseconds, and growth first vs last 10%.

    >>> s = latency_summary([0.001] * 10 + [0.002] * 10)
    >>> s["per_resource_ms"]["mean"], s["growth"]["ratio"]
    (1.5, 2.0)
    >>> tail = latency_summary([0.001] * 999 + [0.5])["per_resource_ms"]  # one child in 1,000 paused
    >>> tail["p99"], tail["p999"], tail["max"]
    (1.0, 1.499, 500.0)
    """
    ordered = sorted(seconds)
    tenth = max(1, len(seconds) // 10)
    first = mean(seconds[:tenth]) * 1000 if seconds else math.nan
    last = mean(seconds[-tenth:]) * 1000 if seconds else math.nan
    return {
        "per_resource_ms": {
            "mean": rounded(mean(seconds) * 1000) if seconds else None,
            "p50": rounded(percentile(ordered, 50) * 1000),
            "p95": rounded(percentile(ordered, 95) * 1000),
            "p99": rounded(percentile(ordered, 99) * 1000),
            "p999": rounded(percentile(ordered, 99.9) * 1000),
            "max": rounded(ordered[-1] * 1000) if ordered else None,
        },
        "growth": {
            "first_10pct_ms": rounded(first),
            "last_10pct_ms": rounded(last),
            "ratio": rounded(last / first) if first else None,
        },
    }


def operations_summary(times: dict[str, Sequence[float]], errors: dict[str, int] | None = None) -> dict:
    """Per operation kind: count, refused operations, total seconds, mean / p50 / p95 / p99 / max in
    milliseconds, and operations per second of the time spent in them.

    >>> s = operations_summary({"get": [0.001, 0.003]}, {"get": 1})["get"]
    >>> s["count"], s["errors"], s["mean_ms"], s["p50_ms"], s["per_second"]
    (2, 1, 2.0, 2.0, 500.0)
    """
    errors = errors or {}
    summary = {}
    for kind in dict.fromkeys([*times, *errors]):
        seconds = list(times.get(kind, ()))
        ordered = sorted(seconds)
        total = math.fsum(seconds)
        summary[kind] = {
            "count": len(seconds),
            "errors": errors.get(kind, 0),
            "seconds": round(total, 6),
            "mean_ms": rounded(total / len(seconds) * 1000) if seconds else None,
            "p50_ms": rounded(percentile(ordered, 50) * 1000),
            "p95_ms": rounded(percentile(ordered, 95) * 1000),
            "p99_ms": rounded(percentile(ordered, 99) * 1000),
            "max_ms": rounded(ordered[-1] * 1000) if ordered else None,
            "per_second": rounded(len(seconds) / total, 2) if total > 0 else None,
        }
    return summary


def latency_percentiles_ms(seconds: Sequence[float]) -> dict:
    """p50 / p95 / p99 / max of operation times in milliseconds, rounded as :func:`operations_summary`
    rounds them (so a load test's latency and its operation kind's agree); None each for no times.

    >>> latency_percentiles_ms([0.001, 0.002, 0.003, 0.004])
    {'p50': 2.5, 'p95': 3.85, 'p99': 3.97, 'max': 4.0}
    """
    ordered = sorted(seconds)
    return {"p50": rounded(percentile(ordered, 50) * 1000), "p95": rounded(percentile(ordered, 95) * 1000),
            "p99": rounded(percentile(ordered, 99) * 1000), "max": rounded(ordered[-1] * 1000) if ordered else None}


#: The knee of a users sweep: the gain in throughput per doubling of the users below which adding users
#: no longer adds throughput (:func:`knee`).
KNEE_GAIN = 1.10


def knee(points: Sequence[tuple[int, float]], gain: float = KNEE_GAIN) -> int | None:
    """The knee of a users sweep: the smallest user count after which no step to the next count gains
    10% (``gain``) or more throughput per doubling; None while the last step still gained that much (or
    with fewer than two points).

    Every later step is looked at, one by one: a step that gained little followed by one that gained
    much (a noisy machine, or a system that needs more users to overlap its waits) is no knee, and a
    late gain is not diluted over the doublings before it.  ``points`` are (users, throughput) pairs,
    one per user count.  A step between counts that are not a doubling apart (1 and 4, say) is taken
    per doubling, ``(t2 / t1) ** (1 / log2(u2 / u1))``, so that the knee does not depend on how the
    sweep was spaced.

    >>> knee([(1, 100.0), (2, 190.0), (4, 200.0), (8, 205.0)])  # 2 -> 4 adds 5%, 4 -> 8 adds 2.5%
    2
    >>> knee([(1, 100.0), (2, 190.0), (4, 360.0)]) is None  # still growing at the largest count
    True
    >>> knee([(1, 100.0), (2, 105.0), (4, 200.0)]) is None  # 1 -> 2 adds 5%, but 2 -> 4 nearly doubles
    True
    >>> knee([(1, 11.1), (2, 11.6), (4, 12.3), (8, 12.3), (16, 15.2), (32, 15.5)])  # 8 -> 16 adds 24%
    16
    >>> knee([(1, 100.0), (4, 130.0)]) is None  # x1.3 over two doublings: x1.14 per doubling
    True
    >>> knee([(1, 100.0), (4, 115.0)])  # x1.15 over two doublings: x1.07 per doubling
    1
    """
    ordered = sorted((u, t) for u, t in points if t is not None)
    gains = [(higher / throughput) ** (1 / math.log2(more / users)) if throughput > 0 else math.inf
             for (users, throughput), (more, higher) in zip(ordered, ordered[1:])]
    for i, (users, _) in enumerate(ordered[:-1]):
        if all(g < gain for g in gains[i:]):
            return users
    return None


def steady_seconds(times: Sequence[float]) -> float:
    """The median of the retrievals after the first (the first, right after the writes, is often much
    slower); of the first when it is the only one.

    >>> steady_seconds([0.9, 0.25, 0.75]), steady_seconds([0.9])
    (0.5, 0.9)
    """
    return percentile(sorted(times[1:] or times), 50)


#: The fewest buckets a load test's requests over time are counted in (:func:`bucket_seconds`).
LEAST_BUCKETS = 10


def bucket_seconds(span: float, least: int = LEAST_BUCKETS) -> float:
    """The width of the buckets a load test of ``span`` seconds counts its requests in over time:
    Locust's second, or less so that the test has at least ``least`` of them (1, 2 or 5 times a power
    of ten, at least a millisecond).

    >>> bucket_seconds(0.48), bucket_seconds(5.0), bucket_seconds(600.0), bucket_seconds(0.0)
    (0.02, 0.5, 1.0, 0.001)
    """
    if span >= least:
        return 1.0
    target = span / least
    step = 0.001
    for exponent in range(-3, 1):
        for mantissa in (1, 2, 5):
            value = round(mantissa * 10.0 ** exponent, 3)
            if value <= target:
                step = value
    return step


def percentile_ms(sorted_seconds: Sequence[float], q: float, digits: int) -> float | None:
    """A percentile of sorted seconds in milliseconds, rounded; None for no values."""
    return round(percentile(sorted_seconds, q) * 1000, digits) if sorted_seconds else None


def pooled_percentiles_ms(runs: list[list[float]], qs: Sequence[int]) -> dict | None:
    """``p<q>`` in milliseconds of the seconds of every run pooled, and ``n``, the values; None for none.

    >>> pooled_percentiles_ms([[0.001, 0.003], [0.002]], (50, 100))
    {'p50': 2.0, 'p100': 3.0, 'n': 3}
    """
    values = sorted(v * 1000 for r in runs for v in r)
    if not values:
        return None
    return {f"p{q}": percentile(values, q) for q in qs} | {"n": len(values)}


def median_growth(runs: list[list[float]]) -> tuple[float, float, float] | None:
    """Median ms of the first and last 10% of each run's values, all runs pooled, and their ratio.

    >>> median_growth([[0.001] * 9 + [0.004]])
    (1.0, 4.0, 4.0)
    """
    first: list[float] = []
    last: list[float] = []
    for series in runs:
        tenth = max(1, len(series) // 10)
        first += series[:tenth]
        last += series[-tenth:]
    if not first or not last:
        return None
    a, b = median(first) * 1000, median(last) * 1000
    return a, b, (b / a if a else math.nan)


def moving_stats(runs: list[list[float]], window: int, points: int = 400):
    """Moving median and 95th percentile over ``window`` children, all runs pooled.

    Returns (centres, medians, p95s), at most ``points`` of each.
    """
    import numpy as np

    n = max(len(r) for r in runs)
    values = np.full((len(runs), n), np.nan)
    for i, r in enumerate(runs):
        values[i, : len(r)] = r
    half = window // 2
    step = max(1, n // points)
    centres = np.arange(0, n, step)
    if centres[-1] != n - 1:
        centres = np.append(centres, n - 1)
    med, p95 = [], []
    for c in centres:
        block = values[:, max(0, c - half): min(n, c + half + 1)]
        block = sorted(block[~np.isnan(block)].tolist())
        med.append(percentile(block, 50))
        p95.append(percentile(block, 95))
    return centres, np.array(med), np.array(p95)


def log_moving_stats(runs: list[list[float]], points: int = 150, spread: float = 0.1, least: int = 5):
    """Moving median and 95th percentile at child numbers 1..n spaced evenly on a log axis.

    Around child ``c`` the window holds children ``c ± spread*c`` (at least
    ``± least``) of every run, pooled: the same width wherever it is on a log
    axis, so the first hundred children are as readable as the last
    hundred thousand.  Returns (child numbers, medians, p95s), in the runs' unit.
    """
    import numpy as np

    n = max(len(r) for r in runs)
    top = math.log10(n) if n > 1 else 0.0
    centres = sorted({max(1, round(10 ** (top * i / max(1, points - 1)))) for i in range(points)})
    med, p95 = [], []
    for c in centres:
        half = max(least, round(c * spread))
        block = sorted(v for r in runs for v in r[max(0, c - 1 - half): c + half])
        med.append(percentile(block, 50))
        p95.append(percentile(block, 95))
    return np.array(centres), np.array(med), np.array(p95)
