# The checker: verifies one snapshot (Txn.check).
from liblmdb cimport MDB_txn, MDB_dbi

cdef tuple check_snapshot(MDB_txn* txn, MDB_dbi* dbi, size_t max_problems, int* error)
