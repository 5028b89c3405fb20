"""rdflib's in-memory store (``Memory``), the pure-Python peer.

Each child is parsed from N-Triples by rdflib into its own named graph of a
``Dataset``; the parent's graph holds its ``ldp:contains`` triples.  Nothing
reaches disk, so it reports no on-disk size.
"""
from __future__ import annotations

import rdflib
from rdflib import Dataset, Literal, URIRef
from rdflib.graph import Graph

from lakebench.systems.base import Retrieval, System
from lakebench.dataset import LDP_CONTAINS, Child
from lakebench.durability import Durability
from lakebench.work import NONE

CONTAINS = URIRef(LDP_CONTAINS)


class MemorySystem(System):
    WORK = {"versions": NONE, "events": NONE, "access": NONE, "tombstones": NONE}
    name = "memory"
    durability = Durability.VOLATILE

    def version_text(self) -> str | None:
        return f"rdflib {rdflib.__version__}, Memory store"

    def setup(self) -> None:
        self.quads = Dataset(store="Memory")
        self.parent = URIRef(self.dataset.parent_uri)
        self.parent_graph = self.quads.graph(self.parent)

    def create_child(self, child: Child) -> None:
        uri = child.uri
        self.quads.graph(URIRef(uri)).parse(data=child.ntriples, format="nt")
        self.parent_graph.add((self.parent, CONTAINS, URIRef(uri)))

    def retrieve_parent(self) -> Retrieval:
        # A fresh Graph holding the parent's triples, serialized as an LDP
        # server would answer a GET of the container.
        representation = Graph()
        representation.bind("ldp", "http://www.w3.org/ns/ldp#")
        for triple in self.parent_graph.triples((self.parent, None, None)):
            representation.add(triple)
        body = representation.serialize(format="turtle").encode("utf-8")
        return Retrieval(body=body, parent_uri=str(self.parent))

    # -- containers and resources at a path (the deep workload) ---------
    def _ref(self, path: str) -> URIRef:
        return URIRef(self.dataset.base + path)

    def create_container(self, path: str) -> None:
        node, up = self._ref(path), self._ref(path.rpartition("/")[0])
        self.quads.graph(node)  # its own (empty) graph, like the parent's
        self.quads.graph(up).add((up, CONTAINS, node))

    def list_container(self, path: str) -> Retrieval:
        node = self._ref(path)
        representation = Graph()
        representation.bind("ldp", "http://www.w3.org/ns/ldp#")
        for triple in self.quads.graph(node).triples((node, None, None)):
            representation.add(triple)
        return Retrieval(body=representation.serialize(format="turtle").encode("utf-8"), parent_uri=str(node))

    def create_resource(self, child: Child, path: str) -> None:
        node, up = self._ref(path), self._ref(path.rpartition("/")[0])
        # The child's graph with its subject moved to ``path`` (its own IRI is a subject only).
        ntriples = child.ntriples.replace(f"<{child.uri}>".encode(), f"<{node}>".encode())
        self.quads.graph(node).parse(data=ntriples, format="nt")
        self.quads.graph(up).add((up, CONTAINS, node))

    def get_resource(self, path: str) -> Retrieval:
        uri = self.dataset.base + path
        body = self.quads.graph(URIRef(uri)).serialize(format="nt", encoding="utf-8")
        return Retrieval(body=body, parent_uri=uri, content_type="application/n-triples")

    def replace_literals(self, path: str, replacements: list[tuple[str, str, str]]) -> None:
        subject = URIRef(self.dataset.base + path)
        graph = self.quads.graph(subject)
        for predicate, old, _ in replacements:
            graph.remove((subject, URIRef(predicate), Literal(old)))
        for predicate, _, new in replacements:
            graph.add((subject, URIRef(predicate), Literal(new)))
    def query(self, sparql: str) -> list[tuple]:
        return rdflib_rows(self.quads.query(sparql))

    def triples_total(self, children: int | None = None) -> int:
        return len(self.quads)

    def disk_path(self):
        return None


def rdflib_rows(result) -> list[tuple]:
    """An rdflib SELECT result as ``System.query`` gives it: tuples of strings (an IRI's or a
    literal's value; None where unbound)."""
    return [tuple(None if term is None else str(term) for term in row) for row in result]
