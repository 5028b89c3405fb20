"""LDP resources over the LMDB store: what the HTTP layer reads and writes.

Layout in the store (every term is an encoded store term):

* a resource's own triples (what clients PUT; for a binary, its
  description) live in the graph named by the resource's IRI, read
  through the store's list of the graph's subjects (a scan of each
  subject's quads, its quads in other graphs included: for a container,
  its ``ldp:contains``; see docs/store.rst, "Layout");
* server-managed triples live in the graph ``SERVER_GRAPH``: the resource's
  LDP types, for a container one ``ldp:contains`` per child, for a binary
  its size, media type, file name, digests and dates; a GET reads them with
  one scan of the resource as subject;
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

import logging
import os
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Iterator

import pyoxigraph as ox

from lakebench._store import render_ntriples_term
from lakebench.server import cooperation
from lakebench.server import patch as sparql_patch
from lakebench.server.binaries import BinaryFiles, Upload
from lakebench.server.errors import RepositoryError, insufficient_storage
from lakebench.server.responses import BINARY_ALLOW, MODEL_NAMES
from lakebench.server.sandbox import PATCH_TIMEOUT, Sandboxes
from lakebench.server.rdfbody import (
    PARSERS,
    Body,
    encode_triple,
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
    DESCRIPTION_PREDICATES,
    ETAG,
    FILENAME,
    HAS_DIGEST,
    HAS_MIME_TYPE,
    HAS_SIZE,
    LAST_MODIFIED,
    LDP,
    LDP_CONTAINS,
    META_GRAPH,
    MODEL_TYPES,
    RDF_SOURCE,
    RDF_TYPE,
    SERVER_GRAPH,
    TOMBSTONE_GRAPH,
    XSD,
)
from lakebench.store import (DEFAULT_MAP_SIZE, INLINE, LmdbStore, LogSyncError, MapFullError, NoSpaceError,
                             ParseError)
from lakebench.store.terms import iri, literal

__all__ = ["Repository", "RepositoryError", "ResourceInfo", "BinaryInfo", "LDP", "PARSERS",
           "SERVER_GRAPH", "META_GRAPH", "TOMBSTONE_GRAPH", "iri", "parent_of", "etag_matches"]

#: How often a worker frees the reader slots of dead processes.
UPKEEP_SECONDS = 60.0
log = logging.getLogger("lakebench.server")
CONTAINER_TYPES = MODEL_TYPES[CONTAINER]
SOURCE_TYPES = MODEL_TYPES[RDF_SOURCE]
#: How the store's Turtle serializer declares the ``ldp`` prefix.
_LDP_PREFIX = f"@prefix ldp: <{LDP}> .\n\n".encode()


@dataclass(frozen=True)
class ResourceInfo:
    uri: str
    kind: str  # CONTAINER, RDF_SOURCE or BINARY
    etag: str

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


class Repository:
    """The resources of one LDP server, stored in one LMDB environment
    (and its binaries in files beside it)."""

    def __init__(self, path: str | os.PathLike, base_url: str, durability: str = "durable",
                 map_size: int = DEFAULT_MAP_SIZE, log: bool | None = None,
                 patch_timeout: float = PATCH_TIMEOUT, cooperative: bool = False,
                 truncate_damaged_log: bool = False):
        # log: the store's write-ahead log (the default), which one
        # process owns; several worker processes need log=False.
        # patch_timeout, cooperative: how PATCHes are evaluated (lakebench.server.sandbox).
        # cooperative: under gevent, writers wait for the log's flush in
        # their greenlet, and share it (lakebench.server.cooperation).
        self.store = LmdbStore(path, durability=durability, map_size=map_size, log=log,
                               truncate_damaged_log=truncate_damaged_log,
                               waiting=cooperation.GEVENT if cooperative else INLINE)
        self.sandboxes = Sandboxes(patch_timeout, cooperative=cooperative)
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
        self.store.close()

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
        if txn.count(subject, self._type, iri(LDP + "BasicContainer"), self._server):
            kind = CONTAINER
        elif txn.count(subject, self._type, iri(LDP + "NonRDFSource"), self._server):
            kind = BINARY
        else:
            kind = RDF_SOURCE
        return ResourceInfo(uri=uri, kind=kind, etag=etags[0][1:].decode())

    def _description_info(self, txn, uri: str) -> ResourceInfo | None:
        """The description of binary ``uri`` as a resource of its own (its own ETag)."""
        info = self._info(txn, uri)
        if info is None or not info.binary:
            return None
        etags = [q[2] for q in txn.quads(iri(uri), self._description_etag, None, self._meta)]
        return ResourceInfo(uri=uri, kind=RDF_SOURCE, etag=etags[0][1:].decode())

    def info(self, uri: str) -> ResourceInfo | None:
        with self.store.read() as txn:
            return self._info(txn, uri)

    def description_info(self, uri: str) -> ResourceInfo | None:
        with self.store.read() as txn:
            return self._description_info(txn, uri)

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

    def representation(self, uri: str, media_type: str, containment: bool = True,
                       chunk_size: int = 1 << 16, description: bool = False,
                       ) -> tuple[ResourceInfo, Iterator[bytes]] | None:
        """The resource's triples as ``media_type`` chunks, streamed from the indices.

        ``description``: the description of the binary ``uri`` (its triples
        have the binary as subject).  The chunks come from one read
        transaction, held until the iterator is exhausted or closed, so a
        reader sees one snapshot.
        """
        txn = self.store.read()
        try:
            info = self._description_info(txn, uri) if description else self._info(txn, uri)
        except BaseException:
            txn.abort()
            raise
        if info is None or (info.binary and not description):
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
        # Without containment, only the LDP types; a binary's description
        # properties are not containment and stay.
        if containment or txn.count(subject, self._contains, None, self._server) == 0:
            server = txn.serialize(s=subject, c=self._server, format=fmt, prefixes=prefixes,
                                   chunk_size=chunk_size)
        else:
            server = txn.serialize(s=subject, p=self._type, c=self._server, format=fmt,
                                   prefixes=prefixes, chunk_size=chunk_size)
        # The first scan declared the prefix already: drop the second declaration.
        first = True
        for chunk in server:
            if first and chunk.startswith(_LDP_PREFIX):
                chunk = chunk[len(_LDP_PREFIX):]
            first = False
            if chunk:
                yield chunk

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
            subject = iri(uri)
            names = [q[2] for q in txn.quads(subject, self._file, None, self._meta)]
            values: dict[str, list[bytes]] = {}
            for _, p, o, _ in txn.quads(subject, None, None, self._server):
                values.setdefault(p[1:].decode(), []).append(o)
        digests = {}
        for value in values.get(HAS_DIGEST, []):
            algorithm, _, hexdigest = value[1:].decode()[len("urn:"):].partition(":")
            digests[algorithm] = hexdigest
        filename = values.get(FILENAME)
        return BinaryInfo(
            uri=uri, etag=info.etag, path=str(self.binaries.path_of(names[0][1:].decode())),
            size=int(_lexical(values[HAS_SIZE][0])), media_type=_lexical(values[HAS_MIME_TYPE][0]),
            filename=_lexical(filename[0]) if filename else None, digests=digests,
        )

    # -- writing ---------------------------------------------------------
    def _new_etag(self) -> str:
        # Unique per write: the clock and the process, as hex.
        return f"{time.time_ns():x}-{os.getpid():x}"

    def _touch(self, txn, uri: str, predicate: bytes | None = None) -> str:
        subject = iri(uri)
        predicate = predicate or self._etag
        txn.remove(subject, predicate, None, self._meta)
        etag = self._new_etag()
        txn.add([(subject, predicate, literal(etag), self._meta)])
        return etag

    def _create(self, txn, uri: str, kind: str, parent: str | None) -> str:
        subject = iri(uri)
        quads = [(subject, self._type, iri(t), self._server) for t in MODEL_TYPES[kind]]
        if parent is not None:
            quads.append((iri(parent), self._contains, subject, self._server))
            self._touch(txn, parent)
        txn.add(quads)
        return self._touch(txn, uri)

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
        for s, p, o in managed:
            if creating is not None:
                true = p == self._type and o in true_types
            else:
                true = txn.count(s, p, o, self._server) > 0
            if not true:
                raise RepositoryError(409, f"<{p[1:].decode()}> {_show(o)} of <{uri}> is managed by "
                                           "the server and not true: it can be restated, not changed")

    def put(self, uri: str, body: bytes, media_type: str, *, container: bool = True,
            model: str | None = None, if_match: str | None = None,
            if_none_match: str | None = None) -> tuple[bool, str]:
        """Create or replace ``uri``; returns (created, new ETag).

        ``model`` is the interaction model the client asked for (CONTAINER
        or RDF_SOURCE; None: a container, or an RDF source if not
        ``container``, when created, and unchanged when replaced).  The
        parent container (the IRI one segment up) must exist.
        """
        created, info = self.put_rdf(uri, body, media_type, model=model,
                                     default=CONTAINER if container else RDF_SOURCE,
                                     if_match=if_match, if_none_match=if_none_match)
        return created, info.etag

    def put_rdf(self, uri: str, body: bytes, media_type: str, *, model: str | None = None,
                default: str = CONTAINER, if_match: str | None = None,
                if_none_match: str | None = None) -> tuple[bool, ResourceInfo]:
        """:meth:`put`, returning (created, the resource as it now is).

        Raises :class:`IsBinary` (before changing anything) when ``uri`` is a
        binary and no model was asked for: the body is then its new bytes.
        """
        parsed = parse_body(body, media_type, uri)
        return self._write(lambda txn: self._put(txn, uri, parsed, model or default, model, if_match,
                                                 if_none_match))

    def _put(self, txn, uri, body: Body, kind, requested, if_match, if_none_match):
        info = self._info(txn, uri)
        _check_preconditions(info, if_match, if_none_match)
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
                        if_none_match: str | None = None) -> str:
        """Replace the description of binary ``uri`` (its subject is the binary); the new ETag."""
        parsed = parse_body(body, media_type, uri, description=True)

        def op(txn):
            info = self._description_info(txn, uri)
            if info is None:
                raise RepositoryError(404, f"<{uri}> is not a binary")
            _check_preconditions(info, if_match, if_none_match)
            self._check_managed(txn, uri, parsed.managed)
            refuse_rdf12_in(parsed.ntriples)  # before the old triples go
            subject = iri(uri)
            txn.remove(None, None, None, subject)
            self._ingest(txn, subject, parsed.ntriples)
            return self._touch(txn, uri, self._description_etag)

        return self._write(op)

    def patch(self, uri: str, update: str, *, description: bool = False,
              if_match: str | None = None) -> ResourceInfo:
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
                _check_preconditions(info, if_match, None)
                before = self._ntriples(txn, uri)
            removed, added = sparql_patch.run(update, before, uri, self.sandboxes)
            removed_body = split_managed(removed, uri, description)
            added_body = split_managed(added, uri, description)
            if removed_body.managed or added_body.managed:
                triple = (removed_body.managed or added_body.managed)[0]
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
                   if_match: str | None = None, if_none_match: str | None = None) -> tuple[bool, str]:
        """Create or replace the binary ``uri`` with bytes already received; (created, ETag).

        The file is in place and synced before the one write that records
        it: a binary is never seen before its bytes are complete.  The
        replaced file, if any, is deleted after that write.
        """
        name = self.binaries.keep(upload)  # refused below: the caller discards the upload
        created, etag, replaced = self._write(
            lambda txn: self._put_binary(txn, uri, name, upload, model_requested, if_match,
                                         if_none_match))
        if replaced:
            self.binaries.discard(replaced)
        return created, etag

    def _put_binary(self, txn, uri, name, upload: Upload, requested, if_match, if_none_match):
        info = self._info(txn, uri)
        _check_preconditions(info, if_match, if_none_match)
        subject = iri(uri)
        now = literal(_now(), datatype=XSD + "dateTime")
        replaced = None
        if info is None:
            parent = self._check_creatable(txn, uri)
            created = now
        else:
            check_model(info, requested or BINARY)
            old = [q[2] for q in txn.quads(subject, iri(CREATED), None, self._server)]
            created = old[0] if old else now
            replaced = [q[2][1:].decode() for q in txn.quads(subject, self._file, None, self._meta)][0]
        # Checks done: the changes.
        if info is None:
            etag = self._create(txn, uri, BINARY, parent)
        else:
            for predicate in DESCRIPTION_PREDICATES:
                txn.remove(subject, iri(predicate), None, self._server)
            txn.remove(subject, self._file, None, self._meta)
            etag = self._touch(txn, uri)
        quads = [
            (subject, iri(HAS_SIZE), literal(str(upload.size), datatype=XSD + "long")),
            (subject, iri(HAS_MIME_TYPE), literal(upload.media_type)),
            (subject, iri(CREATED), created),
            (subject, iri(LAST_MODIFIED), now),
        ] + [(subject, iri(HAS_DIGEST), iri(f"urn:{algorithm}:{hexdigest}"))
             for algorithm, hexdigest in sorted(upload.digests.items())]
        if upload.filename:
            quads.append((subject, iri(FILENAME), literal(upload.filename)))
        txn.add([(s, p, o, self._server) for s, p, o in quads]
                + [(subject, self._file, literal(name), self._meta)])
        self._touch(txn, uri, self._description_etag)
        return info is None, etag, replaced

    def delete(self, uri: str, *, if_match: str | None = None) -> None:
        """Delete ``uri`` and, for a container, everything it contains; ``uri`` is then gone (410)."""
        if uri == self.base_url:
            raise RepositoryError(405, "the root container cannot be deleted")
        files = self._write(lambda txn: self._delete(txn, uri, if_match))
        for name in files:  # after the commit: a deleted binary's bytes, no longer referenced
            self.binaries.discard(name)

    def _delete(self, txn, uri, if_match):
        info = self._info(txn, uri)
        if info is None:
            deleted = self._tombstone(txn, uri)
            if deleted is not None:
                raise gone(deleted)
            raise RepositoryError(404, f"<{uri}> does not exist")
        _check_preconditions(info, if_match, None)
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


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _lexical(term: bytes) -> str:
    """The lexical form of an encoded literal."""
    if term[:1] in (b"G", b"D"):
        return term.split(b"\x00", 1)[1].decode()
    return term[1:].decode()


def _show(term: bytes) -> str:
    """An encoded term as N-Triples, for messages."""
    return render_ntriples_term(term).decode()
