"""The Python facade: Turtle ingest, serialization, transactions, check()."""
from __future__ import annotations

import pytest
import rdflib
from rdflib.compare import isomorphic

from lakebench.store import LmdbStore, ParseError, check
from lakebench.store.terms import iri

LDP = "http://www.w3.org/ns/ldp#"


def test_turtle_ingest_matches_ntriples(tmp_path, small_workload):
    with LmdbStore(tmp_path / "t", durability="nosync") as a, LmdbStore(tmp_path / "n", durability="nosync") as b:
        for child in list(small_workload)[:4]:
            assert a.ingest(child.turtle, child.uri, format="turtle") == 200
            b.ingest(child.ntriples, child.uri)
        for child in list(small_workload)[:4]:
            assert a.serialize(graph=child.uri, format="nt") == b.serialize(graph=child.uri, format="nt")


def test_full_turtle_through_the_fallback_parser(store):
    doc = b"""@base <http://ex.org/base/> .
    @prefix : <http://ex.org/ns#> .
    <a> :p ( 1 2.5 "three"@en ) ; :q [ :r true ; :s '''long
    "quoted" string''' ] ; a :Thing .
    """
    n = store.ingest(doc, "http://ex.org/g", format="turtle")
    expected = rdflib.Graph().parse(data=doc, format="turtle")
    assert n == len(expected)
    got = rdflib.Graph().parse(data=store.serialize(graph="http://ex.org/g", format="turtle"), format="turtle")
    assert isomorphic(expected, got)


def test_malformed_turtle_raises_and_writes_nothing(store):
    with pytest.raises(ParseError) as err:
        store.ingest(b"<a> <b> <c> .\n<a> <b> .\n", "http://ex.org/g", format="turtle")
    assert err.value.line == 2
    assert "line 2" in str(err.value)
    assert len(store) == 0


def test_containment_and_parent_turtle(store, small_workload):
    parent = small_workload.parent_uri
    for child in small_workload:
        store.ingest(child.ntriples, child.uri, extra=[(parent, LDP + "contains", child.uri, parent)])
    body = store.serialize(graph=parent, format="turtle", prefixes={"ldp": LDP})
    assert body.startswith(b"@prefix ldp: <http://www.w3.org/ns/ldp#> .\n")
    g = rdflib.Graph().parse(data=body, format="turtle")
    assert set(g.objects(rdflib.URIRef(parent), rdflib.URIRef(LDP + "contains"))) == {
        rdflib.URIRef(c.uri) for c in small_workload}
    assert store.count(parent, LDP + "contains", None, parent) == 20
    assert len(store) == 20 * 201


def test_serialization_streams_in_chunks(store, small_workload):
    for child in small_workload:
        store.ingest(child.ntriples, child.uri)
    with store.read() as txn:
        chunks = list(txn.serialize(format="nt", chunk_size=4096))
    assert len(chunks) > 10
    assert all(len(c) < 4096 + 2000 for c in chunks)
    assert len(rdflib.Graph().parse(data=b"".join(chunks), format="nt")) == 20 * 200
    assert b"".join(store.iter_serialize(format="nt")) == b"".join(chunks)


@pytest.mark.parametrize("log", [True, False], ids=["log", "commit-per-write"])
def test_pending_transaction_commit_and_rollback(tmp_path, log):
    s, p = iri("http://ex.org/s"), iri("http://ex.org/p")
    with LmdbStore(tmp_path / "s", log=log) as store:
        store.begin()
        store.add([(s, p, iri("http://ex.org/1"), s)])
        assert store.count(s) == 1  # seen through the pending transaction
        with store.read() as other:
            # With a log, the store's readers share its write batch, pending
            # writes included; without, a read is a snapshot of commits.
            assert other.count(s) == (1 if log else 0)
        store.rollback()
        assert store.count(s) == 0
        store.begin()
        store.add([(s, p, iri("http://ex.org/2"), s)])
        store.ingest(b"<http://ex.org/s> <http://ex.org/p> <http://ex.org/3> .\n", s)
        store.commit()
        store.begin()
        store.remove(s, None, iri("http://ex.org/2"))
    # close() committed the pending removal
    with LmdbStore(tmp_path / "s", log=log) as store:
        assert [q[2] for q in store.quads(s)] == [iri("http://ex.org/3")]


def test_nosync_and_durable_modes(tmp_path):
    with LmdbStore(tmp_path / "a") as a, LmdbStore(tmp_path / "b", durability="nosync") as b:
        assert (a.durability, b.durability) == ("durable", "nosync")


def test_check_of_a_healthy_store(tmp_path, small_workload):
    with LmdbStore(tmp_path / "s") as store:
        for child in small_workload:
            store.ingest(child.ntriples, child.uri)
        store.remove(graph=small_workload.child(3).uri)
        assert store.check() == []
    problems = check(tmp_path / "s")
    assert problems == []
    assert problems.summary["quads"] == 19 * 200
    assert problems.summary["graphs"] == 19
    assert problems.summary["bytes"] > 0


def test_readonly_store(tmp_path):
    with LmdbStore(tmp_path / "s") as store:
        store.ingest(b"<http://ex.org/s> <http://ex.org/p> <http://ex.org/o> .\n", "http://ex.org/g")
    with LmdbStore(tmp_path / "s", readonly=True) as store:
        assert len(store) == 1
        with pytest.raises(Exception):
            store.ingest(b"<http://ex.org/s> <http://ex.org/p> <http://ex.org/x> .\n", "http://ex.org/g")
