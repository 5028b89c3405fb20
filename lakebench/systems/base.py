"""The tiny interface every measured system implements.

A system knows one repository and nothing about timing: the driver
(``lakebench.drivers``) holds the only clock, like YCSB's DB wrapper.  One
instance lives in one fresh worker process with its own data directory.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from lakebench.dataset import Child, DataSet
from lakebench.durability import Durability


class SystemFailure(RuntimeError):
    """A system could not do what was asked (server down, bad reply, ...)."""


class NotApplicable(Exception):
    """The system cannot do this kind of operation at all (no binaries in-process, no SPARQL, ...).

    Not a failure: a workload that needs it is reported "not applicable" for the system.
    """


@dataclass(frozen=True)
class Retrieval:
    """The parent's representation exactly as a client received it.

    The workload counts its containment triples after the clock stops, so the
    count is checked from what was really returned, for every system alike.
    """

    body: bytes  # the serialized representation
    parent_uri: str  # IRI of the parent in that representation
    content_type: str = "text/turtle"


@dataclass(frozen=True)
class Option:
    """One ``--system-option KEY=VALUE`` a system takes (its ``OPTIONS``).

    ``type`` reads the text (a :mod:`lakebench.argtypes` type, which states
    its ``range`` and raises ``argparse.ArgumentTypeError``); ``default`` is
    what the system does without it, recorded in the results alike.
    """

    help: str
    type: Callable[[str], object]
    default: object = None

    def describe(self) -> str:
        """The option as --help and the docs state it: what it does, its range, its default."""
        return f"{self.help}, {self.type.range} (default: {self.default})"


class System:
    """Base class: one repository, driven by the runner.

    Subclasses set ``name`` and ``durability`` and implement the five calls.
    ``transport`` says whether requests cross HTTP or stay in-process, so
    the report can group rows honestly.
    """

    name: str = "?"
    #: When a write is acknowledged (lakebench.durability: durable, nosync,
    #: volatile, or a server's own default).
    durability: Durability = Durability.UNKNOWN
    transport: str = "in-process"
    #: The ``--system-option`` keys this system takes (``lakebench run``
    #: refuses a key no chosen system takes, or a value outside its range).
    OPTIONS: dict[str, Option] = {}

    def __init__(self, data_dir: Path, dataset: DataSet, options: dict | None = None):
        self.data_dir = Path(data_dir)
        self.dataset = dataset
        self.options = dict(options or {})

    @classmethod
    def check_options(cls, values: dict) -> None:
        """Raise ValueError, in one line, if the options given (``values``: those of OPTIONS) do not go together."""

    @classmethod
    def option_values(cls, options: dict) -> dict:
        """What each of OPTIONS is in a run given ``options``, defaults included (recorded in results).

        >>> System.option_values({"server_workers": 2})
        {}
        """
        return {key: options.get(key, option.default) for key, option in cls.OPTIONS.items()}

    def version_text(self) -> str | None:
        """The software measured and its version, one line (``"pyoxigraph 0.4.11"``), recorded
        with every run as ``version``; None when the system cannot tell."""
        return None

    # -- the calls the runner times -------------------------------------
    def setup(self) -> None:
        """Create an empty repository holding only the parent container."""
        raise NotImplementedError

    def prepare(self, child: Child) -> Child:
        """The child as this system will send it, built before the clock starts
        (default: as the data set made it)."""
        return child

    def create_child(self, child: Child) -> None:
        """Store one child graph and its ``ldp:contains`` membership."""
        raise NotImplementedError

    def retrieve_parent(self) -> Retrieval:
        """Read the parent's whole representation (Turtle), as a client would."""
        raise NotImplementedError

    # -- operations of the other workloads (lakebench.workloads) ---------
    # A system that cannot do one raises NotApplicable (the default); a
    # workload asks :meth:`supports` before it is run, so such a system's
    # row says "not applicable" instead of failing.  Paths are relative to
    # the repository base, like ``Child.path``.

    @classmethod
    def supports(cls, operation: str) -> bool:
        """Whether this system implements ``operation`` (one of the methods below).

        >>> System.supports("create_binary")
        False
        """
        return getattr(cls, operation) is not getattr(System, operation)

    def create_binary(self, path: str, data: bytes, content_type: str) -> None:
        """Store ``data`` as a binary (LDP NonRDFSource) at ``path``, contained by its parent."""
        raise NotApplicable(f"{self.name} stores no binaries")

    def get_binary(self, path: str) -> bytes:
        """The bytes of the binary at ``path``."""
        raise NotApplicable(f"{self.name} stores no binaries")

    def create_container(self, path: str) -> None:
        """Create an empty container at ``path``, contained by the container its parent path names."""
        raise NotApplicable(f"{self.name} has no containers")

    def list_container(self, path: str) -> Retrieval:
        """Read the container at ``path`` as a client lists it (its ``ldp:contains`` included)."""
        raise NotApplicable(f"{self.name} has no containers")

    def create_resource(self, child: Child, path: str) -> None:
        """Store ``child``'s graph at ``path`` (not necessarily under the workload's parent)."""
        raise NotApplicable(f"{self.name} cannot place a graph at a path")

    def get_resource(self, path: str) -> Retrieval:
        """Read the RDF resource at ``path`` (its own triples, as N-Triples or Turtle)."""
        raise NotApplicable(f"{self.name} cannot read one resource")

    def replace_literals(self, path: str, replacements: list[tuple[str, str, str]]) -> None:
        """In the resource at ``path``, replace each ``(predicate IRI, old literal, new literal)``:
        over HTTP one SPARQL Update PATCH, in-process the same change through the store's API."""
        raise NotApplicable(f"{self.name} cannot update a resource")

    def query(self, sparql: str) -> list[tuple]:
        """The rows of a SPARQL SELECT over the repository's union of graphs, as tuples of strings."""
        raise NotApplicable(f"{self.name} has no SPARQL")

    # -- facts the runner reads outside the clock (after the driver's timing) --
    def triples_total(self, children: int | None = None) -> int | None:
        """Triples the repository holds now, or None if it cannot say.

        ``children``: how many of the data set's children were created (fewer
        than the data set's when a budget stopped the ingest; None: all)."""
        return None

    def internals(self) -> dict | None:
        """What the system reports of its own work, recorded as ``internals``
        (the in-process LMDB store: its batch commits); None when nothing.
        Read after :meth:`close`."""
        return None

    def pid(self) -> int:
        """The process whose CPU and memory are the system's cost."""
        return os.getpid()

    def disk_path(self) -> Path | None:
        """The directory whose size is the system's on-disk cost (None: in memory)."""
        return self.data_dir

    def close(self) -> None:
        """Release the repository; after this, disk size is final."""


class HttpSystem(System):
    """A system reached over HTTP: what a driver needs from it, and no more.

    Locust users and lakebench's client both send plain HTTP to
    ``base_url``; they never reach into a concrete system's attributes.
    """

    transport = "http"
    #: The repository's base URL (ends with ``/``); set by :meth:`connect`.
    base_url: str
    #: The parent container's URL; set by :meth:`connect`.
    parent_url: str

    def connect(self) -> None:
        """Start the server (if the system owns one) and open a client; the parent is not created
        (a Locust ingest creates it itself)."""
        raise NotImplementedError
