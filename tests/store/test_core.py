"""The compiled core: term round trips, parsing, the on-disk layout read
independently with py-lmdb, the check, map growth."""
from __future__ import annotations

import struct
import subprocess
import sys

import lmdb
import pytest
import rdflib
from rdflib.compare import isomorphic

from lakebench import _codec, _store
from lakebench.store import LmdbStore, ParseError, StoreError, check
from lakebench.store.terms import DEFAULT_GRAPH, decode, iri, literal
from lakebench.dataset import DataSet

G = "http://ex.org/g"

EVERY_KIND = rb"""<http://ex.org/s> <http://ex.org/p> "plain" .
<http://ex.org/s> <http://ex.org/p> "quote \" backslash \\ newline \n tab \t cr \r bs \b ff \f" .
<http://ex.org/s> <http://ex.org/p> "non-BMP \U0001F600 \U0001D400 latin \u00E9 raw """ + "😀 ù".encode() + rb"""" .
<http://ex.org/s> <http://ex.org/p> "chat"@fr .
<http://ex.org/s> <http://ex.org/p> "hello"@en-GB .
<http://ex.org/s> <http://ex.org/p> "42"^^<http://www.w3.org/2001/XMLSchema#integer> .
<http://ex.org/s> <http://ex.org/p> "x"^^<http://www.w3.org/2001/XMLSchema#string> .
<http://ex.org/s> <http://ex.org/p> "" .
<http://ex.org/s> <http://ex.org/p> "controls \u0001 \u007F nul \u0000 end" .
<http://ex.org/s> <http://ex.org/p> _:b1 .
_:b1 <http://ex.org/q> _:b2.
_:b2 <http://ex.org/q> "bnode object" . # a comment
<http://ex.org/\u00E9t\u00E9> <http://ex.org/p> <http://ex.org/o#frag?q=1> .

# blank lines and comments are fine
"""


def test_every_term_kind_round_trips(store):
    assert store.ingest(EVERY_KIND, G) == 13
    out = store.serialize(graph=G, format="nt")
    expected = rdflib.Graph().parse(data=EVERY_KIND, format="nt")
    got = rdflib.Graph().parse(data=out, format="nt")
    assert isomorphic(expected, got)
    turtle = store.serialize(graph=G, format="turtle", prefixes={"ex": "http://ex.org/"})
    assert isomorphic(expected, rdflib.Graph().parse(data=turtle, format="turtle"))
    # and each term, decoded through rdflib, is exactly what rdflib parsed
    terms = {decode(t) for q in store.quads(graph=G) for t in q[:3] if not t.startswith(b"B")}
    assert terms == {t for triple in expected for t in triple if not isinstance(t, rdflib.BNode)}


def test_workload_child_round_trips(store, small_workload):
    child = small_workload.child(5)
    assert store.ingest(child.ntriples, child.uri) == 200
    out = store.serialize(graph=child.uri, format="nt")
    assert isomorphic(rdflib.Graph().parse(data=child.ntriples, format="nt"),
                      rdflib.Graph().parse(data=out, format="nt"))
    by_subject = store.serialize(subject=child.uri, format="turtle")
    assert len(rdflib.Graph().parse(data=by_subject, format="turtle")) == 200


def test_blank_nodes_are_scoped_to_their_document(store):
    doc = b"_:a <http://ex.org/p> _:b .\n"
    store.ingest(doc, G)
    store.ingest(doc, G)
    quads = store.quads(graph=G)
    assert len(quads) == 2  # two documents: four distinct blank nodes
    assert len({t for q in quads for t in (q[0], q[2])}) == 4


def test_duplicates_are_stored_once(store):
    doc = b"<http://ex.org/s> <http://ex.org/p> <http://ex.org/o> .\n" * 3
    assert store.ingest(doc, G) == 1
    assert store.ingest(doc, G) == 0
    assert store.ingest(doc, "http://ex.org/other") == 1
    assert len(store) == 2
    with store.read() as txn:
        assert txn.triple_count() == 1
        assert txn.count(s="Ihttp://ex.org/s".encode()) == 2


MALFORMED = [
    (b'<http://ex.org/s> <http://ex.org/p> "open .\n', "line break inside a string literal", 1, 44),
    (b'<http://ex.org/s> <http://ex.org/p> "open .', "unterminated string literal", 1, 37),
    (b"<http://ex.org/s> <http://ex.org/p> <o> .\n", "relative IRI", 1, 37),
    (b'<http://ex.org/s> "p" <http://ex.org/o> .\n', "expected a predicate", 1, 19),
    (b"<http://ex.org/s> <http://ex.org/p> <http://ex.org/o>\n", "expected '.'", 1, 54),
    (b'<http://ex.org/s> <http://ex.org/p> "x"@ .\n', "invalid language tag", 1, 40),
    (b'<http://ex.org/s> <http://ex.org/p> "\\q" .\n', "invalid escape", 1, 38),
    (b'<http://ex.org/s> <http://ex.org/p> "\xff" .\n', "invalid UTF-8", 1, 38),
    (b'<http://ex.org/s> <http://ex.org/p> "\\uD800" .\n', "invalid \\u", 1, 38),
    (b"<http://ex.org/a b> <http://ex.org/p> <http://ex.org/o> .\n", "invalid character in IRI", 1, 17),
    (b"<http://ex.org/s> <http://ex.org/p> <http://ex.org/o> . <http://ex.org/s>\n", "end of line", 1, 57),
    (b'<http://ex.org/s> <http://ex.org/p> "x"^^"y" .\n', "datatype IRI", 1, 42),
    (b"<http://ex.org/s> <http://ex.org/p> _: .\n", "blank node", 1, 37),
    (b'"s" <http://ex.org/p> <http://ex.org/o> .\n', "expected a subject", 1, 1),
    (b"<http://ex.org/s> <http://ex.org/p> <http://ex.org/o> .\n" * 2 + b"<http://ex.org/s> <http://ex.org/p> 12 .\n",
     "expected an object", 3, 37),
]


@pytest.mark.parametrize("doc, message, line, column", MALFORMED)
def test_malformed_ntriples_is_rejected_with_position_and_nothing_written(store, doc, message, line, column):
    store.ingest(b"<http://ex.org/x> <http://ex.org/p> <http://ex.org/y> .\n", G)
    before = (len(store), store.env.info()["last_txnid"])
    with store.read() as txn:
        terms = txn.term_count()
    with pytest.raises(ParseError) as err:
        store.ingest(doc, G, extra=[(G, G, G, G)])
    assert message in str(err.value)
    assert (err.value.line, err.value.column) == (line, column)
    assert err.value.position == doc.rfind(b"\n", 0, err.value.position) + column
    assert (len(store), store.env.info()["last_txnid"]) == before
    with store.read() as txn:
        assert txn.term_count() == terms


def test_reads_never_write(store):
    store.ingest(EVERY_KIND, G)
    txnid = store.env.info()["last_txnid"]
    with store.read() as txn:
        terms = txn.term_count()
    assert store.quads(s="http://ex.org/unknown") == []
    assert store.count(o=iri("http://ex.org/nope"), graph=G) == 0
    assert store.serialize(graph="http://ex.org/none", format="nt") == b""
    with store.read() as txn:
        assert txn.term_id(iri("http://ex.org/unknown")) == 0
        assert txn.term_count() == terms
    assert store.env.info()["last_txnid"] == txnid


def test_every_pattern_is_answered(store, small_workload):
    for child in list(small_workload)[:5]:
        store.ingest(child.ntriples, child.uri, extra=[(small_workload.parent_uri, "http://www.w3.org/ns/ldp#contains",
                                                         child.uri, small_workload.parent_uri)])
    everything = store.quads()
    assert len(everything) == len(store) == 5 * 201
    import itertools
    sample = everything[::97]
    for quad in sample:
        for mask in itertools.product([False, True], repeat=4):
            pattern = [t if keep else None for t, keep in zip(quad, mask)]
            expected = {q for q in everything if all(p is None or p == t for p, t in zip(pattern, q))}
            got = store.quads(*pattern)
            assert len(got) == len(set(got))
            assert set(got) == expected, pattern
            assert store.count(*pattern) == len(expected)


def test_a_scan_from_a_start_id_is_the_tail_of_the_whole_scan(store):
    """quads(s, p, start=id) and serialize(..., start=id) are the objects of id ``start`` and
    above, in id order: the scan a page of a container's children is read with."""
    parent, contains, graph = iri("http://ex.org/c"), iri("http://www.w3.org/ns/ldp#contains"), iri(G)
    # Children named out of their lexical order, and another predicate and subject around them.
    names = [f"http://ex.org/c/k{(k * 37) % 101:03d}" for k in range(101)]
    store.add([(parent, contains, iri(n), graph) for n in names]
              + [(parent, iri("http://ex.org/other"), iri(n), graph) for n in names[:7]]
              + [(iri("http://ex.org/d"), contains, iri(names[0]), graph)])
    with store.read() as txn:
        whole = list(txn.quad_ids(parent, contains, None, graph))
        assert [q[2] for q in whole] == sorted(q[2] for q in whole)  # in id order ...
        assert [txn.term(q[2]) for q in whole] == [iri(n) for n in names]  # ... the order they were named in
        for at in (0, 1, 17, 50, 100):
            start = whole[at][2]
            assert list(txn.quad_ids(parent, contains, None, graph, start=start)) == whole[at:]
            assert list(txn.quads(parent, contains, None, None, start=start)) == \
                [(parent, contains, iri(n), graph) for n in names[at:]]
            assert list(txn.quads(parent, contains, None, graph, start=start + 1)) == \
                [(parent, contains, iri(n), graph) for n in names[at + 1:]]
            text = b"".join(txn.serialize(parent, contains, None, graph, start=start))
            assert text.count(b"\n") == 101 - at
            assert text.startswith(b"<http://ex.org/c> <http://www.w3.org/ns/ldp#contains> <%s> ." % names[at].encode())
        assert list(txn.quads(parent, contains, None, graph, start=whole[-1][2] + 1)) == []
        for pattern in ((None, contains, None, None), (parent, None, None, None),
                        (parent, contains, iri(names[0]), None)):
            with pytest.raises(ValueError, match="start needs"):
                txn.quads(*pattern, start=5)


def test_graphs_sharing_subjects_are_read_and_emptied_exactly(tmp_path):
    """A graph is read from spoc through cs (its subjects): with subjects in
    several graphs and graphs of several subjects, every pattern matches
    the quads held, and removals keep cs exactly the pairs that are left."""
    import itertools
    s, t, u = (iri(f"http://ex.org/{x}") for x in "stu")
    p, q = iri("http://ex.org/p"), iri("http://ex.org/q")
    g, h, k = (iri(f"http://ex.org/graph/{x}") for x in "ghk")
    held = {(a, b, literal(f"{a[-1:]}{b[-1:]}{c[-1:]}{n}"), c)
            for a, b, c, n in itertools.product((s, t, u), (p, q), (g, h), range(3)) if (a, c) != (u, h)}
    held |= {(s, p, t, k), (s, p, t, g)}   # one triple in two graphs
    with LmdbStore(tmp_path / "store", log=False) as store:
        store.add(sorted(held))

        def agrees():
            everything = set(store.quads())
            assert everything == held
            for quad in sorted(held)[::5]:
                for mask in itertools.product([False, True], repeat=4):
                    pattern = [x if keep else None for x, keep in zip(quad, mask)]
                    expected = {x for x in held if all(y is None or y == z for y, z in zip(pattern, x))}
                    assert set(store.quads(*pattern)) == expected and store.count(*pattern) == len(expected)
            for graph in (g, h, k):
                expected = sorted({x[:3] for x in held if x[3] == graph})
                body = b"".join(store.iter_serialize(graph=graph, format="nt"))
                assert sorted(set(rdflib.Graph().parse(data=body, format="nt"))) == sorted(
                    tuple(decode(x) for x in triple) for triple in expected)
            problems = check(tmp_path / "store")
            assert problems == [], problems
            assert problems.summary["graph_subjects"] == len({(x[3], x[0]) for x in held})
            assert set(store.contexts()) == {x[3] for x in held}

        agrees()
        assert store.remove(s, None, None, g) == 6 + 1   # s's quads in g go; s stays in h and k
        held = {x for x in held if (x[0], x[3]) != (s, g)}
        agrees()
        assert store.remove(None, p, None, h) == 6        # t and s keep quads in h through q
        held = {x for x in held if (x[1], x[3]) != (p, h)}
        agrees()
        assert store.remove(None, None, None, k) == 1     # k empties: it is no graph any more
        held = {x for x in held if x[3] != k}
        agrees()
        assert k not in store.contexts()


def _py_hash(term: bytes) -> int:
    """The on-disk term hash, written again from its definition (docs/store.rst)."""
    M = (1 << 64) - 1

    def fmix(h):
        h ^= h >> 33
        h = (h * 0xFF51AFD7ED558CCD) & M
        h ^= h >> 33
        h = (h * 0xC4CEB9FE1A85EC53) & M
        return h ^ (h >> 33)

    n = len(term)
    h = 0x9E3779B97F4A7C15 ^ ((n * 0x87C37B91114253D5) & M)
    full = n - n % 8
    for i in range(0, full, 8):
        w = (int.from_bytes(term[i:i + 8], "little") * 0x87C37B91114253D5) & M
        w = ((w << 31) | (w >> 33)) & M
        h ^= (w * 0x4CF5AD432745937F) & M
        h = ((((h << 27) | (h >> 37)) & M) * 5 + 0x52DCE729) & M
    w = int.from_bytes(term[full:], "little")
    h ^= fmix(w ^ 0x2545F4914F6CDD1D)
    return fmix(h)


def _py_expand(value: bytes) -> bytes:
    """The encoded term of a compact i2l value (docs/store.rst, "Layout"),
    decoded here independently of the core: the kind letter in upper case,
    the head up to its NUL as it is, then code points in 7-bit groups."""
    kind, rest = value[:1], value[1:]
    head = b""
    if kind in (b"g", b"d"):
        cut = rest.index(b"\0") + 1
        head, rest = rest[:cut], rest[cut:]
    chars, code, shift = [], 0, 0
    for byte in rest:
        code |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            chars.append(chr(code))
            code, shift = 0, 0
    assert shift == 0, "a code point cut short"
    return kind.upper() + head + "".join(chars).encode("utf-8")


@pytest.mark.parametrize("filed", ["all filed", "some unfiled"])
def test_layout_read_independently_with_py_lmdb(tmp_path, small_workload, filed):
    path = tmp_path / "store"
    children = list(small_workload)[:3]
    with LmdbStore(path) as store:   # too few ids to file any
        for child in children[:2]:
            store.ingest(child.ntriples, child.uri)
        with store.read() as txn:
            first_terms = txn.term_count()
    if filed == "all filed":
        LmdbStore(path, log=False).close()   # a writer without the log files every id at open
    with LmdbStore(path) as store:
        store.ingest(children[2].ntriples, children[2].uri)
        store.ingest(EVERY_KIND, G)
        expected = set(store.quads())
    env = lmdb.open(str(path), max_dbs=16, readonly=True)
    dbs = {name: env.open_db(name.encode(), dupsort=name in ("t2i", *_store.INDEX_ORDER, "cs"),
                             dupfixed=name in ("t2i", *_store.INDEX_ORDER, "cs"),
                             integerkey=name in ("i2t", "i2l"), create=False)
           for name in _store.DB_NAMES}
    literal_bit = 1 << 31
    with env.begin() as txn:
        assert struct.unpack(">I", txn.get(b"format", db=dbs["meta"]))[0] == _store.FORMAT_VERSION
        others = {struct.unpack("=I", k)[0]: v for k, v in txn.cursor(db=dbs["i2t"])}  # native
        stored = {struct.unpack("=I", k)[0]: v for k, v in txn.cursor(db=dbs["i2l"])}
        # literals in i2l under ids with the top bit, in their compact form
        # (every lexical form here is UTF-8), the other kinds in i2t; the
        # other 31 bits number every term from 1, one counter for both
        assert stored and all(i & literal_bit and t[:1] in b"lgd" for i, t in stored.items())
        literals = {i: _py_expand(t) for i, t in stored.items()}
        assert all(t[:1] in b"LGD" and len(stored[i]) <= len(t) for i, t in literals.items())
        assert others and all(not i & literal_bit and t[:1] in b"IB" for i, t in others.items())
        terms = {**others, **literals}
        assert sorted(i & ~literal_bit for i in terms) == list(range(1, len(terms) + 1))
        # t2i holds the ids numbered up to meta's terms_filed, and none above
        filed_upto = struct.unpack(">I", txn.get(b"terms_filed", db=dbs["meta"]))[0]
        assert filed_upto == (first_terms if filed == "all filed" else 0) < len(terms)
        hashes = {(struct.unpack(">Q", k)[0], struct.unpack(">I", v)[0]) for k, v in txn.cursor(db=dbs["t2i"])}
        assert hashes == {(_py_hash(t), i) for i, t in terms.items() if i & ~literal_bit <= filed_upto}
        assert len(set(terms.values())) == len(terms)  # every term stored once
        assert set(_store.INDEX_ORDER) == {"spoc", "posc", "ospc"}
        for name, order in _store.INDEX_ORDER.items():
            quads = set()
            for k, v in txn.cursor(db=dbs[name]):
                ids = dict(zip(order.replace(":", ""), struct.unpack(">I", k) + struct.unpack(">III", v)))
                quads.add(tuple(terms[ids[x]] for x in "spoc"))
            assert quads == expected, name
        # cs: each graph's subjects, once, as big-endian ids
        pairs = [(terms[struct.unpack(">I", k)[0]], terms[struct.unpack(">I", v)[0]])
                 for k, v in txn.cursor(db=dbs["cs"])]
        assert sorted(pairs) == sorted({(q[3], q[0]) for q in expected})
    env.close()


def _old_store(path, version: int, terms: dict[int, bytes], quads: list[tuple[int, int, int, int]],
               declared: list[int] = ()) -> None:
    """Write, with py-lmdb, a store as formats 1 to 4 laid it out: four quad
    indices (cspo the fourth; format 4: three, and cs), every id filed in
    t2i, the graphs ``declared`` empty; formats 1 and 2 hold every term in
    i2t, formats 3 and 4 literals in i2l (ids with the literal bit), as
    encoded terms."""
    env = lmdb.open(str(path), max_dbs=16, map_size=1 << 24)
    quad_dbs = ("spoc", "posc", "ospc") + (("cspo",) if version < 4 else ())
    names = ("meta", "t2i", "i2t", *quad_dbs, "ns", "graphs") + (("i2l",) if version >= 3 else ()) +\
        (("cs",) if version >= 4 else ())
    fixed = ("t2i", *quad_dbs, "cs")
    dbs = {name: env.open_db(name.encode(), dupsort=name in fixed, dupfixed=name in fixed,
                             integerkey=name in ("i2t", "i2l")) for name in names}
    with env.begin(write=True) as txn:
        txn.put(b"format", struct.pack(">I", version), db=dbs["meta"])
        for tid, term in terms.items():
            txn.put(struct.pack("=I", tid), term, db=dbs["i2l" if tid & _store.ID_LITERAL_BIT else "i2t"])
            txn.put(struct.pack(">Q", _py_hash(term)), struct.pack(">I", tid), db=dbs["t2i"])
        for q in quads:
            for name in quad_dbs:
                key, *values = (q["spoc".index(x)] for x in name)
                txn.put(struct.pack(">I", key), struct.pack(">III", *values), db=dbs[name])
            if version >= 4:
                txn.put(struct.pack(">I", q[3]), struct.pack(">I", q[0]), db=dbs["cs"])
        for graph in declared:
            txn.put(struct.pack(">I", graph), b"", db=dbs["graphs"])
    env.close()


def _format_of(path) -> tuple[int, set[str]]:
    """The format a store records and its databases' names (py-lmdb)."""
    env = lmdb.open(str(path), max_dbs=16, readonly=True)
    try:
        with env.begin() as txn:
            names = {k.decode() for k, _ in txn.cursor()}
            meta = env.open_db(b"meta", txn=txn, create=False)
            return struct.unpack(">I", txn.get(b"format", db=meta))[0], names
    finally:
        env.close()


def test_a_store_of_format_2_keeps_its_literals_in_i2t_and_takes_new_ones_in_i2l(tmp_path):
    path = tmp_path / "store"
    s, p, old, g = iri("http://ex.org/s"), iri("http://ex.org/p"), literal("old value"), iri("http://ex.org/g")
    _old_store(path, 2, {1: s, 2: p, 3: old, 4: g}, [(1, 2, 3, 4)])
    new = literal("new value")
    with LmdbStore(path) as store:
        assert store.quads(o=old) == [(s, p, old, g)]
        assert store.add([(s, p, new, g), (s, p, old, g)]) == 1
        with store.read() as txn:
            assert txn.term_id(old) == 3    # an old literal keeps its plain id, in i2t
            assert txn.term_id(new) == 5 | _store.ID_LITERAL_BIT
        assert set(store.quads(s=s)) == {(s, p, old, g), (s, p, new, g)}
        assert set(store.quads(graph=g)) == {(s, p, old, g), (s, p, new, g)}
    problems = check(path)
    assert problems == [] and problems.summary["terms"] == 5 and problems.summary["graph_subjects"] == 1
    assert _format_of(path) == (_store.FORMAT_VERSION, set(_store.DB_NAMES))


@pytest.mark.parametrize("version", [1, 2, 3])
def test_an_older_store_is_refused_read_only_and_upgraded_by_a_writable_open(tmp_path, version):
    """Format 4 and later read a graph through cs, which an older store
    lacks: a read-only open says how to upgrade it; a writable open fills cs from
    cspo (each graph's subjects, once), deletes cspo and keeps the graphs
    declared empty."""
    path = tmp_path / "store"
    lit = _store.ID_LITERAL_BIT if version == 3 else 0
    s, t, p, g, h, k = (iri(f"http://ex.org/{x}") for x in "stpghk")
    v1, v2 = literal("one"), literal("two")
    terms = {1: s, 2: t, 3: p, 4: g, 5: h, 6 | lit: v1, 7 | lit: v2, 8: k}
    quads = [(1, 3, 6 | lit, 4), (1, 3, 7 | lit, 4), (2, 3, 6 | lit, 4), (1, 3, 6 | lit, 5)]
    _old_store(path, version, terms, quads, declared=[8])
    with pytest.raises(StoreError, match=f"a store of format {version}, an older lakebench's: "
                                         "open it once for writing to upgrade it"):
        LmdbStore(path, readonly=True)
    with pytest.raises(StoreError, match=f"format {version}"):
        check(path)
    with LmdbStore(path) as store:
        assert sorted(store.quads(graph=g)) == sorted([(s, p, v1, g), (s, p, v2, g), (t, p, v1, g)])
        assert store.quads(graph=h) == [(s, p, v1, h)]
        assert set(store.contexts()) == {g, h, k}
    assert _format_of(path) == (_store.FORMAT_VERSION, set(_store.DB_NAMES))   # cspo deleted
    problems = check(path)
    assert problems == [] and problems.summary["graph_subjects"] == 3 and problems.summary["graphs"] == 2
    with LmdbStore(path, readonly=True) as store:
        assert store.count(graph=g) == 3


def test_a_store_of_format_4_reads_its_literals_as_they_are_and_stores_new_ones_compact(tmp_path):
    """Format 5 stores literals compact in i2l; the encoded terms a store of
    format 4 holds there are read as they are (no rewrite), read-only too,
    and a writable open gives none of them a second id."""
    path = tmp_path / "store"
    lit = _store.ID_LITERAL_BIT
    s, p, g = iri("http://ex.org/s"), iri("http://ex.org/p"), iri("http://ex.org/g")
    old, new = literal("ancien café 世界 😀", lang="fr"), literal("nouveau café 世界 😀", lang="fr")
    _old_store(path, 4, {1: s, 2: p, 3: g, 4 | lit: old}, [(1, 2, 4 | lit, 3)])
    with LmdbStore(path, readonly=True) as store:
        assert store.quads(o=old) == [(s, p, old, g)]
    with LmdbStore(path) as store:
        assert store.add([(s, p, old, g), (s, p, new, g)]) == 1
        with store.read() as txn:
            assert txn.term_id(old) == 4 | lit and txn.term_id(new) == 5 | lit and txn.term_count() == 5
        assert set(store.quads(graph=g)) == {(s, p, old, g), (s, p, new, g)}
    LmdbStore(path, log=False).close()   # files every id, each under its encoded term's hash
    env = lmdb.open(str(path), max_dbs=16, readonly=True)
    with env.begin() as txn:
        i2l = env.open_db(b"i2l", txn=txn, integerkey=True, create=False)
        stored = {struct.unpack("=I", k)[0]: v for k, v in txn.cursor(db=i2l)}
    env.close()
    assert stored[4 | lit] == old and stored[5 | lit][:1] == b"g" and _py_expand(stored[5 | lit]) == new
    assert len(stored[5 | lit]) < len(new)
    problems = check(path)
    assert problems == [] and problems.summary["hash_entries"] == 5
    assert _format_of(path)[0] == _store.FORMAT_VERSION == 7


@pytest.mark.parametrize("version", [5, 6])
def test_a_store_of_format_5_or_6_reads_as_it_is_and_a_writable_open_marks_it_7(tmp_path, version):
    """Format 6 changed no byte of the layout: it marks a store that an older
    lakebench must refuse, since a crash may have left its last commit cut
    (commit.intent), which only this one undoes.  Format 7 adds t2i's young
    level (t2y0, t2y1): read as it is, an older store has none (and check says
    nothing of it); opened for writing, it gets an empty one."""
    path = tmp_path / "store"
    s, p, o, g = (iri(f"http://ex.org/{x}") for x in "spog")
    _old_store(path, version, {1: s, 2: p, 3: o, 4: g}, [(1, 2, 3, 4)])
    with LmdbStore(path, readonly=True) as store:
        assert store.quads() == [(s, p, o, g)]
        with store.read() as txn:
            assert txn.term_id(o) == 3
    assert _format_of(path) == (version, set(_store.DB_NAMES) - {"t2y0", "t2y1"})  # a read-only open writes nothing
    assert check(path) == []
    with LmdbStore(path) as store:
        assert store.count() == 1
    assert _format_of(path) == (7, set(_store.DB_NAMES))
    assert check(path) == []


def test_a_read_only_open_of_a_format_6_store_stops_reading_once_a_writer_upgrades_it(tmp_path):
    """Read as it is, a format-6 store has no young level in that open; a
    writer in another process that upgrades it may file ids there, which
    the open would miss: its next transaction says so instead."""
    path = tmp_path / "store"
    s, p, o, g = (iri(f"http://ex.org/{x}") for x in "spog")
    _old_store(path, 6, {1: s, 2: p, 3: o, 4: g}, [(1, 2, 3, 4)])
    with LmdbStore(path, readonly=True) as store:
        assert store.count() == 1
        subprocess.run([sys.executable, "-c", "import sys; from lakebench.store import LmdbStore; "
                        "LmdbStore(sys.argv[1]).close()", str(path)], check=True)
        with pytest.raises(StoreError, match="upgraded by a writer since this read-only open"):
            store.count()
    with LmdbStore(path, readonly=True) as store:   # opened again: the young level is read
        assert store.count() == 1


def test_an_upgrade_grows_a_full_map_and_a_store_without_cspo_is_refused(tmp_path):
    """The upgrade writes in the opening transaction: a map too small for it
    is grown there; a store that claims an older format but lacks cspo
    (damage) is refused rather than left with no graph readable."""
    path = tmp_path / "store"
    n = 20_000
    terms = {1: iri("http://ex.org/p"), **{i: iri(f"http://ex.org/r{i}") for i in range(2, n + 2)}}
    _old_store(path, 3, terms, [(i, 1, i, i) for i in range(2, n + 2)])
    assert (path / "data.mdb").stat().st_size > 1 << 20
    with LmdbStore(path, log=False, map_size=1 << 20) as store:   # the pages it holds, then full
        assert store.count(graph=iri("http://ex.org/r7")) == 1
    assert check(path) == []
    broken = tmp_path / "broken"
    _old_store(broken, 3, {1: iri("http://ex.org/s")}, [(1, 1, 1, 1)])
    env = lmdb.open(str(broken), max_dbs=16)
    with env.begin(write=True) as txn:
        txn.drop(env.open_db(b"cspo", txn=txn, dupsort=True, dupfixed=True, create=False), delete=True)
    env.close()
    with pytest.raises(StoreError, match="a store of format 3 without its cspo index"):
        LmdbStore(broken)
    assert _format_of(broken)[0] == 3


def test_a_subject_id_of_0_in_cs_is_an_error_not_an_endless_scan(tmp_path):
    path = tmp_path / "store"
    s, p, g = iri("http://ex.org/s"), iri("http://ex.org/p"), iri("http://ex.org/g")
    with LmdbStore(path, log=False) as store:
        store.add([(s, p, literal("v"), g)])
        with store.read() as txn:
            graph = txn.term_id(g)
    env = lmdb.open(str(path), max_dbs=16)
    with env.begin(write=True) as txn:   # damage: 0 sorts first among the graph's subjects
        assert txn.put(struct.pack(">I", graph), struct.pack(">I", 0),
                       db=env.open_db(b"cs", txn=txn, dupsort=True, dupfixed=True, create=False))
    env.close()
    read = ("import sys\nfrom lakebench.store import LmdbStore, StoreError\nfrom lakebench.store.terms import iri\n"
            "with LmdbStore(sys.argv[1], readonly=True) as store:\n"
            "    try:\n        store.quads(graph=iri('http://ex.org/g'))\n"
            "    except StoreError as exc:\n        print(exc)\n")
    result = subprocess.run([sys.executable, "-c", read, str(path)], capture_output=True, text=True, timeout=60)
    assert "corrupted entry" in result.stdout, result.stderr


def test_a_quad_naming_a_missing_term_is_an_error_not_the_end_of_the_scan(tmp_path):
    path = tmp_path / "store"
    s, p, g = iri("http://ex.org/s"), iri("http://ex.org/p"), iri("http://ex.org/g")
    with LmdbStore(path, log=False) as store:
        store.add([(s, p, literal(f"value {i}"), g) for i in range(3)])
        with store.read() as txn:
            gone = txn.term_id(literal("value 1"))
    env = lmdb.open(str(path), max_dbs=16)
    i2l = env.open_db(b"i2l", integerkey=True, create=False)
    with env.begin(write=True) as txn:   # damage: the literal's term is lost, its quad stays
        assert txn.delete(struct.pack("=I", gone), db=i2l)
    env.close()
    with LmdbStore(path, readonly=True) as store:
        for read in (lambda: store.quads(s=s), lambda: store.serialize(graph=g, format="nt"),
                     lambda: store.serialize(graph=g, format="turtle")):
            with pytest.raises(StoreError, match="names a term id that is not stored"):
                read()


def test_a_containers_iris_sit_together_apart_from_the_literals(tmp_path):
    """The layout's point (docs/store.rst, "Layout"): the children's IRIs,
    which a listing of their container reads, fill a few pages of i2t, not
    one page each between their literals."""
    with LmdbStore(tmp_path / "store") as store:
        for child in DataSet(children=200, seed=7):
            store.ingest(child.ntriples, child.uri)
        with store.read() as txn:
            stats = txn.db_stats()
    assert stats["i2t"]["entries"] >= 200 and stats["i2l"]["entries"] == 200 * 100
    assert stats["i2t"]["leaf_pages"] * 50 < stats["i2l"]["leaf_pages"]


def test_check_passes_and_finds_damage(tmp_path, small_workload):
    path = tmp_path / "store"
    with LmdbStore(path, log=False) as store:  # every id filed in t2i at once
        for child in list(small_workload)[:3]:
            store.ingest(child.ntriples, child.uri)
    problems = check(path)
    assert problems == []
    assert problems.summary["quads"] == 600
    assert problems.summary["graphs"] == 3
    assert problems.summary["terms"] == problems.summary["hash_entries"]
    # damage: drop one entry of posc and one hash entry, with an independent writer
    env = lmdb.open(str(path), max_dbs=16)
    posc = env.open_db(b"posc", dupsort=True, dupfixed=True, create=False)
    t2i = env.open_db(b"t2i", dupsort=True, dupfixed=True, create=False)
    with env.begin(write=True) as txn:
        cur = txn.cursor(db=posc)
        assert cur.first()
        cur.delete()
        cur = txn.cursor(db=t2i)
        assert cur.last()
        cur.delete()
    env.close()
    problems = check(path)
    assert any("missing from posc" in p for p in problems)
    assert any("posc holds 599 entries" in p for p in problems)
    assert any("missing from the hash index" in p for p in problems)
    # damage to cs: a subject listed under a graph it has no quad in, then a graph's subject lost
    env = lmdb.open(str(path), max_dbs=16)
    cs = env.open_db(b"cs", dupsort=True, dupfixed=True, create=False)
    stray = _store.ID_LITERAL_BIT | 1   # a literal: the subject of no quad
    with env.begin(write=True) as txn:
        cur = txn.cursor(db=cs)
        assert cur.first()
        graph, subject = cur.item()
        assert txn.put(graph, struct.pack(">I", stray), db=cs, dupdata=True)
    env.close()   # one environment per file and process: LMDB's rule
    problems = check(path)
    assert f"cs lists subject {stray} under graph {struct.unpack('>I', graph)[0]}, which holds no quad of it"\
        in problems
    env = lmdb.open(str(path), max_dbs=16)
    cs = env.open_db(b"cs", dupsort=True, dupfixed=True, create=False)
    with env.begin(write=True) as txn:
        assert txn.delete(graph, subject, db=cs)
    env.close()
    problems = check(path)
    assert any(f"(s={struct.unpack('>I', subject)[0]}, " in p and "cs does not list its subject under its graph" in p
               for p in problems)
    assert check(tmp_path / "nowhere") != []


def test_hash_collisions_are_told_apart(tmp_path):
    """A second id filed under a term's hash (a collision) is never mistaken for it."""
    path = tmp_path / "store"
    a, b = iri("http://ex.org/a"), iri("http://ex.org/b")
    with LmdbStore(path, log=False) as store:  # every id filed in t2i at once
        store.add([(a, a, a, DEFAULT_GRAPH), (b, b, b, DEFAULT_GRAPH)])
        with store.read() as txn:
            ida, idb = txn.term_id(a), txn.term_id(b)
    env = lmdb.open(str(path), max_dbs=16)
    t2i = env.open_db(b"t2i", dupsort=True, dupfixed=True, create=False)
    with env.begin(write=True) as txn:  # b's id also under a's hash, sorting first
        txn.put(struct.pack(">Q", _py_hash(a)), struct.pack(">I", idb), db=t2i)
    env.close()
    with LmdbStore(path) as store:
        with store.read() as txn:
            assert txn.term_id(a) == ida
            assert txn.term_id(b) == idb
        assert store.count(s=a) == 1
        assert store.add([(a, a, b, DEFAULT_GRAPH)]) == 1  # log mode: leaves nothing new to file
        with store.read() as txn:
            assert txn.term_id(a) == ida and txn.term_count() == 3  # a, b, the default graph
        problems = store.check()
    assert problems.summary["hash_collisions"] == 1
    assert problems == [f"t2i: term {idb} is filed under a hash that is not its own",
                        "t2i holds 4 entries but i2t and i2l hold 3 terms filed in it"]


def test_map_grows_when_full_and_loses_nothing(tmp_path, small_workload):
    path = tmp_path / "store"
    with LmdbStore(path, durability="nosync", map_size=64 << 10) as store:
        for child in small_workload:
            store.ingest(child.ntriples, child.uri)
        assert store.env.info()["map_size"] > 64 << 10
        assert len(store) == 20 * 200
    assert check(path).summary["quads"] == 20 * 200


def test_map_full_inside_a_pending_transaction_is_replayed(tmp_path, small_workload):
    with LmdbStore(tmp_path / "s", durability="nosync", map_size=64 << 10) as store:
        store.begin()
        for child in small_workload:
            store.ingest(child.ntriples, child.uri)
        assert store.count() == 20 * 200
        store.commit()
        assert len(store) == 20 * 200


def test_render_term_escapes():
    assert _store.render_ntriples_term(b'L\ta"b\\\x00\x7f') == b'"\\ta\\"b\\\\\\u0000\\u007F"'
    assert _store.render_ntriples_term(b"Dhttp://ex.org/t\x00v") == b'"v"^^<http://ex.org/t>'
    with pytest.raises(ValueError):
        _store.render_ntriples_term(b"Gen-no-separator")


def test_a_literal_that_is_not_utf8_is_stored_as_it_is_and_read_back(tmp_path):
    """Literals whose lexical form is UTF-8 are stored compact; raw bytes
    given through the API that are not UTF-8 have no compact form and are
    stored as they are: both read back unchanged and are found again."""
    path = tmp_path / "store"
    s, p, g = iri("http://ex.org/s"), iri("http://ex.org/p"), iri("http://ex.org/g")
    raw, text = b"L\xff\xfe not UTF-8 \xed\xa0\x80", literal("déjà vu \U0001d400", datatype="http://ex.org/t")
    with LmdbStore(path) as store:
        assert store.add([(s, p, raw, g), (s, p, text, g)]) == 2
        assert store.add([(s, p, raw, g), (s, p, text, g)]) == 0   # each found again: no second id
        assert set(store.quads(s=s)) == {(s, p, raw, g), (s, p, text, g)}
        assert store.quads(o=raw) == [(s, p, raw, g)] and store.quads(o=text) == [(s, p, text, g)]
    env = lmdb.open(str(path), max_dbs=16, readonly=True)
    with env.begin() as txn:
        i2l = env.open_db(b"i2l", txn=txn, integerkey=True, create=False)
        stored = sorted(v for _, v in txn.cursor(db=i2l))
    env.close()
    assert stored == sorted([raw, _codec.stored_literal(text)]) and _py_expand(_codec.stored_literal(text)) == text
    assert check(path) == []


def test_the_parser_makes_the_same_stored_form_as_the_codec(tmp_path):
    """The parser builds a literal's compact form as it decodes the document
    (escapes included); it must be byte for byte what ``stored_literal``
    makes of the encoded term, or a term would have two stored forms."""
    import random

    from lakebench.dataset import ALPHABET, escape_string

    rng = random.Random(5)
    pool = ALPHABET + "\x00\x7f\x80\u07ff\u0800\u3fff\u4000\uffff\U00010000\U0010ffff"
    lines, values = [], []
    for i in range(300):
        value = "".join(rng.choice(pool) for _ in range(rng.randrange(0, 30)))
        text = escape_string(value)
        if i % 3 == 0:   # some characters written as \\u / \\U escapes
            text = "".join(f"\\U{ord(ch):08X}" if rng.random() < 0.3 and ch not in '"\\\\' else ch for ch in text)
        suffix = ["", "@en-GB", "^^<http://ex.org/type>"][i % 3]
        lines.append(f'<http://ex.org/s> <http://ex.org/p{i}> "{text}"{suffix} .')
        values.append(value)
    path = tmp_path / "store"
    with LmdbStore(path) as store:
        store.ingest("\n".join(lines).encode(), iri("http://ex.org/g"))
        literals = {q[2] for q in store.quads()}
    expected = {literal(v, lang="en-GB" if i % 3 == 1 else None, datatype="http://ex.org/type" if i % 3 == 2 else None)
                for i, v in enumerate(values)}
    assert literals == expected   # read back as they were written
    env = lmdb.open(str(path), max_dbs=16, readonly=True)
    with env.begin() as txn:
        i2l = env.open_db(b"i2l", txn=txn, integerkey=True, create=False)
        stored = {v for _, v in txn.cursor(db=i2l)}
    env.close()
    assert stored == {_codec.stored_literal(t) for t in literals} and len(stored) == len(literals)


def test_check_reports_a_damaged_compact_literal_once_and_a_compact_value_in_i2t(tmp_path):
    """A compact literal that does not decode is one problem (no hash to
    check it by); i2t holds encoded terms only, so a compact value there is
    damage too."""
    path = tmp_path / "store"
    s, p, g = iri("http://ex.org/s"), iri("http://ex.org/p"), iri("http://ex.org/g")
    with LmdbStore(path, log=False) as store:   # every id filed in t2i
        store.add([(s, p, literal("é"), g)])
    assert check(path) == []
    env = lmdb.open(str(path), max_dbs=16)
    with env.begin(write=True) as txn:
        i2l = env.open_db(b"i2l", txn=txn, integerkey=True, create=False)
        i2t = env.open_db(b"i2t", txn=txn, integerkey=True, create=False)
        (key, value), = list(txn.cursor(db=i2l))
        assert value == b"l\xe9\x01"
        txn.put(key, b"l\xe9", db=i2l)                  # its code point cut short
        iri_key = struct.pack("=I", 1)
        assert txn.get(iri_key, db=i2t) == s
        txn.put(iri_key, b"lfoo", db=i2t)               # a compact literal where an IRI was
    env.close()
    problems = list(check(path))
    literal_id = struct.unpack("=I", key)[0]
    assert problems.count(f"term {literal_id}: invalid encoding") == 1
    assert "term 1: invalid encoding" in problems
    assert f"term {literal_id}: missing from the hash index" not in problems


def test_a_scan_made_from_python_yields_nothing():
    from lakebench._scan import Scan, iter_batches

    assert Scan().next_batch() == [] and list(iter_batches(Scan())) == []
    with pytest.raises(TypeError):
        next(Scan())
