# Term ids: lookup, creation, the caches, filing ids in t2i late; see _termids.pyx.
from libc.stdint cimport uint8_t, uint32_t, uint64_t

from lakebench._tables cimport TTable, StoredForms
from lakebench._txncore cimport TxnCore

cdef int lookup_id(TxnCore* c, const uint8_t* p, size_t n, uint64_t h, uint32_t* out) noexcept nogil
cdef int resolve_id(TxnCore* c, const uint8_t* p, size_t n, uint64_t h, bint create, uint32_t* out,
                    const uint8_t* sp=*, size_t sn=*) noexcept nogil
cdef int resolve_table(TxnCore* c, TTable* t, uint32_t* ids, const StoredForms* forms) noexcept nogil
cdef void merge_cache(TxnCore* c) noexcept nogil
cdef int unfiled_span(TxnCore* c, uint32_t* w, uint32_t* m) noexcept nogil
cdef int file_terms(TxnCore* c) noexcept nogil
cdef int file_terms_step(TxnCore* c, uint32_t lag, uint32_t most) noexcept nogil
cdef int filed_upto(TxnCore* c, uint32_t* w) noexcept nogil
cdef int last_id(TxnCore* c, uint32_t* m) noexcept nogil
cdef int read_sweep(TxnCore* c) noexcept nogil
