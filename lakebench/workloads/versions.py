"""``versions``: versions taken of children after a flat ingest, listed, read back and checked.

After the seed's ingest of N children, the first ``versioned`` of them are
each given ``versions`` versions, in rounds: in each round every one of them
has ``changed`` of its literal triples replaced (seeded:
``random.Random("lakebench:versions:{seed}")``, the same for every system;
one ``replace_literals``, timed as ``"update"``, as in the ``update``
workload), then a version taken of it (``create_version``, timed as
``"create version"``: over HTTP ``POST <child>/fcr:versions``, Fedora API
4.3.3).  A system keeps at most one version of a resource a second (Fedora's
rule, and ``lakebench serve``'s): a version waits, outside any clock, until a
second has passed since the last of the same resource; rounds of at least a
second never wait.  After each round each versioned child's versions are listed
(``list_versions``, timed as ``"list versions"``: its TimeMap), so that the
cost of a listing is seen as versions accumulate (``list_first_ms``,
``list_last_ms``: the median listing after the first round and after the
last).

Then, for each versioned child, one of its versions drawn at random is read
(``get_version``, timed as ``"get version"``) and checked, outside the clock,
against what the child held when that version was taken: exactly its triples
of the data set's predicates, and its literals as they were then.  A listing
is checked to name every version taken of its child (``listed_short`` counts
those that do not; ``held``: the versions the last round's listings name).  A refused operation is
counted (``operations.KIND.errors``), not fatal.
"""
from __future__ import annotations

import random
import time

from lakebench.argtypes import Bounded
from lakebench.results import stats
from lakebench.workloads.base import Outcome, Param, Workload, count_containment
from lakebench.workloads.read import literals_if_whole
from lakebench.workloads.update import expected_literals, replace_some

VERSIONED = Bounded(int, 1, 100_000)
VERSIONS = Bounded(int, 1, 1000)
CHANGED = Bounded(int, 1, 1000)
#: The least time between two versions of one resource: their names and dates are to the second.
VERSION_SPACING = 1.0
#: Margin over it: the server's clock ticks where the request lands, not where it was sent.
_MARGIN = 0.02


class Versions(Workload):
    name = "versions"
    RECORD = ("versions", "Versions")
    primary = "create version"
    needs = ("replace_literals", "create_version", "list_versions", "get_version")
    PARAMETERS = {
        "versioned": Param(100, VERSIONED, f"children given versions (the first N), {VERSIONED.range}",
                           metavar="N"),
        "versions": Param(5, VERSIONS, f"versions taken of each, {VERSIONS.range}", metavar="K"),
        "changed": Param(10, CHANGED, f"literal triples changed before each version, {CHANGED.range} "
                                      "(all of a child's literal triples if it has fewer)", metavar="N"),
    }

    def run(self, system, driver) -> Outcome:
        driver.ingest(system, self.dataset)
        versioned = min(self.params["versioned"], driver.outcome.created())
        changed = min(self.params["changed"], self.dataset.group_sizes[2])
        rng = random.Random(f"lakebench:versions:{self.dataset.seed}")
        now: dict[int, dict[int, str]] = {k: {} for k in range(versioned)}  # child -> slot -> literal
        taken: dict[int, list[tuple[str, dict[int, str]]]] = {k: [] for k in range(versioned)}
        last_taken: dict[int, float] = {}
        listings: list[bool] = []  # per listing: whether it lacks a version taken
        held = 0  # versions taken that the last round's listings name
        round_medians: list[float] = []
        driver.phase("versions")
        bar = driver.progress(versioned * self.params["versions"], "versions", "version")
        for _ in range(self.params["versions"]):
            for index in range(versioned):
                child = self.dataset.child(index)
                replace_some(system, driver, rng, child, now[index], changed)
                wait = last_taken.get(index, 0.0) + VERSION_SPACING + _MARGIN - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                url = driver.attempt("create version", system.create_version, child.path)
                last_taken[index] = time.monotonic()
                if url is not None:
                    taken[index].append((url, dict(now[index])))
                if bar is not None:
                    bar.update(1)
            first = len(driver.outcome.times.get("list versions", ()))
            held = 0  # this round's
            for index in range(versioned):
                listed = driver.attempt("list versions", system.list_versions, self.dataset.child(index).path)
                if listed is not None:
                    names = set(listed)
                    found = sum(1 for url, _ in taken[index] if url in names)
                    listings.append(found < len(taken[index]))  # a version taken, not listed
                    held += found
            this_round = driver.outcome.times.get("list versions", [])[first:]  # the clock's, this round's
            round_medians.append(stats.median(this_round) if this_round else None)
        if bar is not None:
            bar.close()
        driver.phase("verify")
        read, verified = 0, 0
        for index in range(versioned):
            if not taken[index]:
                continue
            # A version of the past (the last one's state is the child's own, which a system
            # answering with the resource as it is would pass for).
            url, state = rng.choice(taken[index][:-1] or taken[index])
            child = self.dataset.child(index)
            retrieval = driver.attempt("get version", system.get_version, child.path, url)
            if retrieval is None:
                continue
            read += 1
            with driver.harness():
                verified += _holds(retrieval, child, state, self.dataset.triples)
        driver.read_parent(system)
        created = sum(len(v) for v in taken.values())
        driver.outcome.details = {"versions": {
            "versioned": versioned, "per_resource": self.params["versions"], "changed_per_version": changed,
            "requested": versioned * self.params["versions"], "created": created,
            "listings": len(listings), "listed_short": sum(listings), "held": held,
            "sampled": read, "verified": verified, "mismatched": read - verified,
            "list_first_ms": _ms(round_medians[0]) if round_medians else None,
            "list_last_ms": _ms(round_medians[-1]) if round_medians else None,
        }}
        return driver.outcome

    def record(self, outcome: Outcome, system) -> dict:
        created = outcome.created()
        versions = outcome.details["versions"]
        return {"sent": {"children": created, "triples": created * self.dataset.triples,
                         "versions": versions["requested"]},
                "held": {"children": count_containment(outcome.retrieval), "versions": versions["held"]},
                **outcome.details}


def _holds(retrieval, child, state: dict[int, str], triples: int) -> bool:
    """Whether a version read back holds ``child`` as it was: its triples, its literals then."""
    return literals_if_whole(retrieval, triples) == expected_literals(child, state)


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else stats.rounded(seconds * 1000, 3)
