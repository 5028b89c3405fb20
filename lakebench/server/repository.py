"""LDP resources over the LMDB store: what the HTTP layer reads and writes.

Layout in the store (every term is an encoded store term):

* a resource's own triples (what clients PUT) live in the graph named by the
  resource's IRI, so one resource is one range scan;
* server-managed triples live in the graph ``SERVER_GRAPH``: the resource's
  LDP types and, for a container, one ``ldp:contains`` per child; a GET
  reads them with one scan of the resource as subject;
* bookkeeping the server never shows (the ETag) lives in ``META_GRAPH``.

Every change, a child's triples together with its container's
``ldp:contains`` and both ETags, is one LMDB write transaction: an
interrupted request leaves either all of it or none of it.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Iterator

import pyoxigraph as ox

from lakebench.store import DEFAULT_MAP_SIZE, LmdbStore, MapFullError, ParseError
from lakebench.store.terms import iri, literal

LDP = "http://www.w3.org/ns/ldp#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
SERVER_GRAPH = "urn:lakebench:server"
META_GRAPH = "urn:lakebench:meta"
ETAG = "urn:lakebench:etag"

CONTAINER_TYPES = (LDP + "Resource", LDP + "RDFSource", LDP + "Container", LDP + "BasicContainer")
SOURCE_TYPES = (LDP + "Resource", LDP + "RDFSource")
#: How the store's Turtle serializer declares the ``ldp`` prefix.
_LDP_PREFIX = f"@prefix ldp: <{LDP}> .\n\n".encode()

#: Media types clients may send, and the parser that reads each.
PARSERS = {
    "text/turtle": ox.RdfFormat.TURTLE,
    "application/n-triples": ox.RdfFormat.N_TRIPLES,
    "application/ld+json": ox.RdfFormat.JSON_LD,
}


class RepositoryError(Exception):
    """A request the repository refuses; ``status`` is the HTTP status to answer."""

    def __init__(self, status: int, message: str, allow: str | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.allow = allow  # the Allow header of a 405


@dataclass(frozen=True)
class ResourceInfo:
    uri: str
    container: bool
    etag: str


class Repository:
    """The resources of one LDP server, stored in one LMDB environment."""

    def __init__(self, path: str | os.PathLike, base_url: str, durable: bool = True,
                 map_size: int = DEFAULT_MAP_SIZE, log: bool | None = None):
        # log: the store's write-ahead log (the default when durable), which one
        # process owns; several worker processes need log=False.
        self.store = LmdbStore(path, durable=durable, map_size=map_size, log=log)
        self.base_url = base_url if base_url.endswith("/") else base_url + "/"
        self._type = iri(RDF_TYPE)
        self._contains = iri(LDP + "contains")
        self._server = iri(SERVER_GRAPH)
        self._meta = iri(META_GRAPH)
        self._etag = iri(ETAG)

        def create_root(txn):
            if self._info(txn, self.base_url) is None:
                self._create(txn, self.base_url, container=True, parent=None)

        self._write(create_root)

    @property
    def env(self):
        """The LMDB environment (tests watch its open transactions)."""
        return self.store.env

    def close(self) -> None:
        self.store.close()

    def _write(self, op):
        """``op(txn)`` in one committed write transaction (the map grows when full)."""
        try:
            return self.store.write(op)
        except MapFullError:
            raise RepositoryError(507, "the store is full") from None

    # -- reading ---------------------------------------------------------
    def _info(self, txn, uri: str) -> ResourceInfo | None:
        subject = iri(uri)
        etags = [q[2] for q in txn.quads(subject, self._etag, None, self._meta)]
        if not etags:
            return None
        container = txn.count(subject, self._type, iri(LDP + "BasicContainer"), self._server) > 0
        return ResourceInfo(uri=uri, container=container, etag=etags[0][1:].decode())

    def info(self, uri: str) -> ResourceInfo | None:
        with self.store.read() as txn:
            return self._info(txn, uri)

    def representation(self, uri: str, media_type: str, containment: bool = True,
                       chunk_size: int = 1 << 16) -> tuple[ResourceInfo, Iterator[bytes]] | None:
        """The resource's triples as ``media_type`` chunks, streamed from the indices.

        The chunks come from one read transaction, held until the iterator
        is exhausted or closed, so a reader sees one snapshot.
        """
        txn = self.store.read()
        try:
            info = self._info(txn, uri)
        except BaseException:
            txn.abort()
            raise
        if info is None:
            txn.abort()
            return None
        return info, _Stream(txn, self._chunks(txn, uri, media_type, containment, chunk_size))

    def _chunks(self, txn, uri, media_type, containment, chunk_size) -> Iterator[bytes]:
        subject = iri(uri)
        try:
            if media_type == "application/ld+json":
                # JSON-LD is not streamed: rendered from N-Triples by pyoxigraph.
                body = b"".join(self._scans(txn, subject, "nt", containment, chunk_size))
                yield ox.serialize(ox.parse(body, format=ox.RdfFormat.N_TRIPLES),
                                   format=ox.RdfFormat.JSON_LD)
                return
            fmt = "turtle" if media_type == "text/turtle" else "nt"
            yield from self._scans(txn, subject, fmt, containment, chunk_size)
        finally:
            txn.abort()

    def _scans(self, txn, subject, fmt, containment, chunk_size) -> Iterator[bytes]:
        prefixes = {"ldp": LDP} if fmt == "turtle" else None
        yield from txn.serialize(c=subject, format=fmt, prefixes=prefixes, chunk_size=chunk_size)
        server = txn.serialize(s=subject, p=None if containment else self._type, c=self._server,
                               format=fmt, prefixes=prefixes, chunk_size=chunk_size)
        # The first scan declared the prefix already: drop the second declaration.
        first = True
        for chunk in server:
            if first and chunk.startswith(_LDP_PREFIX):
                chunk = chunk[len(_LDP_PREFIX):]
            first = False
            if chunk:
                yield chunk

    def children(self, uri: str) -> list[str]:
        with self.store.read() as txn:
            return [q[2][1:].decode() for q in txn.quads(iri(uri), self._contains, None, self._server)]

    # -- writing ---------------------------------------------------------
    def _new_etag(self) -> str:
        # Unique per write: the clock and the process, as hex.
        return f"{time.time_ns():x}-{os.getpid():x}"

    def _touch(self, txn, uri: str) -> str:
        subject = iri(uri)
        txn.remove(subject, self._etag, None, self._meta)
        etag = self._new_etag()
        txn.add([(subject, self._etag, literal(etag), self._meta)])
        return etag

    def _create(self, txn, uri: str, container: bool, parent: str | None) -> None:
        subject = iri(uri)
        types = CONTAINER_TYPES if container else SOURCE_TYPES
        quads = [(subject, self._type, iri(t), self._server) for t in types]
        if parent is not None:
            quads.append((iri(parent), self._contains, subject, self._server))
            self._touch(txn, parent)
        txn.add(quads)
        self._touch(txn, uri)

    def _to_ntriples(self, uri: str, body: bytes, media_type: str) -> bytes:
        """``body`` parsed (relative IRIs against ``uri``) and written as N-Triples.

        Done before the write transaction begins, so parsing never holds
        the store's single writer lock.
        """
        if not body.strip():
            return b""
        try:
            fmt = PARSERS[media_type]
        except KeyError:
            raise RepositoryError(415, f"unsupported media type {media_type!r}; "
                                       f"send one of {', '.join(PARSERS)}") from None
        if fmt == ox.RdfFormat.JSON_LD:
            # pyoxigraph's JSON-LD parser recurses on nesting and overflows the
            # C stack (SIGSEGV, the worker dies) a few thousand levels down;
            # Python's json module stops at its recursion limit (~1000) first.
            try:
                json.loads(body)
            except RecursionError:
                raise RepositoryError(400, f"malformed {media_type}: nested too deeply") from None
            except ValueError as exc:
                raise RepositoryError(400, f"malformed {media_type}: {exc}") from None
        try:
            return ox.serialize(ox.parse(body, format=fmt, base_iri=uri, without_named_graphs=True),
                                format=ox.RdfFormat.N_TRIPLES) or b""
        except SyntaxError as exc:
            raise RepositoryError(400, f"malformed {media_type}: {exc}") from None
        except ValueError as exc:  # e.g. invalid UTF-8
            raise RepositoryError(400, f"malformed {media_type}: {exc}") from None

    def _load(self, txn, uri: str, ntriples: bytes, media_type: str) -> None:
        """Store parsed ``ntriples`` as the resource's graph; refuse server-managed triples."""
        if not ntriples:
            return
        subject = iri(uri)
        try:
            txn.ingest_ntriples(ntriples, subject)
        except ParseError as exc:  # RDF 1.2 that pyoxigraph reads but the store does not
            raise RepositoryError(400, f"unsupported RDF in {media_type} (the store takes RDF 1.1: "
                                       f"no triple terms or base directions): {exc}") from None
        # Server-managed triples may not be written by clients.
        if txn.count(subject, self._contains, None, subject):
            raise RepositoryError(409, "ldp:contains is managed by the server and cannot be written")
        for ldp_type in CONTAINER_TYPES + (LDP + "DirectContainer", LDP + "IndirectContainer",
                                           LDP + "NonRDFSource"):
            if txn.count(subject, self._type, iri(ldp_type), subject):
                raise RepositoryError(409, f"the LDP type <{ldp_type}> is managed by the server "
                                           "and cannot be written")

    def put(self, uri: str, body: bytes, media_type: str, *, container: bool = True,
            if_match: str | None = None, if_none_match: str | None = None) -> tuple[bool, str]:
        """Create or replace ``uri``; returns (created, new ETag).

        The parent container (the IRI one segment up) must exist.
        """
        ntriples = self._to_ntriples(uri, body, media_type)
        return self._write(lambda txn: self._put(txn, uri, ntriples, media_type, container, if_match,
                                                 if_none_match))

    def _put(self, txn, uri, ntriples, media_type, container, if_match, if_none_match):
        info = self._info(txn, uri)
        _check_preconditions(info, if_match, if_none_match)
        if info is None:
            parent = parent_of(uri, self.base_url)
            parent_info = self._info(txn, parent)
            if parent_info is None:
                raise RepositoryError(404, f"parent container <{parent}> does not exist")
            if not parent_info.container:
                raise RepositoryError(409, f"<{parent}> is not a container")
            self._create(txn, uri, container=container, parent=parent)
        else:
            txn.remove(None, None, None, iri(uri))
        self._load(txn, uri, ntriples, media_type)
        etag = self._touch(txn, uri) if info is not None else self._info(txn, uri).etag
        return info is None, etag

    def delete(self, uri: str, *, if_match: str | None = None) -> None:
        """Delete ``uri`` and, for a container, everything it contains."""
        if uri == self.base_url:
            raise RepositoryError(405, "the root container cannot be deleted")
        self._write(lambda txn: self._delete(txn, uri, if_match))

    def _delete(self, txn, uri, if_match):
        info = self._info(txn, uri)
        if info is None:
            raise RepositoryError(404, f"<{uri}> does not exist")
        _check_preconditions(info, if_match, None)
        parent = parent_of(uri, self.base_url)
        txn.remove(iri(parent), self._contains, iri(uri), self._server)
        self._touch(txn, parent)
        stack = [uri]
        while stack:
            current = stack.pop()
            subject = iri(current)
            stack.extend(q[2][1:].decode() for q in txn.quads(subject, self._contains, None, self._server))
            txn.remove(None, None, None, subject)
            txn.remove(subject, None, None, self._server)
            txn.remove(subject, None, None, self._meta)


class _Stream:
    """A representation's chunks; ``close()`` ends the read transaction even
    when the chunks were never read (HEAD, 304, a client gone early)."""

    def __init__(self, txn, chunks: Iterator[bytes]):
        self._txn = txn
        self._chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        return self._chunks

    def close(self) -> None:
        self._chunks.close()
        self._txn.abort()


def parent_of(uri: str, base_url: str) -> str:
    """The container one path segment up (the root for a top-level resource).

    >>> parent_of("http://h/a/b", "http://h/")
    'http://h/a'
    >>> parent_of("http://h/a", "http://h/")
    'http://h/'
    """
    head = uri.rsplit("/", 1)[0]
    return base_url if head + "/" == base_url else head


def _check_preconditions(info: ResourceInfo | None, if_match: str | None, if_none_match: str | None) -> None:
    if if_match is not None:
        if info is None or not etag_matches(info.etag, if_match):
            raise RepositoryError(412, "If-Match does not match the current ETag")
    if if_none_match is not None and info is not None and etag_matches(info.etag, if_none_match):
        raise RepositoryError(412, "If-None-Match matches: the resource exists")


def etag_matches(etag: str, header: str) -> bool:
    """Whether an If-Match / If-None-Match header names ``etag`` (or is ``*``)."""
    for candidate in header.split(","):
        candidate = candidate.strip()
        if candidate == "*":
            return True
        if candidate.startswith("W/"):
            candidate = candidate[2:]
        if candidate.strip('"') == etag:
            return True
    return False
