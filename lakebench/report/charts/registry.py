"""The chart registry: :func:`chart` registers a function that draws one chart; :func:`render` saves them.

A chart function gets the :class:`~lakebench.report.data.ReportData` and
returns ``(figure, caption)``, or ``None`` when the results hold nothing it
could plot (no disk sizes, no sweep): the report then leaves it out.  A
chart declares the workloads it applies to (``workloads=("binaries",)``;
``flat`` by default, ``None`` for every workload): a page draws only its
workload's.  Figures are plain :class:`matplotlib.figure.Figure` objects
(:func:`new_figure`) rendered by the Agg/SVG canvases: no pyplot, no
display, no global state.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from lakebench.report.charts.chart_style import FIG_WIDTH, RC, add_titles, tips_of
from lakebench.report.data import ReportData

FORMATS = ("svg", "png")


@dataclass(frozen=True)
class Chart:
    name: str  # file name stem
    title: str  # heading in the report
    draw: Callable[[ReportData], "tuple[object, str] | None"]
    workloads: tuple[str, ...] | None = ("flat",)  # the workloads it is drawn for; None: every one

    def applies(self, workload: str) -> bool:
        return self.workloads is None or workload in self.workloads


#: Every chart the family modules registered, in the order they were imported
#: (:data:`lakebench.report.charts.CHARTS` puts them in the page's order).
REGISTERED: list[Chart] = []


def chart(name: str, title: str, workloads: tuple[str, ...] | None = ("flat",), *,
          into: list[Chart] = REGISTERED):
    """Register the decorated function as a chart of the report, for ``workloads`` (None: all), in ``into``."""
    def register(draw):
        into.append(Chart(name, title, draw, workloads))
        return draw
    return register


def new_figure(width: float = FIG_WIDTH, height: float = 4.0):
    """A figure at most :data:`FIG_WIDTH` wide: wider, its text would shrink below 10 px on a phone."""
    from matplotlib.figure import Figure

    return Figure(figsize=(min(width, FIG_WIDTH), height), layout="constrained")


def style():
    """The settings every chart is drawn in (:data:`~lakebench.report.charts.chart_style.RC`)."""
    import matplotlib

    return matplotlib.rc_context(RC)


def save(fig, path: Path, image_format: str) -> None:
    """Write ``fig``; an SVG gets the hover titles of its marks (:func:`~.chart_style.tip`)."""
    metadata = {"Date": None} if image_format == "svg" else {"Software": None}
    fig.savefig(path, format=image_format, dpi=120, metadata=metadata)
    if image_format == "svg" and tips_of(fig):
        path.write_text(add_titles(path.read_text(encoding="utf-8"), tips_of(fig)), encoding="utf-8")


def render(data: ReportData, out: Path, image_format: str, charts: list[Chart]) -> list[tuple[Chart, Path, str]]:
    """Draw each of ``charts`` that applies to the results' workload and has data into ``out``;
    returns (chart, file, caption) of each drawn.  The files of the others are removed."""
    if image_format not in FORMATS:
        raise ValueError(f"image format must be one of {FORMATS}, got {image_format!r}")
    made = []
    with style():
        for c in charts:
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
