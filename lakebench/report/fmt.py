"""Numbers as the report writes them, and the bits of reStructuredText it needs.

A value and its standard deviation share one unit:

>>> seconds(0.018438, 0.001361)
'18.4 ± 1.4 ms'
>>> seconds(492.5)
'8 min 12.5 s'
>>> size(475881472)
'475.9 MB'
>>> size(864301056, 23170)
'864.3 ± <0.1 MB'
>>> ratio(1.4217, 0.0078)
'1.42x ± 0.01'
>>> literal("/tmp/results")
'``/tmp/results``'
>>> print(literal("error: `x`"))
:literal:`error: \\`x\\``
"""
from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from lakebench import figures

# Numbers are written by lakebench.figures, as on the terminal: one function per figure.
DASH = figures.DASH
seconds = figures.duration
millis = figures.millis
size = figures.size
ratio = figures.ratio
percent = figures.relative  # a figure relative to the reference: a multiple past 2x
count = figures.count
NBSP = "\u00a0"


def binary_size(value: float) -> str:
    """A binary's size in binary units, as the binaries workload sets it (64 KiB, not 65.5 kB).

    >>> [binary_size(v) for v in (512, 1024, 65536, 3 * 2**20, 2**30)]
    ['512 B', '1 KiB', '64 KiB', '3 MiB', '1 GiB']
    """
    for scale, unit in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB")):
        if value >= scale:
            return f"{value / scale:g} {unit}"
    return f"{value:g} B"


# -- reStructuredText ------------------------------------------------------

def heading(text: str, char: str, overline: bool = False) -> str:
    """A section title, its text escaped: a title may hold a workload's name from a results file.

    The underline is as wide as docutils measures the escaped title (a wide
    character counts twice): a shorter one is a warning, which fails ``sphinx-build -W``.

    >>> print(heading("a*b: 漢字", "-"), end="")
    a\\*b: 漢字
    ----------
    """
    text = escape(text)
    line = char * max(_columns(text), 3)
    return (f"{line}\n" if overline else "") + f"{text}\n{line}\n"


def _columns(text: str) -> int:
    """The width docutils gives ``text`` when it checks a title's underline (at least that).

    East Asian wide and full-width characters take two columns; docutils also
    subtracts combining characters, which only makes the underline longer than needed.
    """
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def one_line(text) -> str:
    """``text`` on one line: every run of whitespace (newlines too) one space, other control
    characters replaced; what is interpolated into a line of reStructuredText can then never
    begin a line of its own (a directive, a list, a title).

    Non-breaking spaces stay (:func:`nobreak` puts them in on purpose).

    >>> one_line("a\\n.. raw:: html\\r\\n\\t<b>\\x1b[0m\\u2028x ")
    'a .. raw:: html <b>\ufffd[0m x'
    """
    text = re.sub(r"[^\S\u00a0]+", " ", str(text)).strip()
    return "".join("\ufffd" if unicodedata.category(c) == "Cc" else c for c in text)


def literal(text: str) -> str:
    """Any text as an inline literal (errors, paths, commands), on one line.

    Text with backquotes or backslashes becomes an escaped ``:literal:`` role.
    """
    text = one_line(text)
    if not text:
        return DASH
    if "`" in text or "\\" in text:
        return ":literal:`" + text.replace("\\", "\\\\").replace("`", "\\`") + "`"
    return f"``{text}``"


#: What starts or ends reStructuredText inline markup: emphasis, literals, interpreted text
#: and roles, references (``name_``, ``[1]_``, ```x <uri>`_``), substitutions, the
#: escape itself; a colon followed by anything but a space, which makes a standalone URI of
#: ``javascript:...`` (a live link) and a field list of ``:name: x`` at the start of a line;
#: and such an ``@``, which makes a ``mailto:`` link of ``a@b``.
_INLINE = re.compile(r"([\\`*_|\[\]<>]|[:@](?!\s))")
#: What makes a line of plain text something else when it starts one (the start of a list
#: item or table cell is one): a bullet, an enumerator (``1.``, ``a)``, ``(iv)``), an option
#: (``-x``, ``/x``), a table's top (``+-``, ``==``), a comment or directive (``..``), or a
#: line of one punctuation character repeated (a transition or a title's underline).
#: The characters of :data:`_INLINE` are escaped already.
_BLOCK_START = re.compile(r"""[-+/=]
    | \.\.(?:\ |$)
    | [\u2022\u2023\u2043](?:\ |$)
    | \(?(?:\#|[0-9]+|[a-zA-Z]|[ivxlcdm]+|[IVXLCDM]+)[.)](?:\ |$)
    | ([!-/:-@\[-`{-~])\1*$""", re.VERBOSE)


def escape(text: str) -> str:
    """Plain text, from a results file or anywhere, as reStructuredText that shows just that text.

    On one line (:func:`one_line`), its inline markup characters escaped, and
    a backslash and a space (which docutils drops) before a start that would
    make it a list, a directive or a transition: safe in a sentence, a title,
    a list item, a table cell or a caption.

    >>> print(escape("*x* `y`_ |s| [1]_ <a> javascript:b\\n.. raw:: html"))
    \\*x\\* \\`y\\`\\_ \\|s\\| \\[1\\]\\_ \\<a\\> javascript\\:b .. raw\\:: html
    >>> print(escape(".. include:: /etc/passwd"), escape("- a"), escape("1. a"), escape("(none)"))
    \\ .. include\\:: /etc/passwd \\ - a \\ 1. a (none)
    """
    text = _INLINE.sub(r"\\\1", one_line(text))
    return "\\ " + text if _BLOCK_START.match(text) else text


def stacked(text: str) -> str:
    """'8.79 ± 0.69 s' as two lines, '8.79 s' over '± 0.69 s', for narrow table cells.

    >>> stacked("8.79 ± 0.69 s")
    '8.79 s\\n± 0.69 s'
    >>> stacked("1.43x ± 0.15")
    '1.43x\\n± 0.15'
    """
    m = re.fullmatch(r"(\S+) ± (\S+)(?: (.+))?", text)
    if not m:
        return text
    unit = f" {m[3]}" if m[3] else ""
    return f"{m[1]}{unit}\n± {m[2]}{unit}"


def nobreak(text: str) -> str:
    """Spaces made non-breaking: '8.79 s' stays on one line (line breaks stay)."""
    return text.replace(" ", NBSP)


#: The class of every table the report writes: lakebench.css sets them compact, so that they fit a
#: laptop's column, without touching the other tables of the docs site.
TABLE_CLASS = "lakebench-table"


def list_table(rows: list[list[str]], title: str = "", header_rows: int = 1,
               stub_columns: int = 1, widths: str | None = None, classes: str = TABLE_CLASS) -> str:
    """A ``list-table`` directive: every cell inline text, a line block if it has several lines."""
    out = [f".. list-table:: {title}".rstrip(), f"   :header-rows: {header_rows}"]
    if stub_columns:
        out.append(f"   :stub-columns: {stub_columns}")
    if widths:
        out.append(f"   :widths: {widths}")
    if classes:
        out.append(f"   :class: {classes}")
    out.append("")
    for row in rows:
        for i, cell in enumerate(row):
            lines = [re.sub(r"[^\S\u00a0]+", " ", line).strip(" ") for line in cell.split("\n")]
            lines = [line for line in lines if line] or [DASH]
            if len(lines) > 1:  # a line block: one cell, several lines
                lines = [f"| {line}" for line in lines]
            out.append(f"   {'* -' if i == 0 else '  -'} {lines[0]}")
            out.extend(f"       {line}" for line in lines[1:])
    return "\n".join(out) + "\n"


#: The class of the block that holds an inlined chart and its caption (lakebench.css styles it).
CHART_CLASS = "lakebench-chart"


def figure(path, alt: str, caption: str) -> str:
    """The chart ``path`` (beside the page) with its caption.

    An SVG is inlined in the HTML page (``.. raw:: html`` of the file, which
    :func:`lakebench.report.charts.registry.embeddable` prepared for it), so
    that the hover titles of its marks show: through ``<img>`` they never do.
    Other builders (text, LaTeX) get the same file as an image.  A PNG is a
    ``figure`` directive.  ``caption`` is inline reStructuredText whose parts
    from a results file are escaped already; both it and ``alt`` are kept on
    one line each.

    >>> print(figure("out/parent.svg", "Parent", "The *caption*."))
    .. container:: lakebench-chart
    <BLANKLINE>
       .. only:: html
    <BLANKLINE>
          .. raw:: html
             :file: parent.svg
    <BLANKLINE>
       .. only:: not html
    <BLANKLINE>
          .. image:: parent.svg
             :alt: Parent
    <BLANKLINE>
       The *caption*.
    <BLANKLINE>
    """
    name, alt, caption = Path(path).name, one_line(alt), one_line(caption)
    if Path(path).suffix != ".svg":
        return f".. figure:: {name}\n   :alt: {alt}\n\n   {caption}\n"
    return (f".. container:: {CHART_CLASS}\n\n"
            f"   .. only:: html\n\n      .. raw:: html\n         :file: {name}\n\n"
            f"   .. only:: not html\n\n      .. image:: {name}\n         :alt: {alt}\n\n"
            f"   {caption}\n")


def code_block(text: str, language: str = "console") -> str:
    body = "\n".join("   " + line for line in text.splitlines())
    return f".. code-block:: {language}\n\n{body}\n"


def disk(recorded: dict | None) -> str | None:
    """The disk the results were written to, as recorded (``environment.disk``), escaped; None if unrecorded.

    >>> disk({"device": "/dev/vda", "filesystem": "ext4", "rotational": False, "size_bytes": 2 * 10**11})
    'ext4 on /dev/vda (solid-state, 200.0 GB)'
    """
    if not recorded or not (recorded.get("filesystem") or recorded.get("device")):
        return None
    kind = {True: "rotational", False: "solid-state"}.get(recorded.get("rotational"))
    details = ", ".join(x for x in (kind, size(recorded["size_bytes"]) if recorded.get("size_bytes") else None) if x)
    text = f"{recorded.get('filesystem') or 'a file system'} on {recorded.get('device') or 'an unknown device'}"
    return escape(text + (f" ({details})" if details else ""))
