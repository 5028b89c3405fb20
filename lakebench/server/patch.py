"""PATCH with ``application/sparql-update``, as Fedora takes it.

Three steps, each bounded:

1. :func:`check_nesting`, here in the worker, before anything recursive sees
   the text: brackets nested deeper than :data:`MAX_NESTING`, or a run of
   more than :data:`MAX_UNARY` prefix operators, is a 400 (a scan with no
   recursion, strings and comments skipped as SPARQL lexes them).
2. In a confined helper process (:mod:`lakebench.server.sandbox`), the
   update is parsed (spargebra, pyoxigraph's own parser) and decided on its
   parsed form: INSERT DATA, DELETE DATA, DELETE WHERE and DELETE/INSERT
   WHERE on the resource's own graph are run; LOAD, SERVICE, CLEAR, DROP,
   CREATE, ADD/MOVE/COPY, GRAPH, WITH and USING are refused with a 400.
   pyoxigraph runs the canonical text of that parse on an in-memory copy of
   the resource (its own triples and its server-managed ones, so a WHERE
   clause can match its types), with the resource's IRI as the base, within
   the server's time limit.
3. The result is the difference, triples removed and triples added, which
   the repository checks and applies in one store write.
"""
from __future__ import annotations

import re

import pyoxigraph as ox

from lakebench.server.errors import RepositoryError
from lakebench.server.rdfbody import refuse_rdf12
from lakebench.server.sandbox import Sandboxes

MEDIA_TYPE = "application/sparql-update"
#: The deepest nesting of brackets ( ``(``, ``{``, ``[`` ) an update may have.
MAX_NESTING = 100
#: The longest run of prefix operators (``!``, ``-``, ``+``) an update may have.
MAX_UNARY = 100

# SPARQL's lexical forms that can hold a bracket the parser does not see as
# one: strings (the four forms, escapes as the grammar has them) and comments.
# Possessive, so a scan never backtracks.  An IRI is matched too, but its
# brackets are counted (an IRI-shaped span may be a less-than sign to the parser).
_TOKENS = re.compile(r"""
    (?P<string>'''(?:(?:''|')?+(?:[^'\\]|\\.))*+'''
              |\"\"\"(?:(?:\"\"|\")?+(?:[^"\\]|\\.))*+\"\"\"
              |'(?:[^'\\\n\r]|\\.)*+'
              |"(?:[^"\\\n\r]|\\.)*+")
   |(?P<unterminated>'''|\"\"\"|'|")
   |(?P<iri><[^<>"{}|^`\\\x00-\x20]*+>)
   |(?P<comment>\#[^\n\r]*+)
   |(?P<open>[({\[])
   |(?P<close>[)}\]])
   |(?P<unary>[!+-])
   |(?P<space>\s++)
   |(?P<other>[^'"<\#(){}\[\]!+\-\s]++|.)
""", re.X | re.S)
_IRI_BRACKETS = re.compile(r"[({\[]|[)}\]]|[!+-]+")


def check_nesting(update: str) -> None:
    """Refuse (400) an update nested deeper than the server parses.

    >>> check_nesting('INSERT DATA { <> <http://p/x> "((((((((((((" }')
    >>> check_nesting("INSERT { <> <http://p/x> 1 } WHERE { " + "{ " * 200 + "}" * 200 + " }")
    Traceback (most recent call last):
    ...
    lakebench.server.errors.RepositoryError: SPARQL Update nested too deeply: brackets more than 100 deep
    """
    depth = 0
    unary = 0
    for match in _TOKENS.finditer(update):
        kind = match.lastgroup
        if kind == "space" or kind == "comment":
            continue
        if kind == "unary":
            unary += 1
            if unary > MAX_UNARY:
                raise _too_deep(f"more than {MAX_UNARY} prefix operators in a row")
            continue
        unary = 0
        if kind == "open":
            depth += 1
        elif kind == "close":
            depth = max(0, depth - 1)
        elif kind == "iri":
            depth = _iri_span(match.group(), depth)
        elif kind == "unterminated":
            raise RepositoryError(400, f"malformed SPARQL Update: a string opened at character "
                                       f"{match.start()} is not closed")
        if depth > MAX_NESTING:
            raise _too_deep(f"brackets more than {MAX_NESTING} deep")


def _iri_span(span: str, depth: int) -> int:
    """The depth after an IRI-shaped span, its brackets counted as the parser
    would count them if it were not an IRI, but never lowered by it."""
    start = depth
    for bracket in _IRI_BRACKETS.findall(span):
        if bracket[0] in "!+-":
            if len(bracket) > MAX_UNARY:
                raise _too_deep(f"more than {MAX_UNARY} prefix operators in a row")
        elif bracket in "({[":
            depth += 1
            if depth > MAX_NESTING:
                raise _too_deep(f"brackets more than {MAX_NESTING} deep")
        else:
            depth = max(start, depth - 1)
    return depth


def _too_deep(what: str) -> RepositoryError:
    return RepositoryError(400, f"SPARQL Update nested too deeply: {what}")


def run(update: str, before: bytes, base: str, sandboxes: Sandboxes) -> tuple[list, list]:
    """(triples removed, triples added) when ``update`` runs on ``before`` (N-Triples).

    Blank nodes keep their labels, so a removed one names the stored one.
    """
    check_nesting(update)
    removed, added = sandboxes.evaluate(update, before, base)
    nt = ox.RdfFormat.N_TRIPLES
    added_triples = list(ox.parse(added, format=nt))
    for triple in added_triples:
        refuse_rdf12(triple, MEDIA_TYPE)
    return list(ox.parse(removed, format=nt)), added_triples
