"""Repository: LDP resources over the LMDB store, in-process (no HTTP)."""
from __future__ import annotations

import doctest

import pyoxigraph as ox
import pytest

from lakebench.server import repository as repository_module
from lakebench.server.repository import (
    LDP,
    META_GRAPH,
    SERVER_GRAPH,
    TOMBSTONE_GRAPH,
    Repository,
    RepositoryError,
    iri,
)
from lakebench.server.vocabulary import CONTAINER

from .conftest import SERVER_DATES, TEST_BASE, check_store

B = TEST_BASE
TURTLE = "text/turtle"


def quads(repo, **pattern):
    with repo.store.read() as txn:  # sees the write batch
        return list(txn.quads(**pattern))


def own_triples(repo, uri) -> set[tuple[bytes, bytes, bytes]]:
    return {q[:3] for q in quads(repo, c=iri(uri))}


def body_of(repo, uri, media_type="application/n-triples", containment=True) -> bytes:
    info, chunks = repo.representation(uri, media_type, containment=containment)
    try:
        return b"".join(chunks)
    finally:
        chunks.close()


def test_doctests():
    result = doctest.testmod(repository_module)
    assert result.attempted > 0 and result.failed == 0


def test_root_is_a_container_and_survives_reopening(tmp_path):
    repo = Repository(tmp_path / "s", B, durability="nosync")
    root = repo.info(B)
    assert root.container and root.uri == B
    etag = root.etag
    repo.close()
    repo = Repository(tmp_path / "s", B, durability="nosync")
    assert repo.info(B).etag == etag  # not recreated
    repo.close()


def test_put_creates_child_and_containment_together(repository):
    created, etag = repository.put(B + "parent", b'<> <http://e/p> "x" .', TURTLE)
    assert created and etag
    assert repository.children(B) == [B + "parent"]
    created, _ = repository.put(B + "parent/a", b"<> <http://e/p> <../parent>, <b> .", TURTLE,
                                container=False)
    assert created
    assert repository.children(B + "parent") == [B + "parent/a"]
    assert not repository.info(B + "parent/a").container
    assert own_triples(repository, B + "parent/a") == {
        (iri(B + "parent/a"), iri("http://e/p"), iri(B + "parent")),
        (iri(B + "parent/a"), iri("http://e/p"), iri(B + "parent/b")),
    }
    # ldp:contains lives in the server graph, never in the resource's own graph.
    assert quads(repository, s=iri(B + "parent"), p=iri(LDP + "contains")) == [
        (iri(B + "parent"), iri(LDP + "contains"), iri(B + "parent/a"), iri(SERVER_GRAPH))]


def test_replace_keeps_containment_and_changes_etag(repository):
    repository.put(B + "p", b'<> <http://e/p> "one" .', TURTLE)
    repository.put(B + "p/c", b"", TURTLE)
    before = repository.info(B + "p").etag
    created, etag = repository.put(B + "p", b'<> <http://e/p> "two" .', TURTLE)
    assert not created and etag != before
    assert repository.info(B + "p").etag == etag
    assert own_triples(repository, B + "p") == {(iri(B + "p"), iri("http://e/p"), b"Ltwo")}
    assert repository.children(B + "p") == [B + "p/c"]


def test_parent_etag_changes_when_a_child_comes_or_goes(repository):
    repository.put(B + "p", b"", TURTLE)
    e0 = repository.info(B + "p").etag
    repository.put(B + "p/c", b"", TURTLE)
    e1 = repository.info(B + "p").etag
    repository.delete(B + "p/c")
    e2 = repository.info(B + "p").etag
    assert len({e0, e1, e2}) == 3


def test_missing_parent_and_non_container_parent(repository):
    with pytest.raises(RepositoryError) as exc:
        repository.put(B + "nope/c", b"", TURTLE)
    assert exc.value.status == 404
    repository.put(B + "src", b"", TURTLE, container=False)
    with pytest.raises(RepositoryError) as exc:
        repository.put(B + "src/c", b"", TURTLE)
    assert exc.value.status == 409
    assert repository.info(B + "nope/c") is None and repository.info(B + "src/c") is None
    assert repository.children(B + "src") == []


@pytest.mark.parametrize("body,status", [
    (b"<> <http://www.w3.org/ns/ldp#contains> <x> .", 409),
    (b"@prefix ldp: <http://www.w3.org/ns/ldp#> . <> a ldp:NonRDFSource .", 409),
    (b"@prefix ldp: <http://www.w3.org/ns/ldp#> . <../p> a ldp:BasicContainer .", 409),  # another's
    (b"@prefix ldp: <http://www.w3.org/ns/ldp#> . <> a ldp:DirectContainer .", 409),
    (b"@prefix ldp: <http://www.w3.org/ns/ldp#> . <../p> ldp:contains <../p/old> .", 409),
    (b'<> <http://e/p> "unterminated .', 400),
    (b"<> <http://e/p> << <a> <b> <c> >> .", 400),  # RDF 1.2: pyoxigraph reads it, the store not
    (b'<> <http://e/p> "x"@en--ltr .', 400),
])
def test_refused_bodies_write_nothing(repository, body, status):
    repository.put(B + "p", b"", TURTLE)
    repository.put(B + "p/old", b'<> <http://e/p> "keep" .', TURTLE)
    etag = repository.info(B + "p/old").etag
    parent_etag = repository.info(B + "p").etag
    for uri in (B + "p/old", B + "p/new"):  # replacing and creating
        with pytest.raises(RepositoryError) as exc:
            repository.put(uri, body, TURTLE)
        assert exc.value.status == status, exc.value.message
    assert own_triples(repository, B + "p/old") == {(iri(B + "p/old"), iri("http://e/p"), b"Lkeep")}
    assert repository.info(B + "p/old").etag == etag
    assert repository.info(B + "p/new") is None
    assert repository.children(B + "p") == [B + "p/old"]
    assert repository.info(B + "p").etag == parent_etag
    assert quads(repository, c=iri(B + "p/new")) == []


def test_preconditions(repository):
    repository.put(B + "p", b"", TURTLE)
    etag = repository.info(B + "p").etag
    for kwargs in ({"if_match": '"nope"'}, {"if_none_match": "*"}, {"if_none_match": f'"{etag}"'}):
        with pytest.raises(RepositoryError) as exc:
            repository.put(B + "p", b'<> <http://e/p> "x" .', TURTLE, **kwargs)
        assert exc.value.status == 412
    with pytest.raises(RepositoryError) as exc:
        repository.put(B + "q", b"", TURTLE, if_match="*")  # If-Match on a missing resource
    assert exc.value.status == 412
    with pytest.raises(RepositoryError) as exc:
        repository.delete(B + "p", if_match='"nope"')
    assert exc.value.status == 412
    assert repository.info(B + "p").etag == etag
    created, new = repository.put(B + "p", b"", TURTLE, if_match=f'"{etag}", "other"')
    assert not created and new != etag
    # If-Match compares strongly (RFC 9110 13.1.1): the weak form of the current tag fails.
    with pytest.raises(RepositoryError) as exc:
        repository.delete(B + "p", if_match=f'W/"{new}"')
    assert exc.value.status == 412
    repository.delete(B + "p", if_match=f'W/"other", "{new}"')
    assert repository.info(B + "p") is None


def test_delete_is_recursive_and_leaves_no_trace(repository):
    repository.put(B + "p", b'<> <http://e/p> "x" .', TURTLE)
    repository.put(B + "p/a", b'<> <http://e/p> "a" .', TURTLE)
    repository.put(B + "p/a/b", b'<> <http://e/p> [ <http://e/q> "b" ] .', TURTLE)
    repository.put(B + "p/c", b"", TURTLE, container=False)
    repository.delete(B + "p")
    for uri in ("p", "p/a", "p/a/b", "p/c"):
        assert repository.info(B + uri) is None
        assert quads(repository, c=iri(B + uri)) == []
        tombstones = [iri(TOMBSTONE_GRAPH)] if uri == "p" else []  # only the deleted one has one
        assert [q[3] for q in quads(repository, s=iri(B + uri))] == tombstones
    assert repository.children(B) == []
    # Only the root is left (its types and its ETag), and the tombstone of p.
    assert {q[3] for q in quads(repository)} == {iri(SERVER_GRAPH), iri(META_GRAPH), iri(TOMBSTONE_GRAPH)}
    assert [q[0] for q in quads(repository, c=iri(TOMBSTONE_GRAPH))] == [iri(B + "p")]
    with pytest.raises(RepositoryError) as exc:
        repository.delete(B + "p")
    assert exc.value.status == 410
    with pytest.raises(RepositoryError) as exc:
        repository.delete(B)
    assert exc.value.status == 405
    # The same path can be created again once its tombstone is deleted.
    with pytest.raises(RepositoryError) as exc:
        repository.put(B + "p", b"", TURTLE)
    assert exc.value.status == 410
    repository.delete_tombstone(B + "p")
    assert repository.put(B + "p", b"", TURTLE)[0]


def test_representation_without_containment(repository):
    repository.put(B + "p", b'<> <http://e/p> "x" .', TURTLE)
    repository.put(B + "p/c", b"", TURTLE)
    full = body_of(repository, B + "p")
    minimal = body_of(repository, B + "p", containment=False)
    assert f"<{LDP}contains> <{B}p/c>".encode() in full
    assert b"contains" not in minimal
    assert f"<{LDP}BasicContainer>".encode() in minimal and b'"x"' in minimal


def test_turtle_declares_the_prefix_once(repository):
    repository.put(B + "p", b'<> <http://e/p> "x" .', TURTLE)
    repository.put(B + "p/c", b"", TURTLE)
    body = body_of(repository, B + "p", TURTLE)
    assert body.count(b"@prefix") == 1, body
    assert len(list(ox.parse(body, format=ox.RdfFormat.TURTLE))) == 8  # 1 + 4 types + 2 dates + 1 contains
    body = body_of(repository, B, TURTLE)  # the root: no triples of its own
    assert body.count(b"@prefix") == 1, body


def test_container_of_10000_children_is_streamed(repository):
    """The parent's representation comes from the index scan in bounded chunks."""
    repository.put(B + "big", b"", TURTLE)

    def create_children(txn):  # 10,000 empty children in one go
        for k in range(10_000):
            repository._create(txn, f"{B}big/c{k:05d}", CONTAINER, parent=B + "big")

    repository.store.write(create_children)
    open_before = repository.env.open_txns  # the write batch
    info, chunks = repository.representation(B + "big", TURTLE, chunk_size=1 << 14)
    assert not isinstance(chunks, (bytes, list, tuple))
    sizes, body = [], []
    for chunk in chunks:
        sizes.append(len(chunk))
        body.append(chunk)
    chunks.close()
    assert len(sizes) > 20 and max(sizes) < 2 * (1 << 14), (len(sizes), max(sizes))
    triples = list(ox.parse(b"".join(body), format=ox.RdfFormat.TURTLE))
    contains = {t.object.value for t in triples if t.predicate.value == LDP + "contains"}
    assert len(contains) == 10_000
    assert repository.env.open_txns == open_before


def test_closing_an_unread_representation_ends_its_transaction(tmp_path):
    # Without the log (several workers), a representation reads its own snapshot.
    repository = Repository(tmp_path / "store", TEST_BASE, durability="nosync", log=False)
    found = repository.representation(B, TURTLE)
    assert repository.env.open_txns == 1
    found[1].close()
    assert repository.env.open_txns == 0
    assert repository.representation(B + "nope", TURTLE) is None
    assert repository.env.open_txns == 0
    repository.close()


def test_a_full_map_is_grown_and_the_write_retried(tmp_path):
    repo = Repository(tmp_path / "s", B, durability="nosync", map_size=1 << 20)
    body = "".join(f'<> <http://e/p{i}> "{"v" * 40}{i}" .\n' for i in range(30_000)).encode()
    assert len(body) > 1 << 20
    created, _ = repo.put(B + "big", body, TURTLE)
    assert created and len(own_triples(repo, B + "big")) == 30_000
    assert repo.env.info()["map_size"] > 1 << 20
    repo.close()
    assert check_store(tmp_path / "s") == []


def test_store_is_consistent_after_a_mixed_session(tmp_path):
    repo = Repository(tmp_path / "s", B, durability="nosync")
    repo.put(B + "p", b"", TURTLE)
    for k in range(20):
        repo.put(f"{B}p/c{k}", f'<> <http://e/p> "{k}", <../p> .'.encode(), TURTLE)
    for k in range(0, 20, 3):
        repo.delete(f"{B}p/c{k}")
    for k in range(1, 20, 3):
        repo.put(f"{B}p/c{k}", b'<> <http://e/q> "replaced" .', TURTLE)
    with pytest.raises(RepositoryError):
        repo.put(B + "p/c1", b"<> <http://www.w3.org/ns/ldp#contains> <x> .", TURTLE)
    assert len(repo.children(B + "p")) == 20 - 7
    repo.close()
    assert check_store(tmp_path / "s") == []


_DYING_READER = r"""
import os, signal, sys
from lakebench.store import LmdbStore
store = LmdbStore(sys.argv[1], readonly=True)
snapshot = store.read()  # takes a reader slot
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_reader_slots_of_killed_processes_are_freed_at_start_and_periodically(tmp_path):
    import subprocess
    import sys
    import time

    path = tmp_path / "store"
    Repository(path, TEST_BASE).close()

    def killed_reader():
        done = subprocess.run([sys.executable, "-c", _DYING_READER, str(path)], capture_output=True, timeout=60)
        assert done.returncode == -9, done.stderr

    killed_reader()
    repository = Repository(path, TEST_BASE)  # upkeep at start freed it
    assert repository.store.clear_stale_readers() == 0
    killed_reader()
    assert repository.upkeep() == 0  # not yet due
    assert repository.upkeep(now=time.monotonic() + repository_module.UPKEEP_SECONDS) == 1
    repository.close()


def test_a_resource_stored_without_dates_is_served(repository, wsgi):
    """A store written before the server kept dates: no Last-Modified, date preconditions
    ignored (RFC 9110 13.1.3, 13.1.4), and the next change gives it a lastModified."""
    repository.put(B + "old", b'<> <http://e/p> "x" .', TURTLE)

    def forget_dates(txn):
        for predicate in SERVER_DATES:
            txn.remove(iri(B + "old"), iri(predicate), None, iri(SERVER_GRAPH))

    repository.store.write(forget_dates)
    r = wsgi("GET", "/old", headers={"If-Modified-Since": "Sat, 01 Jan 2000 00:00:00 GMT",
                                    "If-Unmodified-Since": "Sat, 01 Jan 2000 00:00:00 GMT"})
    assert r.status == 200 and "last-modified" not in r.headers and b'"x"' in r.body
    assert b"lastModified" not in r.body
    r = wsgi("PUT", "/old", b'<> <http://e/p> "y" .', {"Content-Type": TURTLE,
                                                       "If-Unmodified-Since": "Sat, 01 Jan 2000 00:00:00 GMT"})
    assert r.status == 204
    r = wsgi("GET", "/old")
    assert r.status == 200 and r.headers["last-modified"].endswith(" GMT")
    assert b"lastModified" in r.body and b"created" not in r.body  # its creation is not known
