"""The report's charts: one function each, in a module per chart family, listed in :data:`CHARTS`.

Adding a chart is one function and one line in a family module::

    @chart("cpu_time", "CPU time")
    def cpu_time(data: ReportData):
        fig = new_figure(FIG_WIDTH, 4)
        ...
        return fig, "What the chart shows, for its caption."

:mod:`~.registry` holds :func:`~.registry.chart` and :func:`~.registry.new_figure`,
:mod:`~.chart_style` how every chart looks (one colour, marker and dash per
system, legends outside the data, hover titles), :mod:`~.common` the helpers
the families share.  The families: :mod:`~.ingest` (the flat workload's, and
the parent's retrieval), :mod:`~.over_time` (memory, CPU, disk; a Locust
run's load), :mod:`~.scaling` (a users sweep's), :mod:`~.workloads` (the
other workloads') and :mod:`~.headline` (the summary's).  No family imports another.
"""
from __future__ import annotations

from pathlib import Path

from lakebench.report.charts import headline, ingest, over_time, registry, scaling, workloads  # noqa: F401  (register)
from lakebench.report.charts.common import phase_spans  # noqa: F401
from lakebench.report.charts.registry import FORMATS, Chart, new_figure, save, style  # noqa: F401
from lakebench.report.data import ReportData
from lakebench.results.stats import log_moving_stats, moving_stats  # noqa: F401  (the ingest charts' windows)

#: The families' charts by name, in the order a page shows them: the other workloads' first, the
#: summary's headline last.  A chart not named here comes after them, in the order it was registered.
ORDER = ("binaries", "deep", "mixed", "throughput_latency", "throughput_users", "latency", "resources", "load",
         "disk", "parent", "sweep", "cliff", "headline")

#: Every chart, in the order the report shows them.
CHARTS: list[Chart] = sorted(registry.REGISTERED,
                             key=lambda c: ORDER.index(c.name) if c.name in ORDER else len(ORDER))


def chart(name: str, title: str, workloads: tuple[str, ...] | None = ("flat",)):
    """Add the decorated function to :data:`CHARTS`, after the families' charts."""
    return registry.chart(name, title, workloads, into=CHARTS)


def render(data: ReportData, out: Path, image_format: str = "svg", charts=None) -> list[tuple[Chart, Path, str]]:
    """Draw every chart of :data:`CHARTS` (or ``charts``) that applies and has data into ``out``;
    returns (chart, file, caption) of each drawn."""
    return registry.render(data, out, image_format, CHARTS if charts is None else charts)
