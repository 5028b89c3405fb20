"""The report's charts: one function each, in a registry.

Adding a chart is one function and one line::

    @chart("cpu_time", "CPU time")
    def cpu_time(data: ReportData):
        fig = new_figure(FIG_WIDTH, 4)
        ...
        return fig, "What the chart shows, for its caption."

A chart function gets the :class:`~lakebench.report.data.ReportData` and
returns ``(figure, caption)``, or ``None`` when the results hold nothing it
could plot (no disk sizes, no sweep): the report then leaves it out.  A
chart declares the workloads it applies to (``workloads=("binaries",)``;
``flat`` by default, ``None`` for every workload): a page draws only its
workload's.  The charts of the other workloads are in
:mod:`~lakebench.report.workload_charts`, the panels over time (memory, CPU,
disk, a Locust run's load) in :mod:`~lakebench.report.charts_time`, the
summary's ``headline`` chart in :mod:`~lakebench.report.charts_summary`.
Every chart draws each system in its own colour, dash (by durability) and
marker, at a width and font size legible on a phone, with its legend outside
the data and hover titles on its marks: :mod:`~lakebench.report.chart_style`
says how and gives the helpers (``fig = new_figure(FIG_WIDTH, 4)``,
``ax.plot(..., **system_style(data, entry))``, ``tip(line, "lmdb: 2 ms")``,
``outside_legend(fig)``).
Figures are plain :class:`matplotlib.figure.Figure` objects rendered by the
Agg/SVG canvases: no pyplot, no display, no global state.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from lakebench.report import fmt
from lakebench.report.chart_style import (DASH_KEY, FIG_WIDTH, HATCH_KEY, RC, add_titles, bar_style,
                                          outside_legend, system_handle, system_style, tip, tips_of)
from lakebench.report.data import ReportData, number, std_of
from lakebench.results import get_path, stats
from lakebench.results.stats import log_moving_stats, moving_stats

FORMATS = ("svg", "png")


@dataclass(frozen=True)
class Chart:
    name: str  # file name stem
    title: str  # heading in the report
    draw: Callable[[ReportData], "tuple[object, str] | None"]
    workloads: tuple[str, ...] | None = ("flat",)  # the workloads it is drawn for; None: every one

    def applies(self, workload: str) -> bool:
        return self.workloads is None or workload in self.workloads


#: Every chart, in the order the report shows them.
CHARTS: list[Chart] = []


def chart(name: str, title: str, workloads: tuple[str, ...] | None = ("flat",)):
    """Register the decorated function as a chart of the report, for ``workloads`` (None: all)."""
    def register(draw):
        CHARTS.append(Chart(name, title, draw, workloads))
        return draw
    return register


def new_figure(width: float = FIG_WIDTH, height: float = 4.0):
    """A figure at most :data:`FIG_WIDTH` wide: wider, its text would shrink below 10 px on a phone."""
    from matplotlib.figure import Figure

    return Figure(figsize=(min(width, FIG_WIDTH), height), layout="constrained")


def style():
    """The settings every chart is drawn in (:data:`~lakebench.report.chart_style.RC`)."""
    import matplotlib

    return matplotlib.rc_context(RC)


def save(fig, path: Path, image_format: str) -> None:
    """Write ``fig``; an SVG gets the hover titles of its marks (:func:`~lakebench.report.chart_style.tip`)."""
    metadata = {"Date": None} if image_format == "svg" else {"Software": None}
    fig.savefig(path, format=image_format, dpi=120, metadata=metadata)
    if image_format == "svg" and tips_of(fig):
        path.write_text(add_titles(path.read_text(encoding="utf-8"), tips_of(fig)), encoding="utf-8")


def render(data: ReportData, out: Path, image_format: str = "svg", charts=None) -> list[tuple[Chart, Path, str]]:
    """Draw every chart of the results' workload that has data into ``out``; returns (chart, file, caption)."""
    if image_format not in FORMATS:
        raise ValueError(f"image format must be one of {FORMATS}, got {image_format!r}")
    made = []
    with style():
        for c in CHARTS if charts is None else charts:
            for stale in FORMATS:  # a chart no longer drawn (or drawn in the other format) goes
                (out / f"{c.name}.{stale}").unlink(missing_ok=True)
            if not c.applies(data.workload):
                continue
            drawn = c.draw(data)
            if drawn is None:
                continue
            fig, caption = drawn
            path = out / f"{c.name}.{image_format}"
            save(fig, path, image_format)
            made.append((c, path, caption))
    return made


# -- helpers ---------------------------------------------------------------

PHASE_COLORS = {
    "start": "#eeeeee",
    "setup": "#eeeeee",
    "ingest": "#dbe9f6",
    "checkpoint": "#f6e8a6",
    "retrieve": "#fde0c5",
    "tail": "#d9f0d3",
    "close": "#e7d4e8",
}


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


def _shade_phases(ax, samples: list[dict]) -> None:
    for phase, start, end in phase_spans(samples):
        if end > start:
            ax.axvspan(start, end, color=PHASE_COLORS.get(phase, "#f4f4f4"), lw=0, zorder=0)


def _log_scale(ax, which: str = "y") -> None:
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


def _count_label(value: float, _position=None) -> str:
    """A count as a log axis labels it: 500, 1k, 20k, 1M (no run-together digits at 10000 20000).

    >>> [_count_label(v) for v in (5, 500, 1000, 20000, 1e6, 2.5e6)]
    ['5', '500', '1k', '20k', '1M', '2.5M']
    """
    for scale, suffix in ((1e6, "M"), (1e3, "k")):
        if value >= scale:
            return f"{value / scale:g}{suffix}"
    return f"{value:g}"


def _series(samples: list[dict], key: str, scale: float = 1.0):
    pairs = [(s["t"], s[key] * scale) for s in samples if s.get("t") is not None and number(s.get(key)) is not None]
    return [p[0] for p in pairs], [p[1] for p in pairs]


# -- the charts ------------------------------------------------------------
# -- the charts ------------------------------------------------------------

# The other workloads' charts come first on their pages: registered here, before the seed's.
from lakebench.report import workload_charts  # noqa: E402,F401  (registers its charts)


@chart("latency", "Time per child against children created")
def latency(data: ReportData):
    entries = [e for e in data.systems if data.latency_runs(e)]
    if not entries:
        return None
    import numpy as np

    window = data.latency_window()
    fig = new_figure(FIG_WIDTH, 5.6)
    ax = fig.add_subplot()
    handles = []
    for e in entries:
        runs = data.latency_runs(e)
        st = system_style(data, e)
        for r in runs:
            ax.scatter(np.arange(len(r)), np.asarray(r) * 1000, s=5, color=st["color"], alpha=0.25,
                       linewidths=0, rasterized=True, zorder=1)
        centres, med, p95 = moving_stats(runs, window)
        growth = number(get_path(e, "growth.ratio"))
        typical = data.median_growth(e)
        notes = ([f"{fmt.ratio(growth)} mean"] if growth is not None else []) + (
            [f"{fmt.ratio(typical[2])} median"] if typical else [])
        note = f": {' / '.join(notes)}" if notes else ""
        line, = ax.plot(centres, med * 1000, color=st["color"], ls=st["ls"], lw=2.2, zorder=3)
        tip(line, f"{data.label(e)}: moving median, {fmt.millis(stats.median(med.tolist()) * 1000)} typical{note}")
        faint, = ax.plot(centres, p95 * 1000, color=st["color"], ls=st["ls"], lw=1, alpha=0.6, zorder=3)
        tip(faint, f"{data.label(e)}: moving 95th percentile")
        handles.append(system_handle(data, e, marker=None, label=f"{data.label(e)}{note}"))
    _log_scale(ax, "y")
    ax.set_xlim(left=0)
    ax.set_xlabel("child index (siblings in the container)")
    ax.set_ylabel("time per child (ms, log)")
    ax.grid(True, which="major", alpha=0.4)
    ax.grid(True, which="minor", alpha=0.15)
    outside_legend(fig, handles, ncols=1)
    pooled = " (all runs pooled)" if data.repeat > 1 else ""
    caption = (
        "Each dot is one ``create_child`` call; the thick line is the moving median and the "
        f"thin faint line the moving 95th percentile over {window} consecutive children{pooled}. "
        "A flat line means a child costs the same however many siblings it has (O(1)); a line "
        "that rises with the index means each child costs more as the container fills (O(n)). The legend gives "
        "each system's growth: its mean, then its median time per child over the last 10% of the children "
        f"divided by the first 10%'s. {DASH_KEY}"
    )
    return fig, caption


# The panels over time (memory, CPU, disk, and a Locust run's load): one shared time axis.
from lakebench.report import charts_time  # noqa: E402,F401  (registers "resources")

#: The monitor's phases up to the end of the ingest (a checkpoint is a pause within it).
LOADING_PHASES = charts_time.LOADING_PHASES


@chart("disk", "On-disk size against children created")
def disk(data: ReportData):
    entries = [e for e in data.systems if any(
        number(s.get("disk_bytes")) for run in data.sample_runs(e) for s in run)
        or number(e.get("disk_bytes"))]
    if not entries:
        return None
    from matplotlib.lines import Line2D

    fig = new_figure(FIG_WIDTH, 5.2)
    ax = fig.add_subplot()
    handles = []
    for e in entries:
        st = system_style(data, e)
        for i, samples in enumerate(data.sample_runs(e)):
            alpha = 1.0 if i == 0 else 0.3
            loading = [s for s in samples if s.get("phase") in LOADING_PHASES
                       and number(s.get("disk_bytes")) is not None and s.get("children") is not None]
            after = [s for s in samples if s.get("phase") not in LOADING_PHASES
                     and number(s.get("disk_bytes")) is not None and s.get("children") is not None]
            line, = ax.plot([s["children"] for s in loading], [s["disk_bytes"] / 1e6 for s in loading],
                            color=st["color"], ls=st["ls"], alpha=alpha, lw=1.8, marker=st["marker"], ms=5,
                            markevery=max(1, len(loading) // 12))
            tip(line, f"{data.label(e)}: disk during the ingest")
            if after:
                last = after[-1]
                marks, = ax.plot([s["children"] for s in after], [s["disk_bytes"] / 1e6 for s in after],
                                 color=st["color"], alpha=alpha, ls="none", marker="x", ms=6)
                tip(marks, f"{data.label(e)} after the ingest: up to {fmt.size(max(s['disk_bytes'] for s in after))}"
                           f" (last {fmt.size(last['disk_bytes'])})")
        final = number(e.get("disk_bytes"))
        closed = ""
        if final is not None and e.get("children") is not None:
            star, = ax.plot([e["children"]], [final / 1e6], color=st["color"], marker="*", ms=15, ls="none",
                            markeredgecolor="black", zorder=4)
            tip(star, f"{data.label(e)} closed: {fmt.size(final)} at {fmt.count(e['children'])} children")
            closed = f": {fmt.size(final)}"
        handles.append(system_handle(data, e, label=f"{data.label(e)}{closed}"))
    keys = [Line2D([], [], color="#555", marker="x", ls="none", ms=6, label="after ingest"),
            Line2D([], [], color="#999", marker="*", ms=12, mec="black", ls="none", label="closed")]
    ax.set_xlabel("children created")
    ax.set_ylabel("disk allocated (MB)")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    outside_legend(fig, handles + keys, ncols=2)
    missing = [fmt.escape(data.label(e)) for e in data.ok if e not in entries]  # the caption is markup
    note = f" Not shown, as they keep nothing on disk: {', '.join(missing)}." if missing else ""
    caption = (
        "Disk usage of each on-disk system as the children arrive (line, from the monitor's "
        "samples; the count is updated every 50 children), while it idles after the load "
        "(crosses: background flushes and compactions show as growth at the final count), "
        f"and after it closed (star: the figure in the table; the legend gives it).{note} {DASH_KEY}"
    )
    return fig, caption


@chart("parent", "Parent retrieval time", workloads=None)
def parent(data: ReportData):
    entries = [e for e in data.ok if number(get_path(e, "parent.seconds")) is not None]
    if not entries:
        return None
    # Horizontal bars, one row per system: the names stay readable at any width.
    fig = new_figure(FIG_WIDTH, 1.4 + 0.95 * len(entries))
    ax = fig.add_subplot()
    ref = data.reference
    ref_seconds = number(get_path(ref, "parent.seconds")) if ref else None
    ys = list(range(len(entries)))[::-1]  # the first system on top
    keys: dict[str, object] = {}  # the two kinds of mark, for the legend
    for y, e in zip(ys, entries):
        value = e["parent"]["seconds"] * 1000
        std = std_of(e, "parent.seconds")
        bars = ax.barh(y - 0.1, value, height=0.45, alpha=0.85, zorder=2,
                       xerr=None if std is None else std * 1000, capsize=4, **bar_style(data, e))
        pct = f", {fmt.percent(100 * e['parent']['seconds'] / ref_seconds)} of ref." if ref_seconds else ""
        tip(bars.patches[0], f"{data.label(e)}: {fmt.seconds(e['parent']['seconds'])}{pct}")
        # Each run's first retrieval (right after the writes) apart from the steady ones that follow.
        runs = [get_path(run, "parent.all_seconds") or [] for run in e.get("runs") or []]
        firsts = [r[0] * 1000 for r in runs if r]
        dots = [t * 1000 for r in runs for t in r[1:]]
        for values, marker, what in ((dots, "o", "steady"), (firsts, "^", "first")):
            if not values:
                continue
            offsets = [(i / max(1, len(values) - 1) - 0.5) * 0.35 for i in range(len(values))]
            marks, = ax.plot(values, [y - 0.1 + o * 0.6 for o in offsets], ls="none", marker=marker,
                             ms=3.5 if marker == "o" else 6, color="black", mfc="black" if marker == "o" else "white",
                             alpha=0.7, zorder=3, label=f"{what} retrieval")
            keys.setdefault(what, marks)
            tip(marks, f"{data.label(e)}: {what} retrieval{'s' if len(values) > 1 else ''} "
                       f"{', '.join(fmt.millis(v) for v in values[:6])}")
        # The value above its bar, from the axis: clear of the dots, inside the figure.
        ax.text(0.01, y + 0.17, f"{fmt.seconds(e['parent']['seconds'])}{pct}", transform=ax.get_yaxis_transform(),
                ha="left", va="bottom")
    ax.set_yticks([y - 0.1 for y in ys], [
        f"{data.label(e)}\n{fmt.count(get_path(e, 'parent.containment_triples'))} contained" for e in entries])
    values = [e["parent"]["seconds"] for e in entries]
    if max(values) > 50 * min(values):  # a linear axis would hide the fast systems' bars
        _log_scale(ax, "x")
        ax.set_xlabel("GET parent (ms, log scale)")
    else:
        ax.set_xlabel("GET parent (ms)")
        ax.set_xlim(left=0)
    ax.set_ylim(-0.6, len(entries) - 0.4)
    ax.grid(True, axis="x", alpha=0.3)
    outside_legend(fig, [keys[k] for k in ("first", "steady") if k in keys])
    retrievals = get_path(data.document, "settings.retrievals") or "several"
    spread = ", error bar: standard deviation over the runs" if data.repeat > 1 else ""
    caption = (
        f"Time to retrieve the parent with all its containment triples: the bar is the median of "
        f"{retrievals} retrievals after the first{spread}; each dot is one of those steady retrievals, each "
        f"open triangle a first retrieval, right after the writes. {HATCH_KEY}"
    )
    return fig, caption


@chart("sweep", "Scaling with the number of children")
def sweep(data: ReportData):
    sizes = data.sweep()
    if not sizes:
        return None  # one size per system: nothing to plot against
    fig = new_figure(FIG_WIDTH, 7.4)
    get_ax, put_ax = fig.subplots(2, 1, sharex=True)
    for name, entries in sizes.items():
        st = system_style(data, entries[0])
        xs = [e["children"] for e in entries]
        line, = get_ax.plot(xs, [e["parent"]["seconds"] * 1000 for e in entries], **st, label=name)
        tip(line, f"{name}: GET parent " + ", ".join(
            f"{fmt.seconds(e['parent']['seconds'])} at {fmt.count(e['children'])}" for e in entries))
        line, = put_ax.plot(xs, [e["per_resource_ms"]["mean"] for e in entries], **st, label=name)
        tip(line, f"{name}: mean per child " + ", ".join(
            f"{fmt.millis(e['per_resource_ms']['mean'])} at {fmt.count(e['children'])}" for e in entries))
    for ax, label in ((get_ax, "GET parent (ms)"), (put_ax, "mean per child (ms)")):
        _log_scale(ax, "x")
        _log_scale(ax, "y")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
    from matplotlib.ticker import FuncFormatter

    put_ax.xaxis.set_major_formatter(FuncFormatter(_count_label))
    put_ax.set_xlabel("children in the container")
    outside_legend(fig)
    caption = ("Parent retrieval time (top) and mean time per child (bottom) against the container's size, "
               f"log-log: a slope of 1 is linear growth, 0 is constant. {DASH_KEY}")
    return fig, caption


@chart("cliff", "Where each system breaks: time per child and parent retrieval against children")
def cliff(data: ReportData):
    """Every system's per-child time and parent GET against the container's size, on log-log axes.

    Drawn when the results hold a curve to draw: checkpoints, a sweep of
    sizes, or a budget.
    """
    scale = {name: entries for name, entries in data.scale().items()
             if any(data.latency_runs(e) for e in entries)}
    curve = (data.budget_seconds is not None or data.sweep()
             or any(e.get("checkpoints") for entries in scale.values() for e in entries))
    if not scale or not curve:
        return None
    from matplotlib.lines import Line2D

    fig = new_figure(FIG_WIDTH, 8.4)
    put_ax, get_ax = fig.subplots(2, 1, sharex=True)
    handles = []
    for name, entries in scale.items():
        st = system_style(data, entries[0])
        color, ls = st["color"], st["ls"]
        handles.append(system_handle(data, entries[0], label=name))
        # The longest series: every case starts with the same children, so the
        # largest case reached holds the smaller ones' curves too.
        longest = max((e for e in entries if data.latency_runs(e)), key=lambda e: e["children"])
        xs, med, p95 = log_moving_stats(data.latency_runs(longest))
        line, = put_ax.plot(xs, med * 1000, color=color, ls=ls, lw=2.2, zorder=3)
        tip(line, f"{name}: moving median, {fmt.millis(med[0] * 1000)} at first, "
                  f"{fmt.millis(med[-1] * 1000)} at {fmt.count(int(xs[-1]))}")
        line, = put_ax.plot(xs, p95 * 1000, color=color, ls=ls, lw=1, alpha=0.6, zorder=3)
        tip(line, f"{name}: moving 95th percentile")
        # The line: that same run's checkpoints and end; the other cases' ends as dots
        # (their checkpoints repeat the line's).
        points = data.parent_curve([longest])
        ends = sorted((e["children"], e["parent"]["seconds"], number(get_path(e, "parent.first_seconds")))
                      for e in entries if e is not longest)
        for series, style_ in ((points, {"lw": 2, "ls": ls}), (ends, {"ls": "none"})):
            line, = get_ax.plot([p[0] for p in series], [p[1] * 1000 for p in series], color=color,
                                marker=st["marker"], ms=5, zorder=3, **style_)
            tip(line, f"{name}: steady GET " + ", ".join(
                f"{fmt.seconds(p[1])} at {fmt.count(p[0])}" for p in series[-4:]))
            first = [(p[0], p[2] * 1000) for p in series if p[2] is not None]
            line, = get_ax.plot([p[0] for p in first], [p[1] for p in first], color=color, marker=st["marker"],
                                ms=5, mfc="white", zorder=3, alpha=0.8,
                                **({"lw": 1, "ls": ls} if series is points else style_))
            tip(line, f"{name}: first GET")
        for e in entries:
            if not e.get("budget_exhausted"):
                continue
            reached = e["children"]
            at = med[min(range(len(xs)), key=lambda i: abs(xs[i] - reached))] * 1000  # the median there
            cross, = put_ax.plot([reached], [at], marker="X", ms=12, color=color, mec="black", ls="none",
                                 zorder=4)
            tip(cross, f"{name}: budget spent at {fmt.count(reached)} children")
            put_ax.annotate(fmt.count(reached), (reached, at), xytext=(0, 9), textcoords="offset points",
                            ha="center", color=color)
            get_ax.plot([reached], [e["parent"]["seconds"] * 1000], marker="X", ms=12, color=color,
                        mec="black", ls="none", zorder=4)
    for ax, label in ((put_ax, "per child (ms)"), (get_ax, "GET parent (ms)")):
        _log_scale(ax, "x")
        _log_scale(ax, "y")
        ax.set_ylabel(label)
        ax.grid(True, which="major", alpha=0.4)
        ax.grid(True, which="minor", alpha=0.12)
    from matplotlib.ticker import FuncFormatter

    get_ax.xaxis.set_major_formatter(FuncFormatter(_count_label))
    get_ax.set_xlabel("children in the container")
    budget = data.budget_seconds
    keys = [Line2D([], [], color="#444", lw=2.2, label="median (top), steady GET"),
            Line2D([], [], color="#444", lw=1, alpha=0.6, mfc="white", marker="o",
                   label="p95 (top), first GET")]
    if budget is not None:
        keys.append(Line2D([], [], color="#999", marker="X", ms=10, mec="black", ls="none",
                           label=f"budget of {fmt.seconds(budget)} spent"))
    outside_legend(fig, handles + keys, ncols=2)
    retrievals = get_path(data.document, "settings.retrievals") or "several"
    caption = (
        "Top: the time to create one child against the number of children already created, as the "
        "moving median (thick line) and 95th percentile (thin faint line) over the children within 10% of "
        "each point, log-log; a flat line is a constant cost per child, a line rising with slope 1 a cost "
        "growing with the container. Bottom: the parent's retrieval time (the median of "
        f"{retrievals} retrievals after the first: filled markers, thick line; the first: hollow markers, "
        "thin line) at each checkpoint taken during the ingest of the largest case each system reached and "
        "at its end; markers off the lines are the ends of the other cases."
    )
    if budget is not None:
        caption += (f" A cross marks where a system spent its ingest budget of {fmt.seconds(budget)} "
                    "and stopped, with the number of children it reached.")
    caption += f" {DASH_KEY}"
    return fig, caption


# The summary's chart, last in the registry: the page places it (name "headline").
from lakebench.report import charts_summary  # noqa: E402,F401  (registers "headline")
