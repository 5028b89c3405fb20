"""PATCH with ``application/sparql-update``, as Fedora takes it.

The update is run by pyoxigraph's SPARQL engine on an in-memory copy of the
resource (its own triples and its server-managed ones, so a WHERE clause can
match its types), with the resource's IRI as the base; the result is the
difference, triples removed and triples added, which the repository checks
and applies in one store write.  Only the resource's own graph can change:
operations on other graphs, or that reach outside the server, are refused.
"""
from __future__ import annotations

import re

import pyoxigraph as ox

from lakebench.server.errors import RepositoryError
from lakebench.server.rdfbody import one_line, refuse_rdf12

MEDIA_TYPE = "application/sparql-update"

# Update operations other than INSERT DATA, DELETE DATA, DELETE WHERE and
# DELETE/INSERT ... WHERE: graph management and LOAD (which would fetch a
# URL), named graphs (GRAPH, WITH, USING) and SERVICE (a remote query).
_REFUSED = ("LOAD", "CLEAR", "DROP", "CREATE", "ADD", "MOVE", "COPY", "GRAPH", "WITH", "USING",
            "SERVICE")
# What cannot hold a keyword: IRIs, strings and comments, blanked out before the search.
_OPAQUE = re.compile(r"<[^<>\"{}|^`\\\s]*>|'''.*?'''|\"\"\".*?\"\"\"|'(?:[^'\\\n]|\\.)*'"
                     r"|\"(?:[^\"\\\n]|\\.)*\"|#[^\n]*", re.S)
_KEYWORD = re.compile(r"(?<![\w:?$])(" + "|".join(_REFUSED) + r")(?![\w:])", re.I)


def check_operations(update: str) -> None:
    """Refuse (400) the update forms the server does not take."""
    match = _KEYWORD.search(_OPAQUE.sub(" ", update))
    if match:
        raise RepositoryError(400, f"unsupported SPARQL Update: {match.group(1).upper()} is not "
                                   "allowed (only INSERT DATA, DELETE DATA, DELETE WHERE and "
                                   "DELETE/INSERT WHERE on the resource's own graph)")


def run(update: str, before: bytes, base: str) -> tuple[list, list]:
    """(triples removed, triples added) when ``update`` runs on ``before`` (N-Triples).

    Blank nodes keep their labels, so a removed one names the stored one.
    """
    check_operations(update)
    store = ox.Store()
    # ox.parse keeps blank node labels (Store.load would rename them).
    store.extend(ox.parse(before, format=ox.RdfFormat.N_TRIPLES))
    old = set(store)
    try:
        store.update(update, base_iri=base)
    except SyntaxError as exc:
        raise RepositoryError(400, f"malformed SPARQL Update: {one_line(exc)}") from None
    except (ValueError, OSError, RuntimeError) as exc:
        raise RepositoryError(400, f"SPARQL Update failed: {one_line(exc)}") from None
    new = set(store)
    if any(quad.graph_name != ox.DefaultGraph() for quad in new):
        raise RepositoryError(400, "unsupported SPARQL Update: only the resource's own graph can change")
    added = [quad.triple for quad in new - old]
    for triple in added:
        refuse_rdf12(triple, MEDIA_TYPE)
    return [quad.triple for quad in old - new], added
