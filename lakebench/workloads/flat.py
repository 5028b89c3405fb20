"""``flat``: the seed's workload, unchanged.

N children PUT under one parent container, each a 200-triple graph of the
data set (:mod:`lakebench.dataset`), each PUT timed alone; then the parent
retrieved.  With ``--driver locust`` Locust's users PUT the children and
read the parent in its three ``Prefer`` variants; ``--parents`` chooses
the load's shape: every user into the one parent (``shared``, the seed's:
contention on one container), or each user into a parent of its own
(``per-user``: ``{parent}-u1``, ``{parent}-u2``, ...; the first user's is
the parent read and timed, and what is held is counted in all of them).
"""
from __future__ import annotations

from lakebench.argtypes import Choice
from lakebench.locust.options import PARENTS
from lakebench.workloads.base import Outcome, Param, Workload, count_containment


class Flat(Workload):
    name = "flat"
    primary = "create"
    drivers = ("client", "locust")
    PARAMETERS = {
        "parents": Param("shared", Choice(*PARENTS), sweep=True, metavar="shared|per-user", drivers=("locust",),
                         help="with --driver locust, where the users PUT: all into the one parent (shared, "
                         "contention on one container) or each into a parent of its own (per-user); "
                         "shared,per-user runs both, one case each"),
    }

    def run(self, system, driver) -> Outcome:
        driver.ingest(system, self.dataset, parents=self.params["parents"])
        driver.read_parent(system)
        return driver.outcome

    def record(self, outcome: Outcome, system) -> dict:
        sent = outcome.created() + outcome.errors.get("create", 0)  # a refused PUT was sent too
        held = sum(count_containment(r) for r in [outcome.retrieval, *outcome.other_parents])
        return {**outcome.details,
                "sent": {"children": sent, "triples": sent * self.dataset.triples},
                "held": {"children": held}}
