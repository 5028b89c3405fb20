"""``deep``: a hierarchy of containers, and what listing it costs as it grows.

The Fedora community's scale tests ("Large numbers of containers", Fedora 4
wiki) filled a 3- or 4-level hierarchy of containers, one 10 KB binary in
each bottom-level container, and after each batch timed three requests:
listing the top level ("toplist"), listing a second- or third-level
container ("dirlist") and retrieving a file ("fileget").  This workload is
that test at any size.

Under the workload's parent, ``depth`` levels of ``fan_out`` containers each
(``parent/d3``, ``parent/d3/d7``, ``parent/d3/d7/d12``, ...) are created
depth-first, in pre-order, as the wiki's ingest filled one top-level
container after another: the repository grows by whole subtrees, and files
exist from the first batch on.  Every container of the deepest level gets
one leaf, ``.../leaf``: a binary of 10 KB of seeded bytes, or an RDF
resource (graph ``k`` of the data set, moved to the leaf's path).

Each creation is timed (``create container``, ``create leaf``); after every
``batch`` containers, and at the end, the three reads of the wiki are timed
once each: ``list top`` (the parent, which lists the level-1 containers),
``list middle`` (the first container of the level above the bottom, full
after the first subtree: its listing has the same size at every point) and
``get leaf`` (a seeded random leaf among those created, its content
checked).  Afterwards every container created is listed, untimed, and the
containment counted: what the system holds.

>>> tree = Tree(depth=2, fan_out=3)
>>> tree.containers, tree.leaves
(12, 9)
>>> [path for path, _ in tree.preorder("parent")][:5]
['parent/d0', 'parent/d0/d0', 'parent/d0/d1', 'parent/d0/d2', 'parent/d1']
>>> tree.leaf_container("parent", 5), tree.middle("parent")
('parent/d1/d2', 'parent/d0')
"""
from __future__ import annotations

import dataclasses
import random
from typing import Iterator

from lakebench.argtypes import Bounded
from lakebench.dataset import NS
from lakebench.workloads.base import Outcome, Param, Workload, count_containment, needs

#: Bytes of a binary leaf: the wiki's 10 KB file.
LEAF_BYTES = 10 * 1024
LEAF_TYPE = "application/octet-stream"
#: The most containers one run creates (the data set's own limit on children).
MAX_CONTAINERS = 10_000_000

DEPTH = Bounded(int, 1, 8)
FAN_OUT = Bounded(int, 1, 100_000)
BATCH = Bounded(int, 1, MAX_CONTAINERS)
LEAVES = ("auto", "binary", "rdf")


def leaf_kind(text: str) -> str:
    """``--leaf``: auto, binary or rdf."""
    value = text.strip().lower()
    if value not in LEAVES:
        import argparse

        raise argparse.ArgumentTypeError(f"must be one of {', '.join(LEAVES)}, got {text!r}")
    return value


@dataclasses.dataclass(frozen=True)
class Tree:
    """The shape of the hierarchy: ``depth`` levels of ``fan_out`` containers each."""

    depth: int
    fan_out: int

    @property
    def containers(self) -> int:
        return sum(self.fan_out ** level for level in range(1, self.depth + 1))

    @property
    def leaves(self) -> int:
        return self.fan_out ** self.depth

    def preorder(self, root: str, level: int = 1) -> Iterator[tuple[str, int]]:
        """Every container below ``root``, as ``(path, level)``, parents before their children."""
        for i in range(self.fan_out):
            path = f"{root}/d{i}"
            yield path, level
            if level < self.depth:
                yield from self.preorder(path, level + 1)

    def leaf_container(self, root: str, k: int) -> str:
        """The ``k``-th container of the deepest level (in creation order)."""
        digits = []
        for _ in range(self.depth):
            k, digit = divmod(k, self.fan_out)
            digits.append(f"d{digit}")
        return "/".join([root, *reversed(digits)])

    def middle(self, root: str) -> str:
        """The first container of the level above the bottom (depth 1: the first container)."""
        return "/".join([root] + ["d0"] * max(1, self.depth - 1))


def leaf_bytes(seed: int, k: int) -> bytes:
    """Leaf ``k``'s binary: the same bytes for every system and run.

    >>> leaf_bytes(0, 1) == leaf_bytes(0, 1) != leaf_bytes(0, 2)
    True
    """
    return random.Random(f"lakebench:deep:{seed}:{k}").randbytes(LEAF_BYTES)


def graph_triples(retrieval) -> int:
    """Triples of the data set's predicates about the resource itself in a retrieved
    representation: an RDF leaf's own graph, without what a server adds (its types)."""
    import pyoxigraph as ox

    media_type = retrieval.content_type.split(";")[0].strip()
    formats = {"text/turtle": ox.RdfFormat.TURTLE, "application/n-triples": ox.RdfFormat.N_TRIPLES}
    subject = ox.NamedNode(retrieval.parent_uri)
    return sum(1 for quad in ox.parse(retrieval.reader(), format=formats[media_type], base_iri=retrieval.parent_uri)
               if quad.subject == subject and quad.predicate.value.startswith(NS))


def _binary_leaves(system_cls) -> bool:
    return system_cls.supports("create_binary") and system_cls.supports("get_binary")


class Deep(Workload):
    name = "deep"
    RECORD = ("deep", "Hierarchy")
    ingests = False  # no children through driver.ingest: no checkpoints
    primary = "create container"
    drivers = ("client",)
    needs = ("create_container", "list_container")
    PARAMETERS = {
        "depth": Param(3, DEPTH, f"levels of containers under the parent, {DEPTH.range}", metavar="N"),
        "fan_out": Param(32, FAN_OUT, f"containers in each container, {FAN_OUT.range}", metavar="N"),
        "leaf": Param("auto", leaf_kind, "what each bottom-level container holds: binary (10 KB), "
                      "rdf (a graph of the data set) or auto (binary where the system stores "
                      "binaries, else rdf)", metavar="KIND"),
        "batch": Param(256, BATCH, f"containers created between two timings of the three reads, "
                       f"{BATCH.range}", metavar="N"),
    }

    @classmethod
    def check(cls, params: dict) -> None:
        tree = Tree(params["depth"], params["fan_out"])
        if tree.containers > MAX_CONTAINERS:
            raise ValueError(f"--depth {tree.depth} --fan-out {tree.fan_out} makes {tree.containers:,} "
                             f"containers, over the {MAX_CONTAINERS:,} allowed")

    @classmethod
    def not_applicable(cls, system_cls, params: dict | None = None) -> str | None:
        leaf = (params or {}).get("leaf", cls.PARAMETERS["leaf"].default)
        if leaf == "auto":
            leaf = "binary" if _binary_leaves(system_cls) else "rdf"
        ops = ("create_binary", "get_binary") if leaf == "binary" else ("create_resource", "get_resource")
        return needs(system_cls, (*cls.needs, *ops))

    def run(self, system, driver) -> Outcome:
        p = self.params
        tree = Tree(p["depth"], p["fan_out"])
        leaf = p["leaf"] if p["leaf"] != "auto" else ("binary" if _binary_leaves(type(system)) else "rdf")
        root, seed = self.dataset.parent, self.dataset.seed
        # RDF leaf k is child k of the data set, as many children as there are leaves.
        graphs = dataclasses.replace(self.dataset, children=tree.leaves) if leaf == "rdf" else None
        outcome = driver.outcome
        pick = random.Random(f"lakebench:deep:{seed}:reads")
        middle = tree.middle(root)
        containers = leaves = reads = verified = 0
        series = []
        budget = driver.budget_seconds

        def timed(kind, call, *args):
            """One operation through the driver; (its result, its seconds), (None, None) if refused."""
            before = outcome.count(kind)
            result = driver.attempt(kind, call, *args)
            return (result, outcome.last(kind)) if outcome.count(kind) > before else (None, None)

        def measure():
            nonlocal reads, verified
            point = {"resources": containers + leaves, "containers": containers, "leaves": leaves}
            _, point["list_top_ms"] = timed("list top", system.list_container, root)
            _, point["list_middle_ms"] = timed("list middle", system.list_container, middle)
            k = pick.randrange(leaves)
            path = tree.leaf_container(root, k) + "/leaf"
            if leaf == "binary":
                data, point["get_leaf_ms"] = timed("get leaf", system.get_binary, path)
                good = data is not None and data == leaf_bytes(seed, k)
            else:
                got, point["get_leaf_ms"] = timed("get leaf", system.get_resource, path)
                good = got is not None and graph_triples(got) == graphs.triples
            reads += 1
            verified += good
            series.append({key: round(value * 1000, 4) if key.endswith("_ms") and value is not None else value
                           for key, value in point.items()})

        bar = driver.progress(tree.containers, "deep", "container")
        driver.phase("ingest")
        spent = 0.0  # seconds of timed creations: what the budget is spent on
        for path, level in tree.preorder(root):
            _, seconds = timed("create container", system.create_container, path)
            containers += 1
            spent += seconds or 0.0
            if level == tree.depth:
                k = leaves
                if leaf == "binary":
                    data = leaf_bytes(seed, k)
                    _, seconds = timed("create leaf", system.create_binary, path + "/leaf", data, LEAF_TYPE)
                else:
                    child = graphs.child(k)
                    child.turtle, child.ntriples  # noqa: B018 - both serializations built outside the clock
                    _, seconds = timed("create leaf", system.create_resource, child, path + "/leaf")
                leaves += 1
                spent += seconds or 0.0
            if bar is not None:
                bar.update(1)
            if containers % p["batch"] == 0 and leaves:
                measure()
            if budget is not None and spent >= budget and containers < tree.containers:
                driver.outcome.budget_exhausted = True
                break
        if leaves and (not series or series[-1]["containers"] != containers):
            measure()  # the tree as it ended
        if bar is not None:
            bar.close()

        driver.phase("check")
        with driver.harness():
            held = self._held(system, tree, containers)
        driver.read_parent(system)
        driver.outcome.details = {
            # The tree is the workload's "children": the table's running time and size are its.
            "children": containers,
            "ingest_seconds": round(outcome.total_seconds("create container"), 6),
            "sent": {"containers": containers, "leaves": leaves, "leaf_reads": reads},
            "held": {**held, "leaf_reads": verified},
            "deep": {"depth": tree.depth, "fan_out": tree.fan_out, "leaf": leaf, "containers": containers,
                     "leaves": leaves, "batch": p["batch"], "leaf_reads": reads, "leaf_reads_verified": verified,
                     "middle": middle, "series": series},
        }
        return driver.outcome

    def _held(self, system, tree: Tree, created: int) -> dict:
        """Containers and leaves the system holds: every created container listed (untimed),
        its ``ldp:contains`` counted; the bottom level's count leaves, the others containers."""
        root = self.dataset.parent
        containers = count_containment(system.list_container(root))
        leaves = 0
        for n, (path, level) in enumerate(tree.preorder(root)):
            if n == created:
                break
            try:
                contained = count_containment(system.list_container(path))
            except Exception:  # noqa: BLE001 - a container the system lost: nothing below it is held
                continue
            if level == tree.depth:
                leaves += contained
            else:
                containers += contained
        return {"containers": containers, "leaves": leaves}
