"""rdflib's in-memory store (``Memory``), the pure-Python peer.

Each child is parsed from N-Triples by rdflib into its own named graph of a
``Dataset``; the parent's graph holds its ``ldp:contains`` triples.  Nothing
reaches disk, so it reports no on-disk size.
"""
from __future__ import annotations

from rdflib import Dataset, URIRef
from rdflib.graph import Graph

from lakebench.systems.base import Retrieval, System
from lakebench.workload import LDP_CONTAINS, Child

CONTAINS = URIRef(LDP_CONTAINS)


class MemorySystem(System):
    name = "memory"
    durability = "volatile"

    def setup(self) -> None:
        self.dataset = Dataset(store="Memory")
        self.parent = URIRef(self.workload.parent_uri)
        self.parent_graph = self.dataset.graph(self.parent)

    def create_child(self, child: Child) -> None:
        uri = child.uri
        self.dataset.graph(URIRef(uri)).parse(data=child.ntriples, format="nt")
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

    def query(self, sparql: str) -> list[tuple]:
        return rdflib_rows(self.dataset.query(sparql))

    def triples_total(self, children: int | None = None) -> int:
        return len(self.dataset)

    def disk_path(self):
        return None


def rdflib_rows(result) -> list[tuple]:
    """An rdflib SELECT result as ``System.query`` gives it: tuples of strings (an IRI's or a
    literal's value; None where unbound)."""
    return [tuple(None if term is None else str(term) for term in row) for row in result]
