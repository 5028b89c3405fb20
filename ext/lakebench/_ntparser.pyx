# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The N-Triples parser of the store core: document bytes -> the document's
terms (a term table of encoded terms) and its triples as quads of indices
into that table, in one pass and without the GIL.  Nothing is written to
the store: the transaction resolves the terms to ids afterwards, so a
malformed document writes nothing.

Blank nodes are interned as placeholders (``TERM_DOC_BLANK`` + their
ordinal in the document) flagged ``TF_BLANK``; the transaction relabels them per document.
Errors stop the parse with a kind (``PARSE_MESSAGES``) and a byte offset.
"""
from libc.stdint cimport uint8_t, uint32_t
from libc.string cimport memset

from lakebench._codec cimport (E_NOMEM, E_PARSE, TERM_IRI, TERM_LITERAL, TERM_LANG_LITERAL,
                               TERM_TYPED_LITERAL, TERM_DOC_BLANK, CASE_BIT, put_be32, iri_forbidden, is_alpha,
                               is_digit)
from lakebench._tables cimport (Buf, TTable, QBuf, StoredForms, TF_BLANK, buf_put, buf_byte, buf_free, buf_utf8,
                                buf_groups, sf_set, tt_free, tt_intern, qb_push)

# Parse error kinds (index into PARSE_MESSAGES).
cdef enum:
    P_SUBJECT = 1
    P_PREDICATE
    P_OBJECT
    P_DOT
    P_EOL
    P_IRI_CHAR
    P_IRI_EOF
    P_IRI_RELATIVE
    P_ESCAPE
    P_UCHAR
    P_UTF8
    P_STRING_EOF
    P_STRING_NL
    P_LANG
    P_DATATYPE
    P_BNODE

PARSE_MESSAGES = {
    P_SUBJECT: "expected a subject (IRI or blank node)",
    P_PREDICATE: "expected a predicate (IRI)",
    P_OBJECT: "expected an object (IRI, blank node or literal)",
    P_DOT: "expected '.' at the end of the triple",
    P_EOL: "expected end of line after '.'",
    P_IRI_CHAR: "invalid character in IRI",
    P_IRI_EOF: "unterminated IRI",
    P_IRI_RELATIVE: "relative IRI (N-Triples needs absolute IRIs)",
    P_ESCAPE: "invalid escape sequence",
    P_UCHAR: "invalid \\u or \\U escape (surrogate, out of range or not allowed here)",
    P_UTF8: "invalid UTF-8",
    P_STRING_EOF: "unterminated string literal",
    P_STRING_NL: "line break inside a string literal",
    P_LANG: "invalid language tag",
    P_DATATYPE: "expected a datatype IRI after '^^'",
    P_BNODE: "invalid blank node label",
}

cdef inline int utf8_seq(const uint8_t* p, size_t avail) noexcept nogil:
    """Length of the valid UTF-8 sequence starting at p (lead byte >= 0x80), 0 if invalid."""
    cdef uint8_t c = p[0]
    cdef uint32_t cp
    if c < 0xC2:
        return 0
    if c < 0xE0:
        if avail < 2 or (p[1] & 0xC0) != 0x80:
            return 0
        return 2
    if c < 0xF0:
        if avail < 3 or (p[1] & 0xC0) != 0x80 or (p[2] & 0xC0) != 0x80:
            return 0
        cp = ((c & 0x0F) << 12) | ((p[1] & 0x3F) << 6) | (p[2] & 0x3F)
        if cp < 0x800 or (0xD800 <= cp <= 0xDFFF):
            return 0
        return 3
    if c < 0xF5:
        if avail < 4 or (p[1] & 0xC0) != 0x80 or (p[2] & 0xC0) != 0x80 or (p[3] & 0xC0) != 0x80:
            return 0
        cp = ((c & 0x07) << 18) | ((p[1] & 0x3F) << 12) | ((p[2] & 0x3F) << 6) | (p[3] & 0x3F)
        if cp < 0x10000 or cp > 0x10FFFF:
            return 0
        return 4
    return 0

cdef inline uint32_t utf8_value(const uint8_t* p, int k) noexcept nogil:
    """The code point of the valid UTF-8 sequence of ``k`` bytes at p (k 2 to 4)."""
    if k == 2:
        return ((p[0] & 0x1F) << 6) | (p[1] & 0x3F)
    if k == 3:
        return ((p[0] & 0x0F) << 12) | ((p[1] & 0x3F) << 6) | (p[2] & 0x3F)
    return ((p[0] & 0x07) << 18) | ((p[1] & 0x3F) << 12) | ((p[2] & 0x3F) << 6) | (p[3] & 0x3F)

cdef inline int hexval(uint8_t c) noexcept nogil:
    if 48 <= c <= 57:
        return c - 48
    if 65 <= c <= 70:
        return c - 55
    if 97 <= c <= 102:
        return c - 87
    return -1

cdef inline int perr(Parser* P, int kind, size_t pos) noexcept nogil:
    P.err = kind
    P.err_pos = pos
    return E_PARSE

cdef int read_uchar(Parser* P, uint32_t* out) noexcept nogil:
    """At a backslash followed by u or U: decode, advance; E_PARSE on error."""
    cdef size_t start = P.pos
    cdef int digits, i, v
    cdef uint32_t cp = 0
    if P.pos + 1 >= P.n:
        return perr(P, P_ESCAPE, start)
    if P.src[P.pos + 1] == 117:      # u
        digits = 4
    elif P.src[P.pos + 1] == 85:     # U
        digits = 8
    else:
        return perr(P, P_ESCAPE, start)
    if P.pos + 2 + digits > P.n:
        return perr(P, P_UCHAR, start)
    for i in range(digits):
        v = hexval(P.src[P.pos + 2 + i])
        if v < 0:
            return perr(P, P_UCHAR, start)
        cp = (cp << 4) | <uint32_t>v
    if cp > 0x10FFFF or (0xD800 <= cp <= 0xDFFF):
        return perr(P, P_UCHAR, start)
    P.pos += 2 + digits
    out[0] = cp
    return 0

cdef int read_iri(Parser* P, Buf* b) noexcept nogil:
    """At '<': append the IRI's characters to b (unescaped), advance past '>'."""
    cdef size_t start = P.pos
    cdef size_t b0 = b.n
    cdef size_t run
    cdef uint8_t c
    cdef uint32_t cp
    cdef int k
    cdef size_t i
    cdef bint scheme
    P.pos += 1
    while True:
        run = P.pos
        while P.pos < P.n:
            c = P.src[P.pos]
            if c == 62 or c == 92 or c >= 0x80 or iri_forbidden(c):
                break
            P.pos += 1
        if P.pos > run and buf_put(b, P.src + run, P.pos - run):
            return E_NOMEM
        if P.pos >= P.n:
            return perr(P, P_IRI_EOF, start)
        c = P.src[P.pos]
        if c == 62:
            P.pos += 1
            break
        if c == 92:
            if read_uchar(P, &cp):
                return E_PARSE
            if iri_forbidden(cp):
                return perr(P, P_UCHAR, P.pos)
            if buf_utf8(b, cp):
                return E_NOMEM
        elif c >= 0x80:
            k = utf8_seq(P.src + P.pos, P.n - P.pos)
            if k == 0:
                return perr(P, P_UTF8, P.pos)
            if buf_put(b, P.src + P.pos, k):
                return E_NOMEM
            P.pos += k
        else:
            return perr(P, P_IRI_CHAR, P.pos)
    # absolute: scheme ":" with scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )
    scheme = False
    if b.n > b0 and is_alpha(<uint8_t>b.p[b0]):
        for i in range(b0 + 1, b.n):
            c = <uint8_t>b.p[i]
            if c == 58:
                scheme = True
                break
            if not (is_alpha(c) or is_digit(c) or c == 43 or c == 45 or c == 46):
                break
    if not scheme:
        return perr(P, P_IRI_RELATIVE, start)
    return 0

cdef inline bint pn_ascii(uint8_t c) noexcept nogil:
    return is_alpha(c) or is_digit(c) or c == 95 or c == 58 or c == 45 or c == 46

cdef int read_bnode(Parser* P, Py_ssize_t* local) noexcept nogil:
    """At '_': read _:label, intern it as a document blank node."""
    cdef size_t start = P.pos
    cdef size_t lstart, lend
    cdef uint8_t c
    cdef int k
    cdef Py_ssize_t ordinal
    cdef uint8_t tag[5]
    if P.pos + 2 >= P.n or P.src[P.pos + 1] != 58:
        return perr(P, P_BNODE, start)
    P.pos += 2
    lstart = P.pos
    c = P.src[P.pos]
    if c == 45 or c == 46 or not (pn_ascii(c) or c >= 0x80):
        return perr(P, P_BNODE, start)
    while P.pos < P.n:
        c = P.src[P.pos]
        if c < 0x80:
            if not pn_ascii(c):
                break
            P.pos += 1
        else:
            k = utf8_seq(P.src + P.pos, P.n - P.pos)
            if k == 0:
                return perr(P, P_UTF8, P.pos)
            P.pos += k
    while P.src[P.pos - 1] == 46:   # a label never ends with '.'
        P.pos -= 1
    lend = P.pos
    ordinal = tt_intern(&P.blanks, P.src + lstart, lend - lstart, 0)
    if ordinal < 0:
        return E_NOMEM
    tag[0] = TERM_DOC_BLANK
    put_be32(tag + 1, <uint32_t>ordinal)
    local[0] = tt_intern(P.terms, tag, 5, TF_BLANK)
    if local[0] < 0:
        return E_NOMEM
    return 0

cdef int read_literal(Parser* P, Py_ssize_t* local) noexcept nogil:
    """At '"': read a literal with optional language tag or datatype."""
    cdef size_t start = P.pos
    cdef size_t run, lang0
    cdef uint8_t c, e
    cdef uint32_t cp
    cdef int k
    P.lex.n = 0
    P.clex.n = 0
    P.pos += 1
    while True:
        run = P.pos
        while P.pos < P.n:
            c = P.src[P.pos]
            if c == 34 or c == 92 or c == 10 or c == 13 or c >= 0x80:
                break
            P.pos += 1
        if P.pos > run and (buf_put(&P.lex, P.src + run, P.pos - run)
                            or buf_put(&P.clex, P.src + run, P.pos - run)):
            return E_NOMEM
        if P.pos >= P.n:
            return perr(P, P_STRING_EOF, start)
        c = P.src[P.pos]
        if c == 34:
            P.pos += 1
            break
        if c == 10 or c == 13:
            return perr(P, P_STRING_NL, P.pos)
        if c >= 0x80:
            k = utf8_seq(P.src + P.pos, P.n - P.pos)
            if k == 0:
                return perr(P, P_UTF8, P.pos)
            if buf_put(&P.lex, P.src + P.pos, k) or buf_groups(&P.clex, utf8_value(P.src + P.pos, k)):
                return E_NOMEM
            P.pos += k
            continue
        # backslash
        if P.pos + 1 >= P.n:
            return perr(P, P_ESCAPE, P.pos)
        e = P.src[P.pos + 1]
        if e == 117 or e == 85:
            if read_uchar(P, &cp):
                return E_PARSE
            if buf_utf8(&P.lex, cp):
                return E_NOMEM
            if buf_groups(&P.clex, cp):
                return E_NOMEM
            continue
        if e == 116:
            c = 9
        elif e == 98:
            c = 8
        elif e == 110:
            c = 10
        elif e == 114:
            c = 13
        elif e == 102:
            c = 12
        elif e == 34 or e == 39 or e == 92:
            c = e
        else:
            return perr(P, P_ESCAPE, P.pos)
        if buf_byte(&P.lex, <char>c) or buf_byte(&P.clex, <char>c):
            return E_NOMEM
        P.pos += 2
    P.tb.n = 0
    if P.pos < P.n and P.src[P.pos] == 64:         # @lang
        if buf_byte(&P.tb, TERM_LANG_LITERAL):
            return E_NOMEM
        P.pos += 1
        lang0 = P.pos
        while P.pos < P.n and is_alpha(P.src[P.pos]):
            P.pos += 1
        if P.pos == lang0:
            return perr(P, P_LANG, lang0 - 1)
        while P.pos + 1 < P.n and P.src[P.pos] == 45 and (is_alpha(P.src[P.pos + 1]) or is_digit(P.src[P.pos + 1])):
            P.pos += 1
            while P.pos < P.n and (is_alpha(P.src[P.pos]) or is_digit(P.src[P.pos])):
                P.pos += 1
        if P.pos < P.n and P.src[P.pos] == 45:
            return perr(P, P_LANG, lang0 - 1)
        if buf_put(&P.tb, P.src + lang0, P.pos - lang0) or buf_byte(&P.tb, 0):
            return E_NOMEM
    elif P.pos + 1 < P.n and P.src[P.pos] == 94 and P.src[P.pos + 1] == 94:   # ^^<dt>
        P.pos += 2
        if P.pos >= P.n or P.src[P.pos] != 60:
            return perr(P, P_DATATYPE, P.pos)
        if buf_byte(&P.tb, TERM_TYPED_LITERAL):
            return E_NOMEM
        if read_iri(P, &P.tb):
            return E_PARSE
        if buf_byte(&P.tb, 0):
            return E_NOMEM
    else:
        if buf_byte(&P.tb, TERM_LITERAL):
            return E_NOMEM
    if buf_put(&P.tb, P.lex.p, P.lex.n):
        return E_NOMEM
    local[0] = tt_intern(P.terms, P.tb.p, P.tb.n, 0)
    if local[0] < 0:
        return E_NOMEM
    if P.forms != NULL and <size_t>local[0] >= P.forms.n:   # a new term: its stored form too
        P.ctb.n = 0
        if (buf_byte(&P.ctb, <char>(P.tb.p[0] | CASE_BIT)) or buf_put(&P.ctb, P.tb.p + 1, P.tb.n - P.lex.n - 1)
                or buf_put(&P.ctb, P.clex.p, P.clex.n)
                or sf_set(P.forms, local[0], <const uint8_t*>P.ctb.p, P.ctb.n)):
            return E_NOMEM
    return 0

cdef inline void skip_ws(Parser* P) noexcept nogil:
    while P.pos < P.n and (P.src[P.pos] == 32 or P.src[P.pos] == 9):
        P.pos += 1

cdef inline int read_iri_term(Parser* P, Py_ssize_t* local) noexcept nogil:
    P.tb.n = 0
    if buf_byte(&P.tb, TERM_IRI):
        return E_NOMEM
    if read_iri(P, &P.tb):
        return E_PARSE
    local[0] = tt_intern(P.terms, P.tb.p, P.tb.n, 0)
    return E_NOMEM if local[0] < 0 else 0

cdef int parse_ntriples(Parser* P, QBuf* out, uint32_t graph) noexcept nogil:
    """Parse the whole document into out (local term indices); nothing is written."""
    cdef Py_ssize_t s, p, o
    cdef uint8_t c
    cdef int rc
    while True:
        # blank lines, comments, line ends
        while P.pos < P.n:
            c = P.src[P.pos]
            if c == 32 or c == 9 or c == 10 or c == 13:
                P.pos += 1
            elif c == 35:
                while P.pos < P.n and P.src[P.pos] != 10 and P.src[P.pos] != 13:
                    P.pos += 1
            else:
                break
        if P.pos >= P.n:
            return 0
        c = P.src[P.pos]
        if c == 60:
            rc = read_iri_term(P, &s)
        elif c == 95:
            rc = read_bnode(P, &s)
        else:
            return perr(P, P_SUBJECT, P.pos)
        if rc:
            return rc
        skip_ws(P)
        if P.pos >= P.n or P.src[P.pos] != 60:
            return perr(P, P_PREDICATE, P.pos)
        rc = read_iri_term(P, &p)
        if rc:
            return rc
        skip_ws(P)
        if P.pos >= P.n:
            return perr(P, P_OBJECT, P.pos)
        c = P.src[P.pos]
        if c == 60:
            rc = read_iri_term(P, &o)
        elif c == 95:
            rc = read_bnode(P, &o)
        elif c == 34:
            rc = read_literal(P, &o)
        else:
            return perr(P, P_OBJECT, P.pos)
        if rc:
            return rc
        skip_ws(P)
        if P.pos >= P.n or P.src[P.pos] != 46:
            return perr(P, P_DOT, P.pos)
        P.pos += 1
        skip_ws(P)
        if P.pos < P.n and P.src[P.pos] == 35:
            while P.pos < P.n and P.src[P.pos] != 10 and P.src[P.pos] != 13:
                P.pos += 1
        if P.pos < P.n and P.src[P.pos] != 10 and P.src[P.pos] != 13:
            return perr(P, P_EOL, P.pos)
        if qb_push(out, <uint32_t>s, <uint32_t>p, <uint32_t>o, graph):
            return E_NOMEM


cdef void parser_init(Parser* P, const uint8_t* src, size_t n, TTable* terms, StoredForms* forms) noexcept nogil:
    memset(P, 0, sizeof(Parser))
    P.src = src
    P.n = n
    P.terms = terms
    P.forms = forms

cdef void parser_free(Parser* P) noexcept nogil:
    """Free the parser's own buffers (not the document's term table)."""
    tt_free(&P.blanks)
    buf_free(&P.tb)
    buf_free(&P.lex)
    buf_free(&P.clex)
    buf_free(&P.ctb)

cdef tuple parse_error_args(Parser* P, data):
    """``(message, position, line, column)`` of the parser's error in ``data``."""
    cdef size_t pos = P.err_pos
    head = bytes(data[:pos])
    line = head.count(b"\n") + 1
    column = pos - (head.rfind(b"\n") + 1) + 1
    return PARSE_MESSAGES.get(P.err, "syntax error"), pos, line, column
