"""Micro-benchmarks of the LMDB store (deselected by default).

Run: ``pytest tests/benchmarks/test_store_bench.py -m benchmark --benchmark-enable``.
"""
from __future__ import annotations

import itertools

import pyoxigraph as ox
import pytest
from rdflib import Literal

from lakebench import _store
from lakebench.store import LmdbStore
from lakebench.store.terms import decode, encode
from lakebench.dataset import LDP_CONTAINS, DataSet

LDP = "http://www.w3.org/ns/ldp#"
W = DataSet(children=10_000, seed=0)
pytestmark = pytest.mark.benchmark


def _filled(path, n):
    store = LmdbStore(path, durability="nosync")
    parent = W.parent_uri
    for i in range(n):
        child = W.child(i)
        store.ingest(child.ntriples, child.uri, extra=[(parent, LDP_CONTAINS, child.uri, parent)])
    return store


@pytest.fixture(scope="module")
def store_1k(tmp_path_factory):
    store = _filled(tmp_path_factory.mktemp("s1k"), 1_000)
    yield store
    store.close()


@pytest.fixture(scope="module")
def store_10k(tmp_path_factory):
    store = _filled(tmp_path_factory.mktemp("s10k"), 10_000)
    yield store
    store.close()


@pytest.mark.benchmark(group="ingest one child")
@pytest.mark.parametrize("durability", ["nosync", "durable"])
def test_ingest_child_ntriples(benchmark, store_1k, tmp_path, durability):
    store = LmdbStore(tmp_path / "s", durability=durability)
    children = itertools.cycle([W.child(i) for i in range(1_000)])
    counter = itertools.count()

    def ingest():
        child = next(children)  # each round a new graph name: always 200 new quads
        store.ingest(child.ntriples, f"{child.uri}/{next(counter)}")

    benchmark(ingest)
    store.close()


@pytest.mark.benchmark(group="ingest one child")
def test_ingest_child_turtle(benchmark, tmp_path):
    store = LmdbStore(tmp_path / "s", durability="nosync")
    children = itertools.cycle([W.child(i) for i in range(1_000)])
    counter = itertools.count()

    def ingest():
        child = next(children)
        store.ingest(child.turtle, f"{child.uri}/{next(counter)}", format="turtle", base=child.uri)

    benchmark(ingest)
    store.close()


@pytest.mark.benchmark(group="ingest one child")
def test_ingest_child_oxigraph_peer(benchmark, tmp_path):
    store = ox.Store(str(tmp_path / "ox"))
    children = itertools.cycle([W.child(i) for i in range(1_000)])
    counter = itertools.count()

    def ingest():
        child = next(children)
        graph = ox.NamedNode(f"{child.uri}/{next(counter)}")
        store.extend([ox.Quad(q.subject, q.predicate, q.object, graph)
                      for q in ox.parse(child.ntriples, format=ox.RdfFormat.N_TRIPLES)])

    benchmark(ingest)


def _retrieve(store):
    return store.serialize(graph=W.parent_uri, format="turtle", prefixes={"ldp": LDP})


@pytest.mark.benchmark(group="parent retrieval")
def test_parent_retrieval_1k(benchmark, store_1k):
    assert _retrieve(store_1k).count(b"/parent/c0") == 1_000
    benchmark(_retrieve, store_1k)


@pytest.mark.benchmark(group="parent retrieval")
def test_parent_retrieval_10k(benchmark, store_10k):
    assert _retrieve(store_10k).count(b"/parent/c0") == 10_000
    benchmark(_retrieve, store_10k)


TERMS = [Literal("chat", lang="fr"), Literal("x\ny\"z 😀"), Literal("42", datatype=Literal(1).datatype)]


@pytest.mark.benchmark(group="term codec")
def test_encode_decode_rdflib_terms(benchmark):
    benchmark(lambda: [decode(encode(t)) for t in TERMS])


@pytest.mark.benchmark(group="term codec")
def test_render_ntriples_terms(benchmark):
    encoded = [encode(t) for t in TERMS]
    benchmark(lambda: [_store.render_ntriples_term(t) for t in encoded])


@pytest.mark.benchmark(group="term codec")
def test_term_id_lookup(benchmark, store_1k):
    terms = [q[2] for q in store_1k.quads(graph=W.child(500).uri)]

    def lookup():
        with store_1k.read() as txn:
            return [txn.term_id(t) for t in terms]

    assert all(benchmark(lookup))
