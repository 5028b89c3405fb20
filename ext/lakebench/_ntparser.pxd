# The N-Triples parser: document bytes -> a table of the document's terms
# and quads of indices into it.  Nothing is written to the store.
from libc.stdint cimport uint8_t, uint32_t

from lakebench._tables cimport Buf, TTable, QBuf, StoredForms

cdef struct Parser:
    const uint8_t* src
    size_t n
    size_t pos
    int err         # the P_* kind of the first error
    size_t err_pos
    Buf tb          # the encoded term being built
    Buf lex         # a literal's lexical form
    Buf clex        # ... in 7-bit groups, and
    Buf ctb         # ... its stored form (see _codec)
    TTable* terms   # document terms -> local index
    StoredForms* forms   # the stored form of each of them (or NULL)
    TTable blanks   # document blank node labels -> ordinal

cdef void parser_init(Parser* P, const uint8_t* src, size_t n, TTable* terms, StoredForms* forms) noexcept nogil
cdef void parser_free(Parser* P) noexcept nogil
cdef int parse_ntriples(Parser* P, QBuf* out, uint32_t graph) noexcept nogil
cdef tuple parse_error_args(Parser* P, data)
