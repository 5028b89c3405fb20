"""Micro-benchmarks of the data set: generating and serializing one child.

Run: ``pytest tests/benchmarks -m benchmark --benchmark-enable``.
"""
from __future__ import annotations

import itertools

import pytest

from lakebench.workload import Workload

pytestmark = pytest.mark.benchmark
W = Workload(children=1_000_000, seed=0)


@pytest.mark.benchmark(group="workload")
def test_generate_child(benchmark):
    indices = itertools.count()
    benchmark(lambda: W.child(next(indices)))


@pytest.mark.benchmark(group="workload")
@pytest.mark.parametrize("form", ["turtle", "ntriples"])
def test_serialize_child(benchmark, form):
    children = iter([W.child(i) for i in range(5_000)])
    # A fresh child each round: the serializations are cached per child.
    benchmark.pedantic(lambda child: getattr(child, form), setup=lambda: ((next(children),), {}),
                       rounds=2_000)
