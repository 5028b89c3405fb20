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

from lakebench import results

DASH = "–"
NBSP = "\u00a0"


def _decimals(value: float) -> int:
    value = abs(value)
    return 0 if value >= 100 else 1 if value >= 10 else 2


def _scaled(value: float, std: float | None, scale: float, unit: str, decimals: int | None = None) -> str:
    d = _decimals(value * scale) if decimals is None else decimals
    text = f"{value * scale:.{d}f}"
    if std is not None:
        shown = f"{std * scale:.{d}f}"
        smallest = 10.0 ** -d
        text += f" ± {shown}" if std == 0 or float(shown) else f" ± <{smallest:.{d}f}"
    return f"{text} {unit}"


def seconds(value: float | None, std: float | None = None) -> str:
    """A duration in the unit that suits it: µs, ms, s, or min and s."""
    if value is None:
        return DASH
    if value >= 60 and std is None:
        minutes, rest = divmod(value, 60)
        return f"{int(minutes)} min {rest:.1f} s"
    if value >= 1:
        return _scaled(value, std, 1, "s")
    if value >= 1e-3:
        return _scaled(value, std, 1e3, "ms")
    return _scaled(value, std, 1e6, "µs")


def millis(value: float | None, std: float | None = None) -> str:
    """A duration given in milliseconds (``per_resource_ms``)."""
    return DASH if value is None else seconds(value / 1000, None if std is None else std / 1000)


def size(value: float | None, std: float | None = None) -> str:
    """Bytes in decimal units, like ``du -h --si``."""
    if value is None:
        return DASH
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if value >= scale:
            return _scaled(value, std, 1 / scale, unit, 1)
    return _scaled(value, std, 1, "B", 0)


def ratio(value: float | None, std: float | None = None) -> str:
    if value is None:
        return DASH
    return f"{value:.2f}x" + (f" ± {std:.2f}" if std is not None else "")


def percent(value: float | None) -> str:
    return DASH if value is None else results.format_percent(value)


def count(value) -> str:
    return DASH if value is None else f"{value:,}"


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
