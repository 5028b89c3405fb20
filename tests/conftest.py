"""Shared fixtures."""
from __future__ import annotations

import pytest

from lakebench.workload import Workload


@pytest.fixture
def small_workload() -> Workload:
    return Workload(children=20, seed=7)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    # The default run deselects the micro-benchmarks and disables their
    # timing (addopts); selecting them with -m benchmark turns timing back on,
    # so `pytest -m benchmark` records what it runs.
    markexpr = config.getoption("markexpr", "") or ""
    if "benchmark" in markexpr and "not benchmark" not in markexpr and config.pluginmanager.hasplugin("benchmark"):
        config.option.benchmark_disable = False
