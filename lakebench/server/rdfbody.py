"""A client's RDF body: parsed to N-Triples, checked, and its server-managed
triples set apart.

Everything here runs before the store's write transaction begins, so a body
is refused (400, 409, 415) before anything is written, and parsing never
holds the single writer lock.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import pyoxigraph as ox

from lakebench.server.errors import RepositoryError
from lakebench.server.vocabulary import (
    DATES,
    DESCRIPTION_PREDICATES,
    EBUCORE,
    FEDORA,
    LDP,
    LDP_CONTAINS,
    LDP_TYPES,
    PREMIS,
    RDF_TYPE,
    XSD,
)
from lakebench.store.terms import bnode, iri, literal

#: Media types clients may send, and the parser that reads each.
PARSERS = {
    "text/turtle": ox.RdfFormat.TURTLE,
    "application/n-triples": ox.RdfFormat.N_TRIPLES,
    "application/ld+json": ox.RdfFormat.JSON_LD,
}

# Byte marks that must appear in the N-Triples for the slow checks to matter:
# most bodies hold none, and are then handed to the store as they are.
_LDP_MARK = f"<{LDP}".encode()
_FEDORA_MARK = f"<{FEDORA}".encode()  # fedora:created and fedora:lastModified, on every resource
_DESCRIPTION_MARKS = tuple(f"<{ns}".encode() for ns in (PREMIS, EBUCORE))
_RDF12_MARKS = (b"<<(", b"--ltr", b"--rtl")  # how pyoxigraph writes triple terms and directions
_XSD_STRING = XSD + "string"


@dataclass(frozen=True)
class Body:
    """A parsed body: the client's own triples, and the server-managed
    triples it restates about the resource (encoded ``(s, p, o)``), which
    must be true and are not stored."""

    ntriples: bytes
    managed: tuple[tuple[bytes, bytes, bytes], ...] = ()


def to_ntriples(body: bytes, media_type: str, base: str) -> bytes:
    """``body`` parsed (relative IRIs against ``base``) and written as N-Triples."""
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
        return ox.serialize(ox.parse(body, format=fmt, base_iri=base, without_named_graphs=True),
                            format=ox.RdfFormat.N_TRIPLES) or b""
    except (SyntaxError, ValueError) as exc:  # ValueError: e.g. invalid UTF-8
        raise RepositoryError(400, f"malformed {media_type}: {one_line(exc)}") from None


def parse_body(body: bytes, media_type: str, subject: str, *, description: bool = False) -> Body:
    """Parse a PUT/POST body for ``subject`` and set its server-managed triples apart.

    Server-managed: ``ldp:contains``, the LDP types, ``fedora:created`` and
    ``fedora:lastModified``, and, for a binary's ``description``, the
    properties the server records (size, digest, media type, file name).  Stated about ``subject`` they are kept aside to
    be checked against the truth in the write transaction; about any other
    resource they are refused at once (409).
    """
    ntriples = to_ntriples(body, media_type, subject)
    # Each search costs about 10 us per 20 KB: only the LDP and Fedora namespaces' here.
    if _LDP_MARK not in ntriples and _FEDORA_MARK not in ntriples and not (
            description and any(m in ntriples for m in _DESCRIPTION_MARKS)):
        return Body(ntriples)
    return split_managed(ox.parse(ntriples, format=ox.RdfFormat.N_TRIPLES), subject, description,
                         media_type)


def refuse_rdf12_in(ntriples: bytes, media_type: str = "RDF") -> None:
    """400 for RDF 1.2 terms the store would refuse, checked before a write removes anything
    (a new resource needs no check: the store refuses them before writing)."""
    if any(mark in ntriples for mark in _RDF12_MARKS):
        for triple in ox.parse(ntriples, format=ox.RdfFormat.N_TRIPLES):
            refuse_rdf12(triple, media_type)


def split_managed(triples, subject: str, description: bool, media_type: str = "RDF") -> Body:
    """The client's triples as N-Triples, and the managed ones about ``subject`` encoded."""
    own, managed = [], []
    for triple in triples:
        refuse_rdf12(triple, media_type)
        if not is_managed(triple, description):
            own.append(triple)
            continue
        if not (isinstance(triple.subject, ox.NamedNode) and triple.subject.value == subject):
            raise RepositoryError(409, f"server-managed triple about another resource: {triple}")
        managed.append(encode_triple(triple))
    return Body(ox.serialize(own, format=ox.RdfFormat.N_TRIPLES) or b"", tuple(managed))


def is_managed(triple, description: bool = False) -> bool:
    predicate = triple.predicate.value
    if predicate == LDP_CONTAINS:
        return True
    if predicate == RDF_TYPE:
        return isinstance(triple.object, ox.NamedNode) and triple.object.value in LDP_TYPES
    return predicate in DATES or (description and predicate in DESCRIPTION_PREDICATES)


def refuse_rdf12(triple, media_type: str) -> None:
    """The store takes RDF 1.1: a triple term or a base direction is a 400."""
    term = triple.object
    if isinstance(term, ox.Triple) or (isinstance(term, ox.Literal) and term.direction):
        raise RepositoryError(400, f"unsupported RDF in {media_type} (the store takes RDF 1.1: "
                                   f"no triple terms or base directions): {triple}")


def encode_term(term) -> bytes:
    """A pyoxigraph term as the store encodes it (xsd:string is the simple literal,
    as pyoxigraph writes it in the N-Triples the store ingests)."""
    if isinstance(term, ox.NamedNode):
        return iri(term.value)
    if isinstance(term, ox.BlankNode):
        return bnode(term.value)
    if isinstance(term, ox.Literal):
        datatype = term.datatype.value
        return literal(term.value, lang=term.language,
                       datatype=None if term.language or datatype == _XSD_STRING else datatype)
    raise RepositoryError(400, f"unsupported RDF term {term}")


def encode_triple(triple) -> tuple[bytes, bytes, bytes]:
    return encode_term(triple.subject), encode_term(triple.predicate), encode_term(triple.object)


def one_line(exc: Exception) -> str:
    """An exception's message on one line (parsers report over several)."""
    return " ".join(str(exc).split())
