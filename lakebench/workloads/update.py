"""``update``: literals of random children replaced after a flat ingest, then checked.

After the seed's ingest of N children, ``updates`` updates, one at a time:
each picks a child at random and ``replaced`` of its literal triples
(seeded: ``random.Random("lakebench:update:{seed}")``, the same updates for
every system), and replaces each literal by a new random string of the same
length over the data set's alphabet, in one ``replace_literals`` timed as
``"update"``: over HTTP one SPARQL Update ``PATCH`` (``DELETE DATA`` of the
old literals, ``INSERT DATA`` of the new, subject ``<>``), in-process the
same change in one transaction of the store.  A refused update is counted
(``operations.update.errors``), not fatal.  A child may be updated several
times: each update replaces the literals as the child holds them then.

Afterwards, outside any clock, every updated child is read back with
``get_resource`` and each update applied is checked: its old literals gone
(unless a later update brought one back), its new ones there (unless a
later update replaced them again).
"""
from __future__ import annotations

import random

from lakebench.argtypes import Bounded
from lakebench.dataset import ALPHABET
from lakebench.workloads.base import Outcome, Param, Workload, count_containment
from lakebench.workloads.read import literals_if_whole

UPDATES = Bounded(int, 1, 100_000)  # the workload keeps every update applied, to check it
REPLACED = Bounded(int, 1, 1000)


class Update(Workload):
    name = "update"
    RECORD = ("updates", "Updates")
    primary = "update"
    needs = ("replace_literals", "get_resource")
    PARAMETERS = {
        "updates": Param(1000, UPDATES, f"updates after the ingest, each to a random child, {UPDATES.range}",
                         metavar="N"),
        "replaced": Param(10, REPLACED, f"literal triples each update replaces, {REPLACED.range} "
                                        "(all of a child's literal triples if it has fewer)", metavar="N"),
    }

    def run(self, system, driver) -> Outcome:
        driver.ingest(system, self.dataset)
        created = driver.outcome.created()
        replaced = min(self.params["replaced"], self.dataset.group_sizes[2])
        rng = random.Random(f"lakebench:update:{self.dataset.seed}")
        now: dict[int, dict[int, str]] = {}  # child -> literal slot -> its value since an update
        applied: list[tuple[int, list[tuple[str, str, str]]]] = []  # (child, (predicate, old, new)...)
        driver.phase("update")
        bar = driver.progress(self.params["updates"], "update", "update")
        for _ in range(self.params["updates"]):
            child = self.dataset.child(rng.randrange(created))
            replacements = replace_some(system, driver, rng, child, now.setdefault(child.index, {}), replaced)
            if replacements is not None:
                applied.append((child.index, replacements))
            if bar is not None:
                bar.update(1)
        if bar is not None:
            bar.close()
        driver.phase("verify")
        with driver.harness():  # the reads are the system's work too, but no figure of the workload
            verified = self._verify(system, now, applied)
        driver.read_parent(system)
        driver.outcome.details = {"updates": {
            "requested": self.params["updates"], "replaced_per_update": replaced,
            "applied": len(applied), "verified": verified, "stale": len(applied) - verified,
        }}
        return driver.outcome

    def _verify(self, system, now: dict[int, dict[int, str]], applied) -> int:
        """How many updates of ``applied`` the system holds (each child read once, untimed)."""
        held: dict[int, dict[str, set[str]] | None] = {}  # None: the child is not whole
        for index in sorted({index for index, _ in applied}):
            try:
                retrieval = system.get_resource(self.dataset.child(index).path)
            except Exception:  # noqa: BLE001 - a child that cannot be read holds none of its updates
                held[index] = None
            else:  # a child that lost or gained triples holds none of its updates either
                held[index] = literals_if_whole(retrieval, self.dataset.triples)
        verified = 0
        for index, replacements in applied:
            literals = held[index]
            if literals is None:
                continue
            expected = expected_literals(self.dataset.child(index), now[index])
            verified += all(
                (new in literals.get(p, ())) == (new in expected[p])
                and (old in literals.get(p, ())) == (old in expected[p])
                for p, old, new in replacements)
        return verified

    def record(self, outcome: Outcome, system) -> dict:
        created = outcome.created()
        updates = outcome.details["updates"]
        return {"sent": {"children": created, "triples": created * self.dataset.triples,
                         "updates": updates["requested"],
                         "triples_replaced": updates["requested"] * updates["replaced_per_update"]},
                "held": {"children": count_containment(outcome.retrieval), "updates": updates["verified"]},
                **outcome.details}


def replace_some(system, driver, rng: random.Random, child, changed: dict[int, str],
                 count: int) -> list[tuple[str, str, str]] | None:
    """Replace ``count`` of ``child``'s literals, drawn by ``rng``, each by a new random one, in
    one ``replace_literals`` timed as ``"update"``; ``changed`` (slot -> literal: what the
    updates so far made of the child) follows it.  The replacements, or None when refused."""
    literals = literals_now(child, changed)
    taken = {value for _, value in literals}
    slots = rng.sample(range(len(literals)), count)
    news = []
    for slot in slots:
        news.append(draw_literal(rng, len(literals[slot][1]), taken))
        taken.add(news[-1])
    replacements = [(*literals[slot], new) for slot, new in zip(slots, news)]
    refused = driver.outcome.errors.get("update", 0)
    driver.attempt("update", system.replace_literals, child.path, replacements)
    if driver.outcome.errors.get("update", 0) != refused:
        return None
    changed.update(zip(slots, news))
    return replacements


def expected_literals(child, changed: dict[int, str]) -> dict[str, set[str]]:
    """Predicate IRI -> the literals ``child`` holds with it once ``changed`` (see
    :func:`literals_now`): what a read of it should find."""
    expected: dict[str, set[str]] = {}
    for predicate, value in literals_now(child, changed):
        expected.setdefault(predicate, set()).add(value)
    return expected


def literals_now(child, changed: dict[int, str]) -> list[tuple[str, str]]:
    """``(predicate, literal)`` of ``child``'s literal group as the system should hold it: as
    generated, but for the slots ``changed`` by updates.

    >>> from lakebench.dataset import DataSet
    >>> child = DataSet(children=1, triples=4).child(0)
    >>> [p.rsplit("#")[1] for p, _ in literals_now(child, {1: "new"})], literals_now(child, {1: "new"})[1][1]
    (['p0', 'p0'], 'new')
    """
    literals = [(p, o) for p, o, is_iri in child.triples if not is_iri]
    return [(p, changed.get(slot, o)) for slot, (p, o) in enumerate(literals)]


def draw_literal(rng: random.Random, length: int, taken: set[str]) -> str:
    """A random literal of ``length`` characters over the data set's alphabet, not in ``taken``.

    >>> draw_literal(random.Random(1), 3, set()) == draw_literal(random.Random(1), 3, set())
    True
    >>> len(draw_literal(random.Random(1), 5, set()))
    5
    """
    for _ in range(1000):
        value = "".join(rng.choices(ALPHABET, k=length))
        if value not in taken:
            return value
    raise RuntimeError(f"no new literal of {length} characters left to draw for a child")
