# The one writer of N-Triples and Turtle: encoded terms -> text, used by
# every serialization path (Txn.serialize in both formats, and
# render_ntriples_term).
from libc.stdint cimport uint8_t, uint32_t

from lakebench._tables cimport Buf

# Where the writer gets an id's encoded term: 0, or an error code (LMDB's
# or the core's) that stops the writer.
ctypedef int (*TermLookup)(void* ctx, uint32_t tid, const uint8_t** term, size_t* size) noexcept nogil

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
    TermLookup lookup
    void* lookup_ctx
    Buf out              # text written so far (the caller takes and empties it)
    Buf sp               # N-Triples: "s p " of the current subject-predicate run
    uint32_t prev[3]     # the last triple written
    bint have_prev

cdef int render_term(Buf* out, const uint8_t* t, size_t n, Prefixes* px, bint predicate) noexcept nogil
cdef int tw_init(TripleWriter* w, bint turtle, prefixes, TermLookup lookup, void* lookup_ctx) except -1
cdef int tw_header(TripleWriter* w) noexcept nogil
cdef int tw_triple(TripleWriter* w, uint32_t s, uint32_t p, uint32_t o) noexcept nogil
cdef int tw_finish(TripleWriter* w) noexcept nogil
cdef void tw_free(TripleWriter* w) noexcept nogil
