"""LDP behaviour of ``lakebench serve``: server-managed triples round-trip,
constraints links, interaction models, tombstones, OPTIONS."""
from __future__ import annotations

import time
from datetime import datetime

import pyoxigraph as ox
import pytest

from .conftest import LDP_CONTAINS, RDF_TYPE, SERVER_DATES, contained

LDP = "http://www.w3.org/ns/ldp#"
TTL = {"Content-Type": "text/turtle"}
NT = "application/n-triples"
CONSTRAINED_BY = f'rel="{LDP}constrainedBy"'
PREFIX = f"@prefix ldp: <{LDP}> .\n"


def type_link(name: str) -> str:
    return f'<{LDP}{name}>; rel="type"'


def triples(body: bytes, content_type: str = "text/turtle") -> set:
    fmt = {"text/turtle": ox.RdfFormat.TURTLE, NT: ox.RdfFormat.N_TRIPLES,
           "application/ld+json": ox.RdfFormat.JSON_LD}[content_type.split(";")[0]]
    return set(ox.parse(body, format=fmt))


def dates(body: bytes, content_type: str = "text/turtle") -> dict[str, datetime]:
    """fedora:created and fedora:lastModified of a representation (one subject), by predicate."""
    return {t.predicate.value: datetime.fromisoformat(t.object.value.replace("Z", "+00:00"))
            for t in triples(body, content_type) if t.predicate.value in SERVER_DATES}


def assert_constrained(server, response):
    """A refusal that links to the constraints document, which the server serves."""
    link = response.header("Link") or ""
    assert CONSTRAINED_BY in link, (response.status, link)
    url = next(part.split(">")[0].strip().lstrip("<") for part in link.split(",") if CONSTRAINED_BY in part)
    doc = server.request("GET", url[len(server.base) - 1:])
    assert doc.status == 200 and doc.header("Content-Type").startswith("text/plain")
    assert b"DirectContainer" in doc.body and b"server-managed" in doc.body.lower()


# -- server-managed triples: GET, then PUT the same body back ---------------------------
@pytest.mark.parametrize("accept", ["text/turtle", NT, "application/ld+json"])
def test_a_container_takes_back_its_own_representation(server, accept):
    path = "/rt-" + accept.split("/")[1].replace("+", "")
    assert server.request("PUT", path, '<> <http://e/p> "x" .', TTL).status == 201
    for k in range(3):
        assert server.request("PUT", f"{path}/c{k}", "", TTL).status == 201
    got = server.request("GET", path, headers={"Accept": accept})
    assert LDP_CONTAINS.encode() in got.body or b"ldp:contains" in got.body or b"contains" in got.body
    time.sleep(0.002)  # the dates are to the millisecond
    r = server.request("PUT", path, got.body, {"Content-Type": accept, "If-Match": got.header("ETag")})
    assert r.status == 204, r.body
    again = server.request("GET", path, headers={"Accept": NT})
    # Nothing lost, nothing doubled; the PUT was a change: only its lastModified moved.
    modified = SERVER_DATES[1]
    assert {t for t in triples(again.body, NT) if t.predicate.value != modified} == {
        t for t in triples(got.body, accept) if t.predicate.value != modified}
    assert dates(again.body, NT)[modified] > dates(got.body, accept)[modified]
    assert len(contained(server, path)) == 3


def test_an_rdf_source_round_trips_and_omitting_containment_round_trips(server):
    headers = {**TTL, "Link": type_link("RDFSource")}
    assert server.request("PUT", "/rt-src", '<> <http://e/p> "x" .', headers).status == 201
    got = server.request("GET", "/rt-src")
    r = server.request("PUT", "/rt-src", got.body.replace(b'"x"', b'"y"'), {**TTL, "If-Match": got.header("ETag")})
    assert r.status == 204
    assert b'"y"' in server.request("GET", "/rt-src").body
    server.request("PUT", "/rt-omit", "", TTL)
    server.request("PUT", "/rt-omit/kid", "", TTL)
    got = server.request("GET", "/rt-omit", headers={
        "Prefer": f'return=representation; omit="{LDP}PreferContainment"'})
    assert b"contains" not in got.body
    assert server.request("PUT", "/rt-omit", got.body, {**TTL, "If-Match": got.header("ETag")}).status == 204
    assert contained(server, "/rt-omit") == [server.base + "rt-omit/kid"]  # containment is the server's


@pytest.mark.parametrize("body", [
    PREFIX + "<> ldp:contains <not-a-child> .",
    PREFIX + "<> a ldp:NonRDFSource .",
    PREFIX + "<> a ldp:DirectContainer .",
    PREFIX + "<../mgd> ldp:contains <../mgd/other> .",  # about another resource
    PREFIX + "<other> a ldp:Container .",               # an LDP type of another subject
    PREFIX + "[] ldp:contains <x> .",
])
def test_changing_server_managed_triples_is_409_and_writes_nothing(server, body):
    server.request("PUT", "/mgd", "", TTL)
    server.request("PUT", "/mgd/src", '<> <http://e/p> "keep" .', {**TTL, "Link": type_link("RDFSource")})
    etag = server.request("HEAD", "/mgd/src").header("ETag")
    for path in ("/mgd/src", "/mgd/new"):
        r = server.request("PUT", path, body, TTL)
        assert r.status == 409, (path, r.body)
        assert r.body.strip()
        assert_constrained(server, r)
    assert server.request("HEAD", "/mgd/src").header("ETag") == etag
    assert server.request("GET", "/mgd/new").status == 404
    assert contained(server, "/mgd") == [server.base + "mgd/src"]


def test_a_contains_that_is_no_longer_true_is_refused(server):
    server.request("PUT", "/stale", "", TTL)
    server.request("PUT", "/stale/a", "", TTL)
    got = server.request("GET", "/stale")
    server.request("DELETE", "/stale/a")
    r = server.request("PUT", "/stale", got.body, TTL)  # states <> ldp:contains <a>, gone since
    assert r.status == 409 and b"contains" in r.body


# -- constraints --------------------------------------------------------------------------
@pytest.mark.parametrize("method,path,body,headers", [
    ("PUT", "/", "", TTL),
    ("PUT", "/cons/x", "<> <http://e/p> .", TTL),
    ("PUT", "/cons/x", "x", {"Content-Type": "text/plain", "Link": type_link("RDFSource")}),
    ("PUT", "/cons/x", "", {**TTL, "Link": type_link("DirectContainer")}),
    ("PUT", "/cons/fcr:x", "", TTL),
    ("PATCH", "/cons", "LOAD <http://e/x>", {"Content-Type": "application/sparql-update"}),
    ("GET", "/cons", None, {"Accept": "image/png"}),
])
def test_refusals_link_to_the_constraints(server, method, path, body, headers):
    server.request("PUT", "/cons", "", TTL)
    r = server.request(method, path, body, headers)
    assert 400 <= r.status < 500
    assert_constrained(server, r)


def test_the_constraints_document(server):
    r = server.request("GET", "/fcr:constraints")
    assert r.status == 200 and b"fcr:tombstone" in r.body
    assert server.request("PUT", "/fcr:constraints", "", TTL).status == 405


# -- interaction models --------------------------------------------------------------------
def test_interaction_models_are_honoured_at_creation(server):
    server.request("PUT", "/im", "", TTL)
    cases = {"RDFSource": ("RDFSource", "Container"), "BasicContainer": ("BasicContainer", None),
             "NonRDFSource": ("NonRDFSource", "RDFSource")}
    for name, (present, absent) in cases.items():
        r = server.request("PUT", f"/im/{name}", '<> <http://e/p> "x" .', {**TTL, "Link": type_link(name)})
        assert r.status == 201, r.body
        head = server.request("HEAD", f"/im/{name}")
        assert type_link(present) in head.header("Link")
        if absent:
            assert f"{LDP}{absent}>" not in head.header("Link")
    # A Turtle body sent as a NonRDFSource is kept as bytes.
    r = server.request("GET", "/im/NonRDFSource")
    assert r.body == b'<> <http://e/p> "x" .' and r.header("Content-Type") == "text/turtle"
    # No Link: an RDF body makes a container, any other body a binary.
    assert server.request("POST", "/im", "hello", {"Content-Type": "text/plain", "Slug": "txt"}).status == 201
    assert type_link("NonRDFSource") in server.request("HEAD", "/im/txt").header("Link")


@pytest.mark.parametrize("model", ["DirectContainer", "IndirectContainer"])
def test_direct_and_indirect_containers_are_refused_not_downgraded(server, model):
    server.request("PUT", "/dic", "", TTL)
    link = type_link(model)
    for method, path in (("PUT", "/dic/x"), ("POST", "/dic")):
        r = server.request(method, path, "", {**TTL, "Link": link, "Slug": "x"})
        assert r.status == 409 and model.encode() in r.body
        assert_constrained(server, r)
    assert contained(server, "/dic") == []


@pytest.mark.parametrize("existing,link,content_type", [
    ("BasicContainer", "NonRDFSource", "text/turtle"),
    ("RDFSource", "BasicContainer", "text/turtle"),
    ("NonRDFSource", "RDFSource", "text/turtle"),
    ("NonRDFSource", "BasicContainer", "text/turtle"),
])
def test_changing_the_interaction_model_is_409(server, existing, link, content_type):
    server.request("PUT", "/chg", "", TTL)
    path = f"/chg/{existing}-{link}"
    assert server.request("PUT", path, "", {**TTL, "Link": type_link(existing)}).status == 201
    etag = server.request("HEAD", path).header("ETag")
    r = server.request("PUT", path, "", {"Content-Type": content_type, "Link": type_link(link)})
    assert r.status == 409 and b"interaction model" in r.body
    assert_constrained(server, r)
    head = server.request("HEAD", path)
    assert head.header("ETag") == etag and type_link(existing) in head.header("Link")


def test_rdf_source_link_on_a_container_is_no_change(server):
    server.request("PUT", "/same", "", TTL)
    assert server.request("PUT", "/same", "", {**TTL, "Link": type_link("RDFSource")}).status == 204
    assert type_link("BasicContainer") in server.request("HEAD", "/same").header("Link")


# -- tombstones ------------------------------------------------------------------------------
def test_a_deleted_uri_is_gone_until_its_tombstone_is_deleted(server):
    server.request("PUT", "/tomb", "", TTL)
    server.request("PUT", "/tomb/a", "", TTL)
    server.request("PUT", "/tomb/a/b", "", TTL)
    assert server.request("DELETE", "/tomb/a").status == 204
    for method in ("GET", "HEAD", "DELETE", "OPTIONS"):
        r = server.request(method, "/tomb/a")
        assert r.status == 410, method
        assert f'<{server.base}tomb/a/fcr:tombstone>; rel="hasTombstone"' in r.header("Link")
    assert server.request("GET", "/tomb/a/b").status == 410  # under the tombstone
    assert server.request("PUT", "/tomb/a", "", TTL).status == 410
    assert server.request("PUT", "/tomb/a/b", "", TTL).status == 410
    # A Slug naming the deleted child: a fresh name (as Fedora; LDP test suite testRestrictUriReUseSlug).
    r = server.request("POST", "/tomb", "", {**TTL, "Slug": "a"})
    assert r.status == 201 and r.header("Location") not in (server.base + "tomb/a", None)
    assert server.request("PUT", "/tomb/a", "x", {"Content-Type": "text/plain"}).status == 410
    assert server.request("GET", "/tomb/a/fcr:tombstone").status == 405
    assert server.request("DELETE", "/tomb/a/fcr:tombstone").status == 204
    assert server.request("DELETE", "/tomb/a/fcr:tombstone").status == 404
    assert server.request("GET", "/tomb/a").status == 404
    assert server.request("PUT", "/tomb/a", "", TTL).status == 201
    assert server.request("GET", "/tomb/a/b").status == 404  # free too: it was under /tomb/a


# -- OPTIONS, Allow, Accept-Post, Accept-Patch ----------------------------------------------
def test_options_headers_by_kind(server):
    server.request("PUT", "/opts", "", TTL)
    server.request("PUT", "/opts/src", "", {**TTL, "Link": type_link("RDFSource")})
    server.request("PUT", "/opts/bin", b"\x00\x01", {"Content-Type": "application/octet-stream"})
    expected = {
        "/opts": ("GET, HEAD, PUT, POST, PATCH, DELETE, OPTIONS", True, True),
        "/opts/src": ("GET, HEAD, PUT, PATCH, DELETE, OPTIONS", False, True),
        "/opts/bin": ("GET, HEAD, PUT, DELETE, OPTIONS", False, False),
        "/opts/bin/fcr:metadata": ("GET, HEAD, PUT, PATCH, OPTIONS", False, True),
        "/": ("GET, HEAD, POST, OPTIONS", True, False),
    }
    for path, (allow, post, patch) in expected.items():
        for method in ("OPTIONS", "HEAD"):
            r = server.request(method, path)
            assert r.status in (200, 204), (path, method)
            assert r.header("Allow") == allow, (path, method)
            assert (r.header("Accept-Patch") == "application/sparql-update") == patch, (path, method)
            accept_post = r.header("Accept-Post")
            assert (accept_post is not None) == post
            if post:
                assert {"text/turtle", "application/ld+json", "application/n-triples", "*/*"} <= {
                    t.strip() for t in accept_post.split(",")}
    r = server.request("PATCH", "/opts/bin", "INSERT DATA {}", {"Content-Type": "application/sparql-update"})
    assert r.status == 405 and r.header("Allow") == expected["/opts/bin"][0]


def test_ldp_resource_alone_asks_for_a_resource_that_is_not_a_container(server):
    """LDP 5.2.3.4: Link ldp:Resource is honoured: handled as an LDPR, not a container."""
    server.request("PUT", "/res", "", TTL)
    resource = type_link("Resource")
    r = server.request("POST", "/res", '<> <http://e/p> "x" .', {**TTL, "Link": resource, "Slug": "rdf"})
    assert r.status == 201
    link = server.request("HEAD", "/res/rdf").header("Link")
    assert type_link("RDFSource") in link and "Container" not in link
    r = server.request("POST", "/res", b"\x89PNG", {"Content-Type": "image/png", "Link": resource, "Slug": "png"})
    assert type_link("NonRDFSource") in server.request("HEAD", "/res/png").header("Link")
    # On an existing resource it asks for no change.
    assert server.request("PUT", "/res", "", {**TTL, "Link": resource}).status == 204
    assert type_link("BasicContainer") in server.request("HEAD", "/res").header("Link")


def test_successful_writes_carry_the_type_links(server):
    """LDP 4.2.1.4 / 5.2.1.4: the LDP type links on all responses, writes included."""
    r = server.request("PUT", "/wl", "", TTL)
    assert r.status == 201 and type_link("BasicContainer") in r.header("Link")
    r = server.request("PUT", "/wl", "", TTL)
    assert r.status == 204 and type_link("BasicContainer") in r.header("Link")
    r = server.request("POST", "/wl", b"bytes", {"Content-Type": "application/octet-stream", "Slug": "b"})
    assert r.status == 201 and type_link("BasicContainer") in r.header("Link")  # the container's
    # LDP 5.2.3.12: the new binary's description, anchored at the binary (not the request URI).
    assert (f'<{server.base}wl/b/fcr:metadata>; rel="describedby"; anchor="{server.base}wl/b"'
            in r.header("Link"))
    r = server.request("PATCH", "/wl", 'INSERT DATA { <> <http://e/p> "x" }',
                       {"Content-Type": "application/sparql-update"})
    assert r.status == 204 and type_link("BasicContainer") in r.header("Link")


def test_refusals_of_an_existing_resource_carry_its_type_links(server):
    server.request("PUT", "/refused", "", TTL)
    for method, body, headers in (("PUT", "<> <http://e/p> .", TTL), ("PUT", "", {**TTL, "If-Match": '"x"'}),
                                  ("FOO", None, {}), ("GET", None, {"Accept": "image/png"})):
        r = server.request(method, "/refused", body, headers)
        assert 400 <= r.status < 500
        link = r.header("Link")
        assert type_link("BasicContainer") in link and CONSTRAINED_BY in link, (method, link)
