"""The charts of the workloads other than the seed's ``flat`` (see :mod:`~lakebench.report.charts`).

Each reads the workload's own record fields (docs/results.rst): ``binaries``
(one case per binary size), ``deep`` (its ``series`` of list and get times as
the hierarchy grows), and the ``operations`` percentiles for ``mixed``.
"""
from __future__ import annotations

from lakebench.report import fmt
from lakebench.report.charts import _log_scale, chart, new_figure
from lakebench.report.data import ReportData, number
from lakebench.results import get_path


def _size_label(value: float) -> str:
    """A binary size as an axis labels it, in binary units.

    >>> [_size_label(v) for v in (512, 1024, 65536, 3 * 2**20, 2**30)]
    ['512 B', '1 KiB', '64 KiB', '3 MiB', '1 GiB']
    """
    for scale, unit in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if value >= scale:
            return f"{value / scale:g} {unit}"
    return f"{value:g} B"


def _by_system(data: ReportData, entries: list[dict]) -> dict[str, list[dict]]:
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
    fig = new_figure(8, 3.9)
    put_ax, get_ax = fig.subplots(1, 2, sharey=True)
    sizes: set[float] = set()
    mismatched = False
    for name, cases in _by_system(data, entries).items():
        cases.sort(key=lambda e: e["binaries"]["size_bytes"])
        color = data.color(cases[0])
        for ax, key in ((put_ax, "put_mb_per_s"), (get_ax, "get_mb_per_s")):
            points = [(e["binaries"]["size_bytes"], number(e["binaries"].get(key)), e) for e in cases]
            points = [p for p in points if p[1]]
            sizes.update(p[0] for p in points)
            ax.plot([p[0] for p in points], [p[1] for p in points], color=color, marker="o", ms=4, lw=1.8,
                    label=name)
            if key == "get_mb_per_s":  # a binary that came back different is marked where it happened
                bad = [p for p in points if (number(p[2]["binaries"].get("mismatched")) or 0) > 0]
                mismatched = mismatched or bool(bad)
                ax.plot([p[0] for p in bad], [p[1] for p in bad], ls="none", marker="X", ms=11, color=color,
                        mec="black", zorder=4)
    ticks = sorted(sizes)
    for ax, what in ((put_ax, "PUT"), (get_ax, "GET")):
        ax.set_xscale("log")
        ax.set_xticks(ticks, [_size_label(t) for t in ticks], rotation=45 if len(ticks) > 5 else 0)
        ax.minorticks_off()
        _log_scale(ax, "y")
        ax.set_title(f"{what} binary", loc="left")
        ax.set_xlabel("binary size (log scale)")
        ax.grid(True, which="major", alpha=0.35)
    put_ax.set_ylabel("MB/s (log scale)")
    put_ax.legend(fontsize="small", title="system", title_fontsize="small")
    caption = ("Throughput of binary uploads (PUT, left) and downloads (GET, right) against the size of "
               "each binary, one case per size: bytes moved over the time the operations took, one line "
               "per system, log-log.  A line that rises with the size means a per-request cost dominates "
               "small binaries; where it flattens, the bytes themselves do.")
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
    fig = new_figure(8, 7.8)
    axes = fig.subplots(len(DEEP_SERIES), 1, sharex=True)
    spread = []
    for e in entries:
        series = sorted((p for p in e["deep"]["series"] if number(p.get("resources"))),
                        key=lambda p: p["resources"])
        spread += [p["resources"] for p in series]
        for ax, (key, _) in zip(axes, DEEP_SERIES):
            points = [(p["resources"], number(p.get(key))) for p in series]
            points = [p for p in points if p[1] is not None]
            ax.plot([p[0] for p in points], [p[1] for p in points], color=data.color(e), marker="o", ms=3.5,
                    lw=1.6, label=data.label(e))
    for ax, (_, title) in zip(axes, DEEP_SERIES):
        _log_scale(ax, "y")
        ax.set_title(title, loc="left")
        ax.set_ylabel("ms (log scale)")
        ax.grid(True, which="major", alpha=0.35)
    if spread and max(spread) > 20 * max(1, min(spread)):  # a log axis only when the sizes span one
        from matplotlib.ticker import FuncFormatter

        from lakebench.report.charts import _count_label

        axes[-1].set_xscale("log")
        axes[-1].xaxis.set_major_formatter(FuncFormatter(_count_label))
    axes[-1].set_xlabel("resources created so far (containers and leaves)")
    axes[0].legend(fontsize="small", title="system", title_fontsize="small")
    shape = entries[0]["deep"]
    caption = (f"Time to list the top container, to list a container half-way down and to GET a leaf, "
               f"measured each time the hierarchy had grown (depth {shape.get('depth', '?')}, fan-out "
               f"{shape.get('fan_out', '?')}), against the resources created so far, one colour per system; "
               "each point is one timed read, so a lone spike is one slow call. "
               "A flat line means the operation does not slow down as the tree fills.")
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

    fig = new_figure(max(6.0, 1.5 + 1.1 * len(kinds) * max(1, len(entries)) ** 0.5), 4.4)
    ax = fig.add_subplot()
    width = 0.8 / len(entries)
    for j, e in enumerate(entries):
        for i, kind in enumerate(kinds):
            op = e["operations"].get(kind) or {}
            x = i - 0.4 + width * (j + 0.5)
            for key, _, alpha in PERCENTILES:  # tallest first, so the shorter bars stay visible
                value = number(op.get(key))
                if value:
                    ax.bar(x, value, width=width * 0.9, color=data.color(e), alpha=alpha, zorder=2,
                           edgecolor="white", lw=0.5)
    ax.set_xticks(range(len(kinds)), kinds)
    _log_scale(ax, "y")
    ax.set_ylabel("time per operation (ms, log scale)")
    ax.grid(True, axis="y", which="major", alpha=0.35)
    handles = [Patch(color=data.color(e), label=data.label(e)) for e in entries]
    handles += [Patch(color="#555", alpha=alpha, label=label) for _, label, alpha in PERCENTILES]
    ax.legend(handles=handles, fontsize="small", ncols=2, loc="upper left")
    mix = entries[0].get("mixed") or {}
    users = f" {mix['users']} users" if mix.get("users") else " The users"
    duration = f" for {fmt.seconds(number(mix.get('duration_seconds')))}" if mix.get("duration_seconds") else ""
    caption = (f"{users.strip()} sent a mix of operations{duration}; for each operation kind and "
               "system, the bars drawn over each other are the median (darkest), 95th and 99th "
               "percentile (lightest) of the operation's time, log scale.")
    return fig, caption
