"""How every figure is written: one function per kind of figure.

The terminal table (:mod:`lakebench.table`), ``lakebench compare`` and the
report (:mod:`lakebench.report.fmt`) all write numbers with these, so one
run reads the same everywhere.  A value and its standard deviation share one
unit:

>>> duration(0.018438, 0.001361)
'18.4 ± 1.4 ms'
>>> duration(492.5)
'8 min 12.5 s'
>>> size(475881472), size(864301056, 23170)
('475.9 MB', '864.3 ± <0.1 MB')
>>> ratio(1.4217, 0.0078)
'1.42x ± 0.01'
>>> relative(19141.0), relative(123.4), relative(0.21), relative(None)
('191x', '123%', '0.2%', '–')
"""
from __future__ import annotations

DASH = "–"


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


def duration(value: float | None, std: float | None = None) -> str:
    """Seconds in the unit that suits them: µs, ms, s, or min and s."""
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
    """A duration given in milliseconds (``per_resource_ms``, ``operations``).

    >>> millis(0.4217), millis(24.6), millis(None)
    ('422 µs', '24.6 ms', '–')
    """
    return DASH if value is None else duration(value / 1000, None if std is None else std / 1000)


def size(value: float | None, std: float | None = None) -> str:
    """Bytes in decimal units, like ``du -h --si``."""
    if value is None:
        return DASH
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if value >= scale:
            return _scaled(value, std, 1 / scale, unit, 1)
    return _scaled(value, std, 1, "B", 0)


def ratio(value: float | None, std: float | None = None) -> str:
    """A ratio of two figures of one system (growth, NEW/BASE)."""
    if value is None:
        return DASH
    return f"{value:.2f}x" + (f" ± {std:.2f}" if std is not None else "")


def multiple(value: float | None) -> str:
    """How many times another figure: two decimals below 2x, one below 100x, none above.

    >>> multiple(1.234), multiple(6.93), multiple(191.4), multiple(None)
    ('1.23x', '6.9x', '191x', '–')
    """
    if value is None:
        return DASH
    if value < 2:
        return f"{value:.2f}x"
    return f"{value:.1f}x" if value < 100 else f"{value:,.0f}x"


def relative(percent: float | None) -> str:
    """A figure relative to another system's, given in percent: a multiple once past 2x.

    ``191x`` reads at a glance where ``19141%`` does not; below 2x a
    percentage keeps the small differences visible.
    """
    if percent is None:
        return DASH
    if percent >= 200:
        return multiple(percent / 100)
    return f"{percent:.1f}%" if percent < 10 else f"{percent:.0f}%"


def count(value) -> str:
    """A count with thousands separators.

    >>> count(12345), count(None)
    ('12,345', '–')
    """
    return DASH if value is None else f"{value:,}"


def rate(value: float | None, unit: str = "/s") -> str:
    """Operations or megabytes per second.

    >>> rate(1234.5), rate(12.345, " MB/s"), rate(0.5)
    ('1,234/s', '12.3 MB/s', '0.50/s')
    """
    if value is None:
        return DASH
    return f"{value:,.{_decimals(value)}f}{unit}"


def first_steady(first: float | None, steady: float | None) -> str:
    """A read timed right after the writes, then steady (median of the following ones).

    >>> first_steady(2.45, 0.1)
    '2.45 s / 100 ms'
    """
    return f"{duration(first)} / {duration(steady)}"


def bytes_per_triple(entry: dict, triples_per_child: int) -> tuple[float | None, str]:
    """On-disk bytes per triple, and what they were divided by: ``"held"`` or ``"sent"``.

    Over the triples the system says it holds; a server that does not count
    them (``triples_total`` null) is divided by the triples sent, and the
    caller says so.

    >>> bytes_per_triple({"disk_bytes": 2000, "triples_total": 10, "children": 1}, 8)
    (200.0, 'held')
    >>> bytes_per_triple({"disk_bytes": 2000, "triples_total": None, "children": 1}, 8)
    (250.0, 'sent')
    """
    disk = entry.get("disk_bytes")
    if not disk:
        return None, "held"
    held = entry.get("triples_total")
    if held:
        return disk / held, "held"
    sent = (entry.get("children") or 0) * triples_per_child
    return (disk / sent, "sent") if sent else (None, "sent")
