"""The lakebench LMDB store (Cython core over the LMDB C API), in-process.

Each child is parsed from N-Triples by the core, straight to term ids, and
written into its own graph together with the parent's ``ldp:contains``
triple, in one LMDB transaction.  The parent is read back by serializing its
graph (its subject's entries in ``spoc``) to Turtle.  Two durability modes: ``lmdb``
returns from each write once it is on stable storage (the store's
write-ahead log, fdatasynced; docs/store.rst), ``lmdb-nosync`` writes
commits to the OS only (what pyoxigraph does by default).
"""
from __future__ import annotations

from lakebench._store import FORMAT_VERSION, lmdb_version
from lakebench.store import LmdbStore, StoreError
from lakebench.store.terms import iri, literal
from lakebench.systems.base import Retrieval, System
from lakebench.systems.memory import rdflib_rows
from lakebench.dataset import LDP_CONTAINS, Child
from lakebench.durability import Durability
from lakebench.work import NONE

LDP = "http://www.w3.org/ns/ldp#"
CONTAINS = iri(LDP_CONTAINS)


def store_version() -> str:
    """The store as a version line: its format and the LMDB library it runs on."""
    return f"lakebench store format {FORMAT_VERSION}, {lmdb_version()}"


class LmdbSystem(System):
    WORK = {"versions": NONE, "events": NONE, "access": NONE, "tombstones": NONE}
    DISK_PER_TRIPLE = 150  # 138 B at 10,000 children (docs/runs/inprocess), 148.9 at 1,000,000
    name = "lmdb"
    durability = Durability.DURABLE

    def version_text(self) -> str | None:
        return store_version()

    def setup(self) -> None:
        self.store = LmdbStore(self.data_dir, durability=self.durability)
        self.parent = iri(self.dataset.parent_uri)
        self.store.write(lambda txn: txn.add_graph(self.parent))  # the parent's (empty) graph

    def create_child(self, child: Child) -> None:
        uri = iri(child.uri)
        self.store.ingest(child.ntriples, uri, extra=[(self.parent, CONTAINS, uri, self.parent)])

    def retrieve_parent(self) -> Retrieval:
        # The chunks as the store streamed them, not joined: in this process the harness's copy counts
        # in the system's memory, and a million children's parent is ~47 MB.
        body = tuple(self.store.iter_serialize(graph=self.parent, format="turtle", prefixes={"ldp": LDP}))
        return Retrieval(body=body, parent_uri=self.dataset.parent_uri)

    # -- containers and resources at a path (the deep workload) ---------
    # A container is a graph of its own holding its ldp:contains triples,
    # like the parent; its parent's graph gets the ldp:contains of it, in
    # the same transaction.
    def _iri(self, path: str) -> bytes:
        return iri(self.dataset.base + path)

    def _container_of(self, path: str) -> bytes:
        return self._iri(path.rpartition("/")[0])

    def create_container(self, path: str) -> None:
        uri, up = self._iri(path), self._container_of(path)

        def create(txn):
            txn.add_graph(uri)
            txn.add([(up, CONTAINS, uri, up)])

        self.store.write(create)

    def list_container(self, path: str) -> Retrieval:
        body = self.store.serialize(graph=self._iri(path), format="turtle", prefixes={"ldp": LDP})
        return Retrieval(body=body, parent_uri=self.dataset.base + path)

    def create_resource(self, child: Child, path: str) -> None:
        uri = self._iri(path)
        # The child's N-Triples with the subject moved to ``path``: its own
        # IRI appears as a subject only (its links name other resources).
        ntriples = child.ntriples.replace(f"<{child.uri}>".encode(), f"<{self.dataset.base}{path}>".encode())
        up = self._container_of(path)
        self.store.ingest(ntriples, uri, extra=[(up, CONTAINS, uri, up)])

    def get_resource(self, path: str) -> Retrieval:
        uri = self.dataset.base + path
        body = self.store.serialize(graph=iri(uri), format="nt")
        return Retrieval(body=body, parent_uri=uri, content_type="application/n-triples")

    def replace_literals(self, path: str, replacements: list[tuple[str, str, str]]) -> None:
        graph = iri(self.dataset.base + path)  # a child's graph is named by the child, its subject

        def change(txn) -> None:  # one store write: all removed and added, or nothing
            for predicate, old, _ in replacements:
                txn.remove(graph, iri(predicate), literal(old), graph)
            txn.add([(graph, iri(predicate), literal(new), graph) for predicate, _, new in replacements])

        self.store.write(change)

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
            try:
                self._heap_bytes = store.heap_bytes()   # the store's tables at the end, before they are freed
            except StoreError:   # closed already (the SPARQL plugin's close closes it): nothing to count
                self._heap_bytes = None
            finally:
                store.close()   # commits the last batch
            self._batch_commits = store.batch_commits
            self._term_filing = store.term_filing
            self._log_flushes = store.log_flushes

    def internals(self) -> dict | None:
        reported = {"batch_commits": getattr(self, "_batch_commits", None),
                    "term_filing": getattr(self, "_term_filing", None),
                    "log_flushes": getattr(self, "_log_flushes", None),
                    "heap_bytes": getattr(self, "_heap_bytes", None)}
        return {name: value for name, value in reported.items() if value} or None


class LmdbNosyncSystem(LmdbSystem):
    name = "lmdb-nosync"
    durability = Durability.NOSYNC
