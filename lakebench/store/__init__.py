"""An embedded RDF quad store on LMDB, with a native fast path.

The byte work happens in the compiled core, :mod:`lakebench._store` (Cython
over the LMDB C API, built from ``ext/``); this module is its small Python
face.  docs/store.rst explains the layout and the measurements behind it.

>>> import tempfile
>>> store = LmdbStore(tempfile.mkdtemp())
>>> doc = b'<http://ex.org/a> <http://ex.org/p> "x\\\\ny"@en .\\n'
>>> store.ingest(doc, graph="http://ex.org/a")
1
>>> store.serialize(graph="http://ex.org/a", format="nt")
b'<http://ex.org/a> <http://ex.org/p> "x\\\\ny"@en .\\n'
>>> len(store), check(store.path)
(1, [])
>>> store.close()

Terms are passed as IRI strings, rdflib terms or encoded bytes
(:mod:`lakebench.store.terms`).  Every write method is one transaction,
committed before it returns, unless :meth:`LmdbStore.begin` opened a
pending one (the rdflib plugin's mode), which :meth:`LmdbStore.commit` ends.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Iterator

from lakebench._store import (
    Environment,
    LmdbError,
    MapFullError,
    ParseError,
    StoreError,
    Txn,
)
from lakebench.store.terms import DEFAULT_GRAPH, term

__all__ = [
    "LmdbStore", "check", "StoreError", "ParseError", "MapFullError", "LmdbError", "DEFAULT_GRAPH",
]

#: Initial map size; the map doubles whenever it is three quarters full or full.
DEFAULT_MAP_SIZE = 256 << 20
_MAX_GROWTHS = 24


class LmdbStore:
    """A quad store in one directory (LMDB's ``data.mdb`` and ``lock.mdb``).

    ``durable=True`` (default) fsyncs every commit; ``durable=False``
    (``nosync``) writes each commit to the OS without fsync, through the
    memory map: a crashed process loses nothing committed, an OS crash or
    power loss may lose the last commits or damage the store (LMDB's
    MDB_NOSYNC contract, and what pyoxigraph does by default).
    """

    def __init__(self, path, *, durable: bool = True, create: bool = True, readonly: bool = False,
                 map_size: int = DEFAULT_MAP_SIZE):
        self.path = Path(path)
        if create and not readonly:
            self.path.mkdir(parents=True, exist_ok=True)
        elif not (self.path / "data.mdb").exists():
            raise StoreError(f"no store at {self.path}")
        # nosync writes through the memory map (MDB_WRITEMAP): a commit is then
        # only a meta-page update, about half the cost of an ingest.
        self.env = Environment(self.path, map_size=map_size, durable=durable, readonly=readonly,
                               writemap=not durable and not readonly)
        self._pending: tuple[Txn, list[Callable[[Txn], object]]] | None = None
        if not readonly:
            self._maybe_grow()

    @property
    def durability(self) -> str:
        return "durable" if self.env.durable else "nosync"

    # -- transactions ------------------------------------------------------
    def read(self) -> Txn:
        """A read transaction (a snapshot), for ``with store.read() as txn:``."""
        return self.env.begin()

    def _reader(self) -> Txn:
        """The pending write transaction (to see its writes) or a new snapshot."""
        return self._pending[0] if self._pending else self.env.begin()

    def begin(self) -> None:
        """Open a pending write transaction: later writes join it until commit()."""
        if self._pending is None:
            self._pending = (self.env.begin(write=True), [])

    def commit(self) -> None:
        """Commit the pending transaction, if any."""
        if self._pending is not None:
            txn, _ = self._pending
            self._pending = None
            txn.commit()
            self._maybe_grow()

    def rollback(self) -> None:
        """Discard the pending transaction, if any."""
        if self._pending is not None:
            txn, _ = self._pending
            self._pending = None
            txn.abort()

    @property
    def in_transaction(self) -> bool:
        return self._pending is not None

    def write(self, op: Callable[[Txn], object]):
        """Run ``op(txn)`` in a write transaction and return its result.

        Alone, ``op`` runs in its own transaction, committed before this
        returns.  When the map is full the transaction is aborted, the map
        doubled and ``op`` run again: a write is never half done, and once
        this returns it is committed.  In a pending transaction, ``op`` joins
        it; on a full map the pending operations are replayed in a new one.
        """
        if self._pending is not None:
            return self._write_pending(op)
        for _ in range(_MAX_GROWTHS):
            txn = self.env.begin(write=True)
            try:
                result = op(txn)
                txn.commit()
            except MapFullError:
                txn.abort()
                self.env.grow()
                continue
            except BaseException:
                txn.abort()
                raise
            self._maybe_grow()
            return result
        raise MapFullError(-30792, "the map is still full after growing it")

    def _write_pending(self, op):
        txn, log = self._pending
        for _ in range(_MAX_GROWTHS):
            try:
                if not txn.active:  # aborted by a full map: replay in a new one
                    txn = self.env.begin(write=True)
                    self._pending = (txn, log)
                    for old in log:
                        old(txn)
                result = op(txn)
            except MapFullError:
                txn.abort()
                self.env.grow()
                continue
            except BaseException:
                if not txn.active:  # an LMDB failure ended it: the pending writes are lost
                    self._pending = None
                raise
            log.append(op)
            return result
        raise MapFullError(-30792, "the map is still full after growing it")

    def _maybe_grow(self) -> None:
        info = self.env.info()
        if info["used_bytes"] * 4 > info["map_size"] * 3 and self.env.open_txns == 0:
            self.env.grow()

    # -- the fast path -------------------------------------------------------
    def ingest(self, data: bytes, graph, *, format: str = "nt", base: str | None = None,
               extra: Iterable[tuple] = ()) -> int:
        """Store one document into ``graph`` in one transaction; the number of new quads.

        ``format`` is ``"nt"`` (parsed by the core, straight to term ids) or
        ``"turtle"`` (parsed by pyoxigraph against ``base``, default the
        graph's IRI, then handed to the core as N-Triples).  ``extra`` quads
        (4 terms each) are written in the same transaction, e.g. a
        container's ``ldp:contains``.  Malformed input raises ParseError
        (with line and column) and writes nothing.
        """
        g = term(graph)
        if format in ("turtle", "ttl"):
            data = turtle_to_ntriples(data, base or (g[1:].decode() if g[:1] == b"I" else None))
        elif format not in ("nt", "ntriples", "n-triples"):
            raise ValueError(f"unknown format {format!r}")
        quads = [tuple(term(t) for t in quad) for quad in extra]
        return self.write(lambda txn: txn.ingest_ntriples(data, g, quads))

    def add(self, quads: Iterable[tuple]) -> int:
        """Insert quads ``(s, p, o, graph)``; the number that were new."""
        quads = [tuple(term(t) for t in quad) for quad in quads]
        return self.write(lambda txn: txn.add(quads))

    def remove(self, s=None, p=None, o=None, graph=None) -> int:
        """Delete the quads matching the pattern (None: any); the number deleted."""
        s, p, o, g = term(s), term(p), term(o), term(graph)
        return self.write(lambda txn: txn.remove(s, p, o, g))

    def iter_serialize(self, *, graph=None, subject=None, format: str = "turtle",
                       prefixes: dict[str, str] | None = None) -> Iterator[bytes]:
        """Stream the triples of a graph and/or subject as N-Triples or Turtle chunks."""
        txn = self._reader()
        own = txn is not (self._pending[0] if self._pending else None)
        try:
            yield from txn.serialize(s=term(subject), c=term(graph), format=format, prefixes=prefixes)
        finally:
            if own:
                txn.abort()

    def serialize(self, *, graph=None, subject=None, format: str = "turtle",
                  prefixes: dict[str, str] | None = None) -> bytes:
        """The triples of a graph and/or subject as N-Triples or Turtle bytes."""
        return b"".join(self.iter_serialize(graph=graph, subject=subject, format=format, prefixes=prefixes))

    # -- reads -------------------------------------------------------------
    def _read(self, op):
        if self._pending is not None:
            return op(self._pending[0])
        with self.env.begin() as txn:
            return op(txn)

    def quads(self, s=None, p=None, o=None, graph=None) -> list[tuple[bytes, bytes, bytes, bytes]]:
        """The quads matching a pattern, as encoded terms."""
        s, p, o, g = term(s), term(p), term(o), term(graph)
        return self._read(lambda txn: list(txn.quads(s, p, o, g)))

    def count(self, s=None, p=None, o=None, graph=None) -> int:
        """Number of quads matching a pattern."""
        s, p, o, g = term(s), term(p), term(o), term(graph)
        return self._read(lambda txn: txn.count(s, p, o, g))

    def __len__(self) -> int:
        """Number of quads."""
        return self._read(lambda txn: txn.quad_count())

    def contexts(self) -> list[bytes]:
        return self._read(lambda txn: txn.contexts())

    def check(self) -> "Problems":
        return _check_env(self._read)

    def close(self) -> None:
        """Commit a pending transaction and close the environment."""
        if not self.env.closed:
            self.commit()
            self.env.close()

    def __enter__(self) -> "LmdbStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def turtle_to_ntriples(data: bytes, base: str | None) -> bytes:
    """Turtle -> N-Triples through pyoxigraph's parser (full Turtle 1.1)."""
    import pyoxigraph as ox

    try:
        quads = ox.parse(data, format=ox.RdfFormat.TURTLE, base_iri=base)
        return ox.serialize(quads, format=ox.RdfFormat.N_TRIPLES)
    except SyntaxError as e:
        raise ParseError(f"Turtle: {e.msg}", None, e.lineno, e.offset) from None


class Problems(list):
    """The problems found by :func:`check` (empty: consistent), with ``summary`` counts."""

    summary: dict


def _check_env(read) -> Problems:
    problems, summary = read(lambda txn: txn.check())
    result = Problems(problems)
    result.summary = summary
    return result


def check(path) -> Problems:
    """Verify the store at ``path``: the list of problems, empty when consistent.

    The result's ``summary`` holds counts (quads, triples, terms, graphs,
    subjects, entries of each index, hash collisions).  The store is opened
    read-only; the check reads one snapshot.
    """
    path = Path(path)
    if not (path / "data.mdb").exists():
        result = Problems([f"{path}: no LMDB store here (no data.mdb)"])
        result.summary = {}
        return result
    env = Environment(path, readonly=True, map_size=0)
    try:
        with env.begin() as txn:
            result = _check_env(lambda op: op(txn))
        result.summary["bytes"] = sum(f.stat().st_size for f in path.glob("*.mdb"))
        return result
    finally:
        env.close()
