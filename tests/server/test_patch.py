"""PATCH with application/sparql-update: the four update forms, preconditions, refusals."""
from __future__ import annotations

import itertools

import pyoxigraph as ox
import pytest

from .conftest import SERVER_DATES, check_store

LDP = "http://www.w3.org/ns/ldp#"
FEDORA = "http://fedora.info/definitions/v4/repository#"
XSD = "http://www.w3.org/2001/XMLSchema#"
TTL = {"Content-Type": "text/turtle"}
UPDATE = {"Content-Type": "application/sparql-update"}
NT = {"Accept": "application/n-triples"}
AS_SOURCE = {**TTL, "Link": f'<{LDP}RDFSource>; rel="type"'}


def own(server, path) -> set[tuple[str, str, str]]:
    """(s, p, o) of the resource's own triples (server-managed left out), as strings."""
    body = server.request("GET", path, headers=NT).body
    return {(str(t.subject), str(t.predicate), str(t.object)) for t in ox.parse(body, format=ox.RdfFormat.N_TRIPLES)
            if not t.predicate.value.startswith(LDP) and not str(t.object).startswith(f"<{LDP}")
            and t.predicate.value not in SERVER_DATES}


def patch(server, path, update, headers=None):
    return server.request("PATCH", path, update, {**UPDATE, **(headers or {})})


_NAMES = itertools.count()


@pytest.fixture
def doc(server):
    path = f"/patch-{next(_NAMES)}"
    r = server.request("PUT", path, '<> <http://e/p> "1", "2" ; <http://e/q> <other> .', AS_SOURCE)
    assert r.status == 201
    return path


def test_insert_data(server, doc):
    before = server.request("HEAD", doc).header("ETag")
    r = patch(server, doc, 'INSERT DATA { <> <http://e/p> "3" ; <http://e/r> [ <http://e/s> "nested" ] }')
    assert r.status == 204 and r.header("ETag") not in (None, before)
    assert server.request("HEAD", doc).header("ETag") == r.header("ETag")
    got = own(server, doc)
    assert (f"<{server.base}{doc[1:]}>", "<http://e/p>", '"3"') in got
    assert any(p == "<http://e/s>" and o == '"nested"' for _, p, o in got)
    assert len(got) == 6


def test_delete_data(server, doc):
    assert patch(server, doc, 'DELETE DATA { <> <http://e/p> "1" }').status == 204
    assert {o for _, p, o in own(server, doc) if p == "<http://e/p>"} == {'"2"'}


def test_delete_where(server, doc):
    assert patch(server, doc, "DELETE WHERE { <> <http://e/p> ?o }").status == 204
    assert {p for _, p, _ in own(server, doc)} == {"<http://e/q>"}


def test_delete_insert_where(server, doc):
    update = ('PREFIX e: <http://e/> DELETE { <> e:p ?o } INSERT { <> e:renamed ?o } '
              'WHERE { <> e:p ?o FILTER(?o != "2") }')
    assert patch(server, doc, update).status == 204
    got = own(server, doc)
    assert {(p, o) for _, p, o in got} == {("<http://e/p>", '"2"'), ("<http://e/renamed>", '"1"'),
                                          ("<http://e/q>", f"<{server.base}other>")}


def test_blank_nodes_can_be_deleted(server, doc):
    patch(server, doc, 'INSERT DATA { <> <http://e/b> [ <http://e/v> "x" ] }')
    assert patch(server, doc, "DELETE WHERE { <> <http://e/b> ?b . ?b ?p ?v }").status == 204
    assert not any(p in ("<http://e/b>", "<http://e/v>") for _, p, _ in own(server, doc))


def test_if_match(server, doc):
    etag = server.request("HEAD", doc).header("ETag")
    assert patch(server, doc, 'INSERT DATA { <> <http://e/p> "x" }', {"If-Match": '"stale"'}).status == 412
    r = patch(server, doc, 'INSERT DATA { <> <http://e/p> "x" }', {"If-Match": etag})
    assert r.status == 204
    assert patch(server, doc, 'INSERT DATA { <> <http://e/p> "y" }', {"If-Match": etag}).status == 412


def test_a_where_clause_sees_the_ldp_types(server, doc):
    update = f'INSERT {{ <> <http://e/is> "source" }} WHERE {{ <> a <{LDP}RDFSource> }}'
    assert patch(server, doc, update).status == 204
    assert ("<http://e/is>") in {p for _, p, _ in own(server, doc)}


@pytest.mark.parametrize("update,status", [
    ("INSERT DATA { <> <http://e/p> ", 400),
    ("this is not sparql", 400),
    ("LOAD <http://127.0.0.1:9/x>", 400),
    ("CLEAR DEFAULT", 400),
    ("DROP ALL", 400),
    ('INSERT DATA { GRAPH <http://e/g> { <> <http://e/p> "x" } }', 400),
    ('INSERT { <> <http://e/p> ?x } WHERE { SERVICE <http://127.0.0.1:9/> { ?s ?p ?x } }', 400),
    ('INSERT DATA { <> <http://e/p> "x"@en--ltr }', 400),
    (f"INSERT DATA {{ <> <{LDP}contains> <http://e/x> }}", 409),
    (f"INSERT DATA {{ <> a <{LDP}BasicContainer> }}", 409),
    (f"DELETE DATA {{ <> a <{LDP}RDFSource> }}", 409),
    (f"INSERT DATA {{ <http://e/other> a <{LDP}Container> }}", 409),
    # Server-managed triples named, alone or beside a pattern (which goes to the engine).
    (f"DELETE DATA {{ <> a <{LDP}RDFSource> }} ; DELETE WHERE {{ <> ?p ?o }}", 409),
    (f"DELETE {{ <> a <{LDP}Resource> }} WHERE {{ }}", 409),
    (f"DELETE WHERE {{ <> a <{LDP}RDFSource> }}", 409),
    (f"DELETE WHERE {{ <> <{FEDORA}lastModified> ?d }}", 409),
    (f"DELETE {{ <> <{FEDORA}created> ?d }} INSERT {{ <> <http://e/was> ?d }} WHERE {{ <> ?p ?d }}", 409),
    (f'INSERT DATA {{ <> <{FEDORA}lastModified> "2000-01-01T00:00:00Z"^^<{XSD}dateTime> }}', 409),
])
def test_refused_updates_change_nothing(server, doc, update, status):
    before = own(server, doc), server.request("HEAD", doc).header("ETag")
    r = patch(server, doc, update)
    assert r.status == status, r.body
    assert r.body.strip() and b"\n" not in r.body.strip()  # one line
    assert f'{LDP}constrainedBy'.encode() in r.headers.get("Link", "").encode()
    assert (own(server, doc), server.request("HEAD", doc).header("ETag")) == before


def server_triples(server, path) -> set[tuple[str, str, str]]:
    """(s, p, o) of the resource's server-managed triples but its lastModified, as strings."""
    body = server.request("GET", path, headers=NT).body
    return {(str(t.subject), str(t.predicate), str(t.object)) for t in ox.parse(body, format=ox.RdfFormat.N_TRIPLES)
            if (t.predicate.value.startswith(LDP) or str(t.object).startswith(f"<{LDP}")
                or t.predicate.value in SERVER_DATES) and t.predicate.value != FEDORA + "lastModified"}


@pytest.mark.parametrize("update", [
    "DELETE WHERE { <> ?p ?o }",
    "DELETE { ?s ?p ?o } WHERE { ?s ?p ?o }",
    "DELETE { <> ?p ?o } INSERT { <> <http://e/left> 1 } WHERE { <> ?p ?o }",
])
def test_a_pattern_leaves_the_server_managed_triples(server, update):
    """As in Fedora: a pattern that matches the server's triples deletes the client's
    only (the LDP types, containment and dates stay); naming one is a 409 (above)."""
    server.request("PUT", "/patch-all", '<> <http://e/p> "1" ; a <http://e/Thing> .', TTL)
    server.request("PUT", "/patch-all/kid", "", TTL)
    kept = server_triples(server, "/patch-all")
    assert any(p == f"<{LDP}contains>" for _, p, _ in kept) and any(p == f"<{FEDORA}created>" for _, p, _ in kept)
    r = patch(server, "/patch-all", update)
    assert r.status == 204, r.body
    assert server_triples(server, "/patch-all") == kept
    assert own(server, "/patch-all") <= {(f"<{server.base}patch-all>", "<http://e/left>",
                                          f'"1"^^<{XSD}integer>')}
    assert server.request("DELETE", "/patch-all").status == 204
    assert server.request("DELETE", "/patch-all/fcr:tombstone").status == 204


def test_a_variable_type_leaves_the_ldp_types(server, doc):
    """rdf:type with a variable names no class: the client's types go, the LDP types stay."""
    server.request("PATCH", doc, "INSERT DATA { <> a <http://e/Thing> }", UPDATE)
    kept = server_triples(server, doc)
    assert patch(server, doc, "DELETE WHERE { <> a ?t }").status == 204
    assert server_triples(server, doc) == kept
    assert not any(o == "<http://e/Thing>" for _, _, o in own(server, doc))


def test_delete_data_naming_a_date_is_refused(server, doc):
    """A typed literal goes to the engine, not the parse: the date is still named."""
    body = server.request("GET", doc, headers=NT).body
    created = next(t.object for t in ox.parse(body, format=ox.RdfFormat.N_TRIPLES)
                   if t.predicate.value == FEDORA + "created")
    r = patch(server, doc, f"DELETE DATA {{ <> <{FEDORA}created> {created} }}")
    assert r.status == 409 and b"created" in r.body


def test_wrong_media_type_missing_resource_and_root(server, doc):
    assert server.request("PATCH", doc, 'INSERT DATA { <> <http://e/p> "x" }', TTL).status == 415
    assert patch(server, "/patch-nope", "INSERT DATA { }").status == 404
    assert patch(server, "/", "INSERT DATA { }").status == 405


def test_patch_a_container_keeps_its_containment(server):
    server.request("PUT", "/patch-box", "", TTL)
    server.request("PUT", "/patch-box/kid", "", TTL)
    assert patch(server, "/patch-box", 'INSERT DATA { <> <http://e/title> "box" }').status == 204
    body = server.request("GET", "/patch-box", headers=NT).body
    assert f"<{LDP}contains> <{server.base}patch-box/kid>".encode() in body and b'"box"' in body


def test_patches_leave_a_consistent_store(serve):
    server = serve("--durability", "nosync")
    server.request("PUT", "/p", "", AS_SOURCE)
    for k in range(30):
        assert patch(server, "/p", f'INSERT DATA {{ <> <http://e/n> {k} }}').status == 204
    assert patch(server, "/p", "DELETE { <> <http://e/n> ?n } WHERE { <> <http://e/n> ?n FILTER(?n < 20) }").status == 204
    assert len(own(server, "/p")) == 10
    assert server.stop() == 0
    assert check_store(server.data) == []
