"""The LDP HTTP layer, against a real ``lakebench serve`` (and the WSGI app in-process)."""
from __future__ import annotations

import doctest
import re

import pytest
import rdflib
from rdflib.compare import isomorphic

from lakebench.server import binaries as binaries_module
from lakebench.server import headers as headers_module
from lakebench.server import sandbox as sandbox_module
from lakebench.server.vocabulary import RDF_SOURCE
from lakebench.dataset import DataSet

from .conftest import LDP_CONTAINS, contained, graph_of, user_triples

LDP = "http://www.w3.org/ns/ldp#"
TTL = {"Content-Type": "text/turtle"}
FORMATS = ("text/turtle", "application/n-triples", "application/ld+json")
RESOURCE_LINK = f'<{LDP}Resource>; rel="type"'
CONTAINER_LINK = f'<{LDP}BasicContainer>; rel="type"'
AS_SOURCE = {"Content-Type": "text/turtle", "Link": f'<{LDP}RDFSource>; rel="type"'}


@pytest.mark.parametrize("module", [headers_module, binaries_module, sandbox_module])
def test_doctests(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0


def put(server, path, body="", headers=TTL):
    return server.request("PUT", path, body, headers)


def test_put_get_head_delete_cycle(server):
    r = put(server, "/cycle", '<> <http://e/p> "x" .')
    assert r.status == 201
    assert r.header("Location") == server.base + "cycle"
    etag = r.header("ETag")
    assert re.fullmatch(r'"[^"]+"', etag)
    r = server.request("GET", "/cycle")
    assert r.status == 200 and r.header("ETag") == etag
    assert r.header("Content-Type").startswith("text/turtle")
    head = server.request("HEAD", "/cycle")
    assert head.status == 200 and head.body == b""
    assert head.header("ETag") == etag and head.header("Link") == r.header("Link")
    r = put(server, "/cycle", '<> <http://e/p> "y" .')
    assert r.status == 204 and r.header("ETag") != etag
    assert b'"y"' in server.request("GET", "/cycle").body
    assert server.request("DELETE", "/cycle").status == 204
    assert server.request("GET", "/cycle").status == 410  # gone: a tombstone (test_ldp.py)
    assert server.request("HEAD", "/cycle").status == 410


def test_link_headers(server):
    put(server, "/links")
    put(server, "/links/src", "", AS_SOURCE)
    for path in ("/", "/links"):
        link = server.request("GET", path).header("Link")
        assert RESOURCE_LINK in link and CONTAINER_LINK in link
    link = server.request("HEAD", "/links/src").header("Link")
    assert RESOURCE_LINK in link and "Container" not in link
    # The RDF source is not a container: no POST, no children.
    assert server.request("POST", "/links/src", "", TTL).status == 405
    assert put(server, "/links/src/child").status == 409


def test_options_allow(server):
    put(server, "/opt")
    put(server, "/opt/src", "", AS_SOURCE)
    cases = {"/": "GET, HEAD, POST, OPTIONS", "/opt": "GET, HEAD, PUT, POST, PATCH, DELETE, OPTIONS",
             "/opt/src": "GET, HEAD, PUT, PATCH, DELETE, OPTIONS"}
    for path, allow in cases.items():
        r = server.request("OPTIONS", path)
        assert r.status == 204 and r.header("Allow") == allow
        assert (r.header("Accept-Post") is not None) == (path != "/opt/src")
        assert server.request("GET", path).header("Allow") == allow
    r = server.request("FOO", "/opt/src")
    assert r.status == 405 and r.header("Allow") == cases["/opt/src"]
    assert server.request("OPTIONS", "/opt/nope").status == 404


def test_relative_iris_resolve_against_the_resource(server):
    put(server, "/rel")
    put(server, "/rel/a", "<> <http://e/p> <b>, <../rel>, <#frag>, <>, <./c/d> .")
    r = server.request("GET", "/rel/a", headers={"Accept": "application/n-triples"})
    objects = {o for s, p, o in graph_of(r.body, "application/n-triples") if str(p) == "http://e/p"}
    b = server.base
    assert {str(o) for o in objects} == {b + "rel/b", b + "rel", b + "rel/a#frag", b + "rel/a",
                                         b + "rel/c/d"}
    # POST: relative IRIs resolve against the new child's URL.
    r = server.request("POST", "/rel", "<> <http://e/p> <> .", {**TTL, "Slug": "posted"})
    assert r.status == 201 and r.header("Location") == b + "rel/posted"
    r = server.request("GET", "/rel/posted", headers={"Accept": "application/n-triples"})
    assert f"<{b}rel/posted> <http://e/p> <{b}rel/posted> .".encode() in r.body


def test_post_slug_location_and_containment(server):
    put(server, "/post")
    r = server.request("POST", "/post", '<> <http://e/p> "1" .', {**TTL, "Slug": "first"})
    assert r.status == 201 and r.header("Location") == server.base + "post/first"
    assert r.header("ETag")
    # A taken slug, an unusable slug, none at all: fresh names, never an overwrite.
    taken = server.request("POST", "/post", '<> <http://e/p> "2" .', {**TTL, "Slug": "first"})
    odd = server.request("POST", "/post", "", {**TTL, "Slug": "a/b c"})
    none = server.request("POST", "/post", "", TTL)
    locations = [r.header("Location") for r in (taken, odd, none)]
    assert all(s.status == 201 for s in (taken, odd, none))
    assert len(set(locations)) == 3 and server.base + "post/first" not in locations
    assert all(re.fullmatch(re.escape(server.base) + r"post/[A-Za-z0-9._~-]+", loc) for loc in locations)
    assert b'"1"' in server.request("GET", "/post/first").body
    assert sorted(contained(server, "/post")) == sorted([server.base + "post/first", *locations])
    assert server.request("POST", "/post/nope", "", TTL).status == 404


def test_delete_updates_containment_and_is_recursive(server):
    put(server, "/del")
    put(server, "/del/a")
    put(server, "/del/a/b")
    put(server, "/del/c")
    assert sorted(contained(server, "/del")) == [server.base + "del/a", server.base + "del/c"]
    assert server.request("DELETE", "/del/a").status == 204
    assert contained(server, "/del") == [server.base + "del/c"]
    assert server.request("GET", "/del/a/b").status == 410  # under a tombstone
    assert server.request("DELETE", "/del/a").status == 410


@pytest.mark.parametrize("accept,expected", [
    ("", "text/turtle"),
    ("*/*", "text/turtle"),
    ("text/turtle", "text/turtle"),
    ("application/n-triples", "application/n-triples"),
    ("application/ld+json", "application/ld+json"),
    ("text/html, application/ld+json;q=0.9, text/turtle;q=0.8", "application/ld+json"),
    ("application/n-triples;q=0.5, text/turtle;q=0.9", "text/turtle"),
    ("image/png", None),
    ("text/turtle;q=0", None),
])
def test_content_negotiation(server, accept, expected):
    put(server, "/neg", '<> <http://e/p> "x" .')
    r = server.request("GET", "/neg", headers={"Accept": accept} if accept else {})
    if expected is None:
        assert r.status == 406
        return
    assert r.status == 200
    # JSON media types define no charset (RFC 8259); Turtle and N-Triples are UTF-8 text.
    charset = "" if expected == "application/ld+json" else "; charset=utf-8"
    assert r.header("Content-Type") == expected + charset
    assert "Accept" in r.header("Vary")
    g = graph_of(r.body, expected)
    assert (rdflib.URIRef(server.base + "neg"), rdflib.URIRef("http://e/p"), rdflib.Literal("x")) in g


@pytest.mark.parametrize("content_type", FORMATS)
def test_workload_child_round_trips(server, content_type):
    """A child PUT as Turtle comes back isomorphic in every format: escapes, non-BMP."""
    w = DataSet(children=3, seed=11, parent="rt", base=server.base)
    put(server, "/rt")
    child = w.child(2)
    expected = rdflib.Graph().parse(data=child.ntriples, format="nt")
    literals = "".join(str(o) for o in expected.objects() if isinstance(o, rdflib.Literal))
    assert max(map(ord, literals)) > 0xFFFF and all(c in literals for c in '"\\\n\t')
    r = put(server, "/" + child.path, child.turtle)
    assert r.status in (201, 204)
    r = server.request("GET", "/" + child.path, headers={"Accept": content_type})
    assert r.status == 200
    got = user_triples(graph_of(r.body, content_type))
    assert len(got) == 200 and isomorphic(got, expected)


def test_jsonld_and_ntriples_bodies_are_accepted(server):
    put(server, "/fmt")
    r = put(server, "/fmt/j", '{"@id": "", "http://e/p": [{"@id": "x"}, "lit"]}',
            {"Content-Type": "application/ld+json"})
    assert r.status == 201
    r = put(server, "/fmt/n", f'<{server.base}fmt/n> <http://e/p> "lit"@en .\n',
            {"Content-Type": "application/n-triples; charset=utf-8"})
    assert r.status == 201
    g = graph_of(server.request("GET", "/fmt/j", headers={"Accept": "application/n-triples"}).body,
                 "application/n-triples")
    assert (rdflib.URIRef(server.base + "fmt/j"), rdflib.URIRef("http://e/p"),
            rdflib.URIRef(server.base + "fmt/x")) in g


def test_etags_and_conditional_requests(server):
    r = put(server, "/etag", '<> <http://e/p> "1" .')
    etag = r.header("ETag")
    assert server.request("GET", "/etag", headers={"If-None-Match": etag}).status == 304
    r304 = server.request("GET", "/etag", headers={"If-None-Match": f'"other", {etag}'})
    assert r304.status == 304 and r304.body == b"" and r304.header("ETag") == etag
    assert server.request("GET", "/etag", headers={"If-None-Match": '"other"'}).status == 200
    # Writes: If-Match must name the current ETag; If-None-Match: * only creates.
    assert put(server, "/etag", '<> <http://e/p> "2" .', {**TTL, "If-Match": '"stale"'}).status == 412
    assert put(server, "/etag", '<> <http://e/p> "2" .', {**TTL, "If-None-Match": "*"}).status == 412
    assert b'"1"' in server.request("GET", "/etag").body
    r = put(server, "/etag", '<> <http://e/p> "2" .', {**TTL, "If-Match": etag})
    assert r.status == 204 and r.header("ETag") != etag
    assert server.request("DELETE", "/etag", headers={"If-Match": etag}).status == 412
    assert server.request("DELETE", "/etag", headers={"If-Match": r.header("ETag")}).status == 204
    assert server.request("DELETE", "/etag/fcr:tombstone").status == 204  # the URI is free again
    assert put(server, "/etag", "", {**TTL, "If-None-Match": "*"}).status == 201
    # A container's ETag changes when its membership does.
    before = server.request("HEAD", "/etag").header("ETag")
    put(server, "/etag/child")
    after = server.request("HEAD", "/etag").header("ETag")
    assert before != after
    assert server.request("GET", "/etag", headers={"If-None-Match": before}).status == 200


@pytest.mark.parametrize("prefer,containment,applied", [
    (None, True, None),
    (f'return=representation; omit="{LDP}PreferContainment"', False, "return=representation"),
    (f'return=representation; include="{LDP}PreferMinimalContainer"', False, "return=representation"),
    (f'return=representation; include="{LDP}PreferContainment"', True, "return=representation"),
    (f'return=representation; omit="{LDP}PreferMembership {LDP}PreferContainment"', False,
     "return=representation"),
    ("return=minimal", False, "return=minimal"),
])
def test_prefer(server, prefer, containment, applied):
    put(server, "/prefer", '<> <http://e/p> "mine" .')
    put(server, "/prefer/kid")
    r = server.request("GET", "/prefer", headers={"Prefer": prefer} if prefer else {})
    assert r.status == 200
    assert r.header("Preference-Applied") == applied
    assert "Prefer" in r.header("Vary")
    g = graph_of(r.body, "text/turtle")
    has_contains = any(str(p) == LDP_CONTAINS for p in g.predicates())
    assert has_contains == containment
    assert b'"mine"' in r.body  # the resource's own triples are always there
    assert rdflib.URIRef(LDP + "BasicContainer") in set(g.objects())


def test_container_is_chunked_over_http(server):
    put(server, "/chunked")
    conn = server.connection()
    try:
        for k in range(50):  # one keep-alive connection
            assert server.request("PUT", f"/chunked/c{k}", "", TTL, connection=conn).status == 201
    finally:
        conn.close()
    r = server.request("GET", "/chunked")
    assert r.header("Transfer-Encoding") == "chunked" and r.header("Content-Length") is None
    assert len(contained(server, "/chunked")) == 50


def test_wsgi_app_streams_a_10000_child_container(repository, wsgi):
    """The application hands the server an iterator over the index scan, not one string."""
    base = repository.base_url
    assert wsgi("PUT", "/big", b"", {"Content-Type": "text/turtle"}).status == 201

    def create_children(txn):
        for k in range(10_000):
            repository._create(txn, f"{base}big/c{k:05d}", RDF_SOURCE, parent=base + "big")

    repository.store.write(create_children)
    open_before = repository.env.open_txns  # the write batch: reads borrow it
    for accept in ("text/turtle", "application/n-triples"):
        r = wsgi("GET", "/big", headers={"Accept": accept})
        assert r.status == 200 and "content-length" not in r.headers
        assert not isinstance(r.iterable, (bytes, list, tuple))
        chunks = list(r.iterable)
        r.iterable.close()
        assert sum(map(len, chunks)) > 300_000  # in chunks of about 64 KiB
        assert len(chunks) >= 4 and max(map(len, chunks)) < 1 << 17
        assert b"".join(chunks).count(b"c0") >= 10_000
    assert repository.env.open_txns == open_before
    # HEAD and 304 end the read transaction without reading the scan.
    r = wsgi("HEAD", "/big")
    assert r.status == 200 and list(r.iterable) == [] and repository.env.open_txns == open_before
    r = wsgi("GET", "/big", headers={"If-None-Match": r.headers["etag"]})
    assert r.status == 304 and repository.env.open_txns == open_before


def test_root_cannot_be_replaced_or_deleted(server):
    for method in ("PUT", "DELETE"):
        r = server.request(method, "/", "", TTL)
        assert r.status == 405 and r.header("Allow") == "GET, HEAD, POST, OPTIONS"
    assert server.request("GET", "/").status == 200


def test_errors_are_plain_text_with_a_message(server):
    r = put(server, "/nope/child")
    assert r.status == 404
    assert r.header("Content-Type") == "text/plain; charset=utf-8"
    assert b"does not exist" in r.body
    r = put(server, "/errmsg", '<> <http://e/p> "x', TTL)
    assert r.status == 400 and b"malformed text/turtle" in r.body and b"line 1" in r.body


def test_a_change_within_the_same_millisecond_keeps_one_date_and_one_etag(repository):
    """Every change replaces the resource's ETag and lastModified (the new ones added before
    the old ones go); two changes in one millisecond give the same date, which stays once."""
    from lakebench.server.vocabulary import LAST_MODIFIED

    uri = repository.base_url + "twice"
    repository.put(uri, b"", "text/turtle")
    etags = []
    for _ in range(2):
        etags.append(repository.store.write(lambda txn: repository._touch(txn, uri, now="2026-01-01T00:00:00.5Z")))
    assert etags[0] != etags[1] and repository.info(uri).etag == etags[1]
    dates = [q[2] for q in repository.store.quads(uri, LAST_MODIFIED)]
    assert len(dates) == 1 and b"2026-01-01T00:00:00.5Z" in dates[0]
