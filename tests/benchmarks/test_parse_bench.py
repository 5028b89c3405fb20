"""Micro-benchmarks of parsing one child (200 triples): the parser decides
whether a Python repository can be fast.

Run: ``pytest tests/benchmarks -m benchmark --benchmark-enable``.
"""
from __future__ import annotations

import pyoxigraph as ox
import pytest
import rdflib

from lakebench import _store
from lakebench.store.terms import iri
from lakebench.dataset import DataSet

pytestmark = pytest.mark.benchmark
CHILD = DataSet(children=10, seed=0).child(7)


@pytest.mark.benchmark(group="parse one child")
@pytest.mark.parametrize("form", ["turtle", "nt"])
def test_rdflib(benchmark, form):
    data = CHILD.turtle if form == "turtle" else CHILD.ntriples
    benchmark(lambda: rdflib.Graph().parse(data=data, format=form, publicID=CHILD.uri))


@pytest.mark.benchmark(group="parse one child")
@pytest.mark.parametrize("form", ["turtle", "nt"])
def test_pyoxigraph(benchmark, form):
    data, fmt = (CHILD.turtle, ox.RdfFormat.TURTLE) if form == "turtle" else (CHILD.ntriples, ox.RdfFormat.N_TRIPLES)
    benchmark(lambda: list(ox.parse(data, format=fmt, base_iri=CHILD.uri)))


@pytest.mark.benchmark(group="parse one child")
def test_store_parser_in_an_aborted_transaction(benchmark, tmp_path):
    # The store's N-Triples parser, straight to term ids; aborting keeps the
    # store empty, so every round parses and resolves the same 200 triples.
    env = _store.Environment(tmp_path, durability="nosync")
    graph = iri(CHILD.uri)

    def parse():
        txn = env.begin(write=True)
        try:
            txn.ingest_ntriples(CHILD.ntriples, graph)
        finally:
            txn.abort()

    benchmark(parse)
    env.close()
