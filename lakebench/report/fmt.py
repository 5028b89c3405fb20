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


# -- reStructuredText ------------------------------------------------------

def heading(text: str, char: str, overline: bool = False) -> str:
    line = char * max(len(text), 3)
    return (f"{line}\n" if overline else "") + f"{text}\n{line}\n"


def literal(text: str) -> str:
    """Any text as an inline literal (errors, paths, commands), on one line.

    Text with backquotes or backslashes becomes an escaped ``:literal:`` role.
    """
    text = re.sub(r"\s+", " ", str(text)).strip()
    if not text:
        return DASH
    if "`" in text or "\\" in text:
        return ":literal:`" + text.replace("\\", "\\\\").replace("`", "\\`") + "`"
    return f"``{text}``"


def escape(text: str) -> str:
    """Plain text with reStructuredText's inline markup characters escaped."""
    return re.sub(r"([\\`*_|\[\]<>])", r"\\\1", str(text))


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


def list_table(rows: list[list[str]], title: str = "", header_rows: int = 1,
               stub_columns: int = 1, widths: str | None = None, classes: str = "") -> str:
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


def code_block(text: str, language: str = "console") -> str:
    body = "\n".join("   " + line for line in text.splitlines())
    return f".. code-block:: {language}\n\n{body}\n"
