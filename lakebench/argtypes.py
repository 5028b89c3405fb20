"""Argument types for lakebench's command lines: numbers within a stated range, and the
few other values that must be right before anything starts (a JVM heap size, a server's URL).

Every numeric option of every sub-command is parsed by a :class:`Bounded`
(or a :class:`BoundedList` for a sweep), so a value that is not a number,
not finite, or outside the range the option states in its ``--help`` is
refused by argparse: one line, exit code 2, before anything runs.  Without
the bounds, ``--triples 999999999999`` got the worker OOM-killed and
``--interval inf`` crashed the monitor thread.

>>> children = Bounded(int, 1, 10_000_000)
>>> children("1000"), children.range
(1000, '1 to 10,000,000')
>>> children("0")
Traceback (most recent call last):
...
argparse.ArgumentTypeError: must be from 1 to 10,000,000, got 0
>>> Bounded(float, 0.01, 60)("nan")
Traceback (most recent call last):
...
argparse.ArgumentTypeError: not a finite number: 'nan'
>>> BoundedList(children)("1000,10000")
[1000, 10000]
>>> budget = Duration(1, 7 * 86_400)
>>> budget("90s"), budget("20m"), budget("1h30m"), budget("45"), budget.range
(90.0, 1200.0, 5400.0, 45.0, '1s to 168h')
>>> budget("0.5s")
Traceback (most recent call last):
...
argparse.ArgumentTypeError: must be from 1s to 168h, got 0.5s
"""
from __future__ import annotations

import argparse
import math
import re
import urllib.parse


def _number(value: float) -> str:
    """``10000000`` -> ``'10,000,000'``, ``0.5`` -> ``'0.5'``: as a range reads in --help."""
    return f"{value:,}" if isinstance(value, int) else f"{value:g}"


class Bounded:
    """An argparse ``type``: text -> ``kind`` (int or float), finite, from ``lo`` to ``hi`` inclusive."""

    def __init__(self, kind: type, lo: float, hi: float):
        self.kind = kind
        self.lo = lo
        self.hi = hi
        self.__name__ = "integer" if kind is int else "number"  # argparse names the type in some errors

    @property
    def range(self) -> str:
        """The range as the option's help states it: ``'1 to 10,000,000'``."""
        return f"{_number(self.lo)} to {_number(self.hi)}"

    def __call__(self, text: str):
        try:
            value = self.kind(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {'an integer' if self.kind is int else 'a number'}: "
                                             f"{text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
        if not self.lo <= value <= self.hi:
            raise argparse.ArgumentTypeError(f"must be from {self.range}, got {text.strip()}")
        return value


class BoundedList:
    """An argparse ``type``: ``"1000,10000"`` -> ``[1000, 10000]``, each value a ``Bounded``; a sweep."""

    def __init__(self, item: Bounded):
        self.item = item
        self.__name__ = "list"

    @property
    def range(self) -> str:
        return self.item.range

    def __call__(self, text: str) -> list:
        values = [self.item(part) for part in text.split(",") if part.strip()]
        if not values:
            raise argparse.ArgumentTypeError("no value given")
        if len(set(values)) != len(values):
            raise argparse.ArgumentTypeError(f"a value is given twice: {text}")
        return values


_NUMBER = r"[0-9]+(?:\.[0-9]*)?"
#: ``1h30m``, ``20m``, ``90s`` (hours, minutes, seconds in that order, each at most once), or plain seconds.
_DURATION = re.compile(rf"(?:({_NUMBER})h)?(?:({_NUMBER})m)?(?:({_NUMBER})s)?|({_NUMBER})", re.IGNORECASE)


def duration_text(seconds: float) -> str:
    """``5400`` -> ``'1h30m'``, ``90`` -> ``'1m30s'``, ``0.5`` -> ``'0.5s'``: as a range reads in --help."""
    whole = int(seconds)
    if whole != seconds or whole < 60:
        return f"{seconds:g}s"
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return "".join(f"{value}{unit}" for value, unit in ((hours, "h"), (minutes, "m"), (secs, "s")) if value)


class Duration(Bounded):
    """An argparse ``type``: a duration in seconds, written ``90s``, ``20m``, ``1h``, ``1h30m`` or plain seconds.

    Within ``lo`` to ``hi`` seconds, like any :class:`Bounded`; ``inf`` and
    ``nan`` are not durations.
    """

    def __init__(self, lo: float, hi: float):
        super().__init__(float, lo, hi)
        self.__name__ = "duration"

    @property
    def range(self) -> str:
        return f"{duration_text(self.lo)} to {duration_text(self.hi)}"

    def __call__(self, text: str) -> float:
        written = text.strip()
        match = _DURATION.fullmatch(written)
        if not written or not match:
            raise argparse.ArgumentTypeError(f"not a duration (e.g. 90s, 20m, 1h30m, or seconds): {text!r}")
        hours, minutes, secs, plain = (float(part) if part else 0.0 for part in match.groups())
        seconds = plain or hours * 3600 + minutes * 60 + secs
        if not math.isfinite(seconds):  # digits only, but more of them than a float holds
            raise argparse.ArgumentTypeError(f"not a finite duration: {text!r}")
        if not self.lo <= seconds <= self.hi:
            raise argparse.ArgumentTypeError(f"must be from {self.range}, got {written}")
        return seconds


class Choice:
    """An argparse ``type``: one of a few words, as written.

    >>> worker = Choice("gevent", "gthread", "sync")
    >>> worker("sync"), worker.range
    ('sync', 'gevent, gthread or sync')
    >>> worker("eventlet")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be gevent, gthread or sync, got 'eventlet'
    """

    __name__ = "choice"

    def __init__(self, *choices: str):
        self.choices = choices

    @property
    def range(self) -> str:
        return ", ".join(self.choices[:-1]) + " or " + self.choices[-1] if len(self.choices) > 1 else self.choices[0]

    def __call__(self, text: str) -> str:
        if text.strip() not in self.choices:
            raise argparse.ArgumentTypeError(f"must be {self.range}, got {text.strip()!r}")
        return text.strip()


#: A TCP port.
PORT = Bounded(int, 1, 65_535)
#: How long ``start`` waits for a server it started (Fedora, LAKEsuperior) to answer.
START_TIMEOUT = Bounded(float, 1, 3_600)

_JVM_SIZE = re.compile(r"([0-9]{1,13})([kmgt]?)", re.IGNORECASE)
_JVM_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def _jvm_bytes(text: str) -> int | None:
    match = _JVM_SIZE.fullmatch(text.strip())
    return int(match[1]) * _JVM_UNITS[match[2].lower()] if match else None


class JvmHeap:
    """An argparse ``type``: a heap size as ``java -Xmx`` reads it (``512m``, ``2g``), from ``lo`` to ``hi``.

    Anything else would only stop the JVM at start, after the download.

    >>> JVM_HEAP("2g")
    '2g'
    >>> JVM_HEAP("1m")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be from 64m to 1t, got 1m
    """

    __name__ = "JVM heap size"

    def __init__(self, lo: str, hi: str):
        self.range = f"{lo} to {hi}"
        self._bytes = (_jvm_bytes(lo) or 0, _jvm_bytes(hi) or 0)

    def __call__(self, text: str) -> str:
        size = _jvm_bytes(text)
        if size is None:
            raise argparse.ArgumentTypeError(f"not a JVM heap size (digits, then k, m, g or t, e.g. 2g): {text!r}")
        if not self._bytes[0] <= size <= self._bytes[1]:
            raise argparse.ArgumentTypeError(f"must be from {self.range}, got {text.strip()}")
        return text.strip()


#: A Fedora's heap: below 64 MiB the JVM cannot even deploy the war; above
#: 1 TiB is a typing mistake on any machine lakebench runs on.
JVM_HEAP = JvmHeap("64m", "1t")


def http_url(text: str) -> str:
    """An ``http://`` or ``https://`` URL with a host (and a valid port, if any).

    >>> http_url("http://127.0.0.1:8080/rest/")
    'http://127.0.0.1:8080/rest/'
    >>> http_url("localhost:8080")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: not an http:// or https:// URL with a host: 'localhost:8080'
    """
    parts = urllib.parse.urlsplit(text.strip())
    try:
        parts.port  # noqa: B018 - raises ValueError for a port out of range or not a number
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a valid port in {text!r}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(f"not an http:// or https:// URL with a host: {text!r}")
    return text.strip()


_BYTE_SIZE = re.compile(r"([0-9]{1,15})\s*(?:([kmg])(?:i?b)?|b)?", re.IGNORECASE)
_BYTE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def size_text(size: int) -> str:
    """``65536`` -> ``'64K'``, ``16777216`` -> ``'16M'``, ``1000`` -> ``'1000'``: as a size reads in --help."""
    for unit in ("G", "M", "K"):
        scale = _BYTE_UNITS[unit.lower()]
        if size >= scale and size % scale == 0:
            return f"{size // scale}{unit}"
    return str(size)


class ByteSize(Bounded):
    """An argparse ``type``: a number of bytes, written ``1K``, ``64K``, ``16M``, ``1G`` (powers of
    1024; ``KiB``/``KB`` read as ``K``) or plain bytes, from ``lo`` to ``hi``.

    >>> size = ByteSize(1, 256 << 20)
    >>> size("1K"), size("64k"), size("16M"), size("1000"), size.range
    (1024, 65536, 16777216, 1000, '1 to 256M')
    >>> size("1Q")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: not a size (bytes, or a number then K, M or G, e.g. 64K): '1Q'
    >>> size("0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be from 1 to 256M, got 0
    """

    def __init__(self, lo: int, hi: int):
        super().__init__(int, lo, hi)
        self.__name__ = "size"

    @property
    def range(self) -> str:
        return f"{size_text(self.lo)} to {size_text(self.hi)}"

    def __call__(self, text: str) -> int:
        match = _BYTE_SIZE.fullmatch(text.strip())
        if not match:
            raise argparse.ArgumentTypeError(f"not a size (bytes, or a number then K, M or G, e.g. 64K): {text!r}")
        size = int(match[1]) * _BYTE_UNITS[(match[2] or "").lower()]
        if not self.lo <= size <= self.hi:
            raise argparse.ArgumentTypeError(f"must be from {self.range}, got {text.strip()}")
        return size
