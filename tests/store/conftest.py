"""Fixtures of the store tests."""
from __future__ import annotations

import subprocess
import sys

import pytest
import rdflib.plugin
from rdflib.store import Store

from lakebench.store import LmdbStore

# The entry point (pyproject.toml) registers it once installed; tests must
# not depend on the installed metadata being fresh.
rdflib.plugin.register("LMDB", Store, "lakebench.store.plugin", "LmdbRdflibStore")


@pytest.fixture
def store(tmp_path):
    s = LmdbStore(tmp_path / "store", durability="nosync")
    yield s
    s.close()


def crash_with_logged_writes(path, writes: int = 10, first: int = 0, **options) -> None:
    """A process opens the store at ``path`` (``LmdbStore(path, **options)``), writes
    ``writes`` quads (subject http://ex.org/s, objects o{first}, o{first + 1}, ...) and
    dies without closing it: what no batch commit took is in the write-ahead log only."""
    code = ("import os, sys; from lakebench.store import LmdbStore; from lakebench.store.terms import iri\n"
            f"s = LmdbStore(sys.argv[1], **{options!r})\n"
            "S, P = iri('http://ex.org/s'), iri('http://ex.org/p')\n"
            f"for i in range({first}, {first + writes}): s.add([(S, P, iri(f'http://ex.org/o{{i}}'), S)])\n"
            "os._exit(0)  # no close: the batch was never committed\n")
    subprocess.run([sys.executable, "-c", code, str(path)], check=True)
