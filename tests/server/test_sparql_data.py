"""Updates made only of INSERT DATA and DELETE DATA are applied from their parse
(lakebench._sparql.prepare_update), not by the engine: the difference must be the
engine's, on every such update (pyoxigraph's Store.update is the oracle)."""
from __future__ import annotations

import threading

import pyoxigraph as ox
from hypothesis import given, settings
from hypothesis import strategies as st

from lakebench._sparql import prepare_update
from lakebench.server.sandbox import ALL_NAMED, OK, evaluate

BASE = "http://e/r"
BEFORE = "".join(f'<{BASE}> <http://e/p{i % 3}> "v{i}" .\n' for i in range(6)).encode() +\
    f'<{BASE}> <http://e/q> <http://e/o> .\n<{BASE}> <http://e/t> "x"@en-us .\n<{BASE}> <http://e/n> "1"^^<http://www.w3.org/2001/XMLSchema#integer> .\n'.encode()

OBJECTS = ['"v0"', '"v1"', '"v5"', '"v9"', '<http://e/o>', '"x"@en-US', '"x"@en-us', "1", '"1"', "01",
           '"a\\"b\\n"', '"é\\u00e9"', '"""long\nline"""']
PREDICATES = ["<http://e/p0>", "<http://e/p1>", "<http://e/p2>", "<http://e/q>", "<http://e/t>", "<http://e/n>"]


@st.composite
def data_updates(draw) -> str:
    operations = []
    for k in range(draw(st.integers(1, 4))):
        triples = draw(st.lists(st.tuples(st.sampled_from(PREDICATES), st.sampled_from(OBJECTS)), max_size=5))
        if draw(st.booleans()):
            body = " ".join(f"<> {p} {o} ." for p, o in triples)
            if draw(st.booleans()):
                # A label names one node in one operation only (SPARQL's rule).
                body += f" <> <http://e/b> [ <http://e/c> 1 ] . _:x{k} <http://e/d> _:x{k} ."
            operations.append(f"INSERT DATA {{ {body} }}")
        else:
            operations.append("DELETE DATA { " + " ".join(f"<> {p} {o} ." for p, o in triples) + " }")
    return " ;\n".join(operations)


def _on_a_large_stack(function, *args):
    result = []
    threading.stack_size(1 << 30)
    try:
        thread = threading.Thread(target=lambda: result.append(function(*args)))
        thread.start()
        thread.join()
    finally:
        threading.stack_size(0)
    return result[0]


def _ground(triples) -> tuple[set, int]:
    """The triples without blank nodes, and how many have one (labels are fresh on both sides)."""
    ground = {t for t in triples if not isinstance(t.subject, ox.BlankNode) and not isinstance(t.object, ox.BlankNode)}
    return ground, len(triples) - len(ground)


TYPED = ("1 ", "01 ", '"1"^^')  # a typed literal: the engine may store its canonical form


@settings(max_examples=300, deadline=None)
@given(update=data_updates())
def test_the_difference_is_the_engines(update):
    prepared = _on_a_large_stack(prepare_update, update, BASE, BEFORE)
    typed = any(f"> {t}" in update for t in TYPED) or "<http://e/c> 1 " in update
    assert isinstance(prepared, tuple) != typed  # plain and language literals only: applied from the parse
    status, removed, added, named = _on_a_large_stack(evaluate, update, BASE, BEFORE)
    assert status == (OK if typed else ALL_NAMED)
    nt = ox.RdfFormat.N_TRIPLES
    if status == OK:  # DELETE DATA names every triple it removes, on the engine's path too
        assert {q.triple for q in ox.parse(named, format=nt)} == {q.triple for q in ox.parse(removed, format=nt)}
    engine = ox.Store()
    engine.extend(ox.parse(BEFORE, format=ox.RdfFormat.N_TRIPLES))
    old = {q.triple for q in engine}
    engine.update(update, base_iri=BASE)
    new = {q.triple for q in engine}
    assert {q.triple for q in ox.parse(removed, format=nt)} == old - new
    assert _ground([q.triple for q in ox.parse(added, format=nt)]) == _ground(list(new - old))


def test_other_updates_go_to_the_engine_as_canonical_text():
    text = _on_a_large_stack(prepare_update, "DELETE WHERE { <> <http://e/q> ?o }", BASE, BEFORE)
    assert isinstance(text, str) and "<http://e/r> <http://e/q> ?o" in text
