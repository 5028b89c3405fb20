"""What every workload is: its parameters, its steps, its checks.

A :class:`Workload` knows what to send to a system and what the system
must hold afterwards; it holds no clock.  It runs through a driver
(:mod:`lakebench.drivers`), which times each operation in one wrapper and
collects the raw times by operation kind into an :class:`Outcome`.  The
data every workload draws its graphs from is :class:`lakebench.dataset.DataSet`
(the *data set*: child ``k`` is the same graph for every system).

Every workload ends the way the seed's does: the parent container is read
(first, right after the writes, then steady), so each row also says what a
client listing the container waits for.
"""
from __future__ import annotations

import argparse
import math
from array import array
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Sequence

from lakebench.systems.base import NotApplicable
from lakebench.dataset import LDP_CONTAINS, DataSet

__all__ = ["NotApplicable", "Outcome", "Param", "Workload", "count_containment", "needs"]


@dataclass(frozen=True)
class Param:
    """One option of a workload, offered on ``lakebench run`` as ``--NAME-WITH-DASHES``.

    ``sweep``: comma-separated values are allowed, one case each (like
    ``--literal-length``); ``parse`` turns the text of one value into it.
    ``drivers``: the drivers it means something with (None: every one the
    workload runs with); given with another, it is a usage error.
    """

    default: Any
    parse: Callable[[str], Any]
    help: str
    sweep: bool = False
    metavar: str | None = None
    drivers: tuple[str, ...] | None = None

    def option(self, name: str) -> str:
        """``binary_size`` -> ``--binary-size``."""
        return "--" + name.replace("_", "-")

    def argument_type(self) -> Callable[[str], Any]:
        """The argparse type: one value, or a comma-separated list when swept."""
        if not self.sweep:
            return self.parse

        def values(text: str) -> list:
            items = [t.strip() for t in text.split(",") if t.strip()]
            if not items:
                raise argparse.ArgumentTypeError("no value given")
            values = [self.parse(item) for item in items]
            if len(set(values)) != len(values):  # 1K,1024: one case twice, as BoundedList refuses
                raise argparse.ArgumentTypeError(f"a value is given twice: {text}")
            return values

        return values


class SentSeries:
    """The seconds of one operation kind, sent on in chunks as they come instead of kept.

    ``send(chunk)`` gets each ``every`` of them as a list, in order; :meth:`flush` sends the rest.
    What is kept is their count, their sum and the last one: the times of a workload's primary
    kind (a million children are a million times) then take none of an in-process system's
    private memory, which is the worker's (8 bytes a time kept in an array: 24 MB at three
    million).  The runner's own process collects the chunks and computes their figures.
    """

    def __init__(self, send: Callable[[list[float]], None], every: int):
        self._send = send
        self._every = every
        self._pending = array("d")
        self._sent = 0
        self._sent_sums: list[float] = []  # math.fsum of each chunk sent: the total stays exact
        self.last = math.nan  # the newest time, nan before the first

    def append(self, seconds: float) -> None:
        self._pending.append(seconds)
        self.last = seconds
        if len(self._pending) >= self._every:
            self.flush()

    def extend(self, values) -> None:
        for seconds in values:
            self.append(seconds)

    def flush(self) -> None:
        """Send what is pending (nothing when nothing is)."""
        if self._pending:
            chunk, self._pending = self._pending, array("d")
            self._sent += len(chunk)
            self._sent_sums.append(math.fsum(chunk))
            self._send(chunk.tolist())

    def total(self) -> float:
        """The sum of every time filed, sent or not."""
        return math.fsum([*self._sent_sums, *self._pending])

    def __len__(self) -> int:
        return self._sent + len(self._pending)


@dataclass
class Outcome:
    """What a driver measured on one system: raw times, counts, and how it went.

    ``times`` maps an operation kind (``"create"``, ``"get parent"``,
    ``"put binary"``, ...) to the seconds of each operation of that kind, in
    the order they ran; every figure of a run is computed from them by
    :mod:`lakebench.results.stats`.  A driver files them through
    :meth:`series`: an array of doubles, 8 bytes a time where a list of
    floats takes 32, since an in-process system shares this process's
    private memory with them; or, for a kind given to :meth:`send_as_filed`
    (the runner's for the workload's primary kind), a :class:`SentSeries`,
    which keeps none of them.  Readers ask :meth:`count`, :meth:`last` and
    :meth:`total_seconds`, which both kinds of series answer.
    """

    times: dict[str, Sequence[float]] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)  # operation kind -> failed operations
    first_error: str | None = None
    ingest_wall: float = 0.0  # wall time of the ingest loop, checkpoint reads excluded
    #: CPU this process spent on lakebench's own work (building children, checking answers:
    #: ``ClientDriver.harness``), taken out of an in-process system's ``cpu_seconds``.
    generate_cpu: float = 0.0
    generation: dict = field(default_factory=dict)  # "generation" and "generate_seconds" of the record
    budget_exhausted: bool = False
    checkpoints: list[dict] = field(default_factory=list)
    checkpoint_seconds: float = 0.0  # wall time of checkpoint reads, outside the ingest's clocks
    retrieval: Any = None  # the parent as the last timed retrieval returned it (systems.base.Retrieval)
    #: With per-user parents (Locust): the other users' parents, each read once after the timed
    #: retrievals, for what is held (``retrieval`` is the first user's).
    other_parents: list = field(default_factory=list)
    cache: str = "warm"  # what the parent retrievals really were: "cold" or "warm"
    variants: dict | None = None  # Locust: seconds of each Prefer variant of the parent
    paged: dict | None = None  # the parent walked in pages: the record's ``parent.paged``
    details: dict = field(default_factory=dict)  # the workload's own record fields

    def series(self, kind: str) -> array | SentSeries:
        """The seconds filed under ``kind``, to append to (created empty)."""
        return self.times.setdefault(kind, array("d"))

    def send_as_filed(self, kind: str, send: Callable[[list[float]], None], every: int) -> None:
        """From now on, send the seconds of ``kind`` on as they are filed (:class:`SentSeries`)."""
        if kind in self.times:
            raise ValueError(f"{kind!r} already has times kept here")
        self.times[kind] = SentSeries(send, every)

    def count(self, kind: str) -> int:
        """How many operations of ``kind`` were timed."""
        return len(self.times.get(kind, ()))

    def last(self, kind: str) -> float:
        """The seconds of the newest operation of ``kind`` (there must be one)."""
        series = self.times[kind]
        return series.last if isinstance(series, SentSeries) else series[-1]

    def total_seconds(self, kind: str) -> float:
        """The seconds of every operation of ``kind``, summed."""
        series = self.times.get(kind, ())
        return series.total() if isinstance(series, SentSeries) else math.fsum(series)

    def created(self) -> int:
        """Children created (the ingest's timed operations)."""
        return self.count("create")


class Workload:
    """Base class of a workload.  Subclasses set ``name``, ``primary`` and ``PARAMETERS``
    and implement :meth:`run`; :meth:`not_applicable` and :meth:`record` when they need to.
    """

    name: ClassVar[str] = "?"
    #: The operation whose times are the run's ``per_resource_ms`` and latencies.csv.
    primary: ClassVar[str] = "create"
    #: Options of this workload (name -> :class:`Param`), shown by ``lakebench run --help``.
    PARAMETERS: ClassVar[dict[str, Param]] = {}
    #: Drivers that can run it.
    drivers: ClassVar[tuple[str, ...]] = ("client",)
    #: Whether it creates the data set's children through ``driver.ingest``, which takes the
    #: ``--checkpoints`` (the parent and the disk measured as the container fills).
    ingests: ClassVar[bool] = True
    #: The field it adds to each record, and that field's heading on the report's page (the
    #: field's layout is in lakebench.results.schema, with the rest of the file's); None: none.
    RECORD: ClassVar[tuple[str, str] | None] = None

    def __init__(self, dataset: DataSet, params: dict | None = None):
        self.dataset = dataset
        self.params = {name: p.default for name, p in self.PARAMETERS.items()}
        self.params.update(params or {})

    #: The :class:`~lakebench.systems.base.System` operations this workload calls.
    needs: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def not_applicable(cls, system_cls, params: dict | None = None) -> str | None:
        """Why a system of class ``system_cls`` cannot take this workload with the options
        ``params`` (those given), or None (it can)."""
        return needs(system_cls, cls.needs)

    @classmethod
    def check(cls, params: dict) -> None:
        """Raise ValueError when options that are each in range cannot go together
        (``params``: every option, defaults filled in)."""

    def run(self, system, driver) -> Outcome:
        """Send the workload to ``system`` (set up, parent created) through ``driver``."""
        raise NotImplementedError

    def record(self, outcome: Outcome, system) -> dict:
        """Fields of the run's record beyond the common ones (what was sent and what is held)."""
        return dict(outcome.details)

    @classmethod
    def notes(cls, entries: list[dict], label: Callable[[dict], str]) -> list[str]:
        """What the terminal prints under the table of its own figures: lines about ``entries``
        (the measured ones), each system named by ``label(entry)``; none by default."""
        return []


def needs(system_cls, operations) -> str | None:
    """Why ``system_cls`` cannot run ``operations`` (the first it lacks), or None.

    >>> from lakebench.systems.memory import MemorySystem
    >>> needs(MemorySystem, ["create_binary"])
    'memory stores no binaries'
    """
    for operation in operations:
        if not system_cls.supports(operation):
            return f"{system_cls.name} {_LACKS.get(operation, f'has no {operation}')}"
    return None


#: How a row says what a system lacks.
_LACKS = {
    "create_binary": "stores no binaries", "get_binary": "stores no binaries",
    "create_container": "has no containers", "list_container": "has no containers",
    "create_resource": "cannot place a graph at a path", "get_resource": "cannot read one resource",
    "replace_literals": "cannot update a resource", "query": "has no SPARQL endpoint",
    "create_version": "keeps no versions", "list_versions": "keeps no versions", "get_version": "keeps no versions",
}


def count_containment(retrieval) -> int:
    """``ldp:contains`` triples of the parent in a retrieved representation."""
    import pyoxigraph as ox

    formats = {"text/turtle": ox.RdfFormat.TURTLE, "application/n-triples": ox.RdfFormat.N_TRIPLES}
    media_type = retrieval.content_type.split(";")[0].strip()
    parent = ox.NamedNode(retrieval.parent_uri)
    contains = ox.NamedNode(LDP_CONTAINS)
    return sum(
        1
        for quad in ox.parse(retrieval.reader(), format=formats[media_type], base_iri=retrieval.parent_uri)
        if quad.predicate == contains and quad.subject == parent
    )
