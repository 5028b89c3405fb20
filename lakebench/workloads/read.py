"""``read``: random GETs of single children after a flat ingest, warm and cold.

After the seed's ingest of N children, ``reads`` children chosen at random
(seeded: ``random.Random("lakebench:read:{seed}")``, the same children for
every system) are read one at a time with ``get_resource``, each timed
alone as ``"get child"``: over HTTP a ``GET`` (Turtle), in-process the
child's graph serialized as N-Triples, the work a server does to answer
that GET.  Then, where the OS lets lakebench drop its page cache (root),
``cold_reads`` more, each after a drop, timed as ``"get child cold"``; an
in-process store keeps the pages it has mapped, so its cold reads are only
as cold as the kernel makes them.  Every body received is parsed after its
clock stops and must hold the child's graph: its ``triples`` triples of the
data set's predicates, literals exact.
"""
from __future__ import annotations

import random

from lakebench.argtypes import Bounded
from lakebench.pagecache import drop_page_cache
from lakebench.dataset import NS, Child
from lakebench.workloads.base import Outcome, Param, Workload, count_containment

READS = Bounded(int, 1, 1_000_000)
COLD_READS = Bounded(int, 0, 10_000)
FORMATS = {"text/turtle": "TURTLE", "application/n-triples": "N_TRIPLES"}


class Read(Workload):
    name = "read"
    RECORD = ("reads", "Reads")
    primary = "get child"
    needs = ("get_resource",)
    PARAMETERS = {
        "reads": Param(1000, READS, f"GETs of random children after the ingest, {READS.range}", metavar="N"),
        "cold_reads": Param(20, COLD_READS, f"GETs of random children after dropping the OS page cache "
                                            f"(root only), {COLD_READS.range}", metavar="N"),
    }

    def run(self, system, driver) -> Outcome:
        driver.ingest(system, self.dataset)
        created = driver.outcome.created()
        driver.phase("read")
        ok = checked = 0
        rng = random.Random(f"lakebench:read:{self.dataset.seed}")
        bar = driver.progress(self.params["reads"], "read", "GET")
        for _ in range(self.params["reads"]):
            good = self._read(system, driver, "get child", self.dataset.child(rng.randrange(created)))
            ok, checked = ok + (good is True), checked + (good is not None)
            if bar is not None:
                bar.update(1)
        if bar is not None:
            bar.close()
        # Cold: each read right after a drop of the page cache; when the OS refuses
        # the drop (not root), no read is made and none is called cold.
        rng = random.Random(f"lakebench:read-cold:{self.dataset.seed}")
        cold = cold_ok = 0
        for _ in range(self.params["cold_reads"]):
            if not drop_page_cache():
                break
            cold += 1
            cold_ok += self._read(system, driver, "get child cold", self.dataset.child(rng.randrange(created))) is True
        driver.read_parent(system)
        driver.outcome.details = {
            "reads": {"requested": self.params["reads"], "ok": ok, "checked": checked,
                      "cold_requested": self.params["cold_reads"], "cold": cold > 0,
                      "cold_done": cold, "cold_ok": cold_ok},
        }
        return driver.outcome

    def _read(self, system, driver, kind: str, child: Child) -> bool | None:
        """GET ``child`` timed as ``kind``; whether the body holds its graph (None: the GET failed)."""
        retrieval = driver.attempt(kind, system.get_resource, child.path)
        if retrieval is None:
            return None
        with driver.harness():
            return holds_child(retrieval, child)

    @classmethod
    def notes(cls, entries: list[dict], label) -> list[str]:
        return [f"{label(e)}: no cold reads: the OS page cache could not be dropped (needs root)"
                for e in entries if (e.get("reads") or {}).get("cold_requested") and not e["reads"].get("cold")]

    def record(self, outcome: Outcome, system) -> dict:
        created = outcome.created()
        return {"sent": {"children": created, "triples": created * self.dataset.triples,
                         "reads": self.params["reads"]},
                "held": {"children": count_containment(outcome.retrieval),
                         "reads": outcome.details["reads"]["ok"]},
                **outcome.details}


def resource_triples(retrieval) -> list[tuple[str, object]]:
    """``(predicate IRI, object term)`` of the resource's own triples in a retrieved body (the
    subject is the resource: ``retrieval.parent_uri``), those of the data set's predicates only:
    a server's own triples (types, dates) are not the child's graph.

    >>> from lakebench.systems.base import Retrieval
    >>> body = b'<> <http://lakebench.example/ns/lit#p0> "a\\\\"b" ; a <http://x/T> .'
    >>> [(p, o.value) for p, o in resource_triples(Retrieval(body, "http://h/parent/c1"))]
    [('http://lakebench.example/ns/lit#p0', 'a"b')]
    """
    import pyoxigraph as ox

    media_type = retrieval.content_type.split(";")[0].strip()
    fmt = getattr(ox.RdfFormat, FORMATS[media_type])
    subject = ox.NamedNode(retrieval.parent_uri)
    return [(quad.predicate.value, quad.object)
            for quad in ox.parse(retrieval.reader(), format=fmt, base_iri=retrieval.parent_uri)
            if quad.subject == subject and quad.predicate.value.startswith(NS)]


def literals_held(retrieval) -> dict[str, set[str]]:
    """Predicate IRI -> the plain literals the resource holds with it."""
    import pyoxigraph as ox

    held: dict[str, set[str]] = {}
    for predicate, obj in resource_triples(retrieval):
        if isinstance(obj, ox.Literal):
            held.setdefault(predicate, set()).add(obj.value)
    return held


def literals_if_whole(retrieval, triples: int) -> dict[str, set[str]] | None:
    """:func:`literals_held`, or None when the body does not hold exactly ``triples`` triples of
    the data set's predicates, or cannot be parsed (a bad body is a wrong answer, not a crash)."""
    try:
        if len(resource_triples(retrieval)) != triples:
            return None
        return literals_held(retrieval)
    except (SyntaxError, ValueError, KeyError):  # malformed, or not Turtle or N-Triples
        return None


def holds_child(retrieval, child: Child) -> bool:
    """Whether a retrieved body holds ``child``'s graph: as many triples of the data set's
    predicates, and exactly its literals."""
    expected: dict[str, set[str]] = {}
    for predicate, obj, is_iri in child.triples:
        if not is_iri:
            expected.setdefault(predicate, set()).add(obj)
    return literals_if_whole(retrieval, len(child.triples)) == expected
