"""Micro-benchmarks of the data set: generating and serializing one child.

Run: ``pytest tests/benchmarks/test_workload_bench.py -m benchmark --benchmark-enable``.

``test_child`` is the figure of issue 15 and of docs/store-history.rst ("The
harness's own cost"): one child built as the runner needs it
(``DataSet.child`` plus its N-Triples and Turtle), a fresh index each round
since both serializations are cached per child.  The others split it:
drawing the literals (C), and laying out one serialization around literals
already drawn (Python).
"""
from __future__ import annotations

import itertools

import pytest

from lakebench.dataset import DataSet

pytestmark = pytest.mark.benchmark
LENGTHS = [64, 1024]


@pytest.mark.benchmark(group="workload: child + N-Triples + Turtle")
@pytest.mark.parametrize("literal_length", LENGTHS)
def test_child(benchmark, literal_length):
    w = DataSet(children=1_000_000, seed=0, literal_length=literal_length)
    indices = itertools.count()

    def build():
        child = w.child(next(indices))
        return child.ntriples, child.turtle

    ntriples, turtle = benchmark(build)
    assert ntriples.count(b"\n") == 200 and turtle.startswith(b"@prefix")


@pytest.mark.benchmark(group="workload: literals")
@pytest.mark.parametrize("literal_length", LENGTHS)
def test_draw_literals(benchmark, literal_length):
    w = DataSet(children=1_000_000, seed=0, literal_length=literal_length)
    indices = itertools.count()
    literals = benchmark(lambda: w.child(next(indices)).escaped_literals)
    assert len(literals) == 100


@pytest.mark.benchmark(group="workload: serialization")
@pytest.mark.parametrize("form", ["turtle", "ntriples"])
def test_serialize_child(benchmark, form):
    w = DataSet(children=1_000_000, seed=0)
    children = iter([w.child(i) for i in range(5_000)])

    def drawn():  # a fresh child, its literals drawn outside the measure
        child = next(children)
        child.escaped_literals  # noqa: B018
        return (child,), {}

    benchmark.pedantic(lambda child: getattr(child, form), setup=drawn, rounds=2_000)
