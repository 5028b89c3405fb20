r"""Encoded terms: how the store names an RDF term in bytes.

One kind byte, then UTF-8 text:

=====  ==============================================  ========================
kind   layout                                          term
=====  ==============================================  ========================
``I``  ``I`` IRI                                       IRI
``B``  ``B`` label                                     blank node
``L``  ``L`` lexical form                              simple literal
``G``  ``G`` language tag NUL lexical form             language-tagged literal
``D``  ``D`` datatype IRI NUL lexical form             typed literal
=====  ==============================================  ========================

Neither a language tag nor an IRI can contain NUL, so the first NUL ends
them; the lexical form may contain anything.  The kind bytes come from the
compiled core (``lakebench._store.KIND_IRI`` ...), which defines them once.  A literal typed
``xsd:string`` explicitly stays typed (``D``), as rdflib keeps it distinct.

>>> iri("http://example.org/a")
b'Ihttp://example.org/a'
>>> literal("chat", lang="fr")
b'Gfr\x00chat'
>>> decode(encode(Literal("1", datatype=XSD.integer))) == Literal(1)
True
"""
from __future__ import annotations

from rdflib import BNode, Literal, URIRef
from rdflib.namespace import XSD  # noqa: F401  (doctest)
from rdflib.term import Node

from lakebench._store import KIND_BLANK, KIND_IRI, KIND_LANG_LITERAL, KIND_LITERAL, KIND_TYPED_LITERAL

__all__ = ["iri", "bnode", "literal", "encode", "decode", "term", "DEFAULT_GRAPH"]

#: The graph of triples given without one: rdflib's default graph of a Dataset.
DEFAULT_GRAPH = KIND_IRI + b"urn:x-rdflib:default"


def iri(value: str) -> bytes:
    return KIND_IRI + value.encode("utf-8")


def bnode(label: str) -> bytes:
    return KIND_BLANK + label.encode("utf-8")


def literal(lexical: str, lang: str | None = None, datatype: str | None = None) -> bytes:
    if lang:
        return KIND_LANG_LITERAL + lang.encode("utf-8") + b"\x00" + lexical.encode("utf-8")
    if datatype:
        return KIND_TYPED_LITERAL + str(datatype).encode("utf-8") + b"\x00" + lexical.encode("utf-8")
    return KIND_LITERAL + lexical.encode("utf-8")


def encode(node: Node) -> bytes:
    """The encoded form of an rdflib term (URIRef, BNode or Literal)."""
    if isinstance(node, URIRef):
        return iri(str(node))
    if isinstance(node, BNode):
        return bnode(str(node))
    if isinstance(node, Literal):
        return literal(str(node), node.language, node.datatype)
    raise TypeError(f"cannot store {type(node).__name__} {node!r}")


def decode(data: bytes) -> Node:
    """The rdflib term of an encoded term."""
    kind = data[:1]
    if kind == KIND_IRI:
        return URIRef(data[1:].decode("utf-8"))
    if kind == KIND_BLANK:
        return BNode(data[1:].decode("utf-8"))
    if kind == KIND_LITERAL:
        return Literal(data[1:].decode("utf-8"))
    head, sep, lexical = data[1:].partition(b"\x00")
    if sep and kind == KIND_LANG_LITERAL:
        return Literal(lexical.decode("utf-8"), lang=head.decode("utf-8"))
    if sep and kind == KIND_TYPED_LITERAL:
        return Literal(lexical.decode("utf-8"), datatype=URIRef(head.decode("utf-8")))
    raise ValueError(f"invalid encoded term {data[:60]!r}")


def term(value) -> bytes | None:
    """Coerce a pattern or API term: None, encoded bytes, an IRI string or an rdflib term."""
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, Node):
        return encode(value)
    if isinstance(value, str):
        return iri(value)
    raise TypeError(f"not a term: {value!r}")
