"""Versions in ``lakebench serve`` (Fedora API 1.0 section 4, Memento RFC 7089): every
resource but the root is versioned; POST to its TimeMap takes a memento of it as it is,
which is then read by its URI or by Accept-Datetime, listed, immutable, deletable, and
gone with its resource."""
from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import pytest
import rdflib

from lakebench.server.headers import link_targets, link_types
from lakebench.server.mementos import http_datetime, memento_datetime

from .conftest import graph_of

MEMENTO = "http://mementoweb.org/ns#"
LDP = "http://www.w3.org/ns/ldp#"
TITLE = rdflib.URIRef("http://purl.org/dc/terms/title")
TURTLE = {"Content-Type": "text/turtle"}


def next_second() -> None:
    """Wait for the clock's next second: a resource has at most one memento a second."""
    time.sleep(1.0 - time.time() % 1.0 + 0.01)


def titles(graph, uri: str) -> set[str]:
    return {str(o) for o in graph.objects(rdflib.URIRef(uri), TITLE)}


def parsed(response) -> rdflib.Graph:
    return graph_of(response.body, response.headers["content-type"])


def take(wsgi, path: str) -> str:
    """POST to the TimeMap of ``path``: the new memento's URL."""
    r = wsgi("POST", path + "/fcr:versions")
    assert r.status == 201, r.body
    assert r.headers["memento-datetime"]
    return r.headers["location"]


@pytest.fixture
def versioned(repository, wsgi):
    """A container /v with a title, and two mementos: 'one' then 'two' (a second apart)."""
    assert wsgi("PUT", "/v", b'<> <http://purl.org/dc/terms/title> "one" .', TURTLE).status == 201
    first = take(wsgi, "/v")
    next_second()
    assert wsgi("PUT", "/v", b'<> <http://purl.org/dc/terms/title> "two" .', TURTLE).status == 204
    second = take(wsgi, "/v")
    return repository.base_url + "v", first, second


def local(url: str, base: str) -> str:
    return "/" + url[len(base):]


def test_a_resource_is_an_original_and_its_own_timegate(repository, wsgi):
    assert wsgi("PUT", "/r", b"", TURTLE).status == 201
    uri = repository.base_url + "r"
    for method in ("GET", "HEAD", "OPTIONS"):
        r = wsgi(method, "/r")
        assert MEMENTO + "OriginalResource" in link_types(r.headers["link"])
        assert MEMENTO + "TimeGate" in link_types(r.headers["link"])
        assert link_targets(r.headers["link"], "timegate") == [uri]
        assert link_targets(r.headers["link"], "timemap") == [uri + "/fcr:versions"]
        assert "Accept-Datetime" in r.headers["vary"]
    # Asking for a versioned resource (Fedora API 4.1.1) is asking for what every resource is.
    asked = {**TURTLE, "Link": f'<{MEMENTO}OriginalResource>; rel="type"'}
    assert wsgi("PUT", "/asked", b"", asked).status == 201
    assert MEMENTO + "OriginalResource" in link_types(wsgi("HEAD", "/asked").headers["link"])
    root = wsgi("GET", "/")
    assert MEMENTO + "OriginalResource" not in link_types(root.headers["link"])
    assert wsgi("GET", "/fcr:versions").status == 404


def test_a_memento_holds_the_state_it_was_taken_in(repository, wsgi, versioned):
    uri, first, second = versioned
    base = repository.base_url
    assert first.startswith(uri + "/fcr:versions/") and second > first
    for url, title in ((first, "one"), (second, "two")):
        r = wsgi("GET", local(url, base), headers={"Accept": "text/turtle"})
        assert r.status == 200
        graph = parsed(r)
        assert titles(graph, uri) == {title}
        assert (rdflib.URIRef(uri), rdflib.RDF.type, rdflib.URIRef(LDP + "BasicContainer")) in graph
        link = r.headers["link"]
        assert MEMENTO + "Memento" in link_types(link)
        assert link_targets(link, "original") == [uri]
        assert link_targets(link, "timegate") == [uri]
        assert link_targets(link, "timemap") == [uri + "/fcr:versions"]
        assert r.headers["memento-datetime"] == http_datetime(url.rsplit("/", 1)[1])
        for accept in ("application/n-triples", "application/ld+json"):
            other = wsgi("GET", local(url, base), headers={"Accept": accept})
            assert titles(parsed(other), uri) == {title}
    # The resource itself moved on; its own representation holds none of its mementos' triples.
    assert titles(parsed(wsgi("GET", "/v", headers={"Accept": "text/turtle"})), uri) == {"two"}


def test_the_timemap_lists_the_mementos_in_link_format_and_rdf(repository, wsgi, versioned):
    uri, first, second = versioned
    r = wsgi("GET", "/v/fcr:versions", headers={"Accept": "application/link-format"})
    assert r.status == 200 and r.headers["content-type"] == "application/link-format"
    listed = r.body.decode()
    assert link_targets(listed, "memento") == [first, second]
    assert link_targets(listed, "original") == [uri]
    assert MEMENTO + "TimeMap" in link_types(r.headers["link"])
    r = wsgi("GET", "/v/fcr:versions", headers={"Accept": "text/turtle"})
    graph = parsed(r)
    timemap = rdflib.URIRef(uri + "/fcr:versions")
    assert set(graph.objects(timemap, rdflib.URIRef(LDP + "contains"))) == {rdflib.URIRef(first),
                                                                            rdflib.URIRef(second)}
    assert (timemap, rdflib.URIRef(MEMENTO + "original"), rdflib.URIRef(uri)) in graph
    assert wsgi("OPTIONS", "/v/fcr:versions").headers["allow"] == "GET, HEAD, POST, OPTIONS"
    for method in ("PUT", "PATCH", "DELETE"):
        assert wsgi(method, "/v/fcr:versions", b"", TURTLE).status == 405


def test_accept_datetime_negotiates_the_memento_of_that_time(repository, wsgi, versioned):
    uri, first, second = versioned
    at_second = memento_datetime(second.rsplit("/", 1)[1])
    cases = ((at_second, second), (at_second - timedelta(seconds=1), first),
             (at_second + timedelta(days=1), second))
    for when, expected in cases:
        r = wsgi("GET", "/v", headers={"Accept-Datetime": format_datetime(when, usegmt=True)})
        assert r.status == 302 and r.headers["location"] == expected
        assert "Accept-Datetime" in r.headers["vary"]
    before = memento_datetime(first.rsplit("/", 1)[1]) - timedelta(seconds=1)
    assert wsgi("GET", "/v", headers={"Accept-Datetime": format_datetime(before, usegmt=True)}).status == 406
    assert wsgi("GET", "/v", headers={"Accept-Datetime": "last week"}).status == 400


def test_a_memento_is_immutable_and_can_be_deleted(repository, wsgi, versioned):
    uri, first, second = versioned
    path = local(first, repository.base_url)
    for method in ("PUT", "PATCH", "POST"):
        r = wsgi(method, path, b"", TURTLE)
        assert r.status == 405 and r.headers["allow"] == "GET, HEAD, DELETE, OPTIONS"
    assert wsgi("DELETE", path).status == 204
    assert wsgi("GET", path).status == 404
    listed = wsgi("GET", "/v/fcr:versions", headers={"Accept": "application/link-format"}).body.decode()
    assert link_targets(listed, "memento") == [second]
    assert wsgi("DELETE", path).status == 404
    assert wsgi("GET", "/v/fcr:versions/notadate").status == 404


def test_one_memento_a_second(repository, wsgi):
    assert wsgi("PUT", "/r", b"", TURTLE).status == 201
    for _ in range(3):  # two POSTs in one second: the second is refused
        next_second()
        if wsgi("POST", "/r/fcr:versions").status == 201:
            r = wsgi("POST", "/r/fcr:versions")
            if r.status == 409:
                break
    else:
        pytest.fail("no second held two POSTs")
    assert b"one a second" in r.body


def test_mementos_go_with_their_resource(repository, wsgi, versioned):
    uri, first, _ = versioned
    assert wsgi("PUT", "/v/child", b'<> <http://purl.org/dc/terms/title> "c" .', TURTLE).status == 201
    child = take(wsgi, "/v/child")
    assert wsgi("DELETE", "/v").status == 204
    for url in (first, child):
        assert wsgi("GET", local(url, repository.base_url)).status == 410
    assert wsgi("GET", "/v/fcr:versions").status == 410
    with repository.store.read() as txn:  # nothing left of them in the store
        assert not [q for q in txn.quads(None, None, None, None) if b"/fcr:versions/" in q[3]]


def test_a_memento_is_no_inbound_reference(repository, wsgi):
    base = repository.base_url
    assert wsgi("PUT", "/target", b"", TURTLE).status == 201
    assert wsgi("PUT", "/source", f"<> <http://e/p> <{base}target> .".encode(), TURTLE).status == 201
    take(wsgi, "/source")
    prefer = {"Prefer": 'return=representation; include="http://fedora.info/definitions/fcrepo#PreferInboundReferences"',
              "Accept": "application/n-triples"}
    body = wsgi("GET", "/target", headers=prefer).body
    assert body.count(f"<{base}target> .".encode()) == 1  # the source's, once


def test_a_binary_memento_keeps_its_bytes(repository, wsgi):
    base = repository.base_url
    assert wsgi("PUT", "/b", b"first bytes", {"Content-Type": "application/octet-stream"}).status == 201
    first = take(wsgi, "/b")
    assert wsgi("PUT", "/b", b"second", {"Content-Type": "text/plain"}).status == 204
    r = wsgi("GET", local(first, base))
    assert r.status == 200 and r.body == b"first bytes"  # read once: the body is a stream
    assert r.headers["content-type"] == "application/octet-stream"
    assert MEMENTO + "Memento" in link_types(r.headers["link"])
    assert LDP + "NonRDFSource" in link_types(r.headers["link"])
    assert wsgi("GET", "/b").body == b"second"
    files = sorted((repository.store.path / "binaries").iterdir())
    assert len(files) == 2  # the binary's and the memento's
    assert wsgi("DELETE", local(first, base)).status == 204
    assert len(list((repository.store.path / "binaries").iterdir())) == 1
