"""The charts of the workloads other than the seed's ``flat``.

Each reads the workload's own record fields (docs/results.rst): ``binaries``
(one case per binary size), ``deep`` (its ``series`` of list and get times as
the hierarchy grows), and the ``operations`` percentiles for ``mixed``.
"""
from __future__ import annotations

from lakebench.report import fmt
from lakebench.report.charts.chart_style import (DASH_KEY, FIG_WIDTH, HATCH_KEY, bar_style, outside_legend,
                                                 system_style, tip)
from lakebench.report.charts.common import count_label, log_scale
from lakebench.report.charts.registry import chart, new_figure
from lakebench.report.data import ReportData, number
from lakebench.results import get_path


def _by_system(entries: list[dict]) -> dict[str, list[dict]]:
    """Entries grouped by system name, in the order the systems first appear."""
    grouped: dict[str, list[dict]] = {}
    for e in entries:
        grouped.setdefault(e["name"], []).append(e)
    return grouped


@chart("binaries", "Throughput against binary size", workloads=("binaries",))
def binary_throughput(data: ReportData):
    entries = [e for e in data.ok if number(get_path(e, "binaries.size_bytes"))]
    if not entries:
        return None
    fig = new_figure(FIG_WIDTH, 7.4)
    put_ax, get_ax = fig.subplots(2, 1, sharex=True, sharey=True)  # stacked: full width on a phone
    sizes: set[float] = set()
    mismatched = False
    for name, cases in _by_system(entries).items():
        cases.sort(key=lambda e: e["binaries"]["size_bytes"])
        st = system_style(data, cases[0])
        color = st["color"]
        for ax, key in ((put_ax, "put_mb_per_s"), (get_ax, "get_mb_per_s")):
            points = [(e["binaries"]["size_bytes"], number(e["binaries"].get(key)), e) for e in cases]
            points = [p for p in points if p[1]]
            sizes.update(p[0] for p in points)
            line, = ax.plot([p[0] for p in points], [p[1] for p in points], ms=5, lw=1.8, label=name, **st)
            tip(line, f"{name}: {key.split('_')[0].upper()} " + ", ".join(
                f"{p[1]:.1f} MB/s at {fmt.binary_size(p[0])}" for p in points))
            if key == "get_mb_per_s":  # a binary that came back different is marked where it happened
                bad = [p for p in points if (number(p[2]["binaries"].get("mismatched")) or 0) > 0]
                mismatched = mismatched or bool(bad)
                ax.plot([p[0] for p in bad], [p[1] for p in bad], ls="none", marker="X", ms=11, color=color,
                        mec="black", zorder=4)
    ticks = sorted(sizes)
    for ax, what in ((put_ax, "PUT"), (get_ax, "GET")):
        ax.set_xscale("log")
        ax.set_xticks(ticks, [fmt.binary_size(t) for t in ticks], rotation=45 if len(ticks) > 4 else 0)
        ax.minorticks_off()
        log_scale(ax, "y")
        ax.set_title(f"{what} binary", loc="left")
        ax.set_ylabel("MB/s (log)")
        ax.grid(True, which="major", alpha=0.35)
    get_ax.set_xlabel("binary size (log scale)")
    outside_legend(fig, title="system")
    caption = ("Throughput of binary uploads (PUT, top) and downloads (GET, bottom) against the size of "
               "each binary, one case per size: bytes moved over the time the operations took, one line "
               "per system, log-log.  A line that rises with the size means a per-request cost dominates "
               "small binaries; where it flattens, the bytes themselves do. " + DASH_KEY)
    if mismatched:
        caption += " A cross marks a size where some binary read back differed from what was sent."
    return fig, caption


#: The three timed reads of the deep workload's series: (record key, panel title).
DEEP_SERIES = (("list_top_ms", "list the top container"), ("list_middle_ms", "list a middle container"),
               ("get_leaf_ms", "GET a leaf"))


@chart("deep", "Latency against hierarchy size", workloads=("deep",))
def deep_latency(data: ReportData):
    entries = [e for e in data.ok if get_path(e, "deep.series")]
    if not entries:
        return None
    fig = new_figure(FIG_WIDTH, 8.4)
    axes = fig.subplots(len(DEEP_SERIES), 1, sharex=True)
    spread = []
    for e in entries:
        series = sorted((p for p in e["deep"]["series"] if number(p.get("resources"))),
                        key=lambda p: p["resources"])
        spread += [p["resources"] for p in series]
        for ax, (key, _) in zip(axes, DEEP_SERIES):
            points = [(p["resources"], number(p.get(key))) for p in series]
            points = [p for p in points if p[1] is not None]
            line, = ax.plot([p[0] for p in points], [p[1] for p in points], ms=4, lw=1.6, label=data.label(e),
                            **system_style(data, e))
            if points:
                tip(line, f"{data.label(e)}: from {fmt.millis(points[0][1])} to {fmt.millis(points[-1][1])}, "
                          f"highest {fmt.millis(max(p[1] for p in points))}")
    for ax, (_, title) in zip(axes, DEEP_SERIES):
        log_scale(ax, "y")
        ax.set_title(title, loc="left")
        ax.set_ylabel("ms (log)")
        ax.grid(True, which="major", alpha=0.35)
    if spread and max(spread) > 20 * max(1, min(spread)):  # a log axis only when the sizes span one
        from matplotlib.ticker import FuncFormatter

        axes[-1].set_xscale("log")
        axes[-1].xaxis.set_major_formatter(FuncFormatter(count_label))
    axes[-1].set_xlabel("resources created so far (containers and leaves)")
    outside_legend(fig, title="system")
    shape = entries[0]["deep"]
    caption = (f"Time to list the top container, to list a container half-way down and to GET a leaf, "
               f"measured each time the hierarchy had grown (depth {shape.get('depth', '?')}, fan-out "
               f"{shape.get('fan_out', '?')}), against the resources created so far, one colour per system; "
               "each point is one timed read, so a lone spike is one slow call. "
               "A flat line means the operation does not slow down as the tree fills. " + DASH_KEY)
    return fig, caption


#: Shades of a system's colour for the three percentiles, drawn over each other.
PERCENTILES = (("p99_ms", "p99", 0.3), ("p95_ms", "p95", 0.6), ("p50_ms", "p50", 1.0))


@chart("mixed", "Per-operation percentiles", workloads=("mixed",))
def mixed_percentiles(data: ReportData):
    entries = [e for e in data.ok if e.get("operations")]
    kinds = list(dict.fromkeys(k for e in entries for k, op in e["operations"].items()
                               if number(op.get("p50_ms")) is not None))
    if not kinds:
        return None
    from matplotlib.patches import Patch

    # Horizontal bars, one group per kind: the kinds' names stay readable at a phone's width.
    fig = new_figure(FIG_WIDTH, 1.8 + 0.45 * len(kinds) * max(2, len(entries)))
    ax = fig.add_subplot()
    width = 0.8 / len(entries)
    for j, e in enumerate(entries):
        for i, kind in enumerate(kinds):
            op = e["operations"].get(kind) or {}
            y = len(kinds) - 1 - i + 0.4 - width * (j + 0.5)  # the first kind on top
            for key, label, alpha in PERCENTILES:  # longest first, so the shorter bars stay visible
                value = number(op.get(key))
                if value:
                    bars = ax.barh(y, value, height=width * 0.9, alpha=alpha, zorder=2, lw=0.5,
                                   **bar_style(data, e))
                    tip(bars.patches[0], f"{data.label(e)}, {kind}: {label} {fmt.millis(value)}"
                                         f" over {fmt.count(op.get('count'))} operations")
    ax.set_yticks(range(len(kinds)), kinds[::-1])
    log_scale(ax, "x")
    ax.set_xlabel("time of one operation (ms, log scale)")
    ax.grid(True, axis="x", which="major", alpha=0.35)
    handles = [Patch(label=data.label(e), **bar_style(data, e)) for e in entries]
    handles += [Patch(color="#555", alpha=alpha, label=label) for _, label, alpha in PERCENTILES]
    outside_legend(fig, handles, ncols=2)
    mix = entries[0].get("mixed") or {}
    users = f" {mix['users']} users" if mix.get("users") else " The users"
    duration = f" for {fmt.seconds(number(mix.get('duration_seconds')))}" if mix.get("duration_seconds") else ""
    caption = (f"{users.strip()} sent a mix of operations{duration}; for each operation kind and "
               "system, the bars drawn over each other are the median (darkest), 95th and 99th "
               "percentile (lightest) of the operation's time, log scale. " + HATCH_KEY)
    return fig, caption
