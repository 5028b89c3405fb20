"""LDP resources over the LMDB store: what the HTTP layer reads and writes.

Layout in the store (every term is an encoded store term):

* a resource's own triples (what clients PUT; for a binary, its
  description) live in the graph named by the resource's IRI, read
  through the store's list of the graph's subjects (a scan of each
  subject's quads, its quads in other graphs included: for a container,
  its ``ldp:contains``; see docs/store.rst, "Layout");
* server-managed triples live in the graph ``SERVER_GRAPH``: the resource's
  LDP types, its ``fedora:created`` and ``fedora:lastModified``, for a
  container one ``ldp:contains`` per child, for a binary its size, media
  type, file name and digests; a GET reads them with one scan of the
  resource as subject;
* bookkeeping the server never shows (ETags, a binary's file name on disk)
  lives in ``META_GRAPH``; deleted URIs (tombstones) in ``TOMBSTONE_GRAPH``.

Every change, a child's triples together with its container's
``ldp:contains`` and both ETags, is one store write (``LmdbStore.write``):
an interrupted request leaves either all of it or none of it.  Inside each
write every check (preconditions, parents, tombstones, server-managed
triples, interaction models) comes before the first change, so a refused
request has changed nothing; parsing, SPARQL and uploads happen outside it.
A binary's bytes are written and synced by :mod:`lakebench.server.binaries`
before the transaction that records them.
"""
from __future__ import annotations

import dataclasses
import itertools
import logging
import os
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Iterator

import pyoxigraph as ox

from lakebench._store import render_ntriples_term
from lakebench.server import cooperation
from lakebench.server import patch as sparql_patch
from lakebench.server.binaries import BinaryFiles, Upload
from lakebench.server.errors import RepositoryError, insufficient_storage
from lakebench.server.headers import Preferences, modified_since
from lakebench.server.mementos import http_datetime, memento_id, memento_uri, timemap_uri
from lakebench.server.responses import BINARY_ALLOW, MODEL_NAMES
from lakebench.server.sandbox import PARSE_TIMEOUT, PATCH_TIMEOUT, Sandboxes, Unavailable
from lakebench.server.rdfbody import (
    PARSERS,
    Body,
    encode_triple,
    is_managed,
    parse_body,
    refuse_rdf12_in,
    split_managed,
)
from lakebench.server.vocabulary import (
    BINARY,
    BINARY_FILE,
    CONTAINER,
    CREATED,
    DELETED,
    DESCRIPTION_ETAG,
    ETAG,
    FILENAME,
    HAS_DIGEST,
    HAS_MEMENTO,
    HAS_MIME_TYPE,
    HAS_SIZE,
    LAST_MODIFIED,
    LDP,
    LDP_CONTAINS,
    META_GRAPH,
    MEMENTO_ORIGINAL,
    MODEL_TYPES,
    RDF_SOURCE,
    RDF_TYPE,
    SERVER_GRAPH,
    TIMEMAP,
    TOMBSTONE_GRAPH,
    UPLOAD_PREDICATES,
    VERSIONS_GRAPH,
    VERSIONS_SEGMENT,
    XSD,
)
from lakebench.store import (INLINE, LmdbStore, LogSyncError, MapFullError, NoSpaceError,
                             ParseError)
from lakebench.store.terms import iri, literal

__all__ = ["Repository", "RepositoryError", "ResourceInfo", "BinaryInfo", "MementoInfo", "LDP", "PARSERS",
           "SERVER_GRAPH", "META_GRAPH", "TOMBSTONE_GRAPH", "iri", "parent_of", "etag_matches"]

#: How often a worker frees the reader slots of dead processes.
UPKEEP_SECONDS = 60.0
#: The most children whose triples one GET includes (PreferContainedDescriptions): 200-triple
#: children make that about 28 MB, built in full before the answer is sent.
MAX_CONTAINED_DESCRIPTIONS = 1000
#: The most inbound references one GET includes (PreferInboundReferences), for the same reason.
MAX_INBOUND_REFERENCES = 100_000
log = logging.getLogger("lakebench.server")
CONTAINER_TYPES = MODEL_TYPES[CONTAINER]
SOURCE_TYPES = MODEL_TYPES[RDF_SOURCE]
#: What every memento's graph IRI holds, and no resource's (no resource takes a reserved segment).
_MEMENTO_GRAPH = f"/{VERSIONS_SEGMENT}/".encode()
#: How the store's Turtle serializer declares the ``ldp`` prefix.
_LDP_PREFIX = f"@prefix ldp: <{LDP}> .\n\n".encode()


@dataclass(frozen=True)
class ResourceInfo:
    uri: str
    kind: str  # CONTAINER, RDF_SOURCE or BINARY
    etag: str
    # Its fedora:lastModified (xsd:dateTime), read for a GET only; None when not
    # read, or for a resource stored before the server kept one.  The ETag
    # changes with it, so it is not part of what tells two versions apart.
    last_modified: str | None = field(default=None, compare=False)

    @property
    def container(self) -> bool:
        return self.kind == CONTAINER

    @property
    def binary(self) -> bool:
        return self.kind == BINARY


@dataclass(frozen=True)
class BinaryInfo:
    """What a GET of a binary needs, read from one snapshot."""

    uri: str
    etag: str
    path: str
    size: int
    media_type: str
    filename: str | None
    digests: dict = field(default_factory=dict)  # algorithm ("sha-256") -> hex
    last_modified: str | None = None  # fedora:lastModified, xsd:dateTime


@dataclass(frozen=True)
class MementoInfo:
    """A memento (Fedora API 4.2, LDPRm) of ``original``: its ID (lakebench.server.mementos),
    and its original's interaction model and fedora:lastModified when it was taken."""

    original: str
    memento: str
    kind: str
    last_modified: str | None = None

    @property
    def uri(self) -> str:
        return memento_uri(self.original, self.memento)

    @property
    def etag(self) -> str:
        return f"memento-{self.memento}"  # a memento never changes: its name tells it apart

    @property
    def binary(self) -> bool:
        return self.kind == BINARY


class Repository:
    """The resources of one LDP server, stored in one LMDB environment
    (and its binaries in files beside it)."""

    def __init__(self, path: str | os.PathLike, base_url: str, durability: str = "durable",
                 map_size: int | None = None, log: bool | None = None,
                 patch_timeout: float = PATCH_TIMEOUT, cooperative: bool = False,
                 truncate_damaged_log: bool = False, parsers: int = 0):
        # log: the store's write-ahead log (the default), which one process owns.
        # patch_timeout, cooperative: how PATCHes are evaluated (lakebench.server.sandbox).
        # parsers: helper processes that parse RDF bodies (0: this process parses them).
        # cooperative: under gevent, writers wait for the log's flush in
        # their greenlet, and share it (lakebench.server.cooperation).
        self.store = LmdbStore(path, durability=durability, map_size=map_size, log=log,
                               truncate_damaged_log=truncate_damaged_log,
                               waiting=cooperation.GEVENT if cooperative else INLINE)
        self.sandboxes = Sandboxes(patch_timeout, cooperative=cooperative)
        # Started by start_helpers(), once the repository is in use: a start that fails
        # costs the parse a helper, never the repository.
        self.parsers = Sandboxes(PARSE_TIMEOUT, cooperative=cooperative, size=parsers) if parsers else None
        self.binaries = BinaryFiles(self.store.path / "binaries", durability=durability)
        self.base_url = base_url if base_url.endswith("/") else base_url + "/"
        self._type = iri(RDF_TYPE)
        self._contains = iri(LDP_CONTAINS)
        self._server = iri(SERVER_GRAPH)
        self._meta = iri(META_GRAPH)
        self._tombstones = iri(TOMBSTONE_GRAPH)
        self._etag = iri(ETAG)
        self._description_etag = iri(DESCRIPTION_ETAG)
        self._file = iri(BINARY_FILE)
        self._deleted = iri(DELETED)
        self._created = iri(CREATED)
        self._last_modified = iri(LAST_MODIFIED)
        self._versions = iri(VERSIONS_GRAPH)
        self._has_memento = iri(HAS_MEMENTO)
        # What a memento keeps of the server's triples about its original: all but its
        # containment (a container's children are resources, versioned each on its own).
        self._kept_by_mementos = [self._type, self._created, self._last_modified,
                                  *(iri(p) for p in sorted(UPLOAD_PREDICATES))]

        def create_root(txn):
            if self._info(txn, self.base_url) is None:
                self._create(txn, self.base_url, CONTAINER, parent=None)

        self._write(create_root)
        self._upkept = -UPKEEP_SECONDS
        self.upkeep()  # at start: slots a killed predecessor left

    def upkeep(self, now: float | None = None) -> int:
        """Periodic upkeep, at most every UPKEEP_SECONDS (the application calls
        it per request): free the reader slots of dead worker processes; how many."""
        now = time.monotonic() if now is None else now
        if now - self._upkept < UPKEEP_SECONDS:
            return 0
        self._upkept = now
        cleared = self.store.clear_stale_readers()
        if cleared:
            log.warning("freed %d reader slot(s) left by dead processes", cleared)
        return cleared

    @property
    def env(self):
        """The LMDB environment (tests watch its open transactions)."""
        return self.store.env

    def close(self) -> None:
        self.sandboxes.close()
        if self.parsers is not None:
            self.parsers.close()
        self.store.close()

    def start_helpers(self) -> None:
        """Start the body parsers now, so that the first requests do not wait for them."""
        if self.parsers is not None:
            try:
                self.parsers.prestart()
            except Unavailable as exc:
                log.warning("body parsers: %s; bodies are parsed in the worker meanwhile", exc.message)

    def _parse(self, body: bytes, media_type: str, uri: str, description: bool = False) -> Body:
        """The body of a PUT or POST for ``uri`` parsed, in a parser process if one
        is free, else here: the parsers add to this process's core, and never
        make a request wait for them (nor fail it, when one cannot be started)."""
        if self.parsers is not None and self.parsers.free():
            try:
                return self.parsers.parse(body, media_type, uri, description=description)
            except Unavailable:
                pass
        return parse_body(body, media_type, uri, description=description)

    def _write(self, op):
        """``op(txn)`` in one committed write transaction (the map grows when full)."""
        try:
            return self.store.write(op)
        except MapFullError:
            raise RepositoryError(507, "the store is full") from None
        except NoSpaceError:
            raise insufficient_storage() from None
        except LogSyncError:
            raise not_durable() from None

    def settle(self) -> None:
        """Return once every write a response may show is durable: a read that
        saw the write batch answers only then (lakebench.store.logsync)."""
        try:
            self.store.settle()
        except LogSyncError:
            raise not_durable() from None

    # -- reading ---------------------------------------------------------
    def _info(self, txn, uri: str) -> ResourceInfo | None:
        subject = iri(uri)
        etags = [q[2] for q in txn.quads(subject, self._etag, None, self._meta)]
        if not etags:
            return None
        return ResourceInfo(uri=uri, kind=self._kind(txn, subject, self._server), etag=etags[0][1:].decode())

    def _kind(self, txn, subject: bytes, graph: bytes) -> str:
        """The interaction model ``graph``'s LDP types give ``subject`` (the server's: now; a
        memento's: then)."""
        if txn.count(subject, self._type, iri(LDP + "BasicContainer"), graph):
            return CONTAINER
        if txn.count(subject, self._type, iri(LDP + "NonRDFSource"), graph):
            return BINARY
        return RDF_SOURCE

    def _description_info(self, txn, uri: str) -> ResourceInfo | None:
        """The description of binary ``uri`` as a resource of its own (its own ETag)."""
        info = self._info(txn, uri)
        if info is None or not info.binary:
            return None
        etags = [q[2] for q in txn.quads(iri(uri), self._description_etag, None, self._meta)]
        return ResourceInfo(uri=uri, kind=RDF_SOURCE, etag=etags[0][1:].decode())

    def _modified(self, txn, uri: str) -> str | None:
        """The fedora:lastModified of ``uri`` (a binary's is its description's too)."""
        for _, _, o, _ in txn.quads(iri(uri), self._last_modified, None, self._server):
            return _lexical(o)
        return None

    def _with_date(self, txn, info: ResourceInfo | None) -> ResourceInfo | None:
        return None if info is None else replace(info, last_modified=self._modified(txn, info.uri))

    def info(self, uri: str) -> ResourceInfo | None:
        with self.store.read() as txn:
            return self._info(txn, uri)

    def description_info(self, uri: str) -> ResourceInfo | None:
        with self.store.read() as txn:
            return self._with_date(txn, self._description_info(txn, uri))

    def tombstone(self, uri: str) -> str | None:
        """The deleted URI that makes ``uri`` gone: itself or an ancestor; None if neither."""
        with self.store.read() as txn:
            return self._tombstone(txn, uri)

    def _tombstone(self, txn, uri: str) -> str | None:
        while True:
            if txn.count(iri(uri), self._deleted, None, self._tombstones):
                return uri
            if uri == self.base_url:
                return None
            uri = parent_of(uri, self.base_url)

    def affordable(self, uri: str, prefer: Preferences) -> Preferences:
        """``prefer`` without the inclusions that would make one request's answer unbounded: the
        children's triples (PreferContainedDescriptions) of a container of more than
        MAX_CONTAINED_DESCRIPTIONS children, the inbound references of a resource named by more than
        MAX_INBOUND_REFERENCES triples.  Both are optional (MAY, SHOULD); one not honoured is not
        claimed (no ``Preference-Applied``)."""
        if not (prefer.contained or prefer.inbound):
            return prefer
        subject = iri(uri)
        with self.store.read() as txn:  # counted no further than the bound: a bounded read too
            too_many_children = prefer.contained and _more_than(
                txn.quads(subject, self._contains, None, self._server), MAX_CONTAINED_DESCRIPTIONS)
            too_many_references = prefer.inbound and _more_than(
                (q for q in txn.quads(None, None, subject, None) if _MEMENTO_GRAPH not in q[3]),
                MAX_INBOUND_REFERENCES)
        if not (too_many_children or too_many_references):
            return prefer
        return dataclasses.replace(prefer, contained=prefer.contained and not too_many_children,
                                   inbound=prefer.inbound and not too_many_references, applied=None)

    def representation(self, uri: str, media_type: str, containment: bool = True,
                       chunk_size: int = 1 << 16, description: bool = False,
                       prefer: Preferences | None = None,
                       ) -> tuple[ResourceInfo, Iterator[bytes]] | None:
        """The resource's triples as ``media_type`` chunks, streamed from the indices.

        ``prefer``: what to hold (:class:`Preferences`, from the Prefer
        header); without it, everything but inbound references and the
        children's triples, or without containment if not ``containment``.
        ``description``: the description of the binary ``uri`` (its triples
        have the binary as subject; Prefer does not apply).  The chunks come
        from one read transaction, held until the iterator is exhausted or
        closed, so a reader sees one snapshot.  The info carries the
        resource's last modification.
        """
        if prefer is None or description:
            prefer = Preferences(containment=containment or description)
        txn = self.store.read()
        try:
            info = self._description_info(txn, uri) if description else self._info(txn, uri)
            if info is None or (info.binary and not description):
                txn.abort()
                return None
            info = self._with_date(txn, info)
        except BaseException:
            txn.abort()
            raise
        return info, _Stream(txn, self._chunks(txn, uri, media_type, prefer, chunk_size))

    def _chunks(self, txn, uri, media_type, prefer: Preferences, chunk_size) -> Iterator[bytes]:
        subject = iri(uri)
        try:
            yield from rendered(self._scans(txn, subject, _scan_format(media_type), prefer, chunk_size), media_type)
        finally:
            txn.abort()

    def _scans(self, txn, subject, fmt, prefer: Preferences, chunk_size) -> Iterator[bytes]:
        prefixes = {"ldp": LDP} if fmt == "turtle" else None

        def scan(**pattern):
            return txn.serialize(**pattern, format=fmt, prefixes=prefixes, chunk_size=chunk_size)

        scans = []
        if prefer.minimal:
            scans.append(scan(c=subject))
        # The server's triples about it: the minimal container's (types, dates, a
        # binary description's properties) and containment, in one scan when both
        # are wanted or it has no children, else by predicate.
        if prefer.minimal and (prefer.containment
                               or txn.count(subject, self._contains, None, self._server) == 0):
            scans.append(scan(s=subject, c=self._server))
        else:
            if prefer.minimal:
                scans += [scan(s=subject, p=p, c=self._server)
                          for p in (self._type, self._created, self._last_modified)]
            if prefer.containment:
                scans.append(scan(s=subject, p=self._contains, c=self._server))
        if prefer.contained:
            for _, _, child, _ in list(txn.quads(subject, self._contains, None, self._server)):
                scans += [scan(c=child), scan(s=child, c=self._server)]
        if prefer.inbound:
            scans.append(self._inbound(txn, subject, chunk_size))
        # Each Turtle scan declares the prefix: the first declaration is kept.
        declared = False
        for chunks in scans:
            first = True
            for chunk in chunks:
                if first and chunk.startswith(_LDP_PREFIX):
                    if declared:
                        chunk = chunk[len(_LDP_PREFIX):]
                    declared = True
                first = False
                if chunk:
                    yield chunk

    def paged(self, uri: str, size: int) -> bool:
        """Whether ``uri`` is a container of more than ``size`` children: one that a
        client asking for pages of ``size`` gets in pages (LDP Paging 1.0)."""
        with self.store.read() as txn:
            info = self._info(txn, uri)
            return (info is not None and info.container
                    and _more_than(txn.quads(iri(uri), self._contains, None, self._server), size))

    def page(self, uri: str, media_type: str, start: int, size: int,
             ) -> tuple[ResourceInfo, Iterator[bytes], int | None] | None:
        """One page of a container (LDP Paging 1.0), or None when ``uri`` is not a container.

        A page holds the containment triples of at most ``size`` children: the
        children whose ids are ``start`` or more, in id order (the order they were
        first named in), found with one seek, so that a page costs its own children
        whatever comes before it.  The first page (``start`` 0) holds the
        container's own triples too.  Returns (the container's info, the chunks,
        the ``start`` of the next page or None after the last).  The chunks come
        from one read transaction (see :meth:`representation`); the pages of one
        walk may come from different snapshots: a child unchanged through the walk
        is on exactly one page (ids do not change), one created meanwhile may be
        missed, and the container's ETag, on every page, says that it changed.
        """
        txn = self.store.read()
        try:
            info = self._info(txn, uri)
            if info is None or not info.container:
                txn.abort()
                return None
            info = self._with_date(txn, info)
            subject = iri(uri)
            children, next_start = [], None
            for _, _, child, _ in txn.quads(subject, self._contains, None, self._server, start=start):
                if len(children) == size:
                    next_start = txn.term_id(child)
                    break
                children.append(child)
        except BaseException:
            txn.abort()
            raise
        return info, _Stream(txn, self._page_chunks(txn, subject, media_type, start == 0, children)), next_start

    def _page_chunks(self, txn, subject: bytes, media_type: str, first: bool, children: list[bytes],
                     chunk_size: int = 1 << 16) -> Iterator[bytes]:
        try:
            own = (self._scans(txn, subject, _scan_format(media_type), Preferences(containment=False), chunk_size)
                   if first else iter(()))
            # Each containment triple as an N-Triples line, which is a Turtle statement too.
            head = render_ntriples_term(subject) + b" " + render_ntriples_term(self._contains) + b" "
            lines = (head + render_ntriples_term(child) + b" .\n" for child in children)
            yield from rendered(itertools.chain(own, _joined(lines, chunk_size)), media_type)
        finally:
            txn.abort()

    def _inbound(self, txn, subject: bytes, chunk_size: int) -> Iterator[bytes]:
        """The triples of other resources with ``subject`` as object (Fedora's inbound
        references), as N-Triples lines (which are Turtle statements too): one lookup of
        the object index, then every graph but the resource's own and the server's
        (so a parent's ``ldp:contains`` is containment, not a reference), and but the
        mementos' (a reference of the past is not one now)."""
        skipped = (subject, self._server, self._meta, self._tombstones, self._versions)
        end = b" " + render_ntriples_term(subject) + b" .\n"
        seen = set()

        def lines():
            for s, p, _, g in txn.quads(None, None, subject, None):
                if g in skipped or (s, p) in seen or _MEMENTO_GRAPH in g:
                    continue
                seen.add((s, p))  # the object is the resource: (s, p) is the triple
                yield render_ntriples_term(s) + b" " + render_ntriples_term(p) + end

        return _joined(lines(), chunk_size)

    def _ntriples(self, txn, uri: str) -> bytes:
        """The resource's triples and its server-managed ones, as N-Triples (for PATCH)."""
        subject = iri(uri)
        return (b"".join(txn.serialize(c=subject, format="nt"))
                + b"".join(txn.serialize(s=subject, c=self._server, format="nt")))

    def children(self, uri: str) -> list[str]:
        with self.store.read() as txn:
            return [q[2][1:].decode() for q in txn.quads(iri(uri), self._contains, None, self._server)]

    def binary(self, uri: str) -> BinaryInfo | None:
        """The binary at ``uri`` (None when there is none)."""
        with self.store.read() as txn:
            info = self._info(txn, uri)
            if info is None or not info.binary:
                return None
            return self._binary_info(txn, uri, info.etag, iri(uri), self._server, iri(uri))

    def _binary_info(self, txn, uri: str, etag: str, subject: bytes, graph: bytes, owner: bytes) -> BinaryInfo:
        """A binary's properties, the server's triples of ``subject`` in ``graph``; its file, ``owner``'s."""
        name = self._file_name(txn, owner)
        values: dict[str, list[bytes]] = {}
        for _, p, o, _ in txn.quads(subject, None, None, graph):
            values.setdefault(p[1:].decode(), []).append(o)
        digests = {}
        for value in values.get(HAS_DIGEST, []):
            algorithm, _, hexdigest = value[1:].decode()[len("urn:"):].partition(":")
            digests[algorithm] = hexdigest
        filename = values.get(FILENAME)
        modified = values.get(LAST_MODIFIED)
        return BinaryInfo(
            uri=uri, etag=etag, path=str(self.binaries.path_of(name)),
            size=int(_lexical(values[HAS_SIZE][0])), media_type=_lexical(values[HAS_MIME_TYPE][0]),
            filename=_lexical(filename[0]) if filename else None, digests=digests,
            last_modified=_lexical(modified[0]) if modified else None,
        )

    def _file_name(self, txn, owner: bytes) -> str | None:
        """The name of the file of a binary (or of a binary's memento) ``owner``."""
        for _, _, name, _ in txn.quads(owner, self._file, None, self._meta):
            return name[1:].decode()
        return None

    # -- versions (Fedora API 4, Memento; the names: lakebench.server.mementos) --------
    # A memento is a graph of its own, named by its URI: a copy of the resource's triples
    # (their subjects unchanged, as Fedora's mementos keep them) and of the server's triples
    # about it but its containment; the copy is of term ids (every term is stored once), so
    # a memento costs its quads' index entries.  A binary's memento holds a hard link to the
    # binary's file: its bytes are kept without a copy, and outlive a replacement.  Each
    # resource lists its mementos in VERSIONS_GRAPH.
    def mementos(self, uri: str) -> list[str] | None:
        """The IDs of the mementos of ``uri``, oldest first; None when ``uri`` is not a
        versioned resource (it does not exist, or is the root)."""
        with self.store.read() as txn:
            if uri == self.base_url or self._info(txn, uri) is None:
                return None
            return self._mementos(txn, uri)

    def _mementos(self, txn, uri: str) -> list[str]:
        skip = len(memento_uri(uri, ""))
        return sorted(m[1:].decode()[skip:] for _, _, m, _ in txn.quads(iri(uri), self._has_memento, None,
                                                                          self._versions))

    def create_memento(self, uri: str) -> str:
        """A memento of ``uri`` as it is now (Fedora API 4.3.3.1), durable like any write; its ID.
        409 when ``uri`` has a memento of this second already (Fedora's rule: one a second)."""
        for _ in range(3):
            with self.store.read() as txn:
                info = self._info(txn, uri)
                name = self._file_name(txn, iri(uri)) if info is not None and info.binary else None
            # The bytes of a binary's memento: a hard link made (and synced) before the write
            # that records it, as a binary's own file is.
            try:
                linked = self.binaries.link(name) if name else None
            except FileNotFoundError:  # replaced or deleted since it was read: read it again
                continue
            try:
                made = self._write(lambda txn: self._create_memento(txn, uri, name, linked))
            except BaseException:
                if linked:
                    self.binaries.discard(linked)
                raise
            if made is not None:
                return made
            if linked:
                self.binaries.discard(linked)
        raise RepositoryError(409, f"<{uri}> kept changing while its memento was taken; try again")

    def _create_memento(self, txn, uri: str, name: str | None, linked: str | None) -> str | None:
        info = self._info(txn, uri)
        if info is None:
            deleted = self._tombstone(txn, uri)
            raise gone(deleted) if deleted is not None else RepositoryError(404, f"<{uri}> does not exist")
        subject = iri(uri)
        if (self._file_name(txn, subject) if info.binary else None) != name:
            return None  # a binary replaced (or a resource replaced by one) since it was read
        memento = memento_id(datetime.now(timezone.utc))
        graph = iri(memento_uri(uri, memento))
        if txn.count(subject, self._has_memento, graph, self._versions):
            raise RepositoryError(409, f"<{uri}> has a memento of {http_datetime(memento)} already: "
                                       "a resource has at most one a second")
        quads = [(s, p, o, graph) for s, p, o, _ in txn.quads(None, None, None, subject)]
        for predicate in self._kept_by_mementos:
            quads += [(s, p, o, graph) for s, p, o, _ in txn.quads(subject, predicate, None, self._server)]
        quads.append((subject, self._has_memento, graph, self._versions))
        if linked:
            quads.append((graph, self._file, literal(linked), self._meta))
        txn.add(quads)
        return memento

    def _memento_info(self, txn, uri: str, memento: str) -> MementoInfo | None:
        subject, graph = iri(uri), iri(memento_uri(uri, memento))
        if not txn.count(subject, self._has_memento, graph, self._versions):
            return None
        modified = [_lexical(o) for _, _, o, _ in txn.quads(subject, self._last_modified, None, graph)]
        return MementoInfo(uri, memento, self._kind(txn, subject, graph), modified[0] if modified else None)

    def memento(self, uri: str, memento: str, media_type: str, chunk_size: int = 1 << 16,
                ) -> tuple[MementoInfo, Iterator[bytes] | None] | None:
        """The memento ``memento`` of ``uri``: its info and its triples as ``media_type`` chunks
        (from one read transaction, as :meth:`representation`), or no chunks for a binary's
        (:meth:`memento_binary` has its bytes); None when there is no such memento."""
        txn = self.store.read()
        try:
            info = self._memento_info(txn, uri, memento)
            if info is None or info.binary:
                txn.abort()
                return None if info is None else (info, None)
        except BaseException:
            txn.abort()
            raise
        return info, _Stream(txn, self._memento_chunks(txn, iri(info.uri), media_type, chunk_size))

    @staticmethod
    def _memento_chunks(txn, graph: bytes, media_type: str, chunk_size: int) -> Iterator[bytes]:
        try:
            prefixes = {"ldp": LDP} if media_type == "text/turtle" else None
            yield from rendered(txn.serialize(c=graph, format=_scan_format(media_type), prefixes=prefixes,
                                              chunk_size=chunk_size), media_type)
        finally:
            txn.abort()

    def timemap_rdf(self, uri: str, taken: list[str], media_type: str) -> Iterator[bytes]:
        """The TimeMap of ``uri`` as RDF (``taken``: its mementos' IDs): a container of its
        mementos, whose original is ``uri``."""
        timemap = render_ntriples_term(iri(timemap_uri(uri))) + b" "
        types = [*MODEL_TYPES[CONTAINER], TIMEMAP]
        lines = [timemap + b"<" + RDF_TYPE.encode() + b"> <" + t.encode() + b"> .\n" for t in types]
        lines.append(timemap + b"<" + MEMENTO_ORIGINAL.encode() + b"> " + render_ntriples_term(iri(uri)) + b" .\n")
        lines += [timemap + b"<" + LDP_CONTAINS.encode() + b"> " + render_ntriples_term(iri(memento_uri(uri, m)))
                  + b" .\n" for m in taken]
        return rendered(iter([b"".join(lines)]), media_type)

    def memento_binary(self, uri: str, memento: str) -> tuple[MementoInfo, BinaryInfo] | None:
        """The memento ``memento`` of the binary ``uri``, its bytes in a file of its own; None
        when there is no such memento or it is not a binary's."""
        with self.store.read() as txn:
            info = self._memento_info(txn, uri, memento)
            if info is None or not info.binary:
                return None
            graph = iri(info.uri)
            return info, self._binary_info(txn, info.uri, info.etag, iri(uri), graph, graph)

    def delete_memento(self, uri: str, memento: str) -> None:
        """Delete one memento of ``uri`` (Fedora API 4.2.5, MAY): 404 when there is none."""
        def op(txn):
            subject, graph = iri(uri), iri(memento_uri(uri, memento))
            if not txn.count(subject, self._has_memento, graph, self._versions):
                if self._info(txn, uri) is None:
                    deleted = self._tombstone(txn, uri)
                    if deleted is not None:
                        raise gone(deleted)
                raise RepositoryError(404, f"<{uri}> has no memento {memento}")
            return self._drop_memento(txn, subject, graph)

        for name in self._write(op):  # after the commit, as a deleted binary's
            self.binaries.discard(name)

    def _drop_memento(self, txn, subject: bytes, graph: bytes) -> list[str]:
        """Remove a memento's triples and record; the name of its file, if it has one."""
        name = self._file_name(txn, graph)
        txn.remove(None, None, None, graph)
        txn.remove(graph, None, None, self._meta)
        txn.remove(subject, self._has_memento, graph, self._versions)
        return [name] if name else []

    # -- writing ---------------------------------------------------------
    def _new_etag(self) -> str:
        # Unique per write: the clock and the process, as hex.
        return f"{time.time_ns():x}-{os.getpid():x}"

    def _touch(self, txn, uri: str, predicate: bytes | None = None, now: str | None = None) -> str:
        """A new ETag for ``uri`` (``predicate``: its description's) and a new
        fedora:lastModified: every change of a resource comes through here, a
        container's when a child is created or deleted too (its containment
        changed: Fedora's behaviour, and its ETag changes with it).  A binary and
        its description share one lastModified.  The new ETag."""
        subject = iri(uri)
        predicate = predicate or self._etag
        etag = self._new_etag()
        new = [(subject, predicate, literal(etag), self._meta),
               (subject, self._last_modified, _datetime(now or _now()), self._server)]
        old = [*txn.quads(subject, predicate, None, self._meta),
               *txn.quads(subject, self._last_modified, None, self._server)]
        # The new ones first, then the old ones, each by its own quad: a graph never
        # loses the resource on the way, so the store need not look through all of its
        # quads for another in that graph (a container's are one per child).
        txn.add(new)
        for quad in old:
            if quad not in new:  # the same date again (one clock tick): kept
                txn.remove(*quad)
        return etag

    def _create(self, txn, uri: str, kind: str, parent: str | None) -> str:
        now = _now()  # the child's creation, and the change of its parent
        subject = iri(uri)
        quads = [(subject, self._type, iri(t), self._server) for t in MODEL_TYPES[kind]]
        quads.append((subject, self._created, _datetime(now), self._server))
        if parent is not None:
            quads.append((iri(parent), self._contains, subject, self._server))
            self._touch(txn, parent, now=now)
        txn.add(quads)
        return self._touch(txn, uri, now=now)

    def _preconditions(self, txn, info: ResourceInfo | None, if_match: str | None,
                       if_none_match: str | None, if_unmodified_since: str | None = None) -> None:
        """412 unless the request's preconditions hold (RFC 9110 13.2.2: If-Unmodified-Since
        only without If-Match; the resource's date is read only when it is asked about)."""
        if if_match is None and if_unmodified_since is not None and info is not None:
            if modified_since(self._modified(txn, info.uri), if_unmodified_since):
                raise RepositoryError(412, "the resource was modified after the If-Unmodified-Since date")
        _check_preconditions(info, if_match, if_none_match)

    def _check_creatable(self, txn, uri: str) -> str:
        """Refuse to create ``uri`` when it is reserved, deleted, or has no container; its parent."""
        if txn.count(iri(uri), self._deleted, None, self._tombstones):
            raise gone(uri)
        parent = parent_of(uri, self.base_url)
        parent_info = self._info(txn, parent)
        if parent_info is None:
            deleted = self._tombstone(txn, parent)
            if deleted is not None:
                raise gone(deleted)
            raise RepositoryError(404, f"parent container <{parent}> does not exist")
        if not parent_info.container:
            raise RepositoryError(409, f"<{parent}> is not a container")
        return parent

    def _check_managed(self, txn, uri: str, managed, creating: str | None = None) -> None:
        """Server-managed triples restated by a body must be true (409 otherwise).

        ``creating``: the interaction model of a resource about to be
        created (its only true managed triples are its LDP types).
        """
        true_types = {iri(t) for t in MODEL_TYPES[creating]} if creating else set()
        # The dates last: a body read before a change states an old lastModified
        # too, and what else it states that is no longer true says more.
        dates = (self._created, self._last_modified)
        for s, p, o in sorted(managed, key=lambda triple: triple[1] in dates):
            if creating is not None:
                true = p == self._type and o in true_types
            else:
                true = txn.count(s, p, o, self._server) > 0
            if not true:
                raise RepositoryError(409, f"<{p[1:].decode()}> {_show(o)} of <{uri}> is managed by "
                                           "the server and not true: it can be restated, not changed")

    def put(self, uri: str, body: bytes, media_type: str, *, container: bool = True,
            model: str | None = None, if_match: str | None = None,
            if_none_match: str | None = None, if_unmodified_since: str | None = None) -> tuple[bool, str]:
        """Create or replace ``uri``; returns (created, new ETag).

        ``model`` is the interaction model the client asked for (CONTAINER
        or RDF_SOURCE; None: a container, or an RDF source if not
        ``container``, when created, and unchanged when replaced).  The
        parent container (the IRI one segment up) must exist.
        """
        created, info = self.put_rdf(uri, body, media_type, model=model,
                                     default=CONTAINER if container else RDF_SOURCE,
                                     if_match=if_match, if_none_match=if_none_match,
                                     if_unmodified_since=if_unmodified_since)
        return created, info.etag

    def put_rdf(self, uri: str, body: bytes, media_type: str, *, model: str | None = None,
                default: str = CONTAINER, if_match: str | None = None,
                if_none_match: str | None = None,
                if_unmodified_since: str | None = None) -> tuple[bool, ResourceInfo]:
        """:meth:`put`, returning (created, the resource as it now is).

        Raises :class:`IsBinary` (before changing anything) when ``uri`` is a
        binary and no model was asked for: the body is then its new bytes.
        """
        parsed = self._parse(body, media_type, uri)
        return self._write(lambda txn: self._put(txn, uri, parsed, model or default, model, if_match,
                                                 if_none_match, if_unmodified_since))

    def _put(self, txn, uri, body: Body, kind, requested, if_match, if_none_match, if_unmodified_since):
        info = self._info(txn, uri)
        self._preconditions(txn, info, if_match, if_none_match, if_unmodified_since)
        subject = iri(uri)
        if info is None:
            parent = self._check_creatable(txn, uri)
            self._check_managed(txn, uri, body.managed, creating=kind)
            # The first change: a body the store refuses (RDF 1.2) changes nothing.
            self._ingest(txn, subject, body.ntriples)
            return True, ResourceInfo(uri, kind, self._create(txn, uri, kind, parent))
        if info.binary and requested is None:
            raise IsBinary(uri)
        check_model(info, requested)
        if info.binary:
            raise RepositoryError(409, f"<{uri}> is a binary: PUT its description to its "
                                       "describedby link")
        self._check_managed(txn, uri, body.managed)
        refuse_rdf12_in(body.ntriples)  # before the old triples go
        txn.remove(None, None, None, subject)
        self._ingest(txn, subject, body.ntriples)
        return False, ResourceInfo(uri, info.kind, self._touch(txn, uri))

    def _ingest(self, txn, subject: bytes, ntriples: bytes) -> None:
        if not ntriples:
            return
        try:
            txn.ingest_ntriples(ntriples, subject)
        except ParseError as exc:  # checked before: RDF the store does not take
            raise RepositoryError(400, f"unsupported RDF (the store takes RDF 1.1): {exc}") from None

    def put_description(self, uri: str, body: bytes, media_type: str, *, if_match: str | None = None,
                        if_none_match: str | None = None, if_unmodified_since: str | None = None) -> str:
        """Replace the description of binary ``uri`` (its subject is the binary); the new ETag."""
        parsed = self._parse(body, media_type, uri, description=True)

        def op(txn):
            info = self._description_info(txn, uri)
            if info is None:
                raise RepositoryError(404, f"<{uri}> is not a binary")
            self._preconditions(txn, info, if_match, if_none_match, if_unmodified_since)
            self._check_managed(txn, uri, parsed.managed)
            refuse_rdf12_in(parsed.ntriples)  # before the old triples go
            subject = iri(uri)
            txn.remove(None, None, None, subject)
            self._ingest(txn, subject, parsed.ntriples)
            return self._touch(txn, uri, self._description_etag)

        return self._write(op)

    def patch(self, uri: str, update: str, *, description: bool = False,
              if_match: str | None = None, if_unmodified_since: str | None = None) -> ResourceInfo:
        """Apply a SPARQL Update to the resource's own triples; the resource (new ETag).

        The update runs on a copy in memory, outside any store transaction;
        the difference is then applied in one write, provided the resource
        has not changed meanwhile (else the update is run again on the new
        state).
        """
        for _ in range(5):
            with self.store.read() as txn:
                info = self._description_info(txn, uri) if description else self._info(txn, uri)
                if info is None or (info.binary and not description):
                    break
                self._preconditions(txn, info, if_match, None, if_unmodified_since)
                before = self._ntriples(txn, uri)
            removed, added, named = sparql_patch.run(update, before, uri, self.sandboxes)
            # The server's triples are in the copy so that a WHERE can match them; a
            # pattern that matched them leaves them (as Fedora, whose updates never see
            # them, deletes only the client's), one the update names is refused.
            managed = [t for t in removed if is_managed(t, description)]
            if managed:
                named = set(named)
                refused = [encode_triple(t) for t in managed if t in named]
                removed = [t for t in removed if not is_managed(t, description)]
            else:
                refused = []
            added_body = split_managed(added, uri, description)
            refused += added_body.managed
            if refused:
                triple = refused[0]
                raise RepositoryError(409, f"the update changes a server-managed triple "
                                           f"(<{triple[1][1:].decode()}> {_show(triple[2])}) of <{uri}>")
            removals = [encode_triple(t) for t in removed]
            etag = self._write(lambda txn: self._apply_patch(txn, uri, info, description, removals,
                                                             added_body.ntriples))
            if etag is not None:
                return ResourceInfo(uri=uri, kind=info.kind, etag=etag)
        if info is not None and info.binary and not description:
            raise RepositoryError(405, f"<{uri}> is a binary: PATCH its description instead",
                                  allow=BINARY_ALLOW)
        if info is None:
            deleted = self.tombstone(uri)
            if deleted is not None:
                raise gone(deleted)
            raise RepositoryError(404, f"<{uri}> does not exist")
        raise RepositoryError(409, f"<{uri}> kept changing while the update ran; try again")

    def _apply_patch(self, txn, uri, seen: ResourceInfo, description, removals, added_ntriples):
        current = self._description_info(txn, uri) if description else self._info(txn, uri)
        if current != seen:
            return None  # changed since the update was computed: run it again
        subject = iri(uri)
        for s, p, o in removals:
            txn.remove(s, p, o, subject)
        self._ingest(txn, subject, added_ntriples)
        return self._touch(txn, uri, self._description_etag if description else None)

    def put_binary(self, uri: str, upload: Upload, *, model_requested: str | None = None,
                   if_match: str | None = None, if_none_match: str | None = None,
                   if_unmodified_since: str | None = None) -> tuple[bool, str]:
        """Create or replace the binary ``uri`` with bytes already received; (created, ETag).

        The file is in place and synced before the one write that records
        it: a binary is never seen before its bytes are complete.  The
        replaced file, if any, is deleted after that write.
        """
        name = self.binaries.keep(upload)  # refused below: the caller discards the upload
        created, etag, replaced = self._write(
            lambda txn: self._put_binary(txn, uri, name, upload, model_requested, if_match,
                                         if_none_match, if_unmodified_since))
        if replaced:
            self.binaries.discard(replaced)
        return created, etag

    def _put_binary(self, txn, uri, name, upload: Upload, requested, if_match, if_none_match,
                    if_unmodified_since):
        info = self._info(txn, uri)
        self._preconditions(txn, info, if_match, if_none_match, if_unmodified_since)
        subject = iri(uri)
        replaced = None
        if info is None:
            parent = self._check_creatable(txn, uri)
        else:
            check_model(info, requested or BINARY)
            replaced = self._file_name(txn, subject)
        # Checks done: the changes (its dates: _create and _touch).
        if info is None:
            etag = self._create(txn, uri, BINARY, parent)
        else:
            for predicate in UPLOAD_PREDICATES:
                txn.remove(subject, iri(predicate), None, self._server)
            txn.remove(subject, self._file, None, self._meta)
            etag = self._touch(txn, uri)
        quads = [
            (subject, iri(HAS_SIZE), literal(str(upload.size), datatype=XSD + "long")),
            (subject, iri(HAS_MIME_TYPE), literal(upload.media_type)),
        ] + [(subject, iri(HAS_DIGEST), iri(f"urn:{algorithm}:{hexdigest}"))
             for algorithm, hexdigest in sorted(upload.digests.items())]
        if upload.filename:
            quads.append((subject, iri(FILENAME), literal(upload.filename)))
        txn.add([(s, p, o, self._server) for s, p, o in quads]
                + [(subject, self._file, literal(name), self._meta)])
        self._touch(txn, uri, self._description_etag)
        return info is None, etag, replaced

    def delete(self, uri: str, *, if_match: str | None = None, if_unmodified_since: str | None = None) -> None:
        """Delete ``uri`` and, for a container, everything it contains; ``uri`` is then gone (410)."""
        if uri == self.base_url:
            raise RepositoryError(405, "the root container cannot be deleted")
        files = self._write(lambda txn: self._delete(txn, uri, if_match, if_unmodified_since))
        for name in files:  # after the commit: a deleted binary's bytes, no longer referenced
            self.binaries.discard(name)

    def _delete(self, txn, uri, if_match, if_unmodified_since):
        info = self._info(txn, uri)
        if info is None:
            deleted = self._tombstone(txn, uri)
            if deleted is not None:
                raise gone(deleted)
            raise RepositoryError(404, f"<{uri}> does not exist")
        self._preconditions(txn, info, if_match, None, if_unmodified_since)
        parent = parent_of(uri, self.base_url)
        txn.remove(iri(parent), self._contains, iri(uri), self._server)
        self._touch(txn, parent)
        files = []
        stack = [uri]
        while stack:
            current = stack.pop()
            subject = iri(current)
            stack.extend(q[2][1:].decode() for q in txn.quads(subject, self._contains, None, self._server))
            files.extend(q[2][1:].decode() for q in txn.quads(subject, self._file, None, self._meta))
            for _, _, graph, _ in list(txn.quads(subject, self._has_memento, None, self._versions)):
                files += self._drop_memento(txn, subject, graph)  # its versions go with it
            txn.remove(None, None, None, subject)
            txn.remove(subject, None, None, self._server)
            txn.remove(subject, None, None, self._meta)
        txn.add([(iri(uri), self._deleted, literal(_now(), datatype=XSD + "dateTime"), self._tombstones)])
        return files

    def delete_tombstone(self, uri: str) -> None:
        """Forget that ``uri`` was deleted: it can be created again."""
        def op(txn):
            if not txn.count(iri(uri), self._deleted, None, self._tombstones):
                raise RepositoryError(404, f"<{uri}> has no tombstone")
            txn.remove(iri(uri), None, None, self._tombstones)

        self._write(op)


class IsBinary(RepositoryError):
    """An RDF body sent to a binary without asking for a model: it is the binary's new bytes."""

    def __init__(self, uri: str):
        super().__init__(409, f"<{uri}> is a binary")


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


def _scan_format(media_type: str) -> str:
    """The format the store's scans write for ``media_type``: Turtle, or N-Triples (JSON-LD's too)."""
    return "turtle" if media_type == "text/turtle" else "nt"


def rendered(chunks: Iterator[bytes], media_type: str) -> Iterator[bytes]:
    """The scans' chunks as ``media_type``: as they are, but for JSON-LD, which is not
    streamed: rendered whole from their N-Triples by pyoxigraph."""
    if media_type != "application/ld+json":
        return chunks
    body = b"".join(chunks)
    return iter([ox.serialize(ox.parse(body, format=ox.RdfFormat.N_TRIPLES), format=ox.RdfFormat.JSON_LD)])


def _joined(lines: Iterator[bytes], chunk_size: int) -> Iterator[bytes]:
    """``lines`` in chunks of about ``chunk_size`` bytes."""
    held, size = [], 0
    for line in lines:
        held.append(line)
        size += len(line)
        if size >= chunk_size:
            yield b"".join(held)
            held, size = [], 0
    if held:
        yield b"".join(held)


def _more_than(items: Iterator, bound: int) -> bool:
    """Whether ``items`` holds more than ``bound`` (read no further than one past it)."""
    return next(itertools.islice(items, bound, None), None) is not None


def not_durable() -> RepositoryError:
    """The 503 for a write, or a read of one, whose flush to stable storage failed."""
    return RepositoryError(503, "the write-ahead log could not be flushed to stable storage: "
                                "the write was not kept; try again")


def gone(uri: str) -> RepositoryError:
    """The 410 for a deleted URI, with the link to its tombstone (DELETE it to reuse the URI)."""
    return RepositoryError(410, f"<{uri}> was deleted", headers=[
        ("Link", f'<{uri}/fcr:tombstone>; rel="hasTombstone"')])


def parent_of(uri: str, base_url: str) -> str:
    """The container one path segment up (the root for a top-level resource).

    >>> parent_of("http://h/a/b", "http://h/")
    'http://h/a'
    >>> parent_of("http://h/a", "http://h/")
    'http://h/'
    """
    head = uri.rsplit("/", 1)[0]
    return base_url if head + "/" == base_url else head


def check_model(info: ResourceInfo, requested: str | None) -> None:
    """A resource keeps its interaction model (a container is also an RDF source)."""
    if requested is None or requested == info.kind or (requested == RDF_SOURCE and info.container):
        return
    raise RepositoryError(409, f"<{info.uri}> is a {MODEL_NAMES[info.kind]}: its interaction model "
                               f"cannot change to {MODEL_NAMES[requested]}")


def _check_preconditions(info: ResourceInfo | None, if_match: str | None, if_none_match: str | None) -> None:
    if if_match is not None:
        if info is None or not etag_matches(info.etag, if_match, weak=False):
            raise RepositoryError(412, "If-Match does not match the current ETag (a weak ETag never does)")
    if if_none_match is not None and info is not None and etag_matches(info.etag, if_none_match):
        raise RepositoryError(412, "If-None-Match matches: the resource exists")


def etag_matches(etag: str, header: str, weak: bool = True) -> bool:
    """Whether an If-Match / If-None-Match header names ``etag`` (or is ``*``).

    ``weak``: the weak comparison (RFC 9110 8.8.3.2), If-None-Match's; without it
    the strong one, which If-Match requires (13.1.1): a weak tag never matches.

    >>> etag_matches("1", 'W/"1"'), etag_matches("1", 'W/"1"', weak=False), etag_matches("1", '"1"', weak=False)
    (True, False, True)
    """
    for candidate in header.split(","):
        candidate = candidate.strip()
        if candidate == "*":
            return True
        if candidate.startswith("W/"):
            if not weak:
                continue
            candidate = candidate[2:]
        if candidate.strip('"') == etag:
            return True
    return False


def _now() -> str:
    """The time as an xsd:dateTime in UTC, to the millisecond, in the canonical form
    (no trailing zeros in the fraction): the form pyoxigraph gives a dateTime, so a
    PATCH's copy of the resource holds the very literal the store does."""
    now = datetime.now(timezone.utc)
    text = now.strftime("%Y-%m-%dT%H:%M:%S")
    fraction = f"{now.microsecond // 1000:03d}".rstrip("0")
    return f"{text}.{fraction}Z" if fraction else text + "Z"


def _datetime(lexical: str) -> bytes:
    return literal(lexical, datatype=XSD + "dateTime")


def _lexical(term: bytes) -> str:
    """The lexical form of an encoded literal."""
    if term[:1] in (b"G", b"D"):
        return term.split(b"\x00", 1)[1].decode()
    return term[1:].decode()


def _show(term: bytes) -> str:
    """An encoded term as N-Triples, for messages."""
    return render_ntriples_term(term).decode()
