"""A tally of the store's own timed work (its log's flushes), kept as it happens.

The store counts its work over runs of millions of writes, in the process
whose private memory a run measures: a tally sums the times rather than
keeping them, so its memory does not grow with the count.  The statistics
over every kept time (percentiles, means) are lakebench.results.stats'.

>>> tally = TimeTally()
>>> for seconds in (0.001, 0.030, 0.060):
...     tally.add(seconds)
>>> tally.summary()
{'count': 3, 'seconds': 0.091, 'max_seconds': 0.06, 'over_ms': {'5': 2, '20': 2, '50': 1}}
"""
from __future__ import annotations

#: The thresholds slow operations are counted by ("writes over 5, 20 and 50 ms", docs/store.rst).
SLOW_MS = (5, 20, 50)


class TimeTally:
    """Timed operations: how many, their seconds in all, the longest, and how many took
    over each of :data:`SLOW_MS`.

    One thread adds to a tally and reads it (it takes no lock): work timed on another
    thread hands its time to that one."""

    __slots__ = ("count", "seconds", "max_seconds", "over")

    def __init__(self):
        self.count = 0
        self.seconds = 0.0
        self.max_seconds = 0.0
        self.over = [0] * len(SLOW_MS)

    def add(self, seconds: float) -> None:
        self.count += 1
        self.seconds += seconds
        if seconds > self.max_seconds:
            self.max_seconds = seconds
        ms = seconds * 1000
        for k, threshold in enumerate(SLOW_MS):
            if ms > threshold:
                self.over[k] += 1

    def summary(self) -> dict:
        """``count``, ``seconds`` (in all), ``max_seconds``, and ``over_ms`` ({"5": count, ...})."""
        return {"count": self.count, "seconds": round(self.seconds, 6), "max_seconds": round(self.max_seconds, 6),
                "over_ms": {str(threshold): n for threshold, n in zip(SLOW_MS, self.over)}}
