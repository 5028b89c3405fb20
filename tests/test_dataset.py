from __future__ import annotations

import random

import pytest
import rdflib
from rdflib.compare import isomorphic

from lakebench._workload import LiteralDrawer, random_floats
from lakebench.dataset import (
    ALPHABET,
    EXT_NS,
    INT_NS,
    LIT_NS,
    DataSet,
    escape_string,
    seed_key,
)


def _groups(child):
    ext = [(p, o) for p, o, iri in child.triples if p.startswith(EXT_NS)]
    int_ = [(p, o) for p, o, iri in child.triples if p.startswith(INT_NS)]
    lit = [(p, o) for p, o, iri in child.triples if p.startswith(LIT_NS)]
    return ext, int_, lit


def test_default_child_has_the_spec_counts():
    w = DataSet()
    child = w.child(123)
    ext, int_, lit = _groups(child)
    assert len(child.triples) == 200
    assert (len(ext), len(int_), len(lit)) == (50, 50, 100)
    assert len({p for p, _ in ext}) == 50 and len({o for _, o in ext}) == 5
    assert len({p for p, _ in int_}) == 50 and len({o for _, o in int_}) == 5
    assert len({p for p, _ in lit}) == 50 and len({o for _, o in lit}) == 100
    assert all(len(o) == 64 for _, o in lit)


def test_internal_objects_are_parent_and_recent_children():
    w = DataSet(children=10)
    _, int_, _ = _groups(w.child(6))
    assert {o for _, o in int_} == {"parent", "parent/c00000005", "parent/c00000004",
                                    "parent/c00000003", "parent/c00000002"}
    # Fewer than 4 earlier children: the parent fills the gap.
    _, int_, _ = _groups(w.child(1))
    assert {o for _, o in int_} == {"parent", "parent/c00000000"}
    _, int_, _ = _groups(w.child(0))
    assert {o for _, o in int_} == {"parent"}


def test_recent_can_be_given_by_a_client():
    w = DataSet(children=100)
    _, int_, _ = _groups(w.child(50, recent=[40, 30]))
    assert {o for _, o in int_} == {"parent", "parent/c00000040", "parent/c00000030"}


def test_deterministic_by_seed_and_index():
    a, b = DataSet(seed=3), DataSet(seed=3)
    assert a.child(9).turtle == b.child(9).turtle
    assert a.child(9).ntriples == b.child(9).ntriples
    assert a.child(9).turtle != a.child(10).turtle
    assert DataSet(seed=4).child(9).turtle != a.child(9).turtle


def test_turtle_does_not_depend_on_base():
    assert DataSet(base="http://a/").child(5).turtle == DataSet(base="http://b/x/").child(5).turtle


def test_proportions_kept_for_other_sizes():
    w = DataSet(triples=20, literal_length=1)
    ext, int_, lit = _groups(w.child(0))
    assert (len(ext), len(int_), len(lit)) == (5, 5, 10)
    assert len({o for _, o in lit}) == 10  # still distinct with 1-character literals
    assert all(len(o) == 1 for _, o in lit)


def test_alphabet_is_wide_and_tricky():
    assert len(ALPHABET) >= 600
    assert '"' in ALPHABET and "\\" in ALPHABET and "\n" in ALPHABET
    assert any(ord(c) > 0xFFFF for c in ALPHABET)
    scripts = {"greek": "\u03b1", "cyrillic": "\u0436", "cjk": "\u4e00", "arabic": "\u0628"}
    assert all(c in ALPHABET for c in scripts.values())


@pytest.mark.parametrize("index", [0, 3, 17])
def test_turtle_and_ntriples_round_trip_isomorphic(index):
    w = DataSet(children=20, seed=11)
    child = w.child(index)
    from_turtle = rdflib.Graph().parse(data=child.turtle, format="turtle", publicID=child.uri)
    from_nt = rdflib.Graph().parse(data=child.ntriples, format="nt")
    assert len(from_turtle) == 200
    assert isomorphic(from_turtle, from_nt)
    # The literals come back exactly, escapes and all.
    literals = {str(o) for o in from_nt.objects() if isinstance(o, rdflib.Literal)}
    assert literals == {o for p, o, iri in child.triples if not iri}
    subjects = set(from_turtle.subjects())
    assert subjects == {rdflib.URIRef(child.uri)}


def test_tricky_characters_survive_pyoxigraph():
    import pyoxigraph as ox

    w = DataSet(children=50, seed=1, literal_length=300)
    child = w.child(42)
    values = {q.object.value for q in ox.parse(child.turtle, format=ox.RdfFormat.TURTLE,
                                                 base_iri=child.uri) if isinstance(q.object, ox.Literal)}
    assert values == {o for _, o, iri in child.triples if not iri}
    assert any("\\" in v or '"' in v for v in values)


def test_escape_string():
    assert escape_string('x"y\\z\n\t') == 'x\\"y\\\\z\\n\\t'


@pytest.mark.parametrize("kwargs", [{"children": 0}, {"triples": 2}, {"literal_length": 0}])
def test_bad_parameters_rejected(kwargs):
    with pytest.raises(ValueError):
        DataSet(**kwargs)


def test_child_index_out_of_range():
    with pytest.raises(IndexError):
        DataSet(children=3).child(3)


# The graphs themselves, pinned: sha256 over each child's N-Triples then its
# Turtle, for children 0-999 and 99,000-99,999 of a 100,000-child workload
# with seed 0.  Computed with the original pure-Python generator
# (random.Random(f"lakebench:{seed}:{index}").choices); any change to the
# data set, the random stream or the serializations changes these digests.
PINNED_DIGESTS = {
    64: "7f1b6a5e5ca9db4f5ae23b09866c06cf3bdafabe51008ded5c267e14ded477be",
    1024: "a5abe1de2b3aa7f5bbadc981734c31257546926f93e7c9b3c30ceaac13c17ff0",
}


@pytest.mark.parametrize("literal_length", sorted(PINNED_DIGESTS))
def test_graphs_are_pinned(literal_length):
    import hashlib

    w = DataSet(children=100_000, seed=0, literal_length=literal_length)
    digest = hashlib.sha256()
    for index in [*range(1000), *range(99_000, 100_000)]:
        child = w.child(index)
        digest.update(child.ntriples)
        digest.update(child.turtle)
    assert digest.hexdigest() == PINNED_DIGESTS[literal_length]


# -- the fast generator against the definition ---------------------------------
# The reference below is the original generator, Python's random and plain
# string formatting, kept small: what docs/workload.rst defines.

def reference_literals(seed: int, index: int, count: int, length: int) -> list[str]:
    rng = random.Random(f"lakebench:{seed}:{index}")
    seen: set[str] = set()
    out = []
    for _ in range(count):
        value = "".join(rng.choices(ALPHABET, k=length))
        while value in seen:  # distinct within the child
            value = "".join(rng.choices(ALPHABET, k=length))
        seen.add(value)
        out.append(value)
    return out


def reference_ntriples(child) -> bytes:
    subject = f"<{child.base}{child.path}> "
    out = []
    for predicate, obj, is_iri in child.triples:
        if is_iri:
            out.append(f"{subject}<{predicate}> <{obj if obj.startswith('http') else child.base + obj}> .\n")
        else:
            out.append(f'{subject}<{predicate}> "{escape_string(obj)}" .\n')
    return "".join(out).encode("utf-8")


def reference_turtle(child) -> bytes:
    body = []
    for predicate, obj, is_iri in child.triples:
        ns, local = predicate.split("#")
        name = f"{ns.rsplit('/', 1)[1]}:{local}"
        if is_iri:
            body.append(f"    {name} <{obj if obj.startswith('http') else '../' + obj}>")
        else:
            body.append(f'    {name} "{escape_string(obj)}"')
    head = f"@prefix ext: <{EXT_NS}> .\n@prefix int: <{INT_NS}> .\n@prefix lit: <{LIT_NS}> .\n\n<>\n"
    return (head + " ;\n".join(body) + " .\n").encode("utf-8")


def _combos(count: int, seed: int):
    """(seed, index, literal_length, triples), drawn at random but the same every run."""
    rng = random.Random(seed)
    for _ in range(count):
        yield (rng.randrange(-1000, 10**9), rng.randrange(10**6), rng.choice([1, 2, 3, 5, 17, 64, 100, 333, 1024]),
               rng.choice([4, 5, 6, 7, 9, 13, 50, 199, 200, 201, 202, 203]))


@pytest.mark.parametrize("seed,index,literal_length,triples", [
    (0, 0, 1, 4), (0, 1, 1, 7), (5, 99_999, 1, 203), (0, 3, 2, 200), (7, 12, 3, 5),
    *_combos(12, seed=15),
])
def test_generator_matches_the_definition(seed, index, literal_length, triples):
    w = DataSet(children=10**6, triples=triples, literal_length=literal_length, seed=seed)
    child = w.child(index)
    n_ext, n_int, n_lit = w.group_sizes
    literals = [o for _, o, iri in child.triples if not iri]
    assert literals == reference_literals(seed, index, n_lit, literal_length)
    assert [o for _, o, iri in child.triples[:n_ext]] == [f"http://external.example/resource/e{i % 5}"
                                                         for i in range(n_ext)]
    assert child.ntriples == reference_ntriples(child)
    assert child.turtle == reference_turtle(child)


def test_redraw_rule_is_kept():
    # 1-character literals repeat often: each repeat is drawn again, and
    # the stream goes on from there; 300 of 750 possible values.
    w = DataSet(children=10, triples=600, literal_length=1, seed=2)
    assert [o for _, o, iri in w.child(4).triples if not iri] == reference_literals(2, 4, 300, 1)


def test_given_links_other_base_and_parent_serialize_as_the_definition():
    w = DataSet(children=1000, triples=13, literal_length=9, seed=8, parent="p-1", base="http://h:8/x/")
    child = w.child(500, recent=[498, 300])
    assert child.ntriples == reference_ntriples(child)
    assert child.turtle == reference_turtle(child)
    assert {o for _, o, iri in child.triples if iri and not o.startswith("http")} == {
        "p-1", "p-1/c00000498", "p-1/c00000300"}


@pytest.mark.parametrize("text", ["lakebench:0:0", "lakebench:-5:123456", "lakebench:123456789012345:7"])
def test_random_stream_is_pythons(text):
    seed, index = (int(part) for part in text.split(":")[1:])
    python = random.Random(text)
    # 2,000 doubles: the 624-word state is refilled several times.
    assert random_floats(seed_key(seed, index), 2000) == [python.random() for _ in range(2000)]


@pytest.mark.parametrize("number", [0, 1, 2**32 - 1, 2**32, 2**100 + 12345])
def test_seeding_from_any_number_of_words_is_pythons(number):
    words = max(1, (number.bit_length() + 31) // 32)
    python = random.Random(number)
    assert random_floats(number.to_bytes(4 * words, "little"), 5) == [python.random() for _ in range(5)]


def test_literal_drawer_refuses_a_bad_alphabet():
    with pytest.raises(ValueError):
        LiteralDrawer("aa", [b"a", b"a"])  # not distinct: equal strings would differ as symbols
    with pytest.raises(ValueError):
        LiteralDrawer("ab", [b"a"])
    with pytest.raises(ValueError):
        LiteralDrawer("ab", [b"a", b"bbbbb"])


def test_impossible_distinct_literals_are_refused():
    with pytest.raises(ValueError, match="distinct"):
        DataSet(triples=4 * len(ALPHABET), literal_length=1)  # 2 * 750 literals of 1 character


def test_prepared_child_takes_the_bytes_as_given():
    w = DataSet(children=10)
    child = w.prepared_child(3, b"nt", b"ttl")
    assert (child.ntriples, child.turtle, child.path) == (b"nt", b"ttl", "parent/c00000003")
