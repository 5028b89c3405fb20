"""What one measurement is, as it crosses into its worker process: :class:`RunSpec`.

The runner builds one per (system, case, run) and hands it to a fresh
process as JSON (:meth:`RunSpec.to_json`); the worker reads it back
(:meth:`RunSpec.from_json`), and the drivers and workloads read its fields.
Every default is stated here once.

>>> spec = RunSpec(system="memory", target="lakebench.systems.memory:MemorySystem", run=0,
...                data_dir="/tmp/x", dataset=DataSet(children=10), workload="flat")
>>> RunSpec.from_json(spec.to_json()) == spec
True
>>> spec.retrievals, spec.driver, spec.users
(3, 'client', 1)
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field

from lakebench.dataset import DataSet

#: Retrievals of the parent after the ingest: the first, then the steady ones.
DEFAULT_RETRIEVALS = 3
#: Children a page holds when the parent is walked in pages (LDP Paging 1.0) after them.
DEFAULT_PAGE_SIZE = 1000


@dataclass(frozen=True)
class RunSpec:
    system: str              # the name the user gave (a registry name)
    target: str              # its "module:Class"
    run: int                 # the repeat's index
    data_dir: str            # the system's own directory for this run
    dataset: DataSet        # the generated data (seeded)
    workload: str            # what is done to the system (a workloads registry name) ...
    params: dict = field(default_factory=dict)   # ... and its swept parameters
    driver: str = "client"   # "client" (one request at a time) or "locust"
    users: int = 1           # Locust users
    retrievals: int = DEFAULT_RETRIEVALS
    page_size: int = DEFAULT_PAGE_SIZE   # children a page of the parent's walk; 0: no walk
    cold: bool = False       # drop the OS page cache before each retrieval
    tail_seconds: float = 0.0   # the monitor keeps sampling this long after the workload
    progress: bool = False   # a progress bar on stderr
    options: dict = field(default_factory=dict)   # --system-option KEY=VALUE
    budget_seconds: float | None = None   # stop the ingest once it has taken this long
    checkpoints: tuple[int, ...] = ()     # children counts at which the parent is read during the ingest
    feed_fd: int | None = None            # the prefetching producer's pipe (client driver only)

    def to_json(self) -> str:
        fields = dataclasses.asdict(self)
        fields["dataset"] = dataclasses.asdict(self.dataset)
        return json.dumps(fields)

    @classmethod
    def from_json(cls, text: str) -> "RunSpec":
        fields = json.loads(text)
        fields["dataset"] = DataSet(**fields["dataset"])
        fields["checkpoints"] = tuple(fields.get("checkpoints") or ())
        return cls(**fields)
