"""pyoxigraph's on-disk ``Store`` (RocksDB), the Rust peer.

Each child is parsed by pyoxigraph's parser and written with one
``Store.extend`` (one transaction) together with its ``ldp:contains`` quad.
Like RocksDB's default, a commit is written to the OS but not fsynced.
"""
from __future__ import annotations

import pyoxigraph as ox

from lakebench.systems.base import Retrieval, System
from lakebench.dataset import LDP_CONTAINS, Child, escape_string
from lakebench.durability import Durability
from lakebench.work import NONE

CONTAINS = ox.NamedNode(LDP_CONTAINS)


class OxigraphSystem(System):
    WORK = {"versions": NONE, "events": NONE, "access": NONE, "tombstones": NONE}
    DISK_PER_TRIPLE = 1200  # 1,183 B at 10,000 children (docs/runs/inprocess)
    name = "oxigraph"
    durability = Durability.NOSYNC

    def version_text(self) -> str | None:
        return f"pyoxigraph {ox.__version__}"

    def setup(self) -> None:
        self.store = ox.Store(str(self.data_dir / "oxigraph"))
        self.parent = ox.NamedNode(self.dataset.parent_uri)

    def create_child(self, child: Child) -> None:
        graph = ox.NamedNode(child.uri)
        # The parser yields default-graph quads; moving them into the child's
        # graph costs Python objects, which is what an application on
        # pyoxigraph pays for an atomic child + membership write.
        quads = [
            ox.Quad(q.subject, q.predicate, q.object, graph)
            for q in ox.parse(child.ntriples, format=ox.RdfFormat.N_TRIPLES)
        ]
        quads.append(ox.Quad(self.parent, CONTAINS, graph, self.parent))
        self.store.extend(quads)

    def retrieve_parent(self) -> Retrieval:
        triples = [q.triple for q in self.store.quads_for_pattern(self.parent, None, None, self.parent)]
        body = ox.serialize(
            triples,
            format=ox.RdfFormat.TURTLE,
            prefixes={"ldp": "http://www.w3.org/ns/ldp#"},
        )
        return Retrieval(body=body, parent_uri=self.parent.value)

    # -- containers and resources at a path (the deep workload) ---------
    def _node(self, path: str) -> ox.NamedNode:
        return ox.NamedNode(self.dataset.base + path)

    def create_container(self, path: str) -> None:
        # An empty graph is no quad: the container is its membership in its parent's graph.
        up = self._node(path.rpartition("/")[0])
        self.store.extend([ox.Quad(up, CONTAINS, self._node(path), up)])

    def list_container(self, path: str) -> Retrieval:
        node = self._node(path)
        triples = [q.triple for q in self.store.quads_for_pattern(node, None, None, node)]
        body = ox.serialize(triples, format=ox.RdfFormat.TURTLE, prefixes={"ldp": "http://www.w3.org/ns/ldp#"})
        return Retrieval(body=body, parent_uri=node.value)

    def create_resource(self, child: Child, path: str) -> None:
        graph, up = self._node(path), self._node(path.rpartition("/")[0])
        # The child's graph with its subject moved to ``path`` (its own IRI is a subject only).
        ntriples = child.ntriples.replace(f"<{child.uri}>".encode(), f"<{graph.value}>".encode())
        quads = [ox.Quad(q.subject, q.predicate, q.object, graph)
                 for q in ox.parse(ntriples, format=ox.RdfFormat.N_TRIPLES)]
        quads.append(ox.Quad(up, CONTAINS, graph, up))
        self.store.extend(quads)

    def get_resource(self, path: str) -> Retrieval:
        graph = ox.NamedNode(self.dataset.base + path)
        body = self.store.dump(format=ox.RdfFormat.N_TRIPLES, from_graph=graph)  # the child's graph
        return Retrieval(body=body, parent_uri=graph.value, content_type="application/n-triples")

    def replace_literals(self, path: str, replacements: list[tuple[str, str, str]]) -> None:
        # One SPARQL Update is one transaction of the store (Store.remove and
        # Store.add would be one each).
        uri = self.dataset.base + path

        def data(index: int) -> str:
            return " ".join(f'<{uri}> <{r[0]}> "{escape_string(r[index])}" .' for r in replacements)

        self.store.update(f"DELETE DATA {{ GRAPH <{uri}> {{ {data(1)} }} }} ;\n"
                          f"INSERT DATA {{ GRAPH <{uri}> {{ {data(2)} }} }}")
    def query(self, sparql: str) -> list[tuple]:
        return [tuple(None if term is None else term.value for term in solution)
                for solution in self.store.query(sparql)]

    def triples_total(self, children: int | None = None) -> int:
        return len(self.store)

    def disk_path(self):
        return self.data_dir / "oxigraph"

    def close(self) -> None:
        store, self.store = self.store, None
        if store is not None:
            store.flush()
            del store
