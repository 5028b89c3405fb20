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
random strings come from a generator seeded with ``(s, k)`` alone.

Two serializations are produced.  Turtle, as an LDP client sends it: the
subject is ``<>`` and every repository IRI is relative, so the bytes do not
depend on the server's address.  N-Triples, with absolute IRIs resolved
against the workload's ``base``, for systems that are driven in-process.
Both are built once per child and cached, so a runner can build them before
it starts the clock.

>>> w = Workload(children=3, seed=0)
>>> child = w.child(2)
>>> child.slug
'c00000002'
>>> len(child.triples)
200
>>> child.turtle == Workload(children=3, seed=0).child(2).turtle
True
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Iterator, Sequence

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


@dataclass(frozen=True)
class Child:
    """One child resource: its place in the workload and its graph.

    ``triples`` are ``(predicate_iri, object, object_is_iri)`` with the child
    as implicit subject; repository IRIs in objects are stored as paths
    relative to the repository base (``parent`` or ``parent/c00000001``) so
    the same child serves any base.
    """

    index: int
    parent: str  # path of the parent container, relative to the base
    triples: tuple[tuple[str, str, bool], ...]
    base: str = DEFAULT_BASE  # repository base for the absolute (N-Triples) form

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
    def turtle(self) -> bytes:
        """The graph as an LDP client PUTs it: ``<>`` subject, relative IRIs."""
        lines = [
            f"@prefix ext: <{EXT_NS}> .",
            f"@prefix int: <{INT_NS}> .",
            f"@prefix lit: <{LIT_NS}> .",
            "",
            "<>",
        ]
        depth = self.path.count("/")
        body = []
        for predicate, obj, is_iri in self.triples:
            name = _prefixed(predicate)
            if is_iri:
                target = _relative(obj, depth) if not obj.startswith("http") else obj
                body.append(f"    {name} <{target}>")
            else:
                body.append(f'    {name} "{escape_string(obj)}"')
        lines.append(" ;\n".join(body) + " .")
        return ("\n".join(lines) + "\n").encode("utf-8")

    @cached_property
    def ntriples(self) -> bytes:
        """The graph in N-Triples, every IRI resolved against ``base``."""
        base = self.base
        subject = f"<{base}{self.path}> "
        out = []
        for predicate, obj, is_iri in self.triples:
            if is_iri:
                target = obj if obj.startswith("http") else base + obj
                out.append(f"{subject}<{predicate}> <{target}> .\n")
            else:
                out.append(f'{subject}<{predicate}> "{escape_string(obj)}" .\n')
        return "".join(out).encode("utf-8")


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
class Workload:
    """Parameters of the data set; ``child(k)`` builds graph ``k``."""

    children: int = 10_000
    triples: int = 200
    literal_length: int = 64
    seed: int = 0
    parent: str = DEFAULT_PARENT
    base: str = DEFAULT_BASE

    def __post_init__(self) -> None:
        if self.children < 1:
            raise ValueError(f"children must be positive, got {self.children}")
        if self.triples < 4:
            raise ValueError(f"triples per child must be at least 4, got {self.triples}")
        if not _SEGMENT.fullmatch(self.parent):
            raise ValueError(f"parent must be one path segment of letters, digits, '.', '_' or '-', got {self.parent!r}")
        if self.literal_length < 1:
            raise ValueError(f"literal length must be positive, got {self.literal_length}")

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
        n_ext, n_int, n_lit = self.group_sizes
        rng = random.Random(f"lakebench:{self.seed}:{index}")

        internal = [f"{self.parent}/c{j:08d}" for j in recent]
        internal += [self.parent] * (RECENT_CHILDREN + 1 - len(internal))

        triples: list[tuple[str, str, bool]] = []
        for i in range(n_ext):
            triples.append((f"{EXT_NS}p{i}", f"{EXTERNAL_BASE}e{i % EXTERNAL_OBJECTS}", True))
        for i in range(n_int):
            triples.append((f"{INT_NS}p{i}", internal[i % len(internal)], True))
        seen: set[str] = set()
        for i in range(n_lit):
            value = "".join(rng.choices(ALPHABET, k=self.literal_length))
            while value in seen:  # distinct within the child, even for length 1
                value = "".join(rng.choices(ALPHABET, k=self.literal_length))
            seen.add(value)
            triples.append((f"{LIT_NS}p{i // 2}", value, False))
        return Child(index=index, parent=self.parent, triples=tuple(triples), base=self.base)

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
