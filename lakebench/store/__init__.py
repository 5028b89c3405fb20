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

The modules: :mod:`.lmdb_store` (:class:`LmdbStore`, batching and the
log's replay), :mod:`.wal` (the write-ahead log), :mod:`.logsync` (its flushes,
shared by concurrent writes), :mod:`.verify`
(:func:`check`), :mod:`.preflight` (what runs before LMDB maps a file),
:mod:`.terms` (encoded terms), :mod:`.plugin` (rdflib), :mod:`.compact`.
"""
from lakebench._store import LmdbError, MapFullError, ParseError, StoreError
from lakebench.store.lmdb_store import (DEFAULT_BATCH_BYTES, DEFAULT_BATCH_WRITES, UNSYNCED_BATCH_WRITES, WRITE_BACK_EVERY, DEFAULT_FILING_LAG, DEFAULT_FILING_MAX,
                                        DEFAULT_MAP_SIZE, LmdbStore, NoSpaceError, Problems, map_reserve, no_space)
from lakebench.store.logsync import INLINE, LogSyncError, Waiting
from lakebench.store.preflight import StoreDamaged
from lakebench.store.terms import DEFAULT_GRAPH
from lakebench.store.verify import check
from lakebench.store.wal import LogError

__all__ = [
    "LmdbStore", "check", "StoreError", "StoreDamaged", "ParseError", "MapFullError", "LmdbError", "LogError",
    "LogSyncError", "Waiting", "INLINE", "NoSpaceError", "Problems", "no_space", "map_reserve", "DEFAULT_GRAPH", "DEFAULT_MAP_SIZE", "DEFAULT_BATCH_WRITES", "UNSYNCED_BATCH_WRITES", "WRITE_BACK_EVERY",
    "DEFAULT_BATCH_BYTES", "DEFAULT_FILING_LAG", "DEFAULT_FILING_MAX",
]
