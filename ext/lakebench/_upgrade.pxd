# The upgrade of stores of older formats, in the opening write transaction.
from liblmdb cimport MDB_txn, MDB_dbi

cdef int graphs_from_cspo(MDB_txn* txn, MDB_dbi cs) noexcept nogil
