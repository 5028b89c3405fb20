"""What every figure is called and how it is written: one name per figure, one function per kind of figure.

The terminal table (:mod:`lakebench.table`), ``lakebench compare`` and the
report (:mod:`lakebench.report.fmt`) all name figures by :data:`VOCABULARY`
and write numbers with these functions, so one run reads the same
everywhere (docs/results.rst lists the vocabulary).  A value and its
standard deviation share one unit:

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

from dataclasses import dataclass

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


def against(mine: float | None, theirs: float | None) -> str:
    """A time against another's, lower being better: how many times faster or slower.

    >>> against(3.2, 44.3), against(10.0, 5.0), against(2.0, 2.0), against(None, 1.0)
    ('13.8x faster', '2.0x slower', 'as fast', '–')
    """
    if not mine or not theirs:
        return DASH
    if mine == theirs:
        return "as fast"
    return f"{multiple(theirs / mine)} faster" if mine < theirs else f"{multiple(mine / theirs)} slower"


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


def log_flush_max(entry: dict) -> float | None:
    """The slowest flush of the store's write-ahead log in seconds, where the system reports its
    log's flushes and flushed it at all (lakebench's durable store); else None.

    >>> log_flush_max({"internals": {"log_flushes": {"flushes": 3, "max_seconds": 0.0412}}})
    0.0412
    >>> log_flush_max({"internals": {"log_flushes": {"flushes": 0, "max_seconds": 0.0}}}), log_flush_max({})
    (None, None)
    """
    flushes = (entry.get("internals") or {}).get("log_flushes") or {}
    return flushes.get("max_seconds") if flushes.get("flushes") else None


# -- the vocabulary: one name and one definition per figure ----------------

@dataclass(frozen=True)
class Term:
    """One figure as every table, chart, page and ``compare`` shows it."""

    name: str  # the one name it is shown under
    path: str  # where results.json holds it: in a system entry, or (``settings.``) in the document
    means: str  # its definition, in one sentence (N: the retrievals made in all)


RUNNING_TIME = Term("running time", "ingest_seconds",
                    "the sum of the per-child times (only the time spent storing, not generating the graphs); "
                    "with several Locust users, whose requests overlap, the ingest's wall time")
#: The time per child of a workload other than ``flat`` is that of one operation of its primary
#: kind, named for it (:func:`time_per`: ``time per put binary (mean)``).
TIME_PER_CHILD = Term("time per child (mean)", "per_resource_ms.mean",
                      "the mean time to create one child (its PUT, over HTTP)")
TIME_PER_CHILD_MEDIAN = Term("time per child (median)", "per_resource_ms.p50",
                             "the median time to create one child")
TIME_PER_CHILD_P95 = Term("time per child (p95)", "per_resource_ms.p95",
                          "the 95th percentile of the time to create one child")
TIME_PER_CHILD_P999 = Term("time per child (p99.9)", "per_resource_ms.p999",
                           "the 99.9th percentile of the time to create one child: one child in a thousand "
                           "took longer")
TIME_PER_CHILD_MAX = Term("time per child (max)", "per_resource_ms.max", "the longest time one child took to create")
LOG_FLUSH_MAX = Term("log flush (max)", "internals.log_flushes.max_seconds",
                     "the slowest flush of the store's write-ahead log, where the system reports one (lakebench's "
                     "durable store): each write waits for one, so where this is near the slowest child, that "
                     "child waited for the disk")
GROWTH = Term("last/first 10%", "growth.ratio",
              "the mean time per child of the last 10% of children over that of the first 10% (1.00x: no growth)")
RETRIEVALS = Term("retrievals", "settings.retrievals",
                  "N, how many times the parent was read in all at the end of each run (--retrievals)")
PARENT_FIRST = Term("GET parent first", "parent.first_seconds",
                    "the first of the N retrievals of the parent, right after the writes")
PARENT_STEADY = Term("GET parent steady", "parent.seconds",
                     "the median of the N - 1 retrievals that follow the first (the first itself when N = 1)")
PAGE_FIRST = Term("first page", "parent.paged.first_seconds",
                  "the parent asked for as a client that pages asks (LDP Paging 1.0, --page-size N): the "
                  "request and the first page of N children it is sent to; 'not paged' where the system "
                  "answers with the whole parent")
PAGED_WALK = Term("paged walk", "parent.paged.walk_seconds",
                  "the requests of every page of the parent, the first to the last, in one walk after the "
                  "retrievals")
THROUGHPUT = Term("throughput", "load.throughput_per_s",
                  "a load test's operations completed (answered or refused) over its wall time, from the first "
                  "one's start to the last one's end, all users together (flat: the ingest; mixed: its tasks)")
LATENCY_P95 = Term("latency p95", "load.latency_ms.p95",
                   "the 95th percentile of the response times of a load test's answered requests, every kind "
                   "together (flat: its PUTs, the time per child (p95))")
#: A Locust process whose CPU time reaches this share of its wall time is saturated: it cannot send more.
GENERATOR_SATURATION = 0.9
GENERATOR_CPU = Term("generator CPU", "load.generator_cpu_share",
                     "the load generator's CPU time (its Locust processes') over the load test's wall time, per "
                     f"process: 100% is one core each; from {GENERATOR_SATURATION:.0%} the generator, not the "
                     "system, sets the throughput")
KNEE = Term("knee", "load.users",
            "in a users sweep, the smallest user count after which no step to the next count adds 10% or "
            "more throughput per doubling (between counts that are not a doubling apart, the gain per "
            "doubling); none while the last step still gained that much")
ONE_OVER_MEAN = Term("1/mean", "operations.KIND.per_second",
                     "one over the mean time, the operations per second one client doing them back to back "
                     "would sustain; not a throughput")
CONTAINS = Term("contains", "parent.containment_triples", "the containment triples of the parent as read")
PEAK_RSS = Term("peak RSS", "peak_rss_bytes", "the peak resident memory of the system's processes")
PEAK_PRIVATE = Term("peak private RSS", "peak_rss_anon_bytes",
                    "the peak of the system's processes' private resident memory (RssAnon: their heaps, not "
                    "the pages of files they map)")
DATABASE_SIZE = Term("database size", "disk_bytes", "the bytes allocated under the data directory after close")
TRIPLES = Term("triples", "triples_total", "the triples the system holds at the end")

#: Every figure shown in more than one place, in the order docs/results.rst lists them.
VOCABULARY = (RUNNING_TIME, TIME_PER_CHILD, TIME_PER_CHILD_MEDIAN, TIME_PER_CHILD_P95, TIME_PER_CHILD_P999,
              TIME_PER_CHILD_MAX, LOG_FLUSH_MAX, GROWTH, RETRIEVALS, PARENT_FIRST, PARENT_STEADY, PAGE_FIRST,
              PAGED_WALK, CONTAINS, THROUGHPUT, LATENCY_P95,
              GENERATOR_CPU, KNEE, ONE_OVER_MEAN, PEAK_RSS, PEAK_PRIVATE, DATABASE_SIZE, TRIPLES)


def time_per(kind: str | None, statistic: str = "mean") -> str:
    """The name of the time of one operation of ``kind``: a child's PUT (``create``, the seed's) is a child.

    >>> time_per("create"), time_per("put binary", "p95"), time_per(None, "median")
    ('time per child (mean)', 'time per put binary (p95)', 'time per child (median)')
    """
    return f"time per {'child' if kind in (None, 'create') else kind} ({statistic})"


def _retrievals(n: int) -> str:
    return f"{n} retrieval{'s' if n != 1 else ''}"


def first_means(n: int | None) -> str:
    """What GET parent first is, with N, the retrievals made in all.

    >>> first_means(4)
    'the first of the 4 retrievals of the parent, right after the writes'
    """
    if not n:
        return "the first retrieval of the parent, right after the writes"
    return f"the first of the {_retrievals(n)} of the parent, right after the writes"


def steady_means(n: int | None) -> str:
    """What GET parent steady is, with N, the retrievals made in all: the median of the N - 1 after the first.

    >>> for n in (4, 2, 1):
    ...     print(steady_means(n))
    the median of the 3 retrievals that follow the first
    the 1 retrieval that follows the first
    the only retrieval made, the first
    """
    if n == 1:
        return "the only retrieval made, the first"
    if n == 2:
        return "the 1 retrieval that follows the first"
    return f"the median of the {n - 1} retrievals that follow the first" if n else\
        "the median of the retrievals that follow the first"


def parent_note(n: int | None, strong=lambda name: name) -> str:
    """The definitions of GET parent first and steady with N, as every place that shows them states them
    (``strong``: how a name is set off, ``**bold**`` in the report).

    >>> for part in parent_note(3).split("; "):
    ...     print(part)
    GET parent first: the first of the 3 retrievals of the parent, right after the writes
    GET parent steady: the median of the 2 retrievals that follow the first.
    """
    return (f"{strong(PARENT_FIRST.name)}: {first_means(n)}; "
            f"{strong(PARENT_STEADY.name)}: {steady_means(n)}.")
