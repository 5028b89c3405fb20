"""Fedora API resource management (section 3 of https://fedora.info/2021/05/01/spec/):
Prefer on containers (3.2.1, 3.2.2), external content (3.9), dates and conditional
requests (RFC 9110).  Digests are in test_binaries.py, PATCH patterns in test_patch.py."""
from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime, parsedate_to_datetime

import pyoxigraph as ox
import pytest

from .conftest import LDP_CONTAINS, RDF_TYPE, SERVER_DATES, contained

LDP = "http://www.w3.org/ns/ldp#"
TTL = {"Content-Type": "text/turtle"}
NT = {"Accept": "application/n-triples"}
UPDATE = {"Content-Type": "application/sparql-update"}
CREATED, MODIFIED = SERVER_DATES
XSD_DATETIME = "http://www.w3.org/2001/XMLSchema#dateTime"
INBOUND = "http://fedora.info/definitions/fcrepo#PreferInboundReferences"
CONTAINED = "http://www.w3.org/ns/oa#PreferContainedDescriptions"
CONSTRAINED_BY = f'rel="{LDP}constrainedBy"'


def representation(server, path, prefer=None, accept="application/n-triples"):
    headers = {"Accept": accept, **({"Prefer": prefer} if prefer else {})}
    r = server.request("GET", path, headers=headers)
    assert r.status == 200, r.body
    fmt = {"application/n-triples": ox.RdfFormat.N_TRIPLES, "text/turtle": ox.RdfFormat.TURTLE,
           "application/ld+json": ox.RdfFormat.JSON_LD}[accept]
    return r, {q.triple for q in ox.parse(r.body, format=fmt)}


def dates(triples, subject) -> dict[str, datetime]:
    out = {}
    for t in triples:
        if t.subject.value == subject and t.predicate.value in SERVER_DATES:
            assert t.object.datatype.value == XSD_DATETIME
            out[t.predicate.value] = datetime.fromisoformat(t.object.value.replace("Z", "+00:00"))
    return out


@pytest.fixture(scope="module")
def box(server):
    """A container with a triple of its own and two children, one referring to it."""
    assert server.request("PUT", "/fed", '<> <http://e/p> "mine" .', TTL).status == 201
    assert server.request("PUT", "/fed/a", '<> <http://xmlns.com/foaf/0.1/name> "Pythagoras" .', TTL).status == 201
    assert server.request("PUT", "/fed/b", "<> <http://purl.org/dc/terms/isPartOf> <../fed> .", TTL).status == 201
    return server


# -- 1: Prefer on the minimal container ------------------------------------------------
@pytest.mark.parametrize("accept", ["application/n-triples", "text/turtle", "application/ld+json"])
def test_omitting_the_minimal_container_leaves_only_containment(box, accept):
    """LDP 7.2.2: without the minimal-container triples (its own, its types, its dates)
    what is left of a basic container is its containment."""
    r, got = representation(box, "/fed", f'return=representation; omit="{LDP}PreferMinimalContainer"', accept)
    assert r.header("Preference-Applied") == "return=representation"
    assert {t.predicate.value for t in got} == {LDP_CONTAINS}
    assert {t.object.value for t in got} == {box.base + "fed/a", box.base + "fed/b"}


@pytest.mark.parametrize("prefer,own,containment", [
    (f'return=representation; include="{LDP}PreferMinimalContainer"', True, False),
    (f'return=representation; include="{LDP}PreferMinimalContainer {LDP}PreferContainment"', True, True),
    (f'return=representation; include="{LDP}PreferEmptyContainer"', True, False),  # LDP's earlier name
    (f'return=representation; omit="{LDP}PreferMinimalContainer {LDP}PreferContainment"', False, False),
    (f'return=representation; omit="{LDP}PreferMembership"', True, True),  # there is no membership
])
def test_prefer_include_and_omit(box, prefer, own, containment):
    r, got = representation(box, "/fed", prefer)
    assert r.header("Preference-Applied") == "return=representation"
    assert any(t.predicate.value == "http://e/p" for t in got) == own
    assert any(t.predicate.value == RDF_TYPE for t in got) == own
    assert any(t.predicate.value == LDP_CONTAINS for t in got) == containment


@pytest.mark.parametrize("prefer", [
    'return=representation; include="http://example.org/Unknown"',
    f'return=representation; omit="{LDP}PreferContainment http://example.org/Unknown"',
    "return=whatever",
])
def test_a_preference_not_honoured_is_not_claimed(box, prefer):
    """RFC 7240 3: Preference-Applied names what was applied; the rest is still served."""
    r, got = representation(box, "/fed", prefer)
    assert r.header("Preference-Applied") is None
    assert any(t.predicate.value == "http://e/p" for t in got)


# -- 2: inbound references and contained descriptions ---------------------------------------
def test_inbound_references(box):
    """Fedora API 3.2.1 (SHOULD): the triples of other resources with it as object; the
    parent's ldp:contains is containment, not a reference, and is not among them."""
    prefer = f'return=representation; include="{INBOUND}"'
    r, got = representation(box, "/fed", prefer)
    assert r.header("Preference-Applied") == "return=representation"
    reference = (box.base + "fed/b", "http://purl.org/dc/terms/isPartOf", box.base + "fed")
    assert reference in {(t.subject.value, t.predicate.value, t.object.value) for t in got}
    assert any(t.predicate.value == "http://e/p" for t in got)  # the rest stays
    _, plain = representation(box, "/fed")
    assert reference not in {(t.subject.value, t.predicate.value, t.object.value) for t in plain}
    _, child = representation(box, "/fed/a", prefer, accept="text/turtle")
    assert {t.subject.value for t in child} == {box.base + "fed/a"}  # only fed's contains points here
    # An RDF source, a reference from a binary's description, and one that goes away.
    assert box.request("PUT", "/fed/src", "", {**TTL, "Link": f'<{LDP}RDFSource>; rel="type"'}).status == 201
    assert box.request("PUT", "/fed/bin", b"x", {"Content-Type": "text/plain"}).status == 201
    assert box.request("PATCH", "/fed/bin/fcr:metadata", "INSERT DATA { <> <http://e/about> <src> }",
                       UPDATE).status == 204
    assert box.request("PUT", "/fed/c", "<> <http://e/about> <src> .", TTL).status == 201
    _, got = representation(box, "/fed/src", prefer, accept="application/ld+json")
    assert {t.subject.value for t in got if t.predicate.value == "http://e/about"} == {
        box.base + "fed/bin", box.base + "fed/c"}
    assert box.request("DELETE", "/fed/c").status == 204
    _, got = representation(box, "/fed/src", prefer)
    assert {t.subject.value for t in got if t.predicate.value == "http://e/about"} == {box.base + "fed/bin"}


def test_contained_descriptions(box):
    """Fedora API 3.2.1 (MAY): the children's triples with the container's."""
    r, got = representation(box, "/fed", f'return=representation; include="{CONTAINED}"')
    assert r.header("Preference-Applied") == "return=representation"
    spo = {(t.subject.value, t.predicate.value, t.object.value) for t in got}
    assert (box.base + "fed/a", "http://xmlns.com/foaf/0.1/name", "Pythagoras") in spo
    assert (box.base + "fed/a", RDF_TYPE, LDP + "BasicContainer") in spo
    assert any(t.predicate.value == "http://e/p" for t in got)
    _, plain = representation(box, "/fed")
    assert not any(t.subject.value == box.base + "fed/a" for t in plain)


def test_inclusions_a_request_cannot_afford_are_not_made(repository, monkeypatch):
    """A Prefer header must not make one GET unbounded: past the bounds, the children's triples and
    the inbound references are left out, and Preference-Applied is not sent."""
    from lakebench.server import headers, repository as repository_module

    base = repository.base_url
    repository.put(base + "c", b"", "text/turtle")
    for name in ("a", "b"):
        repository.put(base + f"c/{name}", f"<> <http://e/p> <{base}c> .".encode(), "text/turtle")
    both = headers.prefer(f'return=representation; include="{CONTAINED} {INBOUND}"')
    assert repository.affordable(base + "c", both) == both  # within the bounds: honoured, claimed
    monkeypatch.setattr(repository_module, "MAX_CONTAINED_DESCRIPTIONS", 1)
    monkeypatch.setattr(repository_module, "MAX_INBOUND_REFERENCES", 1)
    bounded = repository.affordable(base + "c", both)
    assert not bounded.contained and not bounded.inbound and bounded.applied is None
    assert bounded.minimal and bounded.containment  # the rest of the representation stays


# -- 5: external content -------------------------------------------------------------------
@pytest.mark.parametrize("method,path", [("PUT", "/fed/ext"), ("POST", "/fed"), ("PUT", "/fed/ext-bin")])
def test_external_content_is_refused(box, method, path):
    """Fedora API 3.9 (MUST): a server without external content answers every
    message/external-body with 415, and a constrainedBy link (LDP 4.2.1.6)."""
    box.request("PUT", "/fed/ext-bin", b"bytes", {"Content-Type": "text/plain"})
    children = contained(box, "/fed")
    etag = box.request("HEAD", "/fed/ext-bin").header("ETag")
    for link in (None, f'<{LDP}NonRDFSource>; rel="type"'):
        headers = {"Content-Type": 'message/external-body; access-type=URL; URL="http://127.0.0.1:9/file"',
                   **({"Link": link} if link else {})}
        r = box.request(method, path, b"", headers)
        assert r.status == 415 and b"external" in r.body and b"\n" not in r.body.strip()
        assert CONSTRAINED_BY in r.header("Link")
    assert contained(box, "/fed") == children
    assert box.request("GET", "/fed/ext").status == 404
    assert box.request("HEAD", "/fed/ext-bin").header("ETag") == etag


# -- 6: fedora:created, fedora:lastModified, Last-Modified -----------------------------------
def last_modified(response) -> datetime:
    value = response.header("Last-Modified")
    assert value and value.endswith(" GMT"), value
    return parsedate_to_datetime(value)


def test_every_resource_has_dates_and_last_modified(box):
    box.request("PUT", "/fed/bin2", b"x", {"Content-Type": "text/plain"})
    box.request("PUT", "/fed/src2", "", {**TTL, "Link": f'<{LDP}RDFSource>; rel="type"'})
    for path, subject in (("/", box.base), ("/fed", box.base + "fed"), ("/fed/src2", box.base + "fed/src2"),
                          ("/fed/bin2/fcr:metadata", box.base + "fed/bin2")):
        r, got = representation(box, path)
        when = dates(got, subject)
        assert set(when) == {CREATED, MODIFIED} and when[CREATED] <= when[MODIFIED]
        assert last_modified(r) == when[MODIFIED].replace(microsecond=0)
        head = box.request("HEAD", path)
        assert head.header("Last-Modified") == r.header("Last-Modified")
    binary = box.request("GET", "/fed/bin2")
    assert binary.header("Last-Modified") == box.request("GET", "/fed/bin2/fcr:metadata").header("Last-Modified")


def test_changes_move_last_modified_and_keep_created(box):
    """Every change of a resource moves its lastModified; a child created or deleted is a
    change of its container's containment (Fedora does the same; its ETag moves too)."""
    box.request("PUT", "/fed/dated", '<> <http://e/p> "1" .', TTL)
    box.request("PUT", "/fed/dated-bin", b"1", {"Content-Type": "text/plain"})

    def state(path, subject):
        r, got = representation(box, path)
        return r.header("ETag"), dates(got, subject)

    def changed(path, subject, change):
        etag, before = state(path, subject)
        time.sleep(0.01)  # the dates are to the millisecond
        assert change() in (200, 201, 204)
        new_etag, after = state(path, subject)
        assert new_etag != etag and after[CREATED] == before[CREATED] and after[MODIFIED] > before[MODIFIED]

    dated, dated_bin = box.base + "fed/dated", box.base + "fed/dated-bin"
    changed("/fed/dated", dated, lambda: box.request("PUT", "/fed/dated", '<> <http://e/p> "2" .', TTL).status)
    changed("/fed/dated", dated,
            lambda: box.request("PATCH", "/fed/dated", 'INSERT DATA { <> <http://e/p> "3" }', UPDATE).status)
    changed("/fed/dated", dated, lambda: box.request("PUT", "/fed/dated/kid", "", TTL).status)
    changed("/fed/dated", dated, lambda: box.request("DELETE", "/fed/dated/kid").status)
    changed("/fed/dated", dated, lambda: box.request("POST", "/fed/dated", "", TTL).status)
    meta = "/fed/dated-bin/fcr:metadata"
    changed(meta, dated_bin, lambda: box.request("PUT", "/fed/dated-bin", b"2", {"Content-Type": "text/plain"}).status)
    changed(meta, dated_bin, lambda: box.request("PATCH", meta, 'INSERT DATA { <> <http://e/p> "x" }', UPDATE).status)


def test_dates_are_the_servers(box):
    """Restated as they are, the dates go back with a PUT (LDP 4.2.4.1); changed, 409."""
    box.request("PUT", "/fed/keep", '<> <http://e/p> "1" .', TTL)
    r = box.request("GET", "/fed/keep")
    assert box.request("PUT", "/fed/keep", r.body, {**TTL, "If-Match": r.header("ETag")}).status == 204
    r = box.request("GET", "/fed/keep", headers=NT)
    etag = r.header("ETag")
    old = f'"2000-01-01T00:00:00Z"^^<{XSD_DATETIME}>'
    for predicate in SERVER_DATES:
        lines = [line for line in r.body.decode().splitlines() if f"<{predicate}>" not in line]
        body = "\n".join(lines + [f"<{box.base}fed/keep> <{predicate}> {old} ."])
        refused = box.request("PUT", "/fed/keep", body, {"Content-Type": "application/n-triples"})
        assert refused.status == 409 and predicate.encode() in refused.body
        assert CONSTRAINED_BY in refused.header("Link")
    assert box.request("HEAD", "/fed/keep").header("ETag") == etag
    assert box.request("GET", "/fed/keep", headers=NT).body == r.body


def test_if_modified_since(box):
    box.request("PUT", "/fed/ims", '<> <http://e/p> "1" .', TTL)
    box.request("PUT", "/fed/ims-bin", b"1", {"Content-Type": "text/plain"})
    for path in ("/fed/ims", "/fed/ims-bin", "/fed/ims-bin/fcr:metadata"):
        r = box.request("GET", path)
        since = r.header("Last-Modified")
        for method in ("GET", "HEAD"):
            same = box.request(method, path, headers={"If-Modified-Since": since})
            assert same.status == 304 and same.body == b"" and same.header("ETag") == r.header("ETag")
        earlier = format_datetime(last_modified(r) - timedelta(seconds=1), usegmt=True)
        assert box.request("GET", path, headers={"If-Modified-Since": earlier}).body == r.body
        assert box.request("GET", path, headers={"If-Modified-Since": "not a date"}).status == 200
        # If-None-Match decides when both are sent (RFC 9110 13.1.3).
        assert box.request("GET", path, headers={"If-Modified-Since": since, "If-None-Match": '"other"'}).status == 200


def test_if_unmodified_since(box):
    box.request("PUT", "/fed/ius", '<> <http://e/p> "1" .', TTL)
    r = box.request("GET", "/fed/ius")
    past = format_datetime(last_modified(r) - timedelta(seconds=1), usegmt=True)
    future = format_datetime(datetime.now(timezone.utc) + timedelta(days=1), usegmt=True)
    assert box.request("GET", "/fed/ius", headers={"If-Unmodified-Since": past}).status == 412
    assert box.request("GET", "/fed/ius", headers={"If-Unmodified-Since": future}).status == 200
    for method, body, headers in (("PUT", '<> <http://e/p> "2" .', TTL),
                                  ("PATCH", 'INSERT DATA { <> <http://e/p> "3" }', UPDATE)):
        refused = box.request(method, "/fed/ius", body, {**headers, "If-Unmodified-Since": past})
        assert refused.status == 412 and CONSTRAINED_BY in refused.header("Link")
        assert box.request("HEAD", "/fed/ius").header("ETag") == r.header("ETag")
    # If-Match decides when both are sent (RFC 9110 13.1.4).
    assert box.request("PUT", "/fed/ius", '<> <http://e/p> "2" .',
                       {**TTL, "If-Unmodified-Since": past, "If-Match": r.header("ETag")}).status == 204
    assert box.request("DELETE", "/fed/ius", headers={"If-Unmodified-Since": past}).status == 412
    assert box.request("DELETE", "/fed/ius", headers={"If-Unmodified-Since": future}).status == 204


# -- 7: If-Match compares strongly -------------------------------------------------------
def test_a_weak_etag_never_matches_if_match(box):
    """RFC 9110 13.1.1: If-Match uses the strong comparison, so a weak tag fails (412);
    If-None-Match uses the weak one."""
    box.request("PUT", "/fed/weak", '<> <http://e/p> "1" .', TTL)
    etag = box.request("HEAD", "/fed/weak").header("ETag")
    weak = "W/" + etag
    for method, body, headers in (("PUT", '<> <http://e/p> "2" .', TTL),
                                  ("PATCH", 'INSERT DATA { <> <http://e/p> "3" }', UPDATE),
                                  ("DELETE", None, {}), ("GET", None, {})):
        r = box.request(method, "/fed/weak", body, {**headers, "If-Match": weak})
        assert r.status == 412, (method, r.body)
    assert box.request("HEAD", "/fed/weak").header("ETag") == etag
    assert box.request("GET", "/fed/weak", headers={"If-None-Match": weak}).status == 304
    assert box.request("PUT", "/fed/weak", '<> <http://e/p> "2" .', {**TTL, "If-Match": etag}).status == 204
