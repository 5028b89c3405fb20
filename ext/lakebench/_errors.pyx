# cython: language_level=3
"""The store's errors, and the one place where a return code of LMDB or of
the core becomes one (``raise_rc``, for the other modules' ``cimport``).
``lakebench._store`` re-exports the classes.
"""
from liblmdb cimport mdb_strerror, MDB_MAP_FULL
from lakebench._codec cimport E_NOMEM, E_IDS, E_CORRUPT, E_TERM, E_DANGLING


class StoreError(Exception):
    """Base class of the store's errors."""


class LmdbError(StoreError):
    """An LMDB call failed; ``code`` is LMDB's return code."""

    def __init__(self, code, what):
        self.code = code
        super().__init__(f"{what}: {_strerror(code)}")


class MapFullError(LmdbError):
    """The memory map is full; the transaction was aborted, nothing written."""


class ParseError(StoreError, ValueError):
    """Malformed RDF: ``position`` (byte offset), ``line`` and ``column`` (1-based)."""

    def __init__(self, message, position=None, line=None, column=None):
        self.message = message
        self.position = position
        self.line = line
        self.column = column
        where = "" if line is None else f" at line {line}, column {column}"
        if position is not None:
            where += f" (byte {position})"
        super().__init__(f"{message}{where}")


def _strerror(int code):
    if code == E_NOMEM:
        return "out of memory"
    if code == E_IDS:
        return "term id space exhausted (2**31 - 1 terms)"
    if code == E_CORRUPT:
        return "corrupted entry (unexpected key or value size, or an id of 0)"
    if code == E_TERM:
        return "invalid encoded term"
    if code == E_DANGLING:
        return "a quad names a term id that is not stored (the store is damaged: run lakebench check)"
    return mdb_strerror(code).decode("utf-8", "replace") + f" ({code})"


cdef int raise_rc(int rc, str what) except -1:
    if rc == MDB_MAP_FULL:
        raise MapFullError(rc, what)
    if rc == E_NOMEM:
        raise MemoryError(what)
    raise LmdbError(rc, what)
