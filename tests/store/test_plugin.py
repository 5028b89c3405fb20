"""The rdflib Store plugin: the Store API, and SPARQL answers equal to rdflib's Memory."""
from __future__ import annotations

import pytest
from rdflib import BNode, Dataset, Graph, Literal, Namespace, URIRef
from rdflib.compare import isomorphic
from rdflib import namespace
from rdflib.namespace import RDF

EX = Namespace("http://ex.org/")

DATA = """
@prefix ex: <http://ex.org/> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
ex:alice a ex:Person ; ex:name "Alice" ; ex:age 31 ; ex:knows ex:bob, ex:carol ;
    ex:bio "line one\\nline \\"two\\" \\\\ done"@en .
ex:bob a ex:Person ; ex:name "Bob"@en, "Robert"@fr ; ex:age 27 ; ex:knows ex:alice .
ex:carol a ex:Robot ; ex:name "Carol 🤖" ; ex:age "12.5"^^xsd:decimal ; ex:made [ ex:by ex:bob ] .
"""

QUERIES = [
    "SELECT ?s ?n WHERE { ?s ex:name ?n }",
    "SELECT ?s WHERE { ?s a ex:Person }",
    "SELECT ?a ?b WHERE { ?a ex:knows ?b . ?b ex:knows ?a }",
    "SELECT ?s (SUM(?age) AS ?total) WHERE { ?s ex:age ?age } GROUP BY ?s",
    "SELECT ?s WHERE { ?s ex:age ?age FILTER(?age > 26) }",
    "SELECT ?n WHERE { ?s ex:name ?n FILTER(lang(?n) = 'fr') }",
    "SELECT ?p (COUNT(*) AS ?c) WHERE { ?s ?p ?o } GROUP BY ?p",
    "SELECT ?s WHERE { ?s ex:made ?m . ?m ex:by ex:bob }",
    "SELECT ?o WHERE { ex:alice ?p ?o } ORDER BY ?o",
    "ASK { ex:bob ex:knows ex:carol }",
    "SELECT ?s WHERE { ?s ?p 'Alice' }",
    "SELECT ?g ?s WHERE { GRAPH ?g { ?s a ex:Person } }",
    "SELECT ?s WHERE { OPTIONAL { ?s ex:unknown ?x } ?s a ex:Robot }",
    "SELECT ?bio WHERE { ex:alice ex:bio ?bio }",
    "CONSTRUCT { ?b ex:knownBy ?a } WHERE { ?a ex:knows ?b }",
]


def _datasets(path):
    lmdb = Dataset(store="LMDB")
    lmdb.open(str(path), create=True)
    memory = Dataset(store="Memory")
    for ds in (lmdb, memory):
        ds.graph(EX.g1).parse(data=DATA, format="turtle")
        ds.graph(EX.g2).add((EX.dave, RDF.type, EX.Person))
        ds.default_graph.add((EX.alice, EX.inDefault, Literal(True)))
    lmdb.commit()
    return lmdb, memory


def _rows(result):
    if result.type == "ASK":
        return result.askAnswer
    if result.type == "CONSTRUCT":
        return result.graph
    return sorted(tuple(str(v) if not isinstance(v, BNode) else "_" for v in row) for row in result)


@pytest.mark.parametrize("query", QUERIES)
def test_sparql_matches_rdflib_memory(tmp_path, query):
    lmdb, memory = _datasets(tmp_path / "s")
    try:
        got = lmdb.query(query, initNs={"ex": EX})
        expected = memory.query(query, initNs={"ex": EX})
        if expected.type == "CONSTRUCT":
            assert isomorphic(got.graph, expected.graph)
        else:
            assert _rows(got) == _rows(expected)
    finally:
        lmdb.close()


def test_sparql_update_and_persistence(tmp_path):
    lmdb, memory = _datasets(tmp_path / "s")
    update = """DELETE { GRAPH ?g { ?s ex:age ?a } } INSERT { GRAPH ?g { ?s ex:age 99 } }
                WHERE { GRAPH ?g { ?s ex:age ?a FILTER(?a < 30) } }"""
    lmdb.update(update, initNs={"ex": EX})
    memory.update(update, initNs={"ex": EX})
    lmdb.close()
    again = Dataset(store="LMDB")
    again.open(str(tmp_path / "s"), create=False)
    q = "SELECT ?s ?a WHERE { GRAPH ?g { ?s ex:age ?a } }"
    assert _rows(again.query(q, initNs={"ex": EX})) == _rows(memory.query(q, initNs={"ex": EX}))
    assert len(again) == len(memory)
    again.close()


def test_store_api(tmp_path):
    ds = Dataset(store="LMDB")
    ds.open(str(tmp_path / "s"), create=True)
    g = ds.graph(EX.g)
    triples = [(EX.s, EX.p, Literal("x")), (EX.s, EX.p, Literal("7", datatype=namespace.XSD.integer)),
               (EX.s, EX.q, BNode("b0")), (BNode("b0"), EX.p, Literal("chat", lang="fr"))]
    ds.addN((s, p, o, g) for s, p, o in triples)
    assert len(g) == 4
    assert set(g) == set(triples)
    assert set(g.triples((EX.s, EX.p, None))) == set(triples[:2])
    assert list(g.objects(BNode("b0"), EX.p)) == [Literal("chat", lang="fr")]
    assert EX.g in {c.identifier for c in ds.graphs()}
    ds.graph(EX.empty)
    assert EX.empty in {c.identifier for c in ds.graphs()}  # graph-aware: empty graphs exist
    ds.commit()
    g.remove((EX.s, None, None))
    assert len(g) == 1
    ds.rollback()
    assert len(g) == 4  # the removal was pending
    ds.bind("ex", EX)
    assert ds.store.namespace("ex") == URIRef(EX)
    assert ds.store.prefix(EX) == "ex"
    ds.remove_graph(g)
    assert len(g) == 0
    ds.close()
    assert ds.store.open(str(tmp_path / "nope"), create=False) == -1  # NO_STORE


def test_graph_with_an_identifier(tmp_path):
    g = Graph(store="LMDB", identifier=EX.g)
    g.open(str(tmp_path / "s"), create=True)
    g.parse(data=DATA, format="turtle")
    n = len(g)
    g.close()
    g = Graph(store="LMDB", identifier=EX.g)
    g.open(str(tmp_path / "s"))
    assert len(g) == n
    assert isomorphic(g, Graph().parse(data=DATA, format="turtle"))
    g.close()


def test_writes_send_rdflib_events(tmp_path):
    from rdflib.store import TripleAddedEvent, TripleRemovedEvent

    ds = Dataset(store="LMDB")
    ds.open(str(tmp_path / "s"), create=True)
    g = ds.graph(EX.g)
    added, removed = [], []
    ds.store.dispatcher.subscribe(TripleAddedEvent, lambda e: added.append((e.triple, e.context)))
    ds.store.dispatcher.subscribe(TripleRemovedEvent, lambda e: removed.append((e.triple, e.context)))
    triples = [(EX.s, EX.p, Literal("x")), (EX.s, EX.q, EX.o)]
    ds.addN((s, p, o, g) for s, p, o in triples)  # a generator: read once, for the store and the events
    assert [t for t, _ in added] == triples
    assert all(c.identifier == EX.g for _, c in added)
    g.add((EX.s, EX.r, EX.o))
    assert added[-1][0] == (EX.s, EX.r, EX.o)
    g.remove((EX.s, EX.p, None))
    assert removed == [((EX.s, EX.p, None), g)]
    assert len(g) == 2
    ds.close()
