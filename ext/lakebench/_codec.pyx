# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The store's byte layout, seen from Python: the format version, the
sub-databases and the order of each quad index, the kind bytes of encoded
terms, and the term hash.  The C side (packing, entry order, the hash) is
in ``_codec.pxd``, inlined into every module that uses it.

Layout of one environment (a directory holding ``data.mdb`` / ``lock.mdb``),
every integer big-endian so that byte order is numeric order (except the
keys of ``i2t`` and ``i2l``):

``meta``  name -> value (``format`` = FORMAT_VERSION, ``bnode_docs`` counter,
          ``terms_filed``: the last id filed in ``t2i``, when some are not)
``ns``    prefix (UTF-8) -> namespace IRI (UTF-8)
``graphs`` graph id (4 bytes) -> empty: graphs declared even while empty
``t2i``   64-bit term hash (8 bytes) -> term id (4 bytes), DUPSORT|DUPFIXED:
          several ids under one hash are collisions, told apart by comparing
          the stored terms.  It holds every id up to ``terms_filed`` (every
          id when that entry is absent) and, while a sweep files the ids
          above it (``terms_filing``: its last id and hash position), those
          up to the sweep's last id whose hash is below its position; no
          other.  With its young level (below), ``t2i`` and the young trees
          together: each filed id is in one of them, and in two only while a
          merge pass copies it (below).
``t2y0``, ``t2y1``  the young level of ``t2i``, two trees in turn: term hash
          and id (8 and 4 bytes) -> empty, no DUPSORT (so that emptying one
          frees its branch pages and reads no leaf).  A deferring writer's
          sweeps file into the current one (each sweep then rewrites its few
          leaves, not all of t2i's), while a merge pass copies the other into
          ``t2i`` hash range by hash range and empties it at its end; then the
          two swap.  ``terms_merging``: the current tree (0 or 1), the pass's
          first id (0: none), its length in ids and its hash position; the
          other tree's ids whose hash is below the position are in ``t2i``
          too.
``i2t``   term id (native-endian uint32, MDB_INTEGERKEY: the fastest
          compare for the hot id -> term lookups) -> encoded term, for IRIs
          and blank nodes;
``i2l``   the same for literals (in a compact form, below), whose ids have the top bit set.  An id's
          other 31 bits are its sequence number, from 1, one counter for
          both; each database is appended in id order, so pages are full.
          (A store first written as format 2 holds literals in i2t too,
          under plain ids.)
``spoc``  s -> (p, o, c)  \\  4-byte key, 12-byte values, DUPSORT|DUPFIXED:
``posc``  p -> (o, s, c)   | one entry per quad in each index.
``ospc``  o -> (s, p, c)  /
``cs``    graph id -> subject id (4 bytes each, DUPSORT|DUPFIXED): the
          subjects of a graph's quads, each once; a graph's quads are read
          from spoc, a prefix scan per subject filtered by the graph.

An encoded term is one kind byte and UTF-8 text:
``I`` + IRI, ``B`` + blank node label, ``L`` + lexical form (simple literal),
``G`` + language tag + NUL + lexical form, ``D`` + datatype IRI + NUL +
lexical form.

>>> KIND_IRI + b"http://ex.org/a"
b'Ihttp://ex.org/a'

``i2l`` stores a literal whose lexical form is UTF-8 in a compact form: the
kind letter in lower case, the language tag or datatype IRI and its NUL as
they are, then each code point of the lexical form in 7-bit groups, lowest
first, the high bit set on every byte of a code point but its last (1 byte
below U+0080, 2 below U+4000, 3 beyond: never more than UTF-8).  Hashes and
comparisons are of the encoded term, whatever its stored form:

>>> stored_literal("Lこんにちは 😀".encode())
b'l\\xd3`\\x93a\\xeb`\\xe1`\\xef` \\x80\\xec\\x07'
>>> len("Lこんにちは 😀".encode()), len(stored_literal("Lこんにちは 😀".encode()))
(21, 15)
>>> expand_stored(stored_literal(b"Gfr\\x00chat")) == b"Gfr\\x00chat"
True
>>> stored_literal(b"Ihttp://ex.org/a") is None   # not a literal: stored as it is
True
"""
from libc.stdint cimport uint8_t, uint32_t
from libc.stdlib cimport malloc, free
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_FromStringAndSize

#: 7: ``t2y0`` and ``t2y1``, the young level of ``t2i``: a lakebench without
#: it would miss the ids filed there and store their terms again;
#: 6: the same layout; a durable store's crash may leave its last commit cut
#: (``commit.intent``, ``wal.2``: lakebench.store.commitsync), which a lakebench
#: from before commitsync would take as the store: it refuses format 6;
#: 5: ``i2l`` holds literals in a compact form (code points in 7-bit groups);
#: 4: no ``cspo`` index, ``cs`` lists a graph's subjects instead;
#: 3: new literals are stored in ``i2l`` under ids with the top bit set;
#: 2: ids above ``meta``'s ``terms_filed`` are not in t2i; 1 had none of these.
#: A writable open upgrades an older store to 7; a read-only open reads a
#: store of format 4 to 6 as it is (no young level: the young trees' handles
#: are ``t2i``'s) and refuses an older one.
FORMAT_VERSION = 7
#: Sub-database names, in the order of the ``dbi`` array.
DB_NAMES = ("meta", "t2i", "i2t", "spoc", "posc", "ospc", "cs", "ns", "graphs", "i2l", "t2y0", "t2y1")
#: The bit of a term id that says it names a literal (in ``i2l``).
ID_LITERAL_BIT = 1 << 31
assert ID_LITERAL_BIT == <uint32_t>ID_LITERAL
#: Order of the three quad indices: which quad position is the key, which the values.
INDEX_ORDER = {"spoc": "s:poc", "posc": "p:osc", "ospc": "o:spc"}

#: The kind byte of each kind of encoded term (lakebench.store.terms builds terms with them).
KIND_IRI = bytes([TERM_IRI])
KIND_BLANK = bytes([TERM_BLANK])
KIND_LITERAL = bytes([TERM_LITERAL])
KIND_LANG_LITERAL = bytes([TERM_LANG_LITERAL])
KIND_TYPED_LITERAL = bytes([TERM_TYPED_LITERAL])


def hash_term(bytes term):
    """The 64-bit hash under which ``term`` (encoded) is filed in ``t2i``."""
    return hash_bytes(<const uint8_t*>PyBytes_AS_STRING(term), PyBytes_GET_SIZE(term))


cdef int check_term(object term) except -1:
    """Raise TypeError / ValueError unless ``term`` is a well-formed encoded term."""
    if type(term) is not bytes:
        raise TypeError(f"an encoded term must be bytes, got {type(term).__name__}")
    if not valid_term(<const uint8_t*>PyBytes_AS_STRING(term), PyBytes_GET_SIZE(term)):
        raise ValueError(f"invalid encoded term {term[:60]!r}")
    return 0


def stored_literal(bytes term):
    """The form ``i2l`` stores an encoded literal in, or None when it is
    stored as it is (not a literal, or its lexical form is not UTF-8)."""
    cdef const uint8_t* t = <const uint8_t*>PyBytes_AS_STRING(term)
    cdef size_t n = PyBytes_GET_SIZE(term)
    cdef uint8_t* out = <uint8_t*>malloc(n if n else 1)
    cdef size_t size
    if out == NULL:
        raise MemoryError()
    try:
        size = compact_literal(t, n, out)
        return PyBytes_FromStringAndSize(<char*>out, size) if size else None
    finally:
        free(out)


def expand_stored(bytes value):
    """The encoded term a value of ``i2t`` or ``i2l`` stands for; ValueError
    when a compact one is malformed."""
    cdef const uint8_t* s = <const uint8_t*>PyBytes_AS_STRING(value)
    cdef size_t n = PyBytes_GET_SIZE(value)
    cdef Py_ssize_t size = expanded_size(s, n)
    if size < 0:
        raise ValueError(f"malformed compact literal {value[:60]!r}")
    if not is_compact(s, n):
        return value
    out = PyBytes_FromStringAndSize(NULL, size)
    expand_into(s, n, <uint8_t*>PyBytes_AS_STRING(out))
    return out
