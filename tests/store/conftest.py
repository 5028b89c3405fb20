"""Fixtures of the store tests."""
from __future__ import annotations

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
