# The iterator over one scan of a transaction; see _scan.pyx.
from libc.stdint cimport uint32_t, uint64_t

from liblmdb cimport MDB_val, MDB_dbi
from lakebench._txncore cimport TxnCore, ScanState
from lakebench._rdfwriter cimport TripleWriter
from lakebench._codec cimport TermBuf

cdef enum:
    BATCH = 256

cdef class Scan:
    cdef object owner                  # the transaction: alive while the scan is
    cdef TxnCore* core                 # the owner's C state ...
    cdef const MDB_dbi* dbi            # ... its environment's handles ...
    cdef const uint64_t* owner_generation   # ... and its generation, bumped when it ends
    cdef uint64_t generation           # the owner's generation when the scan began
    cdef bint write                    # the owner is a write transaction
    cdef ScanState st
    cdef int mode
    cdef bint done
    cdef bint empty
    cdef Py_ssize_t chunk_size
    cdef uint32_t batch[BATCH][4]
    cdef MDB_val terms[BATCH][4]       # as stored: a literal may be compact
    cdef TermBuf term                  # a literal's term, expanded
    cdef TripleWriter writer
    cdef bint header_done
    cdef dict cache

    cdef void _close(self) noexcept
    cdef int _check_live(self) except -1
    cdef _next_text(self)
    cdef _fill(self)

cdef Scan open_scan(object owner, TxnCore* core, const MDB_dbi* dbi, const uint64_t* generation, bint write,
                    const ScanState* planned, bint found, int mode, prefixes, Py_ssize_t chunk_size)
