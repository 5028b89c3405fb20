"""Run the examples in the modules' docstrings."""
import doctest
import importlib

import pytest

MODULES = ["lakebench.argtypes", "lakebench.workload", "lakebench._workload", "lakebench.prefetch", "lakebench.runner",
           "lakebench.results", "lakebench.monitor", "lakebench.report.fmt", "lakebench.report.charts", "lakebench.locust.dispensing",
           "lakebench.locust.ingest", "lakebench.locust.record", "lakebench.report.seed",
           "lakebench.systems.lakesuperior", "lakebench.process", "lakebench.compare",
           "lakebench.workloads", "lakebench.workloads.base", "lakebench.systems.base", "lakebench.systems.ldp",
           "lakebench.systems", "lakebench.server.serving"]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    result = doctest.testmod(importlib.import_module(name))
    assert result.attempted > 0
    assert result.failed == 0
