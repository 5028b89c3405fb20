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

import html
import re
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


def save(fig, path: Path, image_format: str, label: str | None = None) -> None:
    """Write ``fig``; an SVG gets the hover titles of its marks (:func:`~.chart_style.tip`) and is made
    ready to be inlined in a page (:func:`embeddable`), its ids prefixed with the file's stem and
    ``label`` (the chart's title) what a screen reader says of it."""
    metadata = {"Date": None} if image_format == "svg" else {"Software": None}
    fig.savefig(path, format=image_format, dpi=120, metadata=metadata)
    if image_format == "svg":
        svg = add_titles(path.read_text(encoding="utf-8"), tips_of(fig))
        path.write_text(embeddable(svg, path.stem, label), encoding="utf-8")


#: What an SVG written by matplotlib holds that a page it is inlined in must not: the XML prolog and
#: DOCTYPE (markup errors inside HTML), comments (matplotlib writes each text of the chart in one, and a
#: results file's text has no business in the page's markup, escaped or not) and the metadata block.
_NOT_INLINED = re.compile(r"<\?xml[^>]*\?>\s*|<!DOCTYPE[^>]*>\s*|<!--.*?-->\s*|<metadata>.*?</metadata>\s*",
                          re.DOTALL)


def embeddable(svg: str, prefix: str, label: str | None = None) -> str:
    """``svg`` as the report inlines it in an HTML page (so that its hover titles show, which they
    never do through ``<img>``): no prolog, DOCTYPE, comments nor metadata, every id and every
    reference to one (``href="#id"``, ``url(#id)``) prefixed with ``prefix-``, so that two charts of
    one page never share an id (matplotlib numbers ``axes_1``, ``lbtip1``... from 1 in each); the root
    ``<svg>`` gets the id ``prefix-svg`` (and, with a ``label``, ``role="img"`` and that label, escaped),
    and matplotlib's style sheet, which says ``*{...}`` and would apply to the whole page, is kept to
    that element.  Still a valid SVG file on its own.

    >>> print(embeddable('<?xml version="1.0"?>\\n<!DOCTYPE svg>\\n<svg width="1pt"><!-- a<b -->'
    ...                  '<style type="text/css">*{stroke-linecap: butt}</style><clipPath id="p1"/>'
    ...                  '<g id="lbtip1" clip-path="url(#p1)"><use xlink:href="#p1"/></g></svg>', "c"))
    <svg id="c-svg" width="1pt"><style type="text/css">#c-svg *{stroke-linecap: butt}</style><clipPath id="c-p1"/><g id="c-lbtip1" clip-path="url(#c-p1)"><use xlink:href="#c-p1"/></g></svg>
    """
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", prefix):  # it lands in attributes and a selector
        raise ValueError(f"not a usable id prefix: {prefix!r}")
    svg = _NOT_INLINED.sub("", svg).strip()
    ids = set(re.findall(r'\bid="([^"]+)"', svg))

    def prefixed(match: re.Match) -> str:
        before, name, after = match.groups()
        return f"{before}{prefix}-{name}{after}" if name in ids else match.group(0)

    svg = re.sub(r'(\bid=")([^"]+)(")', prefixed, svg)
    svg = re.sub(r'(\bhref="#)([^"]+)(")', prefixed, svg)
    svg = re.sub(r"(\burl\(#)([^)]+)(\))", prefixed, svg)
    root = f"{prefix}-svg"
    named = f' role="img" aria-label="{html.escape(label)}"' if label else ""
    svg = re.sub(r"<svg\b", f'<svg id="{root}"{named}', svg, count=1)
    return re.sub(r"(<style[^>]*>)\s*\*\s*\{", rf"\1#{root} *{{", svg)


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
            save(fig, path, image_format, c.title)
            made.append((c, path, caption))
    return made
