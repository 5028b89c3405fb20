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
    s = LmdbStore(tmp_path / "store", durable=False)
    yield s
    s.close()


def crash_with_logged_writes(path, writes: int = 10) -> None:
    """A process writes ``writes`` quads (subject http://ex.org/s) to the store at
    ``path`` and dies without closing it: they are in the write-ahead log only."""
    code = ("import os, sys; from lakebench.store import LmdbStore; from lakebench.store.terms import iri\n"
            "s = LmdbStore(sys.argv[1])\n"
            "S, P = iri('http://ex.org/s'), iri('http://ex.org/p')\n"
            f"for i in range({writes}): s.add([(S, P, iri(f'http://ex.org/o{{i}}'), S)])\n"
            "os._exit(0)  # no close: the batch was never committed\n")
    subprocess.run([sys.executable, "-c", code, str(path)], check=True)
