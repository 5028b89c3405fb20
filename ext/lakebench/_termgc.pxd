# Removing terms no quad uses any more, at a write's commit; see _termgc.pyx.
from libc.stdint cimport uint32_t, uint64_t

from liblmdb cimport MDB_txn, MDB_dbi
from lakebench._txncore cimport TxnCore

cdef int drop_unused_terms(TxnCore* c, size_t* dropped) noexcept nogil
cdef int terms_generation(MDB_txn* txn, const MDB_dbi* dbi, uint64_t* out) noexcept nogil
