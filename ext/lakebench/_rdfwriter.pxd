# The one writer of N-Triples and Turtle: encoded terms -> text, used by
# every serialization path (Txn.serialize in both formats, and
# render_ntriples_term).
from libc.stdint cimport uint8_t, uint32_t

from liblmdb cimport MDB_txn, MDB_dbi
from lakebench._tables cimport Buf
from lakebench._codec cimport TermBuf

cdef struct Prefixes:
    size_t n
    Buf text             # every name and namespace, back to back
    const char** ns
    size_t* ns_len
    const char** name
    size_t* name_len

cdef struct TripleWriter:
    bint turtle
    Prefixes px          # Turtle only: longest namespace first
    MDB_txn* txn         # where the terms of the ids are read (i2t, i2l),
    const MDB_dbi* dbi   # each only when it is printed
    Buf out              # text written so far (the caller takes and empties it)
    Buf sp               # N-Triples: "s p " of the current subject-predicate run
    uint32_t prev[3]     # the last triple written
    bint have_prev
    TermBuf term         # a literal's term, expanded from i2l's compact form

cdef int render_term(Buf* out, const uint8_t* t, size_t n, Prefixes* px, bint predicate) noexcept nogil
cdef int tw_init(TripleWriter* w, bint turtle, prefixes, MDB_txn* txn, const MDB_dbi* dbi) except -1
cdef int tw_header(TripleWriter* w) noexcept nogil
cdef int tw_triple(TripleWriter* w, uint32_t s, uint32_t p, uint32_t o) noexcept nogil
cdef int tw_finish(TripleWriter* w) noexcept nogil
cdef void tw_free(TripleWriter* w) noexcept nogil
