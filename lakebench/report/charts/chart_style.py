"""How every chart of the report looks: sizes, fonts, each system's line style, legends, hover titles.

**One style per system, in every chart.**  :func:`system_style` gives each
system its colour (:meth:`ReportData.color`, by the order the systems first
appear), a marker (by the same order) and a dash that says its durability:

=================  ===========  =====================================================
durability          dash         meaning
=================  ===========  =====================================================
``durable``         solid        fsyncs each commit
``nosync``          dashed       hands each commit to the operating system, no fsync
``volatile``        dotted       keeps nothing after the process exits
anything else       dash-dot     ``server-default`` (a server as it ships), unknown
=================  ===========  =====================================================

Two systems of the same colour never meet (the palette has ten colours) and
a system and its ``-nosync`` twin differ in colour *and* dash, so one line
cannot hide the other; two systems of the same dash have it shifted
(:func:`dash_of`), so where their lines overlap both colours show in turn.  Bars carry the same information as a hatch
(:data:`HATCHES`).  Where a chart needs a second line per system (a 95th
percentile next to a median), the second is thinner and fainter, never
another dash.

**Legible on a phone.**  A chart is drawn :data:`FIG_WIDTH` inches wide with
text of at least :data:`FONT_PT` points.  Shown at 100% of a column ``C``
pixels wide, an SVG ``w`` inches (``w*72`` pt, ``w*96`` CSS px) wide is scaled
by ``C/(w*96)``, and text of ``s`` pt (``s*4/3`` px) becomes
``s*C/(w*72)`` px; a PNG at any dpi scales the same way.  For text of at
least 10 px in the ~340 px column of a 390 px wide phone:
``s >= 10*w*72/340``, that is 12.7 pt for ``w = 6``: hence 6 in and 13 pt
(10.8 px in a 360 px column, 10 px down to a 332 px column; on a desktop
column wider than 576 px the chart is shown at its natural size, 17 px text).
No text of a chart is smaller than that: no ``fontsize="small"``.  Panels are
stacked, not set side by side, so they keep the full width.

**Legends outside the data**: :func:`outside_legend` puts them below the
axes (constrained layout makes room), so they never cover points.

**Values on hover**: :func:`tip` gives an artist an id and a text; once
:func:`~lakebench.report.charts.render` has saved an SVG, :func:`add_titles`
writes each text as a ``<title>`` into the element of that id, which a
browser shows as a tooltip.  (Matplotlib's SVG backend writes the id but no
title.)  PNGs carry no titles.
"""
from __future__ import annotations

import re
from xml.sax.saxutils import escape

#: Width of every chart, in inches, and its smallest text, in points: see the module's docstring.
FIG_WIDTH = 6.0
FONT_PT = 13

#: Matplotlib settings every chart is drawn with (:func:`~lakebench.report.charts.render`).
RC = {
    "svg.hashsalt": "lakebench",  # stable element ids: regenerated files diff cleanly
    "font.size": FONT_PT,
    "axes.titlesize": FONT_PT,
    "axes.labelsize": FONT_PT,
    "xtick.labelsize": FONT_PT,
    "ytick.labelsize": FONT_PT,
    "legend.fontsize": FONT_PT,
    "legend.title_fontsize": FONT_PT,
    "figure.titlesize": FONT_PT,
    "axes.spines.top": False,
    "axes.spines.right": False,
    # Text is drawn as written: names, kinds and labels come from a results file, and "$...$" in
    # one would otherwise be parsed as mathtext (a name with a stray "\\" fails the whole report).
    "text.parse_math": False,
}

#: Dash of a system's lines by its durability; anything else (server-default, unknown): dash-dot.
DASHES = {"durable": "-", "nosync": "--", "volatile": ":"}
OTHER_DASH = "-."
#: Hatch of a system's bars by its durability (the dash of a bar).
HATCHES = {"durable": None, "nosync": "//", "volatile": ".."}
OTHER_HATCH = "x"
#: A marker per system, in the order the systems first appear.
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h")

#: The dash key, for the captions.
DASH_KEY = ("Line styles: one colour and marker per system; solid lines are durable systems (fsync each "
            "commit), dashed nosync (no fsync), dotted volatile (nothing kept), dash-dot server defaults.")
HATCH_KEY = ("Bars: one colour per system; plain bars are durable systems, hatched // nosync, "
             "dotted volatile, crossed server defaults.")


def durability(entry: dict) -> str:
    return entry.get("durability") or "unknown"


#: The on-off pattern of each dash (in line widths), to shift per system.
PATTERNS = {"--": (5.0, 3.0), ":": (1.0, 2.0), "-.": (6.0, 2.0, 1.5, 2.0)}


def dash_of(durability: str | None, index: int = 0):
    """The linestyle of a system of ``durability``, its pattern shifted by the system's ``index``.

    Two systems of the same durability whose lines overlap (lmdb-nosync and
    lmdb-http-nosync, on disk) then show their dashes in turn, both colours
    visible, instead of one hiding the other.

    >>> dash_of("durable"), dash_of("nosync"), dash_of("nosync", 1), dash_of(None)
    ('-', (0.0, (5.0, 3.0)), (3.0, (5.0, 3.0)), (0.0, (6.0, 2.0, 1.5, 2.0)))
    """
    name = DASHES.get(durability, OTHER_DASH)
    if name == "-":
        return name
    pattern = PATTERNS[name]
    return ((index * 3.0) % sum(pattern), pattern)


#: How high a system's lines are stacked, by their dash: solid lowest, then dash-dot, dashed, dotted.
#: Two systems whose lines coincide (lmdb and lmdb-nosync: the same store, close in memory, disk and
#: time per child) would otherwise be stacked in the order they are listed, and a solid line drawn
#: over a dashed one hides it entirely: lmdb-nosync vanished under lmdb.  A dashed or dotted line over
#: a solid one shows both colours in turn, its own in its dashes and the other's in its gaps.
LAYERS = {"-": 0.0, "-.": 0.1, "--": 0.2, ":": 0.3}


def layer(entry: dict, base: float = 2.0) -> float:
    """The ``zorder`` of ``entry``'s lines among marks drawn at ``base``: see :data:`LAYERS`.

    >>> [layer({"durability": d}) for d in ("durable", "server-default", "nosync", "volatile")]
    [2.0, 2.1, 2.2, 2.3]
    """
    return base + LAYERS[DASHES.get(entry.get("durability"), OTHER_DASH)]


def system_index(data, entry: dict) -> int:
    """The place of ``entry``'s system among the systems, in the order they first appear."""
    names = list(dict.fromkeys(s["name"] for s in data.systems))
    return names.index(entry["name"]) if entry["name"] in names else 0


def system_style(data, entry: dict) -> dict:
    """``color``, ``ls``, ``marker`` and ``zorder`` (:func:`layer`) of ``entry``'s system: pass them to
    ``ax.plot(**...)``."""
    index = system_index(data, entry)
    return {"color": data.color(entry), "ls": dash_of(entry.get("durability"), index),
            "marker": MARKERS[index % len(MARKERS)], "zorder": layer(entry)}


def staggered(data, entry: dict, points: int, marks: int = 12):
    """A ``markevery`` for ``entry``'s line of ``points`` points: about ``marks`` markers, each system's
    shifted along the line by its place, so that where two systems' lines coincide their markers do
    not land on the same points, one over the other.

    >>> class Data: systems = [{"name": "a"}, {"name": "b"}, {"name": "c"}]
    >>> [staggered(Data(), {"name": name}, points) for name, points in (("a", 120), ("b", 120), ("a", 5))]
    [(0, 10), (3, 10), (0, 1)]
    """
    step = max(1, points // marks)
    count = max(1, len(dict.fromkeys(s["name"] for s in data.systems)))
    return (system_index(data, entry) * step // count) % step, step


def bar_style(data, entry: dict) -> dict:
    """``facecolor``, ``edgecolor`` and ``hatch`` of ``entry``'s bars: pass them to ``ax.bar(**...)``
    or to a legend's ``Patch``; the hatch is drawn in the edge colour, white."""
    return {"facecolor": data.color(entry), "edgecolor": "white",
            "hatch": HATCHES.get(entry.get("durability"), OTHER_HATCH)}


def system_handle(data, entry: dict, label: str | None = None, lw: float = 2, **kw):
    """A legend key of ``entry``'s system: its colour, dash and marker."""
    from matplotlib.lines import Line2D

    style = {**system_style(data, entry), **kw}
    return Line2D([], [], lw=lw, ms=6, label=label or data.label(entry), **style)


def outside_legend(fig, handles=None, ncols: int | None = None, title: str | None = None):
    """The figure's legend, below its axes: never over the data (needs constrained layout)."""
    if handles is None:
        handles = []
        seen = set()
        for ax in fig.axes:
            for h, label in zip(*ax.get_legend_handles_labels()):
                if label not in seen:
                    seen.add(label)
                    handles.append(h)
    if not handles:
        return None
    # As many columns as fit the figure's width (a legend wider than the figure is cut): a column is
    # the key (3 em), the gaps (~1.5 em) and the longest label (~0.6 em a character).
    longest = max(len(h.get_label()) for h in handles)
    fit = int(FIG_WIDTH * 72 // ((3.0 + 1.5 + 0.6 * longest) * FONT_PT))
    ncols = max(1, min(len(handles), fit, ncols or len(handles)))
    # A chart's height leaves room for a few rows of legend; a sweep's dozens of cases need more, or
    # the layout squeezes the axes to nothing: the figure grows by the rows beyond those few.
    rows = -(-len(handles) // ncols)
    if rows > LEGEND_ROWS_BUDGETED:
        fig.set_figheight(fig.get_figheight() + (rows - LEGEND_ROWS_BUDGETED) * 1.45 * FONT_PT / 72)
    return fig.legend(handles=handles, loc="outside lower center", ncols=ncols, frameon=False, title=title,
                      handlelength=3.0)  # long enough to show a dash on both sides of a marker


#: The rows of legend a chart's own height makes room for (:func:`outside_legend`).
LEGEND_ROWS_BUDGETED = 4


# -- hover titles ----------------------------------------------------------


def tip(artist, text: str):
    """Give ``artist`` the hover title ``text`` in an SVG (see :func:`add_titles`); returns the artist."""
    fig = artist.get_figure() if hasattr(artist, "get_figure") else None
    if fig is None and getattr(artist, "axes", None) is not None:
        fig = artist.axes.figure
    if fig is None:
        return artist
    tips = fig.__dict__.setdefault("lakebench_tips", {})
    gid = f"lbtip{len(tips) + 1}"
    artist.set_gid(gid)
    tips[gid] = text
    return artist


def tips_of(fig) -> dict[str, str]:
    return getattr(fig, "lakebench_tips", {})


def add_titles(svg: str, tips: dict[str, str]) -> str:
    """``svg`` with ``<title>text</title>`` as the first child of each element whose id is in ``tips``.

    >>> add_titles('<g id="lbtip1">\\n <path d="M 0 0"/>', {"lbtip1": "lmdb: 2 < 3 ms"})
    '<g id="lbtip1"><title>lmdb: 2 &lt; 3 ms</title>\\n <path d="M 0 0"/>'
    """
    if not tips:
        return svg

    def insert(match):
        text = tips.get(match.group(2))
        return match.group(0) if text is None else f"{match.group(0)}<title>{escape(text)}</title>"

    return re.sub(r'<(g|path|use)\b[^>]*\bid="([^"]+)"[^>]*?(?<!/)>', insert, svg)
