"""The flat workload's charts: time per child as the container fills, disk against children,
the scaling of a sweep, where each system breaks; and the parent's retrieval, drawn for every workload.

Each system keeps its colour, marker and dash (:func:`~.chart_style.system_style`) in every chart.
"""
from __future__ import annotations

from lakebench import figures
from lakebench.report import fmt
from lakebench.report.charts.chart_style import (DASH_KEY, FIG_WIDTH, HATCH_KEY, bar_style, layer, outside_legend,
                                                 staggered, system_handle, system_style, tip)
from lakebench.report.charts.common import LOADING_PHASES, count_label, log_scale
from lakebench.report.charts.registry import chart, new_figure
from lakebench.report.data import ReportData, number, std_of
from lakebench.results import get_path, stats
from lakebench.results.stats import log_moving_stats, moving_stats


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
                       linewidths=0, rasterized=True, zorder=layer(e, 1))
        centres, med, p95 = moving_stats(runs, window)
        growth = number(get_path(e, "growth.ratio"))
        typical = data.median_growth(e)
        notes = ([f"{fmt.ratio(growth)} mean"] if growth is not None else []) + (
            [f"{fmt.ratio(typical[2])} median"] if typical else [])
        note = f": {' / '.join(notes)}" if notes else ""
        line, = ax.plot(centres, med * 1000, color=st["color"], ls=st["ls"], lw=2.2, zorder=layer(e, 3))
        tip(line, f"{data.label(e)}: moving median, {fmt.millis(stats.median(med.tolist()) * 1000)} typical{note}")
        faint, = ax.plot(centres, p95 * 1000, color=st["color"], ls=st["ls"], lw=1, alpha=0.6, zorder=layer(e, 3))
        tip(faint, f"{data.label(e)}: moving 95th percentile")
        handles.append(system_handle(data, e, marker=None, label=f"{data.label(e)}{note}"))
    log_scale(ax, "y")
    ax.set_xlim(left=0)
    ax.set_xlabel("child index (siblings in the container)")
    ax.set_ylabel("one child's time (ms, log)")
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
                            markevery=staggered(data, e, len(loading)), zorder=st["zorder"])
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
    values = [e["parent"]["seconds"] for e in entries]
    # A bar says "this much" by its length, which a log axis does not keep: 1.74 ms and 2.33 s, 1,339x
    # apart, were bars 20x apart.  So bars on a linear axis from zero while the values are within 50x of
    # each other; past that a linear axis leaves the fast systems no bar to see, and each system is a
    # dot on a log axis instead, its value written above it.
    logarithmic = max(values) > 50 * min(values)
    # One row per system: the names stay readable at any width.
    fig = new_figure(FIG_WIDTH, 1.4 + 0.95 * len(entries))
    ax = fig.add_subplot()
    ys = list(range(len(entries)))[::-1]  # the first system on top
    keys: dict[str, object] = {}  # the two kinds of mark, for the legend
    for y, e in zip(ys, entries):
        value = e["parent"]["seconds"] * 1000
        std = std_of(e, "parent.seconds")
        ref = data.reference_for(e)  # the reference of the same case
        ref_seconds = number(get_path(ref, "parent.seconds")) if ref else None
        pct = f", {fmt.percent(100 * e['parent']['seconds'] / ref_seconds)} of ref." if ref_seconds else ""
        described = f"{data.label(e)}: {figures.PARENT_STEADY.name} {fmt.seconds(e['parent']['seconds'])}{pct}"
        if logarithmic:
            st = system_style(data, e)
            if std is not None:
                ax.errorbar([value], [y - 0.1], xerr=[std * 1000], fmt="none", ecolor=st["color"], capsize=4,
                            zorder=2)
            dot, = ax.plot([value], [y - 0.1], ls="none", marker=st["marker"], ms=13, color=st["color"],
                           mec="black", alpha=0.85, zorder=2.5)  # under the retrievals' small marks
            tip(dot, described)
        else:
            bars = ax.barh(y - 0.1, value, height=0.45, alpha=0.85, zorder=2,
                           xerr=None if std is None else std * 1000, capsize=4, **bar_style(data, e))
            tip(bars.patches[0], described)
        # Each run's first retrieval (right after the writes) apart from the steady ones that follow.
        runs = [get_path(run, "parent.all_seconds") or [] for run in e.get("runs") or []]
        firsts = [r[0] * 1000 for r in runs if r]
        dots = [t * 1000 for r in runs for t in r[1:]]
        for marks_at, marker, what in ((dots, "o", "steady"), (firsts, "^", "first")):
            named = "retrievals after the first" if what == "steady" else figures.PARENT_FIRST.name
            if not marks_at:
                continue
            offsets = [(i / max(1, len(marks_at) - 1) - 0.5) * 0.35 for i in range(len(marks_at))]
            marks, = ax.plot(marks_at, [y - 0.1 + o * 0.6 for o in offsets], ls="none", marker=marker,
                             ms=3.5 if marker == "o" else 6, color="black", mfc="black" if marker == "o" else "white",
                             alpha=0.7, zorder=3, label=named)
            keys.setdefault(what, marks)
            tip(marks, f"{data.label(e)}: {named} {', '.join(fmt.millis(v) for v in marks_at[:6])}")
        # The value above its row, from the axis: clear of the marks, inside the figure.
        ax.text(0.01, y + 0.17, f"{fmt.seconds(e['parent']['seconds'])}{pct}", transform=ax.get_yaxis_transform(),
                ha="left", va="bottom")
    ax.set_yticks([y - 0.1 for y in ys], [
        f"{data.label(e)}\n{fmt.count(get_path(e, 'parent.containment_triples'))} contained" for e in entries])
    if logarithmic:
        log_scale(ax, "x")
        ax.set_xlabel(f"{figures.PARENT_STEADY.name} (ms, log scale)")
    else:
        ax.set_xlabel(f"{figures.PARENT_STEADY.name} (ms)")
        ax.set_xlim(left=0)
    ax.set_ylim(-0.6, len(entries) - 0.4)
    ax.grid(True, axis="x", which="major", alpha=0.3)
    outside_legend(fig, [keys[k] for k in ("first", "steady") if k in keys])
    n = data.retrievals
    spread = ", error bar: standard deviation over the runs" if data.repeat > 1 else ""
    if logarithmic:
        shown = (f"each system's large marker (one colour and shape per system) is {figures.PARENT_STEADY.name}, "
                 f"{figures.steady_means(n)}, on a log scale, as the values span "
                 f"{max(values) / min(values):,.0f}x (marks, not bars: a bar's length on a log scale says "
                 f"nothing){spread}")
        key = ""
    else:
        shown = f"the bar is {figures.PARENT_STEADY.name}, {figures.steady_means(n)}{spread}"
        key = HATCH_KEY
    caption = (
        f"Time to retrieve the parent with all its containment triples: {shown}; each small dot is one of "
        f"those retrievals, each open triangle {figures.PARENT_FIRST.name}, {figures.first_means(n)}. {key}"
    ).rstrip()
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
        tip(line, f"{name}: {figures.PARENT_STEADY.name} " + ", ".join(
            f"{fmt.seconds(e['parent']['seconds'])} at {fmt.count(e['children'])}" for e in entries))
        line, = put_ax.plot(xs, [e["per_resource_ms"]["mean"] for e in entries], **st, label=name)
        tip(line, f"{name}: {figures.TIME_PER_CHILD.name} " + ", ".join(
            f"{fmt.millis(e['per_resource_ms']['mean'])} at {fmt.count(e['children'])}" for e in entries))
    for ax, label in ((get_ax, f"{figures.PARENT_STEADY.name} (ms)"), (put_ax, f"{figures.TIME_PER_CHILD.name}, ms")):
        log_scale(ax, "x")
        log_scale(ax, "y")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
    from matplotlib.ticker import FuncFormatter

    put_ax.xaxis.set_major_formatter(FuncFormatter(count_label))
    put_ax.set_xlabel("children in the container")
    outside_legend(fig)
    caption = (f"{figures.PARENT_STEADY.name} (top) and {figures.TIME_PER_CHILD.name} (bottom) against the "
               f"container's size, log-log: a slope of 1 is linear growth, 0 is constant. {DASH_KEY}")
    return fig, caption


@chart("cliff", "Where each system breaks: time per child and parent retrieval against children")
def cliff(data: ReportData):
    """Every system's per-child time and parent GET against the container's size, on log-log axes.

    Drawn when the results hold a curve to draw: checkpoints, a sweep of
    sizes, or a budget.  The per-child time is the moving median and 95th
    percentile of the per-child times where ``latencies.csv`` holds them, and
    otherwise (a kept run without it) each case's mean and p99.9 from
    ``results.json`` at the children that case reached.
    """
    scale = data.scale()
    curve = (data.budget_seconds is not None or data.sweep()
             or any(e.get("checkpoints") for entries in scale.values() for e in entries))
    if not scale or not curve:
        return None
    from matplotlib.lines import Line2D

    fig = new_figure(FIG_WIDTH, 8.4)
    put_ax, get_ax = fig.subplots(2, 1, sharex=True)
    handles = []
    by_case: list[str] = []  # systems drawn from each case's figures, not per-child times
    for name, entries in scale.items():
        st = system_style(data, entries[0])
        color, ls = st["color"], st["ls"]
        handles.append(system_handle(data, entries[0], label=name))
        timed = [e for e in entries if data.latency_runs(e)]
        if timed:
            # The longest series: every case starts with the same children, so the
            # largest case reached holds the smaller ones' curves too.
            longest = max(timed, key=lambda e: e["children"])
            xs, med, p95 = log_moving_stats(data.latency_runs(longest))
            line, = put_ax.plot(xs, med * 1000, color=color, ls=ls, lw=2.2, zorder=layer(longest, 3))
            tip(line, f"{name}: moving median, {fmt.millis(med[0] * 1000)} at first, "
                      f"{fmt.millis(med[-1] * 1000)} at {fmt.count(int(xs[-1]))}")
            line, = put_ax.plot(xs, p95 * 1000, color=color, ls=ls, lw=1, alpha=0.6, zorder=layer(longest, 3))
            tip(line, f"{name}: moving 95th percentile")

            def time_at(entry: dict, xs=xs, med=med) -> float:
                """The moving median nearest the children ``entry`` reached (ms)."""
                return med[min(range(len(xs)), key=lambda i: abs(xs[i] - entry["children"]))] * 1000
        else:
            by_case.append(name)
            longest = max(entries, key=lambda e: e["children"])
            cases = [e for e in entries if number(get_path(e, figures.TIME_PER_CHILD.path)) is not None]
            for term, style_ in ((figures.TIME_PER_CHILD, {"lw": 2.2, "ms": 6}),
                                 (figures.TIME_PER_CHILD_P999, {"lw": 1, "alpha": 0.6, "ms": 5, "mfc": "white"})):
                shown = [e for e in cases if number(get_path(e, term.path)) is not None]
                line, = put_ax.plot([e["children"] for e in shown], [get_path(e, term.path) for e in shown],
                                    color=color, ls=ls, marker=st["marker"], zorder=layer(longest, 3), **style_)
                tip(line, f"{name}: {term.name} " + ", ".join(
                    f"{fmt.millis(get_path(e, term.path))} at {fmt.count(e['children'])}" for e in shown))

            def time_at(entry: dict) -> float:
                return get_path(entry, figures.TIME_PER_CHILD.path)
        # The line: that same run's checkpoints and end; the other cases' ends as dots
        # (their checkpoints repeat the line's).
        points = data.parent_curve([longest])
        ends = sorted((e["children"], e["parent"]["seconds"], number(get_path(e, "parent.first_seconds")))
                      for e in entries if e is not longest)
        for series, style_ in ((points, {"lw": 2, "ls": ls}), (ends, {"ls": "none"})):
            line, = get_ax.plot([p[0] for p in series], [p[1] * 1000 for p in series], color=color,
                                marker=st["marker"], ms=5, zorder=3, **style_)
            tip(line, f"{name}: {figures.PARENT_STEADY.name} " + ", ".join(
                f"{fmt.seconds(p[1])} at {fmt.count(p[0])}" for p in series[-4:]))
            first = [(p[0], p[2] * 1000) for p in series if p[2] is not None]
            line, = get_ax.plot([p[0] for p in first], [p[1] for p in first], color=color, marker=st["marker"],
                                ms=5, mfc="white", zorder=3, alpha=0.8,
                                **({"lw": 1, "ls": ls} if series is points else style_))
            tip(line, f"{name}: {figures.PARENT_FIRST.name}")
        for e in entries:
            if not e.get("budget_exhausted"):
                continue
            reached, at = e["children"], time_at(e)
            cross, = put_ax.plot([reached], [at], marker="X", ms=12, color=color, mec="black", ls="none",
                                 zorder=4)
            tip(cross, f"{name}: budget spent at {fmt.count(reached)} children")
            # above the cross, or below it for every other system: crosses near each other keep apart labels
            below = len(handles) % 2 == 0
            put_ax.annotate(fmt.count(reached), (reached, at), xytext=(0, -11 if below else 9),
                            textcoords="offset points", ha="center", va="top" if below else "baseline",
                            color=color)
            get_ax.plot([reached], [e["parent"]["seconds"] * 1000], marker="X", ms=12, color=color,
                        mec="black", ls="none", zorder=4)
    for ax, label in ((put_ax, "one child's time (ms)"), (get_ax, "GET parent (ms)")):
        log_scale(ax, "x")
        log_scale(ax, "y")
        ax.set_ylabel(label)
        ax.grid(True, which="major", alpha=0.4)
        ax.grid(True, which="minor", alpha=0.12)
    from matplotlib.ticker import FuncFormatter

    get_ax.xaxis.set_major_formatter(FuncFormatter(count_label))
    get_ax.set_xlabel("children in the container")
    budget = data.budget_seconds
    timed_all = len(by_case) < len(scale)
    thick = [t for t, shown in (("median", timed_all), (f"{figures.TIME_PER_CHILD.name} per case", by_case)) if shown]
    thin = [t for t, shown in (("p95", timed_all), (f"{figures.TIME_PER_CHILD_P999.name} per case", by_case)) if shown]
    keys = [Line2D([], [], color="#444", lw=2.2, label=f"{' or '.join(thick)} (top), {figures.PARENT_STEADY.name}"),
            Line2D([], [], color="#444", lw=1, alpha=0.6, mfc="white", marker="o",
                   label=f"{' or '.join(thin)} (top), {figures.PARENT_FIRST.name}")]
    if budget is not None:
        keys.append(Line2D([], [], color="#999", marker="X", ms=10, mec="black", ls="none",
                           label=f"budget of {fmt.seconds(budget)} spent"))
    outside_legend(fig, handles + keys, ncols=2)
    n = data.retrievals
    if not by_case:
        top = ("Top: the time to create one child against the number of children already created, as the "
               "moving median (thick line) and 95th percentile (thin faint line) over the children within 10% of "
               "each point, log-log; a flat line is a constant cost per child, a line rising with slope 1 a cost "
               "growing with the container.")
    else:
        listed = fmt.escape(", ".join(by_case))
        top = ("Top: the time to create one child against the number of children created, log-log; "
               + ("for the systems whose per-child times the results hold, the moving median (thick line) and "
                  "95th percentile (thin faint line) over the children within 10% of each point; "
                  if timed_all else "")
               + f"for {listed} (no per-child times in the results), each case's {figures.TIME_PER_CHILD.name} "
               f"(thick line, filled markers) and {figures.TIME_PER_CHILD_P999.name} (thin line, hollow markers) "
               "at the children that case reached. A flat line is a constant cost per child, a line rising "
               "with slope 1 a cost growing with the container.")
    caption = (
        f"{top} Bottom: {figures.PARENT_STEADY.name} ({figures.steady_means(n)}: "
        f"filled markers, thick line) and {figures.PARENT_FIRST.name} ({figures.first_means(n)}: hollow "
        "markers, thin line) at each checkpoint taken during the ingest of the largest case each system "
        "reached and at its end; markers off the lines are the ends of the other cases."
    )
    if budget is not None:
        caption += (f" A cross marks where a system spent its ingest budget of {fmt.seconds(budget)} "
                    "and stopped, with the number of children it reached.")
    caption += f" {DASH_KEY}"
    return fig, caption
