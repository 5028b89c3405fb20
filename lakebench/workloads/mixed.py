"""``mixed``: Locust users creating, patching and reading children at once, for a while.

First the data set's ``--children`` are PUT under the parent by Locust's
users (the flat workload's Locust ingest, timed as ``"create"``), so the
reads and PATCHes have targets.  Then ``--users`` users pick tasks by
``--weights`` (:mod:`lakebench.locust.mixed`) for ``--duration`` seconds, or
exactly ``--operations`` operations: ``"create child"`` (PUT a new child),
``"patch child"`` (a SPARQL Update replacing a literal of a created child),
``"get child"``, ``"get parent (mixed)"``; each timed by Locust's request
events.  Finally the parent is read ``--retrievals`` times (``"get parent"``).

Checked afterwards, outside every clock: the parent contains exactly the
children whose PUT was acknowledged (``sent.children`` against
``held.children``), and each patched child (up to :data:`CHECK_PATCHED`,
spread over them) holds the value its last acknowledged PATCH wrote and no
longer the one that PATCH replaced (``sent.patched_checked`` against
``held.patched_checked``).

The run's ``per_resource_ms`` and latencies.csv are the ``"create child"``
times: the operation that grows the repository, as the seed's ``"create"``,
so that column reads the same for every workload.  With a create weight of
0 it is the heaviest task's.
"""
from __future__ import annotations

import argparse

from lakebench.argtypes import Bounded
from lakebench.results import stats
from lakebench.workloads.base import Outcome, Param, Workload, count_containment

#: Patched children read back after the run, at most.
CHECK_PATCHED = 200
DEFAULT_WEIGHTS = "create=4,patch=2,get=3,parent=1"
DURATION = Bounded(float, 1, 86_400)
OPERATIONS = Bounded(int, 0, 10_000_000)


def _weights(text: str) -> str:
    """``--weights``, checked and written out whole (a string: a run's cases are hashed by their parameters).

    >>> _weights("get=1, create=2")
    'create=2,patch=0,get=1,parent=0'
    """
    from lakebench.locust.mixed import parse_weights

    try:
        return ",".join(f"{name}={weight}" for name, weight in parse_weights(text).items())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class Mixed(Workload):
    name = "mixed"
    RECORD = ("mixed", "Mix")
    ingests = False  # its ingest is Locust's, which takes no checkpoints
    primary = "create child"
    drivers = ("locust",)
    PARAMETERS = {
        "weights": Param(DEFAULT_WEIGHTS, _weights, metavar="TASK=W,...",
                         help="relative weights of the users' tasks create (PUT a new child), patch (SPARQL "
                         "Update of a created child), get (GET a child), parent (GET the parent), each 0 to "
                         "1000, a task not named weighs 0"),
        "duration": Param(60.0, DURATION, metavar="SECONDS",
                          help=f"seconds the users run their tasks, {DURATION.range}; not used with --operations"),
        "operations": Param(0, OPERATIONS, metavar="N",
                            help=f"run exactly this many tasks instead of --duration, {OPERATIONS.range} "
                            "(0: run for --duration)"),
    }

    def __init__(self, dataset, params=None):
        super().__init__(dataset, params)
        if isinstance(self.params["weights"], str):  # results.json holds them as a dict
            from lakebench.locust.mixed import parse_weights

            self.params["weights"] = parse_weights(self.params["weights"])
        if self.params["operations"]:
            self.params["duration"] = None  # the count ends the run, not a clock
        weights = self.params["weights"]
        if not weights.get("create"):
            from lakebench.locust.mixed import TASKS

            self.primary = TASKS[max(weights, key=weights.get)]

    @classmethod
    def not_applicable(cls, system_cls, params: dict | None = None) -> str | None:
        from lakebench.systems.base import HttpSystem

        if not issubclass(system_cls, HttpSystem):
            return f"{system_cls.name} runs in-process; the mixed workload's Locust users speak HTTP"
        return None

    def run(self, system, driver) -> Outcome:
        driver.ingest(system, self.dataset)
        state = driver.mixed(system, self.dataset, self.params["weights"], duration=self.params["duration"],
                             operations=self.params["operations"])
        driver.read_parent(system)
        outcome = driver.outcome
        outcome.details.update(self._check(system, state, outcome.details.get("load") or {}))
        return outcome

    def _check(self, system, state, load: dict) -> dict:
        """What was sent and what the system holds of it (the containment count is the runner's);
        the throughput is the load test's (``load``: the mixed tasks' record), one figure wherever shown."""
        from lakebench.locust.mixed import TASKS

        patched = sorted(state.patches)
        step = max(1, len(patched) // CHECK_PATCHED)
        sample = patched[::step][:CHECK_PATCHED]
        holding = 0
        for index in sample:
            predicate, value = state.values[index]
            retrieval = system.get_resource(f"{self.dataset.parent}/c{index:08d}")
            values = _literals(retrieval, predicate)
            original = state.grown.child(index).literal_values[0]
            holding += value in values and original not in values
        total = state.started
        return {
            "mixed": {
                "weights": dict(self.params["weights"]),
                "users": state.users,
                "duration_seconds": round(state.wall_seconds, 6),
                "operations": total,
                "throughput_per_s": load.get("throughput_per_s", stats.rate(total, state.wall_seconds, 2)),
                "per_task": {name: len(state.times.get(kind, ())) + state.errors.get(kind, 0)
                             for name, kind in TASKS.items()},
            },
            "sent": {"children": len(state.created), "patches": sum(state.patches.values()),
                     "patched_children": len(patched), "patched_checked": len(sample)},
            "held": {"patched_checked": holding},
        }

    def record(self, outcome: Outcome, system) -> dict:
        details = dict(outcome.details)
        details["held"] = {"children": count_containment(outcome.retrieval), **details["held"]}
        return details


def _literals(retrieval, predicate: str) -> set[str]:
    """The literal values of ``predicate`` on the resource in a retrieved representation."""
    import pyoxigraph as ox

    formats = {"text/turtle": ox.RdfFormat.TURTLE, "application/n-triples": ox.RdfFormat.N_TRIPLES}
    media_type = retrieval.content_type.split(";")[0].strip()
    p = ox.NamedNode(predicate)
    return {quad.object.value
            for quad in ox.parse(retrieval.reader(), format=formats[media_type], base_iri=retrieval.parent_uri)
            if quad.predicate == p and isinstance(quad.object, ox.Literal)}
