"""``flat``: the seed's workload, unchanged.

N children PUT under one parent container, each a 200-triple graph of the
data set (:mod:`lakebench.dataset`), each PUT timed alone; then the parent
retrieved.  With ``--driver locust`` Locust's users PUT the children and
read the parent in its three ``Prefer`` variants.
"""
from __future__ import annotations

from lakebench.workloads.base import Outcome, Workload, count_containment


class Flat(Workload):
    name = "flat"
    primary = "create"
    drivers = ("client", "locust")

    def run(self, system, driver) -> Outcome:
        driver.ingest(system, self.dataset)
        driver.read_parent(system)
        return driver.outcome

    def record(self, outcome: Outcome, system) -> dict:
        sent = outcome.created() + outcome.errors.get("create", 0)  # a refused PUT was sent too
        return {**outcome.details,
                "sent": {"children": sent, "triples": sent * self.dataset.triples},
                "held": {"children": count_containment(outcome.retrieval)}}
