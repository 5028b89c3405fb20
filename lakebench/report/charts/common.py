"""What the chart families share: log axes labelled in plain numbers, count labels, the monitor's samples,
when runs get time axes of their own."""
from __future__ import annotations

from lakebench.report.data import number

#: The monitor's phases up to the end of the ingest (a checkpoint is a pause within it).
LOADING_PHASES = ("start", "setup", "ingest", "checkpoint")


def log_scale(ax, which: str = "y") -> None:
    """Log scale labelled 1, 2, 5, 10, 20, 50 ... in plain numbers; 1, 10, 100 ... over many decades.

    Call it once the data is drawn: the span of the data picks the labels, so
    that a 6 in wide axis never runs its labels into each other.
    """
    import math

    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    getattr(ax, f"set_{which}scale")("log")
    axis = getattr(ax, f"{which}axis")
    low, high = sorted(getattr(ax, f"get_{which}lim")())
    decades = math.log10(high / low) if low > 0 and high > 0 else 0
    crowded = decades > (3.2 if which == "x" else 4.5)  # ~100 pt a decade for 1, 2, 5 across 6 in
    axis.set_major_locator(LogLocator(subs=(1.0,) if crowded else (1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


#: Past this ratio of the longest run to the shortest, one time axis for all squeezes the short runs
#: into its first tenth or less: each run is then drawn on a time axis of its own (:func:`own_time_axes`).
SQUEEZED = 10.0


def own_time_axes(spans) -> bool:
    """Whether runs lasting ``spans`` seconds are drawn each on its own time axis, 0 to 100% of the run,
    rather than all on one axis of seconds: when the longest lasts more than :data:`SQUEEZED` times the
    shortest.

    >>> own_time_axes([1.5, 2.0, 9.0]), own_time_axes([1.5, 60.0]), own_time_axes([60.0])
    (False, True, False)
    """
    spans = [s for s in spans if s is not None and s > 0]
    return len(spans) > 1 and max(spans) > SQUEEZED * min(spans)


def count_label(value: float, _position=None) -> str:
    """A count as a log axis labels it: 500, 1k, 20k, 1M (no run-together digits at 10000 20000).

    >>> [count_label(v) for v in (5, 500, 1000, 20000, 1e6, 2.5e6)]
    ['5', '500', '1k', '20k', '1M', '2.5M']
    """
    for scale, suffix in ((1e6, "M"), (1e3, "k")):
        if value >= scale:
            return f"{value / scale:g}{suffix}"
    return f"{value:g}"


def series(samples: list[dict], key: str, scale: float = 1.0) -> tuple[list[float], list[float]]:
    """The times and the values of ``key`` (times ``scale``) of the monitor's samples that have both."""
    pairs = [(s["t"], s[key] * scale) for s in samples if s.get("t") is not None and number(s.get(key)) is not None]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def phase_spans(samples: list[dict]) -> list[tuple[str, float, float]]:
    """(phase, start, end) of each stretch of samples in the same phase."""
    spans: list[list] = []
    for s in samples:
        phase, t = s.get("phase") or "?", s.get("t")
        if t is None:
            continue
        if spans and spans[-1][0] == phase:
            spans[-1][2] = t
        else:
            if spans:
                spans[-1][2] = t  # a phase lasts until the next one starts
            spans.append([phase, t, t])
    return [tuple(s) for s in spans]
