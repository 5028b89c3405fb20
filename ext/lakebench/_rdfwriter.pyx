# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The one writer of the store core: encoded terms and triples -> N-Triples
or Turtle bytes, without the GIL.

``render_term`` writes one term (N-Triples, or Turtle with prefixes and
``a``); a ``TripleWriter`` writes a stream of id triples in index order,
reading each term from ``i2t`` or ``i2l`` only when it is printed: N-Triples
renders a subject-predicate pair once per run, Turtle groups by subject and
predicate (``;`` and ``,``).  A triple equal to the previous one (the same
triple in another graph) is written once.  Every serialization path of the
store goes through here: ``Txn.serialize`` (both formats) and
``render_ntriples_term``.
"""
from libc.stdint cimport uint8_t, uint32_t
from libc.string cimport memcmp, memset, memchr
from libc.stdlib cimport calloc, free
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE

from liblmdb cimport MDB_txn, MDB_dbi, MDB_val, MDB_NOTFOUND
from lakebench._codec cimport (E_NOMEM, E_TERM, E_DANGLING, TERM_IRI, TERM_BLANK, TERM_LITERAL, TERM_LANG_LITERAL,
                               TERM_TYPED_LITERAL, iri_forbidden, is_alpha, is_digit, get_term, termbuf_free)
from lakebench._tables cimport Buf, buf_reserve, buf_put, buf_byte, buf_free

cdef const char* RDF_TYPE = b"http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
cdef size_t RDF_TYPE_LEN = 47

cdef int put_hex4(Buf* b, uint32_t c) noexcept nogil:
    cdef char t[6]
    cdef const char* digits = b"0123456789ABCDEF"
    t[0] = 92
    t[1] = 117
    t[2] = digits[(c >> 12) & 15]
    t[3] = digits[(c >> 8) & 15]
    t[4] = digits[(c >> 4) & 15]
    t[5] = digits[c & 15]
    return buf_put(b, t, 6)

cdef int put_string(Buf* out, const uint8_t* p, size_t n) noexcept nogil:
    """p as the inside of a "..." literal (N-Triples and Turtle escapes)."""
    cdef size_t i = 0, run
    cdef uint8_t c
    cdef const char* esc
    if buf_reserve(out, n + 2):
        return E_NOMEM
    while i < n:
        run = i
        while i < n:
            c = p[i]
            if c < 0x20 or c == 34 or c == 92 or c == 0x7F:
                break
            i += 1
        if i > run and buf_put(out, p + run, i - run):
            return E_NOMEM
        if i >= n:
            break
        c = p[i]
        if c == 34:
            esc = b'\\"'
        elif c == 92:
            esc = b"\\\\"
        elif c == 10:
            esc = b"\\n"
        elif c == 13:
            esc = b"\\r"
        elif c == 9:
            esc = b"\\t"
        elif c == 8:
            esc = b"\\b"
        elif c == 12:
            esc = b"\\f"
        else:
            esc = NULL
        if esc != NULL:
            if buf_put(out, esc, 2):
                return E_NOMEM
        elif put_hex4(out, c):
            return E_NOMEM
        i += 1
    return 0

cdef int put_iri(Buf* out, const uint8_t* p, size_t n, Prefixes* px, bint predicate) noexcept nogil:
    cdef size_t i, j, ln
    cdef uint8_t c
    cdef bint ok
    if px != NULL:
        if predicate and n == RDF_TYPE_LEN and memcmp(p, RDF_TYPE, n) == 0:
            return buf_byte(out, 97)
        for i in range(px.n):
            ln = px.ns_len[i]
            if n >= ln and memcmp(p, px.ns[i], ln) == 0:
                ok = True
                for j in range(ln, n):
                    c = p[j]
                    if not (is_alpha(c) or is_digit(c) or c == 95 or (c == 45 and j > ln)):
                        ok = False
                        break
                if ok:
                    if buf_put(out, px.name[i], px.name_len[i]) or buf_byte(out, 58) \
                            or buf_put(out, p + ln, n - ln):
                        return E_NOMEM
                    return 0
    if buf_byte(out, 60):
        return E_NOMEM
    i = 0
    while i < n:
        j = i
        while j < n and not iri_forbidden(p[j]):
            j += 1
        if j > i and buf_put(out, p + i, j - i):
            return E_NOMEM
        if j < n:
            if put_hex4(out, p[j]):
                return E_NOMEM
            j += 1
        i = j
    return buf_byte(out, 62)

cdef int render_term(Buf* out, const uint8_t* t, size_t n, Prefixes* px, bint predicate) noexcept nogil:
    """Append the N-Triples (px NULL) or Turtle form of an encoded term."""
    cdef const uint8_t* sep
    cdef size_t k
    if n == 0:
        return E_TERM
    if t[0] == TERM_IRI:
        return put_iri(out, t + 1, n - 1, px, predicate)
    if t[0] == TERM_BLANK:
        if buf_put(out, b"_:", 2) or buf_put(out, t + 1, n - 1):
            return E_NOMEM
        return 0
    if t[0] == TERM_LITERAL:
        if buf_byte(out, 34) or put_string(out, t + 1, n - 1) or buf_byte(out, 34):
            return E_NOMEM
        return 0
    if t[0] == TERM_LANG_LITERAL or t[0] == TERM_TYPED_LITERAL:
        sep = <const uint8_t*>memchr(t + 1, 0, n - 1)
        if sep == NULL:
            return E_TERM
        k = sep - t
        if buf_byte(out, 34) or put_string(out, sep + 1, n - k - 1) or buf_byte(out, 34):
            return E_NOMEM
        if t[0] == TERM_LANG_LITERAL:
            if buf_byte(out, 64) or buf_put(out, t + 1, k - 1):
                return E_NOMEM
            return 0
        if buf_put(out, b"^^", 2):
            return E_NOMEM
        return put_iri(out, t + 1, k - 1, px, False)
    return E_TERM


def render_ntriples_term(bytes term):
    """The N-Triples form of an encoded term.

    >>> render_ntriples_term(b'Gen\\x00say "hi"\\n')
    b'"say \\\\"hi\\\\"\\\\n"@en'
    """
    cdef Buf b
    cdef int rc
    memset(&b, 0, sizeof(Buf))
    rc = render_term(&b, <const uint8_t*>PyBytes_AS_STRING(term), PyBytes_GET_SIZE(term), NULL, False)
    try:
        if rc == E_TERM:
            raise ValueError(f"invalid encoded term {term[:60]!r}")
        if rc:
            raise MemoryError()
        return PyBytes_FromStringAndSize(b.p, b.n)
    finally:
        buf_free(&b)


# ---------------------------------------------------------------- triples
cdef int tw_init(TripleWriter* w, bint turtle, prefixes, MDB_txn* txn, const MDB_dbi* dbi) except -1:
    """A writer of N-Triples, or Turtle with ``prefixes`` (name -> namespace),
    of the terms of transaction ``txn``."""
    cdef Prefixes* px = &w.px
    cdef size_t i
    memset(w, 0, sizeof(TripleWriter))
    w.turtle = turtle
    w.txn = txn
    w.dbi = dbi
    if not turtle:
        return 0
    # the longest namespace first, so that the most specific prefix wins
    pairs = [(str(name).encode(), str(ns).encode())
             for name, ns in sorted((prefixes or {}).items(), key=lambda kv: -len(kv[1]))]
    px.n = len(pairs)
    px.ns = <const char**>calloc(px.n + 1, sizeof(char*))
    px.ns_len = <size_t*>calloc(px.n + 1, sizeof(size_t))
    px.name = <const char**>calloc(px.n + 1, sizeof(char*))
    px.name_len = <size_t*>calloc(px.n + 1, sizeof(size_t))
    if px.ns == NULL or px.ns_len == NULL or px.name == NULL or px.name_len == NULL:
        raise MemoryError()
    for name, ns in pairs:
        if buf_put(&px.text, PyBytes_AS_STRING(name), len(name)) or \
                buf_put(&px.text, PyBytes_AS_STRING(ns), len(ns)):
            raise MemoryError()
    # pointers into the text only once it has stopped growing
    cdef const char* at = px.text.p
    for i, (name, ns) in enumerate(pairs):
        px.name[i] = at
        px.name_len[i] = len(name)
        at += len(name)
        px.ns[i] = at
        px.ns_len[i] = len(ns)
        at += len(ns)
    return 0

cdef void tw_free(TripleWriter* w) noexcept nogil:
    buf_free(&w.out)
    buf_free(&w.sp)
    buf_free(&w.px.text)
    free(w.px.ns)
    free(w.px.ns_len)
    free(w.px.name)
    free(w.px.name_len)
    termbuf_free(&w.term)
    memset(w, 0, sizeof(TripleWriter))

cdef int tw_header(TripleWriter* w) noexcept nogil:
    """Turtle's @prefix lines (nothing for N-Triples)."""
    cdef Prefixes* px = &w.px
    cdef size_t i
    if not w.turtle:
        return 0
    for i in range(px.n):
        if buf_put(&w.out, b"@prefix ", 8) or buf_put(&w.out, px.name[i], px.name_len[i]) \
                or buf_put(&w.out, b": <", 3) or buf_put(&w.out, px.ns[i], px.ns_len[i]) \
                or buf_put(&w.out, b"> .\n", 4):
            return E_NOMEM
    if px.n and buf_byte(&w.out, 10):
        return E_NOMEM
    return 0

cdef inline int put_term(TripleWriter* w, Buf* out, uint32_t tid, Prefixes* px, bint predicate) noexcept nogil:
    cdef MDB_val t
    cdef int rc = get_term(w.txn, w.dbi, tid, &t, &w.term)
    if rc == MDB_NOTFOUND:
        return E_DANGLING   # not the scan's end: a quad names no term
    if rc:
        return rc
    return render_term(out, <const uint8_t*>t.mv_data, t.mv_size, px, predicate)

cdef int tw_triple(TripleWriter* w, uint32_t s, uint32_t p, uint32_t o) noexcept nogil:
    """Append one triple; 0 or an error code."""
    cdef Prefixes* px = &w.px if w.turtle else NULL
    cdef bint same_s = w.have_prev and s == w.prev[0]
    cdef bint same_sp = same_s and p == w.prev[1]
    cdef int rc = 0
    if same_sp and o == w.prev[2]:
        return 0   # the same triple in another graph
    if w.turtle:
        if same_sp:
            rc = buf_put(&w.out, b", ", 2)
        elif same_s:
            rc = buf_put(&w.out, b" ;\n    ", 7)
            if rc == 0:
                rc = put_term(w, &w.out, p, px, True)
            if rc == 0:
                rc = buf_byte(&w.out, 32)
        else:
            if w.have_prev:
                rc = buf_put(&w.out, b" .\n", 3)
            if rc == 0:
                rc = put_term(w, &w.out, s, px, False)
            if rc == 0:
                rc = buf_byte(&w.out, 32)
            if rc == 0:
                rc = put_term(w, &w.out, p, px, True)
            if rc == 0:
                rc = buf_byte(&w.out, 32)
    else:
        if not same_sp:
            w.sp.n = 0
            rc = put_term(w, &w.sp, s, px, False)
            if rc == 0:
                rc = buf_byte(&w.sp, 32)
            if rc == 0:
                rc = put_term(w, &w.sp, p, px, True)
            if rc == 0:
                rc = buf_byte(&w.sp, 32)
        if rc == 0:
            rc = buf_put(&w.out, w.sp.p, w.sp.n)
    if rc == 0:
        rc = put_term(w, &w.out, o, px, False)
    if rc == 0 and not w.turtle:
        rc = buf_put(&w.out, b" .\n", 3)
    if rc:
        return rc
    w.prev[0] = s
    w.prev[1] = p
    w.prev[2] = o
    w.have_prev = True
    return 0

cdef int tw_finish(TripleWriter* w) noexcept nogil:
    """End the last Turtle statement."""
    if w.turtle and w.have_prev:
        return buf_put(&w.out, b" .\n", 3)
    return 0
