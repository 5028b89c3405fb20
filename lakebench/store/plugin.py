"""The store as an rdflib ``Store`` plugin (``store="LMDB"``).

>>> import tempfile
>>> from rdflib import Dataset, Literal, URIRef
>>> ds = Dataset(store="LMDB")
>>> ds.open(tempfile.mkdtemp(), create=True)
1
>>> g = ds.graph(URIRef("http://ex.org/g"))
>>> g.add((URIRef("http://ex.org/a"), URIRef("http://ex.org/p"), Literal("x")))  # doctest: +ELLIPSIS
<Graph identifier=http://ex.org/g ...>
>>> _ = ds.commit()
>>> [str(row.o) for row in ds.query("SELECT ?o WHERE { GRAPH ?g { ?s ?p ?o } }")]
['x']
>>> ds.close()

``open(configuration)`` takes a directory, or a dict ``{"path": ...,
"durability": "durable" | "nosync"}``.  Writes join one pending LMDB write transaction, opened
by the first write and ended by ``commit()`` or ``rollback()``; ``close()``
commits what is pending.  Reads through this store see its pending writes;
readers in other processes see only committed ones.  The transaction
belongs to the thread that made the first write.

Contexts are graphs named by IRIs or blank nodes; a graph exists while it
holds a triple or after ``add_graph`` (it is graph-aware, as ``Dataset``
requires).  Quoted graphs (N3 formulas)
are not supported.  SPARQL runs in rdflib's engine over ``triples()``.
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Iterator

from rdflib import Graph, URIRef
from rdflib.store import NO_STORE, VALID_STORE, Store, TripleAddedEvent, TripleRemovedEvent

from lakebench.durability import Durability
from lakebench.store import LmdbStore
from lakebench.store.terms import DEFAULT_GRAPH, decode, encode

__all__ = ["LmdbRdflibStore"]


class LmdbRdflibStore(Store):
    context_aware = True
    formula_aware = False
    graph_aware = True
    transaction_aware = True

    def __init__(self, configuration=None, identifier=None):
        self._store: LmdbStore | None = None
        self._graphs: dict = {}
        self.identifier = identifier
        super().__init__(configuration)

    @classmethod
    def over(cls, store: LmdbStore) -> "LmdbRdflibStore":
        """The plugin over a store already open in this process (a process opens a
        store once), e.g. for SPARQL over what ``LmdbStore`` wrote: ``Dataset(store=...)``.
        Its ``close()`` closes ``store``."""
        plugin = cls()
        plugin._store = store
        return plugin

    # -- lifecycle ---------------------------------------------------------
    @staticmethod
    def _config(configuration) -> tuple[Path, Durability]:
        if isinstance(configuration, dict):
            return Path(configuration["path"]), Durability.parse(configuration.get("durability", "durable"))
        return Path(configuration), Durability.DURABLE

    def open(self, configuration, create: bool = False):
        path, durability = self._config(configuration)
        if not create and not (path / "data.mdb").exists():
            return NO_STORE
        self._store = LmdbStore(path, durability=durability, create=create)
        return VALID_STORE

    def close(self, commit_pending_transaction: bool = False) -> None:
        if self._store is not None:
            self._store.close()  # commits pending writes (see the module docstring)
            self._store = None

    def destroy(self, configuration) -> None:
        path, _ = self._config(configuration)
        if self._store is not None and self._store.path == path:
            self._store.rollback()
            self.close()
        shutil.rmtree(path, ignore_errors=True)

    def commit(self) -> None:
        self._live().commit()

    def rollback(self) -> None:
        self._live().rollback()

    def _live(self) -> LmdbStore:
        if self._store is None:
            raise ValueError("the LMDB store is not open")
        return self._store

    def _writer(self) -> LmdbStore:
        store = self._live()
        store.begin()
        return store

    # -- helpers -----------------------------------------------------------
    @staticmethod
    def _ctx(context) -> bytes | None:
        if context is None:
            return None
        return encode(getattr(context, "identifier", context))

    def _graph(self, c: bytes) -> Graph:
        graph = self._graphs.get(c)
        if graph is None:
            if len(self._graphs) > 10_000:
                self._graphs.clear()
            graph = self._graphs[c] = Graph(store=self, identifier=decode(c))
        return graph

    @staticmethod
    def _pattern(triple) -> tuple:
        return tuple(None if t is None else encode(t) for t in triple)

    def _quads(self, s, p, o, c) -> Iterator[tuple]:
        """Matching quads; a list when reading through a write transaction (the
        caller may write while it iterates)."""
        store = self._live()
        if store.writing:
            return iter(store.quads(s, p, o, c))
        return _stream(store, s, p, o, c)

    # -- triples -----------------------------------------------------------
    def add(self, triple, context, quoted: bool = False) -> None:
        if quoted:
            raise NotImplementedError("the LMDB store does not hold quoted graphs")
        c = self._ctx(context) or DEFAULT_GRAPH
        quad = (*map(encode, triple), c)
        self._writer().add([quad])
        super().add(triple, context, quoted)  # rdflib's add event

    def addN(self, quads) -> None:
        quads = list(quads)
        batch = []
        for s, p, o, context in quads:
            if getattr(context, "formula_aware", False) and not isinstance(context, Graph):
                raise NotImplementedError("the LMDB store does not hold quoted graphs")
            batch.append((encode(s), encode(p), encode(o), self._ctx(context) or DEFAULT_GRAPH))
        if batch:
            self._writer().add(batch)
        # rdflib's add event for each, as add() sends it (subscribers of the dispatcher)
        for s, p, o, context in quads:
            self.dispatcher.dispatch(TripleAddedEvent(triple=(s, p, o), context=context))

    def remove(self, triple, context=None) -> None:
        s, p, o = self._pattern(triple)
        self._writer().remove(s, p, o, self._ctx(context))
        self.dispatcher.dispatch(TripleRemovedEvent(triple=triple, context=context))  # rdflib's remove event

    def triples(self, triple_pattern, context=None):
        """``((s, p, o), contexts)`` for each matching triple, each triple once."""
        s, p, o = self._pattern(triple_pattern)
        c = self._ctx(context)
        current, graphs = None, []
        # every index used lists a triple's graphs next to each other
        for qs, qp, qo, qc in self._quads(s, p, o, c):
            key = (qs, qp, qo)
            if key != current:
                if current is not None:
                    yield tuple(map(decode, current)), iter(graphs)
                current, graphs = key, []
            graphs.append(self._graph(qc))
        if current is not None:
            yield tuple(map(decode, current)), iter(graphs)

    def add_graph(self, graph) -> None:
        c = self._ctx(graph)
        self._writer().write(lambda txn: txn.add_graph(c))

    def remove_graph(self, graph) -> None:
        c = self._ctx(graph)
        self._writer().write(lambda txn: txn.remove_graph(c))

    def __len__(self, context=None) -> int:
        store = self._live()
        if context is None:
            return store.view(lambda txn: txn.triple_count())
        return store.count(graph=self._ctx(context))

    def contexts(self, triple=None):
        store = self._live()
        if triple is None:
            found = store.contexts()
        else:
            s, p, o = self._pattern(triple)
            found = store.view(lambda txn: txn.contexts(s, p, o))
        for c in found:
            yield self._graph(c)

    # -- namespaces ----------------------------------------------------------
    def _namespaces(self) -> list[tuple[str, str]]:
        return self._live().view(lambda txn: txn.namespaces())

    def bind(self, prefix: str, namespace, override: bool = True) -> None:
        namespace = str(namespace)
        pairs = self._namespaces()
        bound_ns = dict(pairs).get(prefix)
        bound_prefix = next((p for p, n in pairs if n == namespace), None)
        if bound_ns == namespace and bound_prefix == prefix:
            return
        if not override and (bound_ns is not None or bound_prefix is not None):
            if bound_ns is None and bound_prefix is not None:
                return  # the namespace keeps its prefix
            if bound_ns is not None:
                return  # the prefix keeps its namespace
        store = self._writer()

        def op(txn):
            if bound_prefix is not None:
                txn.del_namespace(bound_prefix)
            txn.set_namespace(prefix, namespace)

        store.write(op)

    def unbind(self, prefix: str) -> None:
        if dict(self._namespaces()).get(prefix) is not None:
            self._writer().write(lambda txn: txn.del_namespace(prefix))

    def namespace(self, prefix: str):
        ns = dict(self._namespaces()).get(prefix)
        return None if ns is None else URIRef(ns)

    def prefix(self, namespace):
        namespace = str(namespace)
        return next((p for p, n in self._namespaces() if n == namespace), None)

    def namespaces(self):
        for prefix, ns in self._namespaces():
            yield prefix, URIRef(ns)


def _stream(store: LmdbStore, s, p, o, c) -> Iterator[tuple]:
    """Matching quads from one snapshot, read as they are consumed."""
    with store.read() as txn:
        yield from txn.quads(s, p, o, c)
