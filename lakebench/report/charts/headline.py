"""The summary's headline chart: each system's time per child (or per primary operation), durability marked.

The page places it on the first screen (:mod:`~lakebench.report.summary`), not among the other charts, and
it ranks as the summary's table does: case by case, by the mean (``per_resource_ms.mean``), whose value
it writes; the median and the percentiles around it show the spread.
"""
from __future__ import annotations

from lakebench import figures
from lakebench.report import fmt
from lakebench.report.charts.chart_style import DASH_KEY, FIG_WIDTH, system_style, tip
from lakebench.report.charts.common import log_scale
from lakebench.report.charts.registry import chart, new_figure
from lakebench.report.data import ReportData, number
from lakebench.results import get_path, stats


def spread(data: ReportData, entry: dict) -> dict | None:
    """The primary operation's time of ``entry`` in ms: ``p50`` and ``p95`` at least, ``p5``, ``p25``,
    ``p75`` and ``p99`` when known; ``n`` operations.  From the per-operation latencies when the results
    hold them, else from the entry's ``operations`` (primary kind) or ``per_resource_ms``."""
    pooled = stats.pooled_percentiles_ms(data.latency_runs(entry), (5, 25, 50, 75, 95, 99))
    if pooled:
        return pooled
    primary = get_path(entry, "workload.primary")
    op = (entry.get("operations") or {}).get(primary) if primary else None
    if op and number(op.get("p50_ms")) is not None:
        out = {"p50": op["p50_ms"], "p95": number(op.get("p95_ms")), "p99": number(op.get("p99_ms")),
               "n": op.get("count")}
    else:
        per = entry.get("per_resource_ms") or {}
        if number(per.get("p50")) is None:
            return None
        out = {"p50": per["p50"], "p95": number(per.get("p95")), "n": None}
    return {k: v for k, v in out.items() if v is not None or k == "n"}


@chart("headline", "Time per child (or per operation), by system", workloads=None)
def headline(data: ReportData):
    """One row per system and case that succeeded, ranked as the summary (:attr:`ReportData.ranked`: case by
    case, fastest mean first): that mean, and the spread of its primary operation's time."""
    rows = [(e, s) for e in data.ok if (s := spread(data, e))]
    if not rows:
        return None
    for e, s in rows:  # the summary's figure; the median stands in for it where none was recorded
        mean = number(get_path(e, "per_resource_ms.mean"))
        s["mean"] = s["p50"] if mean is None else mean
    primary = get_path(rows[0][0], "workload.primary") or "create"
    name = figures.time_per(primary)
    swept = any(data.label(e) != e["name"] for e, _ in rows)  # a case's parameters: a line of their own
    fig = new_figure(FIG_WIDTH, 1.5 + (0.95 if swept else 0.72) * len(rows))
    ax = fig.add_subplot()
    ys = list(range(len(rows)))[::-1]  # fastest on top
    top = 0.0
    for y, (e, s) in zip(ys, rows):
        st = system_style(data, e)
        low, high = s.get("p5", s["p50"]), s.get("p95", s["p50"])
        whisker, = ax.plot([low, high], [y, y], color=st["color"], ls=st["ls"], lw=2.6, zorder=2)
        if "p99" in s and s["p99"] > high:
            ax.plot([high, s["p99"]], [y, y], color=st["color"], ls=st["ls"], lw=1, alpha=0.5, zorder=2)
        if "p25" in s:
            box = ax.barh(y, s["p75"] - s["p25"], left=s["p25"], height=0.34, color=st["color"], alpha=0.25,
                          edgecolor=st["color"], lw=1.2, zorder=1)
            tip(box.patches[0], f"{data.label(e)}: middle half {fmt.millis(s['p25'])} to {fmt.millis(s['p75'])}")
        tick, = ax.plot([s["p50"]], [y], ls="none", marker="|", ms=16, mew=2, color="black", zorder=3)
        tip(tick, f"{data.label(e)}: median {fmt.millis(s['p50'])}")
        point, = ax.plot([s["mean"]], [y], ls="none", marker=st["marker"], ms=9, color=st["color"], mec="black",
                         zorder=4)
        described = ", ".join(f"{k} {fmt.millis(s[k])}" for k in ("p5", "p50", "p95", "p99") if k in s)
        count = f" over {fmt.count(s['n'])} operations" if s.get("n") else ""
        tip(whisker, f"{data.label(e)} ({e.get('durability') or 'durability unknown'}): {described}{count}")
        tip(point, f"{data.label(e)}: {name} {fmt.millis(s['mean'])}")
        far = max(v for k, v in s.items() if k != "n" and v is not None)
        top = max(top, far)
        ax.annotate(fmt.millis(s["mean"]), (far, y), xytext=(6, 0), textcoords="offset points", ha="left",
                    va="center", fontweight="bold")
    ax.set_yticks(ys, [f"{data.label(e).replace(' (', chr(10) + '(', 1)}\n{e.get('durability') or '?'}"
                       for e, _ in rows])
    ax.set_xscale("log")
    left = min(min(v for k, v in s.items() if k != "n" and v) for _, s in rows)
    ax.set_xlim(left / 1.6, top * 4.5)  # room for the values written at the right
    log_scale(ax, "x")  # after the limits: they choose the labels
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.set_xlabel(f"{name}, ms (log)")
    ax.grid(True, axis="x", which="major", alpha=0.35)
    from_latencies = any("p5" in s for _, s in rows)
    cases = " case by case," if len({data.label(e).replace(e["name"], "", 1) for e, _ in rows}) > 1 else ""
    caption = (
        f"The time of each system's {fmt.escape(primary)} operations, ranked as the summary:{cases} fastest "
        f"**{fmt.escape(name)}** on top, log scale. The marker and the number are that mean; the black "
        "tick is the median, "
        + ("the box the middle half (25th to 75th percentile), the line the 5th to 95th percentile"
           if from_latencies else "the line runs to the 95th percentile")
        + " and its faint end to the 99th. Under each name, its durability. " + DASH_KEY
    )
    return fig, caption
