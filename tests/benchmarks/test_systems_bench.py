"""Micro-benchmarks through the System interface, for every in-process system:
creating one child and retrieving the parent of 1,000 (and, for the fast
ones, 10,000) children.  ``lakebench run`` is the end-to-end benchmark; these
isolate one call.

Run: ``pytest tests/benchmarks -m benchmark --benchmark-enable``.
"""
from __future__ import annotations

import pytest

from lakebench import systems
from lakebench.dataset import DataSet

pytestmark = pytest.mark.benchmark
IN_PROCESS = ["lmdb-nosync", "lmdb", "oxigraph", "memory"]


def _filled(name, path, workload, n):
    system = systems.load(name)(path, workload)
    system.setup()
    for index in range(n):
        system.create_child(workload.child(index))
    return system


@pytest.mark.benchmark(group="system: create one child (1,000 present)")
@pytest.mark.parametrize("name", IN_PROCESS)
def test_create_child(benchmark, tmp_path, name):
    workload = DataSet(children=100_000, seed=0)
    system = _filled(name, tmp_path, workload, 1_000)
    upcoming = iter(range(1_000, workload.children))

    def next_child():
        child = workload.child(next(upcoming))
        child.ntriples, child.turtle  # noqa: B018 - serialized outside the timing
        return (child,), {}

    benchmark.pedantic(system.create_child, setup=next_child, rounds=200)
    system.close()


@pytest.mark.benchmark(group="system: retrieve the parent")
@pytest.mark.parametrize("children", [1_000, 10_000])
@pytest.mark.parametrize("name", IN_PROCESS)
def test_retrieve_parent(benchmark, tmp_path, name, children):
    if children == 10_000 and name in ("memory", "lmdb"):
        pytest.skip("10,000 children: the fast systems only (memory and durable lmdb take minutes to fill)")
    workload = DataSet(children=children, seed=0)
    system = _filled(name, tmp_path, workload, children)
    retrieval = benchmark(system.retrieve_parent)
    assert retrieval.size > 40 * children
    system.close()
