"""The data set every system receives: N children under one parent container.

This module is the definition of the data set (docs/workload.rst describes it
for readers).  It knows nothing about systems or timing.

A child graph has ``triples`` triples whose subject is the child resource, in
three groups kept in the proportion 1:1:2 (50/50/100 for the default 200):

* **external**: predicates ``ext#p0..`` (one per triple), objects 5 distinct
  external IRIs, ``p{i}`` -> ``e{i % 5}``;
* **internal**: predicates ``int#p0..`` (one per triple), objects 5 IRIs of
  resources in the repository: the parent and the (up to) 4 children most
  recently created by the same client, the parent repeated while fewer exist;
* **literal**: predicates ``lit#p0..`` each used twice, objects all distinct
  random strings of ``literal_length`` characters over a wide alphabet
  (several scripts, ``"``, ``\\``, newline, tab, characters outside the BMP).

Graph ``k`` of seed ``s`` is the same for every system and every run: its
random strings come from a generator seeded with ``(s, k)`` alone.  That
generator is Python's ``random.Random(f"lakebench:{s}:{k}")`` and its
``choices``; :mod:`lakebench._workload` (Cython, ``ext/_workload.pyx``) draws
the very same stream in C, so a child costs microseconds, not milliseconds,
and the harness keeps up with the fastest system.

Two serializations are produced.  Turtle, as an LDP client sends it: the
subject is ``<>`` and every repository IRI is relative, so the bytes do not
depend on the server's address.  N-Triples, with absolute IRIs resolved
against the data set's ``base``, for systems that are driven in-process.
Both are built once per child, on first use, and cached, so a runner can
build them before it starts the clock.  Every byte that does not depend on
the child (predicates, external objects, punctuation) is laid out once per
data set (:class:`_Layout`); a child only fills in its subject, its internal
links and its literals.

>>> w = DataSet(children=3, seed=0)
>>> child = w.child(2)
>>> child.slug
'c00000002'
>>> len(child.triples)
200
>>> child.turtle == DataSet(children=3, seed=0).child(2).turtle
True
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Iterator, Sequence

from lakebench._workload import LiteralDrawer

NS = "http://lakebench.example/ns/"
EXT_NS = NS + "ext#"
INT_NS = NS + "int#"
LIT_NS = NS + "lit#"
EXTERNAL_BASE = "http://external.example/resource/"
LDP_CONTAINS = "http://www.w3.org/ns/ldp#contains"

#: The repository base used by systems driven in-process.
DEFAULT_BASE = "http://localhost/lakebench/"
DEFAULT_PARENT = "parent"
EXTERNAL_OBJECTS = 5
RECENT_CHILDREN = 4

# The largest data set lakebench builds.  Beyond these a worker runs out of
# memory building one child, or a run cannot end in any time worth waiting.
MAX_CHILDREN = 10_000_000
MAX_TRIPLES = 100_000  # per child
MAX_LITERAL_LENGTH = 1 << 20  # characters: 1 MiB
#: Literal characters in one child (its literal triples x the literal
#: length): up to 4 bytes each, held in both serializations at once, so one
#: child stays under about 150 MB.  The default child holds 6,400; the
#: documented payload sweep's largest, 200 triples of 65,536, 6,553,600.
MAX_LITERAL_CHARS = 1 << 24
_SEGMENT = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")


def _alphabet() -> str:
    """The code points literals are drawn from (at least 600, many scripts)."""
    ranges = [
        (0x20, 0x7E),  # printable ASCII, including '"' and '\\'
        (0xC0, 0xFF),  # Latin-1 letters
        (0x391, 0x3C9),  # Greek
        (0x410, 0x44F),  # Cyrillic
        (0x5D0, 0x5EA),  # Hebrew
        (0x621, 0x64A),  # Arabic
        (0x905, 0x939),  # Devanagari
        (0x3041, 0x3096),  # Hiragana
        (0x4E00, 0x4E7F),  # CJK ideographs
        (0x1D400, 0x1D433),  # mathematical alphanumerics (outside the BMP)
        (0x1F600, 0x1F64F),  # emoticons (outside the BMP)
    ]
    chars = [chr(c) for lo, hi in ranges for c in range(lo, hi + 1)]
    chars += ["\n", "\t"]  # must be escaped by every serializer
    return "".join(chars)


ALPHABET = _alphabet()

# Escapes shared by Turtle and N-Triples short string literals ("...").
_STRING_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"})


def escape_string(value: str) -> str:
    r"""Escape a string for a ``"..."`` literal in Turtle or N-Triples.

    >>> escape_string('a"b\\c\nd')
    'a\\"b\\\\c\\nd'
    """
    return value.translate(_STRING_ESCAPES)


#: Draws literals over ALPHABET; each character's escaped UTF-8 is computed
#: here once, so serializing a literal is copying bytes.
_LITERALS = LiteralDrawer(ALPHABET, [escape_string(c).encode("utf-8") for c in ALPHABET])


def seed_key(seed: int, index: int) -> bytes:
    """The key words ``random.Random(f"lakebench:{seed}:{index}")`` seeds its generator with.

    ``random.seed`` (version 2, Python 3.2+) turns a str into the integer of
    its UTF-8 bytes followed by their SHA-512, and feeds that integer's
    32-bit words, least significant first, to the Mersenne Twister's
    ``init_by_array``.  These are those words, as little-endian bytes.

    >>> import random
    >>> from lakebench._workload import random_floats
    >>> python = random.Random("lakebench:0:7")
    >>> random_floats(seed_key(0, 7), 2) == [python.random(), python.random()]
    True
    """
    text = f"lakebench:{seed}:{index}".encode("utf-8")
    number = int.from_bytes(text + hashlib.sha512(text).digest(), "big")
    words = max(1, (number.bit_length() + 31) // 32)
    return number.to_bytes(4 * words, "little")


@dataclass(frozen=True)
class Child:
    """One child resource: its place in the data set and its graph.

    ``triples`` are ``(predicate_iri, object, object_is_iri)`` with the child
    as implicit subject; repository IRIs in objects are stored as paths
    relative to the repository base (``parent`` or ``parent/c00000001``) so
    the same child serves any base.  Built by :meth:`DataSet.child`; the
    graph (triples, serializations) is computed on first use.
    """

    dataset: DataSet
    index: int
    internal: tuple[str, ...]  # objects of the internal group, in order: paths relative to the base

    @property
    def parent(self) -> str:
        """Path of the parent container, relative to the base."""
        return self.dataset.parent

    @property
    def base(self) -> str:
        """Repository base for the absolute (N-Triples) form."""
        return self.dataset.base

    @property
    def slug(self) -> str:
        return f"c{self.index:08d}"

    @property
    def path(self) -> str:
        """Path of the child relative to the repository base."""
        return f"{self.parent}/{self.slug}"

    @property
    def uri(self) -> str:
        return self.base + self.path

    @cached_property
    def literal_values(self) -> list[str]:
        """The literal group's strings, in order."""
        w = self.dataset
        return _LITERALS.literals(seed_key(w.seed, self.index), w.group_sizes[2], w.literal_length)

    @cached_property
    def escaped_literals(self) -> list[bytes]:
        """The literals as both serializations write them between quotes: escaped, UTF-8."""
        w = self.dataset
        return _LITERALS.encoded_literals(seed_key(w.seed, self.index), w.group_sizes[2], w.literal_length)

    @cached_property
    def triples(self) -> tuple[tuple[str, str, bool], ...]:
        layout = self.dataset._layout
        objects = [*layout.external_objects, *self.internal, *self.literal_values]
        return tuple((p, o, i < layout.iri_objects) for i, (p, o) in enumerate(zip(layout.predicates, objects)))

    @cached_property
    def turtle(self) -> bytes:
        """The graph as an LDP client PUTs it: ``<>`` subject, relative IRIs."""
        layout = self.dataset._layout
        depth = self.path.count("/")
        pieces = layout.turtle_pieces.copy()
        written = {obj: f"<{obj if obj.startswith('http') else _relative(obj, depth)}>".encode("utf-8")
                   for obj in set(self.internal)}  # 5 distinct links, 50 objects by default
        pieces[layout.turtle_internal] = [written[obj] for obj in self.internal]
        pieces[layout.turtle_literal] = self.escaped_literals
        return b"".join(pieces)

    @cached_property
    def ntriples(self) -> bytes:
        """The graph in N-Triples, every IRI resolved against ``base``."""
        layout = self.dataset._layout
        base = self.base
        pieces = layout.ntriples_pieces.copy()
        pieces[layout.ntriples_subject] = [f"<{base}{self.path}>".encode("utf-8")] * len(layout.predicates)
        written = {obj: f"<{obj if obj.startswith('http') else base + obj}>".encode("utf-8")
                   for obj in set(self.internal)}
        pieces[layout.ntriples_internal] = [written[obj] for obj in self.internal]
        pieces[layout.ntriples_literal] = self.escaped_literals
        return b"".join(pieces)


class _Layout:
    r"""A data set's serializations with holes: every byte that is the same for all its children.

    A child's N-Triples are ``pieces`` with its subject, internal objects and
    literals put in the slots named by the ``ntriples_*`` slices; its Turtle
    the same with the ``turtle_*`` slices.  The literal slots lie between
    quotes already in the pieces.

    >>> layout = _Layout(DataSet(triples=4))
    >>> layout.turtle_pieces[0].decode().splitlines()[-2:]
    ['<>', '    ext:p0 ']
    >>> layout.turtle_pieces[layout.turtle_literal.start + 1], layout.turtle_pieces[-1]
    (b'" ;\n    lit:p0 "', b'" .\n')
    """

    def __init__(self, dataset: DataSet):
        n_ext, n_int, n_lit = dataset.group_sizes
        self.predicates = ([f"{EXT_NS}p{i}" for i in range(n_ext)] + [f"{INT_NS}p{i}" for i in range(n_int)]
                           + [f"{LIT_NS}p{i // 2}" for i in range(n_lit)])
        self.external_objects = [f"{EXTERNAL_BASE}e{i % EXTERNAL_OBJECTS}" for i in range(n_ext)]
        self.iri_objects = n_ext + n_int  # the objects before are IRIs, the rest literals
        # Objects fixed for the whole data set (external IRIs); None where a child fills in.
        fixed = [f"<{obj}>".encode("utf-8") for obj in self.external_objects] + [None] * (n_int + n_lit)
        quote = [b""] * self.iri_objects + [b'"'] * n_lit  # around each object

        # N-Triples, 4 pieces a triple: subject, " <predicate> ", object, " .\n".
        self.ntriples_pieces = []
        for predicate, obj, q in zip(self.predicates, fixed, quote):
            self.ntriples_pieces += [None, f" <{predicate}> ".encode("utf-8") + q, obj, q + b" .\n"]
        self.ntriples_subject = slice(0, None, 4)
        self.ntriples_internal = slice(4 * n_ext + 2, 4 * (n_ext + n_int), 4)
        self.ntriples_literal = slice(4 * (n_ext + n_int) + 2, None, 4)

        # Turtle: the prefixes and "<>", then "    name object" joined with " ;\n",
        # then " .\n": the objects at the odd places, the rest between them.
        header = f"@prefix ext: <{EXT_NS}> .\n@prefix int: <{INT_NS}> .\n@prefix lit: <{LIT_NS}> .\n\n<>\n"
        names = [_prefixed(predicate) for predicate in self.predicates]
        self.turtle_pieces = [header.encode("utf-8") + f"    {names[0]} ".encode("utf-8") + quote[0]]
        for i, obj in enumerate(fixed):
            following = f" ;\n    {names[i + 1]} ".encode("utf-8") + quote[i + 1] if i + 1 < len(fixed) else b" .\n"
            self.turtle_pieces += [obj, quote[i] + following]
        self.turtle_internal = slice(2 * n_ext + 1, 2 * (n_ext + n_int), 2)
        self.turtle_literal = slice(2 * (n_ext + n_int) + 1, None, 2)


def _prefixed(predicate: str) -> str:
    for prefix, ns in (("ext", EXT_NS), ("int", INT_NS), ("lit", LIT_NS)):
        if predicate.startswith(ns):
            return f"{prefix}:{predicate[len(ns):]}"
    return f"<{predicate}>"


def _relative(path: str, depth: int) -> str:
    """``path`` (relative to the base) as seen from a resource ``depth`` levels down.

    The child ``parent/c1`` sees ``parent/c0`` as ``c0`` and ``parent`` as
    ``../parent``: RFC 3986 resolution against the child's own IRI gives the
    absolute IRI back, whatever the base is.
    """
    return "../" * depth + path


@dataclass(frozen=True)
class DataSet:
    """Parameters of the data set; ``child(k)`` builds graph ``k``."""

    children: int = 10_000
    triples: int = 200
    literal_length: int = 64
    seed: int = 0
    parent: str = DEFAULT_PARENT
    base: str = DEFAULT_BASE

    def __post_init__(self) -> None:
        if not 1 <= self.children <= MAX_CHILDREN:
            raise ValueError(f"children must be from 1 to {MAX_CHILDREN:,}, got {self.children}")
        if self.triples < 4:
            raise ValueError(f"triples per child must be at least 4, got {self.triples}")
        if self.triples > MAX_TRIPLES:
            raise ValueError(f"triples per child must be at most {MAX_TRIPLES:,}, got {self.triples}")
        if not _SEGMENT.fullmatch(self.parent):
            raise ValueError(f"parent must be one path segment of letters, digits, '.', '_' or '-', got {self.parent!r}")
        if not 1 <= self.literal_length <= MAX_LITERAL_LENGTH:
            raise ValueError(f"literal length must be from 1 to {MAX_LITERAL_LENGTH:,}, got {self.literal_length}")
        n_lit = self.group_sizes[2]
        if n_lit * self.literal_length > MAX_LITERAL_CHARS:
            raise ValueError(f"a child would hold {n_lit * self.literal_length:,} literal characters "
                             f"({n_lit:,} literals of {self.literal_length:,}), over the {MAX_LITERAL_CHARS:,} "
                             "allowed: fewer triples or shorter literals")
        if self.literal_length < 4 and len(ALPHABET) ** self.literal_length < n_lit:
            raise ValueError(f"{n_lit} distinct literals of {self.literal_length} characters do not exist "
                             f"over {len(ALPHABET)} characters")

    @property
    def group_sizes(self) -> tuple[int, int, int]:
        """(external, internal, literal) triple counts: 1:1:2."""
        quarter = self.triples // 4
        return quarter, quarter, self.triples - 2 * quarter

    def recent(self, index: int) -> list[int]:
        """Children most recently created before ``index`` by a single client."""
        return [j for j in range(index - 1, index - 1 - RECENT_CHILDREN, -1) if j >= 0]

    def child(self, index: int, recent: Sequence[int] | None = None) -> Child:
        """Graph ``index``; ``recent`` overrides the siblings it links to.

        With several clients, each passes the indices it created itself
        (newest first), so every linked resource exists when referenced.
        """
        if not 0 <= index < self.children:
            raise IndexError(f"child {index} outside 0..{self.children - 1}")
        recent = list(self.recent(index) if recent is None else recent)[:RECENT_CHILDREN]
        linked = [f"{self.parent}/c{j:08d}" for j in recent]
        linked += [self.parent] * (RECENT_CHILDREN + 1 - len(linked))
        n_int = self.group_sizes[1]
        return Child(self, index, tuple(linked[i % len(linked)] for i in range(n_int)))

    def prepared_child(self, index: int, ntriples: bytes, turtle: bytes) -> Child:
        """Child ``index`` (single-client links) whose serializations were built elsewhere.

        For a consumer fed by a producer process (:mod:`lakebench.prefetch`):
        the bytes are taken as given, nothing is generated here.
        """
        child = self.child(index)
        child.__dict__.update(ntriples=ntriples, turtle=turtle)  # what the cached properties would hold
        return child

    @cached_property
    def _layout(self) -> _Layout:
        return _Layout(self)

    def __iter__(self) -> Iterator[Child]:
        for index in range(self.children):
            yield self.child(index)

    @property
    def parent_uri(self) -> str:
        return self.base + self.parent

    def describe(self) -> dict:
        """The parameters as recorded in results."""
        ext, int_, lit = self.group_sizes
        return {
            "children": self.children,
            "triples_per_child": self.triples,
            "groups": {"external": ext, "internal": int_, "literal": lit},
            "literal_length": self.literal_length,
            "seed": self.seed,
            "parent": self.parent,
            "alphabet_size": len(ALPHABET),
        }
