"""Registry of workloads: name -> ("module:Class", one line for ``--help``).

A workload is what is done to a system and checked afterwards: the seed's
flat container (``flat``), binaries, updates, reads, a hierarchy, mixed
users, versions, queries.  Adding one is one module in this package and one line
here, like :mod:`lakebench.systems`.  Modules are imported when their
workload is run (or its options are listed), so they import nothing heavy
at module level.
"""
from __future__ import annotations

from lakebench.systems import load_target

WORKLOADS: dict[str, tuple[str, str]] = {
    "flat": ("lakebench.workloads.flat:Flat",
             "the seed: N children PUT under one parent container, then the parent read"),
    "binaries": ("lakebench.workloads.binaries:Binaries",
                 "N binaries of --binary-size bytes PUT under one container, a sample read back and verified"),
    "update": ("lakebench.workloads.update:Update",
               "a flat ingest, then random children's literals replaced (SPARQL Update PATCH) and checked"),
    "read": ("lakebench.workloads.read:Read",
             "a flat ingest, then random children read one at a time (GET), warm and cold"),
    "deep": ("lakebench.workloads.deep:Deep",
             "a hierarchy of containers (depth x fan-out), one leaf each at the bottom; "
             "top, middle and leaf read as it grows"),
    "mixed": ("lakebench.workloads.mixed:Mixed",
              "Locust users creating, patching and reading children at once for a while (HTTP systems)"),
    "versions": ("lakebench.workloads.versions:Versions",
                 "a flat ingest, then versions of some children taken in rounds (change, version), "
                 "listed, and one of each read back and checked"),
    "query": ("lakebench.workloads.query:Queries",
              "N children ingested, then fixed SPARQL queries (counts, a literal lookup, a join) timed and checked"),
}

DEFAULT = "flat"


def target(name: str) -> str:
    """The ``"module:Class"`` registered as ``name``."""
    try:
        return WORKLOADS[name][0]
    except KeyError:
        raise KeyError(f"unknown workload {name!r}; known: {', '.join(WORKLOADS)}") from None


def load(name: str):
    """The :class:`~lakebench.workloads.base.Workload` class registered as ``name``."""
    return load_target(target(name))


def summaries() -> dict[str, str]:
    """One line per workload, for ``lakebench run --help``.

    >>> summaries()["flat"].startswith("the seed")
    True
    """
    return {name: line for name, (_, line) in WORKLOADS.items()}
