"""LDP Paging 1.0 in ``lakebench serve``: a client that asks for pages of N children is sent
to the first page, and walks the container by its ``next`` links, each child on one page."""
from __future__ import annotations

import json
import re

import pytest
import rdflib

from lakebench.server.headers import link_targets, link_types
from lakebench.server.vocabulary import LDP_PAGE

from .conftest import LDP_CONTAINS, graph_of

LDP = "http://www.w3.org/ns/ldp#"
CHILDREN = 1_200


def paging(n: int, *more: str) -> dict:
    return {"Prefer": "; ".join([f'return=representation; max-member-count="{n}"', *more])}


@pytest.fixture
def big(repository, wsgi):
    """A container of 1,200 children."""
    base = repository.base_url
    assert wsgi("PUT", "/big", b'<> <http://e/p> "mine" .', {"Content-Type": "text/turtle"}).status == 201
    for k in range(CHILDREN):
        repository.put(f"{base}big/c{k:05d}", b"", "text/turtle", container=False)
    return base + "big"


def canonical_etag(link: str) -> str:
    """The etag parameter of the rel="canonical" link, unquoted."""
    (quoted,) = re.findall(r'rel="canonical"; etag="((?:[^"\\]|\\.)*)"', link)
    return re.sub(r"\\(.)", r"\1", quoted)


def path_of(url: str, base: str) -> str:
    assert url.startswith(base)
    return "/" + url[len(base):]


def walk(wsgi, repository, size: int, accept: str = "text/turtle"):
    """Follow the 303 and the next links: [(response, body), ...] of every page."""
    base = repository.base_url
    r = wsgi("GET", "/big", headers={**paging(size), "Accept": accept})
    assert r.status == 303 and "Prefer" in r.headers["vary"]
    assert r.headers["location"] == f"{base}big?page=0&size={size}"
    url, pages = r.headers["location"], []
    while url is not None:
        r = wsgi("GET", path_of(url, base), headers={"Accept": accept})
        assert r.status == 200, r.body
        pages.append((r, r.body))
        assert len(pages) <= CHILDREN // size + 1
        following = link_targets(r.headers["link"], "next")
        url = following[0] if following else None
    return pages


def children_on(body: bytes, accept: str, container: str) -> list[str]:
    if accept == "application/ld+json":
        graph = rdflib.Graph().parse(data=body, format="json-ld")
    else:
        graph = graph_of(body, accept)
    return [str(o) for o in graph.objects(rdflib.URIRef(container), rdflib.URIRef(LDP_CONTAINS))]


@pytest.mark.parametrize("accept", ["text/turtle", "application/n-triples", "application/ld+json"])
def test_a_walk_holds_every_child_once(repository, wsgi, big, accept):
    etag = wsgi("HEAD", "/big").headers["etag"]
    pages = walk(wsgi, repository, 500, accept)
    assert len(pages) == 3
    seen = [children_on(body, accept, big) for _, body in pages]
    assert [len(s) for s in seen] == [500, 500, 200]
    everyone = [c for s in seen for c in s]
    assert len(set(everyone)) == CHILDREN == len(everyone)
    assert set(everyone) == {f"{big}/c{k:05d}" for k in range(CHILDREN)}
    for k, (r, body) in enumerate(pages):
        assert LDP_PAGE in link_types(r.headers["link"])
        # The container is canonical, with its ETag: a client sees whether it changed during the walk.
        assert f'<{big}>; rel="canonical"; etag="{json.dumps(etag)[1:-1]}"' in r.headers["link"]
        assert canonical_etag(r.headers["link"]) == etag
        assert f'<{LDP}RDFSource>; rel="type"' in r.headers["link"]
        assert link_targets(r.headers["link"], "first") == [f"{big}?page=0&size=500"]
        assert bool(link_targets(r.headers["link"], "next")) == (k < 2)  # none on the last page
        assert r.headers["allow"] == "GET, HEAD, OPTIONS"
        # The container's own triples come on the first page only.
        assert (b'"mine"' in body) == (k == 0)


def test_no_pages_for_a_container_that_fits_or_a_client_that_does_not_page(repository, wsgi, big):
    for headers in (paging(CHILDREN), {"Prefer": 'return=representation; max-kbyte-count="5"'}, {}):
        r = wsgi("GET", "/big", headers=headers)
        assert r.status == 200
        assert LDP_PAGE not in link_types(r.headers["link"])
        assert len(children_on(r.body, "text/turtle", big)) == CHILDREN
    # The least of two hints; a page size hint on a resource that is not a container is moot.
    r = wsgi("GET", "/big", headers=paging(700, 'max-triple-count="600"'))
    assert r.status == 303 and r.headers["location"].endswith("?page=0&size=600")
    r = wsgi("GET", "/big/c00001", headers=paging(1))
    assert r.status == 200


def test_a_page_is_read_only(repository, wsgi, big):
    for method, body in (("PUT", b""), ("POST", b""), ("PATCH", b"INSERT DATA { <> <http://e/p> 1 }"),
                         ("DELETE", b"")):
        r = wsgi(method, "/big?page=0&size=10", body, {"Content-Type": "text/turtle"})
        assert r.status == 405 and "read only" in r.body.decode()
        assert r.headers["allow"] == "GET, HEAD, OPTIONS"
    r = wsgi("OPTIONS", "/big?page=0&size=10")
    assert r.status == 204 and r.headers["allow"] == "GET, HEAD, OPTIONS"
    assert wsgi("OPTIONS", "/nothing?page=0&size=10").status == 404
    assert len(repository.children(big)) == CHILDREN  # nothing was changed
    r = wsgi("HEAD", "/big?page=0&size=10")
    assert r.status == 200 and list(r.iterable) == []
    assert LDP_PAGE in link_types(r.headers["link"])


@pytest.mark.parametrize("query,status,says", [
    ("page=x&size=10", 400, "whole numbers"),
    ("page=0&size=0", 400, "1 to 100,000"),
    ("page=0&size=100001", 400, "1 to 100,000"),
    ("page=-1&size=10", 400, "whole numbers"),
    ("page=99999999999&size=10", 400, "whole numbers"),
    ("page=0", 400, "whole numbers"),
    ("page=0&size=10&page=1%ZZ", 400, "whole numbers"),
    ("page=%C2%B2&size=10", 400, "whole numbers"),
    ("&".join(f"x{k}=1" for k in range(20)) + "&page=0&size=1", 400, "too many parameters"),
])
def test_a_page_named_wrong_is_a_clear_400(repository, wsgi, big, query, status, says):
    r = wsgi("GET", f"/big?{query}")
    assert r.status == status and says in r.body.decode()


def test_only_a_container_has_pages(repository, wsgi, big):
    r = wsgi("GET", "/big/c00001?page=0&size=10")
    assert r.status == 404 and "not a container" in r.body.decode()
    r = wsgi("GET", "/nothing?page=0&size=10")
    assert r.status == 404
    r = wsgi("GET", "/big/fcr:metadata?page=0&size=10")
    assert r.status == 400
    # Other query parameters are ignored, as before, and beside a page's.
    r = wsgi("GET", "/big?other=1&flag")
    assert r.status == 200 and LDP_PAGE not in link_types(r.headers["link"])
    r = wsgi("GET", "/big?flag&page=0&size=10")
    assert r.status == 200 and LDP_PAGE in link_types(r.headers["link"])


def test_each_page_starts_where_the_last_ended_and_the_last_says_so(repository, big):
    """A page starts at the id the one before gave (a seek into the index); the last gives
    none, and a start past every id is an empty last page."""
    info, chunks, next_start = repository.page(big, "application/n-triples", 0, 500)
    first = b"".join(chunks)
    chunks.close()
    assert first.count(LDP_CONTAINS.encode()) == 500 and next_start is not None
    _, chunks, next_start = repository.page(big, "application/n-triples", next_start, 500)
    chunks.close()
    _, chunks, last_start = repository.page(big, "application/n-triples", next_start, 500)
    body = b"".join(chunks)
    chunks.close()
    assert body.count(LDP_CONTAINS.encode()) == 200 and last_start is None
    # A start past every id: an empty page, the last one.
    _, chunks, after = repository.page(big, "application/n-triples", (1 << 32) - 1, 500)
    assert b"".join(chunks) == b"" and after is None
    chunks.close()
    assert repository.env.open_txns <= 1  # the write batch at most: every page's read ended


def test_a_walk_sees_unchanged_children_while_the_container_changes(repository, wsgi, big):
    base = repository.base_url
    r = wsgi("GET", "/big", headers=paging(500))
    first = wsgi("GET", path_of(r.headers["location"], base))
    before = first.headers["link"]
    seen = set(children_on(first.body, "text/turtle", big))
    # A child deleted and one created between pages.
    assert wsgi("DELETE", "/big/c01100").status == 204
    assert wsgi("PUT", "/big/late", b"", {"Content-Type": "text/turtle"}).status == 201
    url = link_targets(before, "next")[0]
    while url:
        r = wsgi("GET", path_of(url, base))
        seen |= set(children_on(r.body, "text/turtle", big))
        assert canonical_etag(r.headers["link"]) != canonical_etag(before)  # the ETag moved on
        following = link_targets(r.headers["link"], "next")
        url = following[0] if following else None
    unchanged = {f"{big}/c{k:05d}" for k in range(CHILDREN) if k != 1100}
    assert unchanged <= seen and f"{big}/c01100" not in seen
