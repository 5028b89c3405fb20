"""PATCH with ``application/sparql-update``, as Fedora takes it.

Three steps, each bounded, the first two in a confined helper process
(:mod:`lakebench.server.sandbox`):

1. Before anything recursive sees the text, brackets nested deeper than
   :data:`lakebench._sparql.MAX_NESTING` (100), or a run of more than that
   many prefix operators, is a 400 (a scan with no recursion, strings and
   comments skipped as SPARQL lexes them: :func:`lakebench._sparql.check_update`).
2. The update is parsed (spargebra, pyoxigraph's own parser) and decided on
   its parsed form: INSERT DATA, DELETE DATA, DELETE WHERE and DELETE/INSERT
   WHERE on the resource's own graph are run; LOAD, SERVICE, CLEAR, DROP,
   CREATE, ADD/MOVE/COPY, GRAPH, WITH and USING are refused with a 400.
   pyoxigraph runs the canonical text of that parse on an in-memory copy of
   the resource (its own triples and its server-managed ones, so a WHERE
   clause can match its types), with the resource's IRI as the base, within
   the server's time limit.
3. The result is the difference, triples removed and triples added, which
   the repository checks and applies in one store write.  A server-managed
   triple the update removes by a pattern (``DELETE WHERE { <> ?p ?o }``)
   stays, as in Fedora, whose updates never see them; one it names (``DELETE
   DATA``, or a template naming its predicate, or ``rdf:type`` and its LDP
   type) is refused (409).
"""
from __future__ import annotations

import pyoxigraph as ox

from lakebench.server.rdfbody import refuse_rdf12
from lakebench.server.sandbox import Sandboxes

MEDIA_TYPE = "application/sparql-update"


def run(update: str, before: bytes, base: str, sandboxes: Sandboxes) -> tuple[list, list, list]:
    """(triples removed, triples added, the removed triples the update names) when
    ``update`` runs on ``before`` (N-Triples); see :func:`lakebench.server.sandbox.named`.

    Blank nodes keep their labels, so a removed one names the stored one.
    """
    removed, added, named = sandboxes.evaluate(update, before, base)
    nt = ox.RdfFormat.N_TRIPLES
    added_triples = [quad.triple for quad in ox.parse(added, format=nt)]
    for triple in added_triples:
        refuse_rdf12(triple, MEDIA_TYPE)
    removed_triples = [quad.triple for quad in ox.parse(removed, format=nt)]
    named_triples = removed_triples if named is None else [quad.triple for quad in ox.parse(named, format=nt)]
    return removed_triples, added_triples, named_triples
