"""The lakebench LMDB store (Cython core over the LMDB C API), in-process.

Each child is parsed from N-Triples by the core, straight to term ids, and
written into its own graph together with the parent's ``ldp:contains``
triple, in one LMDB transaction.  The parent is read back by serializing its
graph from the ``cspo`` index to Turtle.  Two durability modes: ``lmdb``
returns from each write once it is on stable storage (the store's
write-ahead log, fdatasynced; docs/store.rst), ``lmdb-nosync`` writes
commits to the OS only (what pyoxigraph does by default).
"""
from __future__ import annotations

from lakebench.store import LmdbStore
from lakebench.store.terms import iri
from lakebench.systems.base import Retrieval, System
from lakebench.systems.memory import rdflib_rows
from lakebench.workload import LDP_CONTAINS, Child

LDP = "http://www.w3.org/ns/ldp#"
CONTAINS = iri(LDP_CONTAINS)


class LmdbSystem(System):
    name = "lmdb"
    durability = "durable"

    def setup(self) -> None:
        self.store = LmdbStore(self.data_dir, durable=self.durability == "durable")
        self.parent = iri(self.workload.parent_uri)
        self.store.write(lambda txn: txn.add_graph(self.parent))  # the parent's (empty) graph

    def create_child(self, child: Child) -> None:
        uri = iri(child.uri)
        self.store.ingest(child.ntriples, uri, extra=[(self.parent, CONTAINS, uri, self.parent)])

    def retrieve_parent(self) -> Retrieval:
        body = self.store.serialize(graph=self.parent, format="turtle", prefixes={"ldp": LDP})
        return Retrieval(body=body, parent_uri=self.workload.parent_uri)

    def query(self, sparql: str) -> list[tuple]:
        """rdflib's SPARQL engine over this store, through its rdflib plugin (lakebench.store.plugin)."""
        if getattr(self, "_sparql", None) is None:
            from rdflib import Dataset

            from lakebench.store.plugin import LmdbRdflibStore

            self._sparql = Dataset(store=LmdbRdflibStore.over(self.store))
        return rdflib_rows(self._sparql.query(sparql))

    def triples_total(self, children: int | None = None) -> int:
        return len(self.store)

    def disk_path(self):
        return self.data_dir

    def close(self) -> None:
        store, self.store = getattr(self, "store", None), None
        if store is not None:
            store.close()


class LmdbNosyncSystem(LmdbSystem):
    name = "lmdb-nosync"
    durability = "nosync"
