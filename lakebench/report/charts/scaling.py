"""A users sweep's charts (``--driver locust --users 1,2,4,...``): throughput against latency, and
throughput against users; drawn only when the run has a users sweep.

Each sweep (a system, and what else names its cases: :func:`lakebench.results.scaling.users_sweeps`) is
one line in its system's colour, marker and dash; each point is one user count, labelled with it.  The
knee (:data:`lakebench.figures.KNEE`) is ringed, and a case whose load generator was saturated
(:data:`lakebench.figures.GENERATOR_CPU`) is crossed: the line there is the generator's.
"""
from __future__ import annotations

from lakebench import figures
from lakebench.report import fmt
from lakebench.report.charts.chart_style import DASH_KEY, FIG_WIDTH, outside_legend, system_handle, system_style, tip
from lakebench.report.charts.common import log_scale
from lakebench.report.charts.registry import chart, new_figure
from lakebench.report.data import ReportData, number
from lakebench.results import get_path
from lakebench.results.scaling import UsersSweep, label, users, users_sweeps, users_text

#: The workloads whose Locust cases carry a ``load`` record.
WORKLOADS = ("flat", "mixed")
#: A log axis where the values span more than this factor; below it a linear one reads better.
LOG_SPAN = 10.0


def _p95(entry: dict) -> float | None:
    return number(get_path(entry, "load.latency_ms.p95"))


def _marks(ax, data: ReportData, sweep: UsersSweep, xs: list[float], ys: list[float]) -> None:
    """The knee ringed, each saturated case crossed, and every point labelled with its users."""
    st = system_style(data, sweep.entries[0])
    for e, x, y in zip(sweep.entries, xs, ys):
        ax.annotate(f"{users(e)}", (x, y), textcoords="offset points", xytext=(5, 5), fontsize=10,
                    color=st["color"])
        if users(e) == sweep.knee:
            ring, = ax.plot([x], [y], ls="none", marker="o", ms=16, mfc="none", mec=st["color"], mew=1.5, zorder=5)
            tip(ring, f"{label(sweep)}: {figures.KNEE.name} at {users_text(users(e))}")
        if get_path(e, "load.generator_saturated"):
            cross, = ax.plot([x], [y], ls="none", marker="x", ms=12, color="black", mew=2, zorder=6)
            tip(cross, f"{label(sweep)}, {users_text(users(e))}: the load generator was saturated "
                       f"({get_path(e, 'load.generator_cpu_share'):.0%} of a core)")


def _scale(ax, which: str, values: list[float]) -> bool:
    """A log scale when ``values`` span more than :data:`LOG_SPAN`; whether it is one."""
    positive = [v for v in values if v and v > 0]
    if positive and max(positive) / min(positive) > LOG_SPAN:
        log_scale(ax, which)
        return True
    return False


def _caption_marks(sweeps: list[UsersSweep]) -> str:
    saturated = any(get_path(e, "load.generator_saturated") for s in sweeps for e in s.entries)
    text = f"A ring marks each line's **{figures.KNEE.name}**: {figures.KNEE.means}."
    if saturated:
        text += (f" A black cross marks a case whose load generator was saturated (**{figures.GENERATOR_CPU.name}** "
                 f"{figures.GENERATOR_SATURATION:.0%} of a core or more): the line there is the generator's "
                 "ceiling, not the system's; more Locust processes (``locust --processes N``, or a master and "
                 "workers on other hosts: the Locust page of the documentation) would show the system's.")
    return text


@chart("throughput_latency", "Throughput against latency, by users", workloads=WORKLOADS)
def throughput_latency(data: ReportData):
    sweeps = users_sweeps(data.systems)
    if not sweeps:
        return None
    fig = new_figure(FIG_WIDTH, 5.2)
    ax = fig.add_subplot()
    handles, all_x, all_y = [], [], []
    for sweep in sweeps:
        entries = [e for e in sweep.entries if _p95(e) is not None]
        if not entries:
            continue
        st = system_style(data, sweep.entries[0])
        xs = [e["load"]["throughput_per_s"] for e in entries]
        ys = [_p95(e) for e in entries]
        line, = ax.plot(xs, ys, lw=2, ms=7, **st)
        tip(line, f"{label(sweep)}: " + ", ".join(
            f"{users_text(users(e))} {figures.rate(x)} at {fmt.millis(y)}" for e, x, y in zip(entries, xs, ys)))
        _marks(ax, data, UsersSweep(sweep.name, sweep.case, entries), xs, ys)
        handles.append(system_handle(data, sweep.entries[0], label=label(sweep)))
        all_x += xs
        all_y += ys
    if not handles:
        return None
    ax.margins(0.1)  # room for the labels of the outermost points
    log_y = _scale(ax, "y", all_y)
    log_x = _scale(ax, "x", all_x)
    if not log_x:
        ax.set_xlim(left=0)
    if not log_y:
        ax.set_ylim(bottom=0)
    ax.set_xlabel(f"{figures.THROUGHPUT.name} (operations per second{', log' if log_x else ''})")
    ax.set_ylabel(f"{figures.LATENCY_P95.name} (ms{', log' if log_y else ''})")
    ax.grid(True, which="major", alpha=0.3)
    outside_legend(fig, handles, ncols=1)
    caption = (
        f"Each line is one system's users sweep; each point one case, labelled with its Locust users: across, "
        f"its **{figures.THROUGHPUT.name}** ({figures.THROUGHPUT.means}); up, its **{figures.LATENCY_P95.name}** "
        f"({figures.LATENCY_P95.means}). A system that scales moves right at little cost in latency; once it "
        "stops scaling, more users only move it up. " + _caption_marks(sweeps) + f" {DASH_KEY}")
    return fig, caption


@chart("throughput_users", "Throughput against users", workloads=WORKLOADS)
def throughput_users(data: ReportData):
    sweeps = users_sweeps(data.systems)
    if not sweeps:
        return None
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    fig = new_figure(FIG_WIDTH, 5.0)
    ax = fig.add_subplot()
    handles, counts = [], set()
    for sweep in sweeps:
        st = system_style(data, sweep.entries[0])
        xs = [users(e) for e in sweep.entries]
        ys = [e["load"]["throughput_per_s"] for e in sweep.entries]
        line, = ax.plot(xs, ys, lw=2, ms=7, **st)
        tip(line, f"{label(sweep)}: " + ", ".join(f"{users_text(x)} {figures.rate(y)}" for x, y in zip(xs, ys)))
        _marks(ax, data, sweep, xs, ys)
        best = sweep.best
        handles.append(system_handle(data, sweep.entries[0], label=(
            f"{label(sweep)}: highest {figures.rate(best['load']['throughput_per_s'])} at {users_text(users(best))}")))
        counts.update(xs)
    ax.margins(0.1)  # room for the labels of the outermost points
    ax.set_xscale("log", base=2)  # users double from point to point: even steps
    ax.xaxis.set_major_locator(FixedLocator(sorted(counts)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_ylim(bottom=0)
    ax.set_xlabel("Locust users (log 2)")
    ax.set_ylabel(f"{figures.THROUGHPUT.name} (operations per second)")
    ax.grid(True, which="major", alpha=0.3)
    outside_legend(fig, handles, ncols=1)
    caption = (
        f"Each system's **{figures.THROUGHPUT.name}** at each Locust user count of the sweep "
        f"({figures.THROUGHPUT.means}). While the line climbs, the system serves the added users; where it "
        "flattens, it has reached what it can do in this shape of load. " + _caption_marks(sweeps)
        + f" {DASH_KEY}")
    return fig, caption
