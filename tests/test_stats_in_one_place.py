"""Every statistic over measured times is computed in lakebench/results/stats.py and nowhere else.

The other modules call it, so that one figure has one formula wherever it
appears (results.json, the table, the report's charts).  This test reads
every other module of lakebench/ with :mod:`ast` and refuses: importing
``statistics``; calling numpy's ``median``, ``mean``, ``percentile``,
``quantile`` or ``std``; a module or class defining a function of its own
named as a statistic (``percentile``, ``median``...); and ``sum(...) / len(...)``,
a mean by hand.
"""
import ast
from pathlib import Path

import pytest

import lakebench

PACKAGE = Path(lakebench.__file__).parent
STATS = PACKAGE / "results" / "stats.py"
NUMPY = {"np", "numpy"}
NUMPY_STATISTICS = {"median", "mean", "average", "percentile", "quantile", "std", "var",
                    "nanmedian", "nanmean", "nanpercentile", "nanquantile", "nanstd"}
STATISTIC_NAMES = {"percentile", "quantile", "median", "mean", "fmean", "stdev", "pstdev", "variance"}


def _name(node: ast.AST) -> str:
    """``sum``, ``np.median``, ``statistics.fmean``: the dotted name a call is made through, else ""."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _name(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""


def _called(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Call) and _name(node.func) == name


def problems(source: str) -> list[str]:
    """What in ``source`` computes a statistic of its own, one line each (empty: nothing)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        line = getattr(node, "lineno", "?")
        if isinstance(node, ast.Import):
            found += [f"line {line}: import statistics" for a in node.names if a.name == "statistics"]
        elif isinstance(node, ast.ImportFrom) and node.module == "statistics":
            found.append(f"line {line}: from statistics import ...")
        elif isinstance(node, ast.Call):
            module, _, attr = _name(node.func).rpartition(".")
            if module in NUMPY and attr in NUMPY_STATISTICS or module == "statistics":
                found.append(f"line {line}: {module}.{attr}(...)")
        elif isinstance(node, (ast.Module, ast.ClassDef)):  # a helper's own name, not a nested formatter's
            found += [f"line {d.lineno}: def {d.name}" for d in node.body
                      if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d.name in STATISTIC_NAMES]
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            if (_called(node.left, "sum") or _called(node.left, "math.fsum")) and _called(node.right, "len"):
                found.append(f"line {line}: sum(...) / len(...)")
    return found


def _modules() -> list[Path]:
    return [path for path in sorted(PACKAGE.rglob("*.py")) if path != STATS]


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_statistic_outside_stats(path):
    found = problems(path.read_text(encoding="utf-8"))
    assert not found, f"{path.relative_to(PACKAGE.parent)} computes statistics itself (call "\
                      f"lakebench.results.stats instead): {'; '.join(found)}"


@pytest.mark.parametrize("source", [
    "import statistics\nx = statistics.median(v)",
    "from statistics import fmean",
    "import numpy as np\nx = np.median(v)",
    "x = numpy.percentile(v, 95)",
    "x = sum(v) / len(v)",
    "def median(v):\n    v = sorted(v)\n    return v[len(v) // 2]",
    "class Data:\n    def percentile(self, q):\n        return q",
])
def test_each_kind_is_caught(source):
    assert problems(source)


def test_calling_stats_is_fine():
    assert not problems("from lakebench.results import stats\n"
                        "x = stats.median(v), stats.percentile(sorted(v), 95), stats.mean(v)\n"
                        "y = sum(v) / count\n")
