"""Run the examples in the docstrings of every lakebench module that has some.

Modules are found, not listed: any module whose source holds a ``>>>``
example is tested, so a new module's examples cannot be forgotten.  The
store's and the server's modules are tested beside their own tests
(tests/store/test_doctests.py, tests/server/); compiled modules are named.
"""
import doctest
import importlib
from pathlib import Path

import pytest

import lakebench

PACKAGE = Path(lakebench.__file__).parent
ELSEWHERE = ("lakebench.store", "lakebench.server")
COMPILED = ["lakebench._workload"]


def _with_examples() -> list[str]:
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = ".".join(("lakebench", *path.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(".__init__")
        if name.startswith(ELSEWHERE) or ">>> " not in path.read_text(encoding="utf-8"):
            continue
        names.append(name)
    return names


MODULES = _with_examples() + COMPILED


def test_the_modules_are_found():
    assert {"lakebench.dataset", "lakebench.results", "lakebench.figures"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0
    assert result.failed == 0
