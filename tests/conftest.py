"""Shared fixtures."""
from __future__ import annotations

import pytest

from lakebench.workload import Workload


@pytest.fixture
def small_workload() -> Workload:
    return Workload(children=20, seed=7)
