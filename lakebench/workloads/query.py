"""``query``: a small fixed set of SPARQL queries over the ingested data, timed and checked.

The N children are ingested as by ``flat``; then each query below is run
``query_repeats`` times, each run timed alone as ``"query NAME"`` (after
one untimed empty query); then the parent is read.  Only systems with
SPARQL take it (``System.query``: the in-process ``oxigraph``, ``memory``,
and ``lmdb`` through rdflib's engine over the store's rdflib plugin); the
others are "not applicable".

=========  ==========================================================  ===========================
query      what it asks                                                expected answer
=========  ==========================================================  ===========================
triples    ``COUNT(*)`` of every triple of every named graph           N x (triples + 1)
children   ``COUNT`` of the parent's ``ldp:contains`` triples          N
lookup     the subject and predicate holding one literal               1 row
join       ``?a int:p0 ?b`` in ?a's graph, ``?b int:p0 ?c`` in ?b's:   N - 1 rows
           two hops over the links between children (``int:p0`` of
           child k is child k-1)
=========  ==========================================================  ===========================

Every child is a named graph of its own, the containment triples are in
the parent's graph, and the default graph is empty; what a store's default
graph means differs (oxigraph's is not the union of the others, rdflib's
``Dataset`` has one of its own), so every pattern is inside ``GRAPH ?g``
and means the same on every store.

Each answer is reduced to its rows (tuples of strings, as ``System.query``
gives them), sorted, and a digest of them, so the record says whether the
systems agree (:func:`disagreements`) and whether each found what the data
set says it holds (``expected``, from :mod:`lakebench.dataset`).

>>> from lakebench.dataset import DataSet
>>> qs = queries(DataSet(children=20, seed=7))
>>> list(qs), [q.expected for q in qs.values()]
(['lookup', 'triples', 'children', 'join'], [1, 4020, 20, 19])
>>> digest([("b", "1"), ("a", None)]) == digest([("a", None), ("b", "1")])
True
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from lakebench.argtypes import Bounded
from lakebench.dataset import INT_NS, LDP_CONTAINS, DataSet
from lakebench.workloads.base import Outcome, Param, Workload

REPEATS = Bounded(int, 1, 1000)
#: The link the ``join`` follows: each child's first internal triple, to the child made before it.
LINK = INT_NS + "p0"

# Escapes of a SPARQL "..." string (ECHAR): the same as Turtle's short strings.
_SPARQL_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"})
_MUST_ESCAPE = set("\\\"\n\r\t")


def sparql_string(value: str) -> str:
    r"""``value`` as a SPARQL string literal, quotes included.

    >>> print(sparql_string('a"b\\c\nd'))
    "a\"b\\c\nd"
    """
    return '"' + value.translate(_SPARQL_ESCAPES) + '"'


@dataclass(frozen=True)
class Query:
    """One query: its SPARQL, and what the data set says its answer is."""

    sparql: str
    expected: int  # the count of a COUNT query, else the number of rows
    counts: bool  # a COUNT query: the answer is the number in its single row


def lookup_literal(dataset: DataSet) -> str:
    """The literal looked up: of the middle child, its first literal that must be escaped in SPARQL
    (else its first literal).

    One holding a backslash before ``u`` or ``U`` is passed over: SPARQL
    unescapes ``\\uXXXX`` before parsing, and stores do not agree on what
    ``\\\\u0041`` then means.
    """
    values = dataset.child(dataset.children // 2).literal_values
    clean = [v for v in values if "\\u" not in v and "\\U" not in v] or values
    return next((v for v in clean if _MUST_ESCAPE & set(v)), clean[0])


def chained_links(dataset: DataSet) -> int:
    """Rows of the ``join``: children ``a`` whose first internal link (``int:p0``) is a child ``b``
    (whose own ``int:p0`` is then ``c``).

    ``int:p0`` of child ``k`` is the child most recently created before it
    (:meth:`DataSet.child`), the parent for child 0: every child but the first.
    """
    return dataset.children - 1


def queries(dataset: DataSet) -> dict[str, Query]:
    """The queries over ``dataset``, in the order they run."""
    parent = f"<{dataset.parent_uri}>"
    contains = f"<{LDP_CONTAINS}>"
    link = f"<{LINK}>"
    n = dataset.children
    return {
        "lookup": Query(f"SELECT ?s ?p WHERE {{ GRAPH ?g {{ ?s ?p {sparql_string(lookup_literal(dataset))} }} }}",
                        1, counts=False),
        "triples": Query("SELECT (COUNT(*) AS ?n) WHERE { GRAPH ?g { ?s ?p ?o } }",
                         n * (dataset.triples + 1), counts=True),
        "children": Query(f"SELECT (COUNT(?c) AS ?n) WHERE {{ GRAPH ?g {{ {parent} {contains} ?c }} }}",
                          n, counts=True),
        # A two-hop path: each GRAPH names the graph of the pattern's subject
        # (each child is a graph of its own), so once ?b is bound the second
        # pattern is one graph, not all of them.  With a third GRAPH block
        # (say ?b contained by the parent) rdflib joins the blocks eagerly,
        # comparing each row of one with each row of the other: N x N.
        "join": Query(f"SELECT ?a ?b ?c WHERE {{ GRAPH ?a {{ ?a {link} ?b }} GRAPH ?b {{ ?b {link} ?c }} }}",
                      chained_links(dataset), counts=False),
    }


def digest(rows) -> str:
    """SHA-256 (first 16 hex digits) of the rows, sorted: the same answer gives the same digest."""
    ordered = sorted(rows, key=lambda row: [(v is None, v or "") for v in row])
    return hashlib.sha256(json.dumps(ordered, ensure_ascii=False).encode("utf-8")).hexdigest()[:16]


def answer(query: Query, rows) -> int | None:
    """What is compared with ``expected``: the count of a COUNT query, else the rows."""
    if not query.counts:
        return len(rows)
    try:
        (value,), = rows
        return int(value)
    except (TypeError, ValueError):
        return None


class Queries(Workload):
    name = "query"
    RECORD = ("queries", "Queries")
    # The lookup: one row found by one index probe, the operation closest to
    # a client's "find the resource with this value"; the counts and the join
    # read the whole store and have times of their own in ``operations``.
    primary = "query lookup"
    needs = ("query",)
    PARAMETERS = {
        "query_repeats": Param(5, REPEATS, f"timed runs of each query, {REPEATS.range}", metavar="N"),
    }

    def run(self, system, driver) -> Outcome:
        driver.ingest(system, self.dataset)
        driver.phase("query")
        # Untimed: the engine's one-time set-up (rdflib builds its SPARQL
        # parser on first use) belongs to no query.
        system.query("SELECT * WHERE { }")
        answers = {}
        created = driver.outcome.created()  # a budget may have stopped the ingest: ask about what is there
        asked = self.dataset if created == self.dataset.children else _shrunk(self.dataset, created)
        for name, query in queries(asked).items():
            for _ in range(self.params["query_repeats"]):
                rows = driver.time(f"query {name}", system.query, query.sparql)
            answers[name] = [tuple(row) for row in rows]  # the last run's answer (all are timed)
        driver.outcome.details["answers"] = answers
        driver.read_parent(system)
        return driver.outcome

    @classmethod
    def notes(cls, entries: list[dict], label) -> list[str]:
        """Whether the systems agree."""
        return agreement_lines({"systems": entries})

    def record(self, outcome: Outcome, system) -> dict:
        answers = outcome.details["answers"]
        created = outcome.created()
        # What the data set says the queries find: a budget that stopped the
        # ingest early means fewer children.
        dataset = self.dataset if created == self.dataset.children else _shrunk(self.dataset, created)
        found = {}
        for name, query in queries(dataset).items():
            rows = answers[name]
            found[name] = {"rows": len(rows), "answer": answer(query, rows), "digest": digest(rows),
                           "expected": query.expected}
        return {
            "queries": found,
            "sent": {"children": created, "triples": found["triples"]["expected"],
                     "lookup": 1, "links": found["join"]["expected"]},
            "held": {"children": found["children"]["answer"], "triples": found["triples"]["answer"],
                     "lookup": found["lookup"]["answer"], "links": found["join"]["answer"]},
        }


def _shrunk(dataset: DataSet, children: int) -> DataSet:
    from dataclasses import replace

    return replace(dataset, children=max(children, 1))


def disagreements(document: dict) -> dict[str, list[str]]:
    """Systems whose answers disagree, per query: ``{"children (20 children)": ["x"], ...}``.

    Within each case (children count, literal length, variant), the answer
    most systems gave (by digest) is taken as agreed; a system disagrees
    when its digest is another, when its answer is not the expected one, or
    when its runs did not all give the same digest.  Systems without
    ``queries`` (skipped, failed, other workloads) are left out.

    >>> def entry(name, d, a):
    ...     return {"name": name, "children": 2, "literal_length": 64,
    ...             "queries": {"children": {"rows": 1, "answer": a, "digest": d, "expected": 2}}}
    >>> disagreements({"systems": [entry("a", "x", 2), entry("b", "x", 2), entry("c", "y", 3)]})
    {'children': ['c']}
    >>> disagreements({"systems": [entry("a", "x", 2), entry("b", "x", 2)]})
    {}
    """
    from lakebench.results import case_children

    cases: dict[tuple, list[dict]] = {}
    for entry in document.get("systems", []):
        if entry.get("queries"):
            key = (case_children(entry), entry.get("literal_length"), entry.get("variant", ""))
            cases.setdefault(key, []).append(entry)
    several = len(cases) > 1
    found: dict[str, list[str]] = {}
    for (children, _, variant), entries in cases.items():
        for name in sorted({q for e in entries for q in e["queries"]}):
            answered = [e for e in entries if name in e["queries"]]
            if len({e.get("children") for e in answered}) > 1:
                # A budget stopped some at other sizes: their rows differ rightly; only the
                # expected answers compare them.
                wrong = [e["name"] for e in answered if e["queries"][name]["expected"] is not None
                         and e["queries"][name]["answer"] != e["queries"][name]["expected"]]
                if wrong:
                    found[f"{name} ({children:,} children)" if several else name] = sorted(set(wrong))
                continue
            votes: dict[str, int] = {}
            for e in answered:
                votes[e["queries"][name]["digest"]] = votes.get(e["queries"][name]["digest"], 0) + 1
            agreed = max(votes, key=votes.get)
            wrong = []
            for e in answered:
                q = e["queries"][name]
                run_digests = {r["queries"][name]["digest"] for r in e.get("runs", [])
                               if name in r.get("queries", {})}
                if (q["digest"] != agreed or (q["expected"] is not None and q["answer"] != q["expected"])
                        or len(run_digests) > 1):
                    wrong.append(e["name"])
            if wrong:
                label = f"{name} ({children:,} children{', ' + variant if variant else ''})" if several else name
                found[label] = sorted(wrong)
    return found


def agreement_lines(document: dict) -> list[str]:
    """What ``lakebench run`` prints after the table of a ``query`` run: whether the systems agree.

    >>> agreement_lines({"systems": []})
    []
    """
    answered = sorted({e["name"] for e in document.get("systems", []) if e.get("queries")})
    if not answered:
        return []
    found = disagreements(document)
    if not found:
        return [f"queries: {', '.join(answered)} gave the same rows, the expected counts"]
    return [f"queries: {name}: {', '.join(systems)} disagree (with the others or the expected count)"
            for name, systems in found.items()]
