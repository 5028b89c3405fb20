"""Run the examples in the store modules' docstrings."""
import doctest
import importlib

import pytest

MODULES = ["lakebench.store", "lakebench.store.terms", "lakebench.store.wal", "lakebench.store.plugin",
           "lakebench.store.logsync", "lakebench.store.tally", "lakebench._store",
           "lakebench._codec", "lakebench._rdfwriter", "lakebench._tables"]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.failed == 0
