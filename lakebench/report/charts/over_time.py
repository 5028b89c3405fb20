"""The panels over time: memory, CPU and disk of each system, and a Locust run's load.

Every chart here stacks its panels over ONE time axis (``sharex``), with the
same limits for every system, so that the systems and the panels can be
compared by eye; each system keeps its line style
(:func:`~.chart_style.system_style`) in every panel.  When the longest run
lasts more than ten times the shortest
(:func:`~.common.own_time_axes`), that axis is each run's own time, 0 to
100% of it: on seconds, the short runs would be squeezed into its first
tenth.
"""
from __future__ import annotations

from lakebench import figures
from lakebench.report import fmt
from lakebench.report.charts.chart_style import (DASH_KEY, FIG_WIDTH, outside_legend, system_handle, system_style,
                                                 tip)
from lakebench.report.charts.common import LOADING_PHASES, own_time_axes, series
from lakebench.report.charts.registry import chart, new_figure
from lakebench.report.data import ReportData, number
from lakebench.results import get_path, stats

#: The panels of the resources chart: (sample key, scale, axis label, what a hover title calls it).
#: A hover title gives the highest of the first run's samples, not the figure the tables call "peak
#: RSS" (over every run and sample): so it says "highest sample", one name for one value.
PANELS = (("rss_bytes", 1e-6, "memory (MB)", "highest RSS sample"),
          ("rss_anon_bytes", 1e-6, "private mem. (MB)", "highest private RSS sample"),
          ("cpu_percent", 1.0, "CPU %", "highest CPU sample"),
          ("disk_bytes", 1e-6, "disk (MB)", "highest disk sample"))


def ingest_end(samples: list[dict]) -> float | None:
    """The time of the first sample after the ingest (retrieve, tail, close), or None."""
    loaded = False
    for s in samples:
        if s.get("t") is None:
            continue
        if s.get("phase") == "ingest":
            loaded = True
        elif loaded and s.get("phase") not in LOADING_PHASES:
            return s["t"]
    return None


def _peak(key: str, value: float) -> str:
    return f"{value:.0f}%" if key == "cpu_percent" else fmt.size(value)


def _span(samples: list[dict]) -> float | None:
    """How long a run's samples last: the time of its last sample (the first is taken at its start)."""
    times = [s["t"] for s in samples if number(s.get("t")) is not None]
    return max(times) if times else None


@chart("resources", "Memory, CPU and disk over time", workloads=None)
def resources(data: ReportData):
    entries = [e for e in data.systems if data.sample_runs(e)]
    if not entries:
        return None
    panels = [p for p in PANELS if any(number(s.get(p[0])) for e in entries for run in data.sample_runs(e)
                                       for s in run)]
    if not panels:
        return None
    # One slow system (Fedora's minutes beside LMDB's seconds) on the others' time axis leaves them a
    # sliver at its left edge: each run then gets the whole width, its time as a share of the run.
    spans = {id(run): _span(run) for e in entries for run in data.sample_runs(e)}
    own = own_time_axes(spans.values())
    fig = new_figure(FIG_WIDTH, 1.4 + 2.0 * len(panels))
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    end = 0.0
    for e in entries:
        st = system_style(data, e)
        for i, samples in enumerate(data.sample_runs(e)):
            alpha, lw = (1.0, 1.8) if i == 0 else (0.3, 1.0)
            done = ingest_end(samples)
            span = spans[id(samples)] or 1.0
            for ax, (key, scale, _, what) in zip(axes, panels):
                t, values = series(samples, key, scale)
                if not t:
                    continue
                x = [100 * v / span for v in t] if own else t
                end = max(end, x[-1])
                line, = ax.plot(x, values, color=st["color"], ls=st["ls"], lw=lw, alpha=alpha, zorder=st["zorder"])
                if i == 0:
                    tip(line, f"{data.label(e)}: {what} {_peak(key, max(values) / scale)}"
                              + (f", over a run of {fmt.seconds(span)}" if own else ""))
                if done is not None and i == 0:  # where the ingest ended, on every panel
                    at = min(range(len(t)), key=lambda j: abs(t[j] - done))
                    mark, = ax.plot([x[at]], [values[at]], ls="none", marker=st["marker"], ms=7,
                                    color=st["color"], mec="black", zorder=4)
                    tip(mark, f"{data.label(e)}: ingest ended at {t[at]:.1f} s")
    for ax, (_, _, label, _) in zip(axes, panels):
        ax.set_ylabel(label)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
    if own:
        axes[0].set_xlim(0, 100)
        axes[-1].set_xlabel("time since the process started (% of its run)")
    else:
        axes[0].set_xlim(0, end or 1)  # shared: every panel and every system on the same seconds
        axes[-1].set_xlabel("seconds since the system's process started")
    handles = []
    for e in entries:
        failed = "" if e.get("status") == "ok" else ", failed"
        peak = number(e.get("peak_rss_bytes"))
        figures_ = [fmt.size(peak)] if peak is not None else []
        if own:  # the seconds the axis no longer shows: each run's length
            figures_.append(f"run {fmt.seconds(max(spans[id(run)] or 0.0 for run in data.sample_runs(e)))}")
        handles.append(system_handle(data, e, label=f"{data.label(e)}{failed}"
                                     + (f" ({', '.join(figures_)})" if figures_ else "")))
    outside_legend(fig, handles, title="system (peak RSS" + ("; length of its run" if own else "")
                   + "); marker: end of ingest")
    panel_names = ", ".join(p[2].split(" (")[0] for p in panels)
    if own:
        longest, shortest = max(v for v in spans.values() if v), min(v for v in spans.values() if v)
        axis = (f"each system over its own run, from its start (0%) to its last sample (100%): the longest "
                f"run, {fmt.seconds(longest)}, lasted {longest / shortest:.0f}x the shortest, "
                f"{fmt.seconds(shortest)}, and on one axis of seconds the short ones would be squeezed into "
                "its first tenth (the legend gives each run's length)")
    else:
        axis = "over one time axis for every system"
    caption = (
        f"Panels, {axis}: {panel_names}. Resident memory (RSS) and "
        "private resident memory (RssAnon: file-backed pages of memory-mapped stores excluded), CPU % "
        "(100% = one core) and bytes on disk of each system's process tree, sampled every "
        f"{get_path(data.document, 'settings.sample_interval_seconds') or '?'} s. The marker on each line "
        "is where the system's ingest ended: the retrieval of the parent, the idle tail and the close follow. "
        f"{DASH_KEY}"
    )
    if any(len(data.sample_runs(e)) > 1 for e in entries):
        caption += " The first run is drawn solid, the others faint."
    return fig, caption


@chart("load", "Requests per second and response times over time", workloads=None)
def load(data: ReportData):
    """A ``--driver locust`` run's ingest as Locust reports a load test: requests/s and response times, in
    buckets that fit the ingest's length (``bucket_seconds``), and the throughput every table shows."""
    entries = [e for e in data.systems if get_path(e, "load.over_time")]
    if not entries:
        return None
    from matplotlib.lines import Line2D

    fig = new_figure(FIG_WIDTH, 7.0)
    rate_ax, time_ax = fig.subplots(2, 1, sharex=True)
    end = 0.0
    buckets: dict[str, float] = {}
    spans: dict[str, float] = {}  # each ingest's length: the end of its last bucket
    series_of = []
    for e in entries:
        points = sorted((p for p in e["load"]["over_time"] if number(p.get("t")) is not None),
                        key=lambda p: p["t"])
        if points:
            width = [number(p.get("bucket_seconds")) or 1.0 for p in points]
            spans[data.label(e)] = points[-1]["t"] + width[-1]
            series_of.append((e, points, width))
    # As the resources chart: a slow ingest would squeeze the fast ones into the axis's first tenth.
    own = own_time_axes(spans.values())
    for e, points, width in series_of:
        st = system_style(data, e)
        span = spans[data.label(e)]
        # Each point counts the requests completed in the bucket that starts at t: drawn at its middle,
        # as a rate (results older than the buckets counted by the second).
        t = [p["t"] + w / 2 for p, w in zip(points, width)]
        if own:
            t = [100 * v / span for v in t]
        end = max(end, 100.0 if own else span)
        buckets[data.label(e)] = width[0]
        requests = [(number(p.get("requests")) or 0) / w for p, w in zip(points, width)]
        failures = [(number(p.get("failures")) or 0) / w for p, w in zip(points, width)]
        line, = rate_ax.plot(t, requests, color=st["color"], ls=st["ls"], marker=st["marker"], ms=4, lw=2,
                             zorder=st["zorder"])
        load_ = e["load"]
        throughput = number(load_.get("throughput_per_s"))
        tip(line, f"{data.label(e)}: {fmt.count(load_.get('requests'))} requests, "
                  f"{figures.THROUGHPUT.name} {figures.rate(throughput)}, {load_.get('users', '?')} users, "
                  f"buckets of {fmt.seconds(width[0])}" + (f", over {fmt.seconds(span)}" if own else ""))
        if throughput is not None:  # the figure of every table, over the buckets it sums up
            level, = rate_ax.plot([0, 100.0 if own else span], [throughput, throughput], color=st["color"],
                                  ls=":", lw=1.2, zorder=1)
            tip(level, f"{data.label(e)}: {figures.THROUGHPUT.name} {figures.rate(throughput)}")
        # Failures always drawn, as Locust does: a row of crosses on zero says "none".
        line, = rate_ax.plot(t, failures, color=st["color"], ls=st["ls"], lw=1, alpha=0.7, marker="x", ms=7,
                             zorder=st["zorder"])
        kinds = ", ".join(f"{k} {v}" for k, v in (load_.get("failure_kinds") or {}).items())
        tip(line, f"{data.label(e)}: {fmt.count(load_.get('failures') or 0)} failures"
                  + (f": {kinds}" if kinds else ""))
        for key, lw, alpha, what in (("p50_ms", 2, 1.0, "median"), ("p95_ms", 1, 0.6, "95th percentile")):
            pts = [(x, number(p.get(key)), p["t"]) for x, p in zip(t, points) if number(p.get(key)) is not None]
            line, = time_ax.plot([p[0] for p in pts], [p[1] for p in pts], color=st["color"], ls=st["ls"],
                                 lw=lw, alpha=alpha, marker=st["marker"], ms=4 if lw > 1 else 0, zorder=st["zorder"])
            if pts:
                tip(line, f"{data.label(e)}: {what} " + ", ".join(
                    f"{fmt.millis(v)} at {start:g} s" for _, v, start in pts[:12]))
    rate_ax.set_ylabel("requests per second")
    time_ax.set_ylabel("response (ms)")
    for ax in (rate_ax, time_ax):
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
    rate_ax.set_xlim(0, end or 1)
    time_ax.set_xlabel("time since the load started (% of the ingest)" if own
                       else "seconds since the load started")
    handles = [system_handle(data, e, label=f"{data.label(e)} ({fmt.seconds(spans[data.label(e)])})"
                             if own and data.label(e) in spans else None) for e in entries]
    keys = [Line2D([], [], color="#444", lw=2, label="requests per second; median"),
            Line2D([], [], color="#444", lw=1, alpha=0.6, label="95th percentile"),
            Line2D([], [], color="#444", lw=1.2, ls=":", label=figures.THROUGHPUT.name)]
    keys.append(Line2D([], [], color="#444", lw=1, marker="x", ms=7, label="failures per second"))
    outside_legend(fig, handles + keys, ncols=2)
    users = sorted({str(get_path(e, "load.users")) for e in entries if get_path(e, "load.users")})
    widths = set(buckets.values())
    bucket = (f"buckets of {fmt.seconds(widths.pop())}" if len(widths) == 1 else "buckets of "
              + ", ".join(f"{fmt.seconds(w)} ({fmt.escape(label)})" for label, w in buckets.items()))
    caption = (
        f"The ingest as a load test ({', '.join(users) or '?'} Locust users), counted in {bucket} (the "
        f"second Locust counts in, or less, so that every ingest has at least {stats.LEAST_BUCKETS} of them): "
        "top, the requests completed in each bucket, and the failed ones (crosses), as requests per second, "
        f"with each system's **{figures.THROUGHPUT.name}** dotted: {figures.THROUGHPUT.means}; bottom, the "
        "median (thick line) and 95th percentile (thin faint line) of the response times of the requests "
        f"completed in that bucket, as Locust's own report draws them. {DASH_KEY}"
    )
    if own:
        longest, shortest = max(spans.values()), min(spans.values())
        caption += (f" Each ingest is drawn over its own length, 0 to 100%: the longest, {fmt.seconds(longest)}, "
                    f"lasted {longest / shortest:.0f}x the shortest, {fmt.seconds(shortest)} (the legend gives "
                    "each one's), and on one axis of seconds the short ones would be squeezed into its first tenth.")
    return fig, caption
