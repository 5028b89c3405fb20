"""LAKEsuperior 1.0.0a21, the seed report's second system, over LDP.

lakebench installs and starts it (:mod:`lakebench.systems.lakesuperior`: its
own virtualenv, prod mode, one gunicorn sync worker by default, loopback only,
no message queue route), drives it with the generic LDP client, watches the
gunicorn master and its workers and the repository directory (the LMDB
graph store and the empty binary store, not the logs), and stops the whole
process tree afterwards.  Given ``--system-url`` it uses that running
LAKEsuperior instead (memory and disk are then unknown).

**The workload as LAKEsuperior accepts it.**  LAKEsuperior parses a body
against an internal base (``info:fcres/<path>``), against which rdflib
cannot resolve a relative IRI such as ``<../parent/c00000003>``: the PUT
fails with HTTP 500.  It accepts repository IRIs written absolute, with its
own address, which it rewrites to its internal form; that is how its own
benchmark script sent them.  So each child goes out as the same Turtle with
every relative IRI resolved against the child's URL (:func:`absolute_iris`),
the same triples by RFC 3986.  The system hands the drivers a view of the
workload that serializes children this way (``workload``, set once the
server's address is known), so the rewriting happens when the graph is
built, before the clock starts, for both drivers.  The bodies carry no
server-managed triples (LAKEsuperior refuses them with 412), and their
repository IRIs name resources that exist (the parent and the 4 most recent
children of the same client), which matters because its referential
integrity is ``lenient``: a triple whose object is a missing repository
resource would be dropped without a word.

**Checked after the ingest**: :meth:`triples_total` first reads back the
first, middle and last child and compares the workload's triples stored
with those sent (a system that silently stored less would fail the run
rather than report flattering figures), then reports the total LAKEsuperior
counts in its store (its ``/admin/stats`` page): the children's triples
plus its own server-managed ones (creation dates, types, parent links).

**Durability** ``durable``: every write request runs in one LMDB write
transaction, and LAKEsuperior opens its LMDB environment with no flags
(no ``MDB_NOSYNC`` / ``MDB_NOMETASYNC``), so each commit is flushed to disk
before the response.
"""
from __future__ import annotations

import re
from functools import cached_property
from urllib.parse import urljoin

from lakebench.argtypes import Bounded
from lakebench.systems.base import Option, SystemFailure
from lakebench.systems.lakesuperior.config import DEFAULT_WORKERS
from lakebench.systems.lakesuperior.install import VERSION, LakesuperiorError
from lakebench.systems.lakesuperior.server import LDP_ROOT, start
from lakebench.systems.ldp import TURTLE, LabelledVersions, LdpSystem, expect
from lakebench.durability import Durability
from lakebench.work import KEPT, NONE, ON_REQUEST

#: The lexical tokens of Turtle that may hold ``<...>``: long and short
#: strings and comments (kept as they are), and IRI references (group 1).
_TOKENS = re.compile(
    rb'"""(?:[^"\\]|\\.|"(?!""))*"""'
    rb"|'''(?:[^'\\]|\\.|'(?!''))*'''"
    rb'|"(?:[^"\\\n\r]|\\.)*"'
    rb"|'(?:[^'\\\n\r]|\\.)*'"
    rb"|#[^\n\r]*"
    rb"|<([^<>\"{}|^`\\\x00-\x20]*)>",
    re.DOTALL,
)
_SCHEME = re.compile(rb"[A-Za-z][A-Za-z0-9+.-]*:")


def absolute_iris(turtle: bytes, base: str) -> bytes:
    """``turtle`` with every relative IRI reference resolved against ``base`` (RFC 3986).

    ``<>`` stays as it is (LAKEsuperior reads it as the resource itself);
    strings and comments are never touched, whatever they hold.

    >>> absolute_iris(b'<> <p> <../a/b>, "<c>" .', "http://h/r/a/x")
    b'<> <http://h/r/a/p> <http://h/r/a/b>, "<c>" .'
    """
    resolved: dict[bytes, bytes] = {}

    def resolve(match: re.Match) -> bytes:
        iri = match.group(1)
        if not iri or _SCHEME.match(iri):  # not an IRI, <>, or already absolute
            return match.group(0)
        out = resolved.get(iri)
        if out is None:
            out = resolved[iri] = b"<" + urljoin(base, iri.decode("utf-8")).encode("utf-8") + b">"
        return out

    return _TOKENS.sub(resolve, turtle)


class AbsoluteIriChild:
    """A child whose Turtle names repository resources by absolute IRI; all else is the child's."""

    def __init__(self, child, base: str):
        self._child = child
        self._base = base

    def __getattr__(self, name):
        return getattr(self._child, name)

    @cached_property
    def turtle(self) -> bytes:
        return absolute_iris(self._child.turtle, self._base + self._child.path)


class AbsoluteIriDataSet:
    """The workload, its children serialized with absolute repository IRIs for ``base``."""

    def __init__(self, dataset, base: str):
        self._dataset = dataset
        self.server_base = base

    def __getattr__(self, name):
        return getattr(self._dataset, name)

    def child(self, index: int, *args, **kwargs) -> AbsoluteIriChild:
        return AbsoluteIriChild(self._dataset.child(index, *args, **kwargs), self.server_base)

    def __iter__(self):
        for index in range(self._dataset.children):
            yield self.child(index)


class LakesuperiorSystem(LabelledVersions, LdpSystem):
    name = "lakesuperior"
    durability = Durability.DURABLE
    version = VERSION
    OPTIONS = {"server_workers": Option("gunicorn worker processes", Bounded(int, 1, 64),
                                        DEFAULT_WORKERS)}
    # Version snapshots on request (POST to fcr:versions); its message route is off as lakebench
    # configures it; a deleted resource is buried (a tombstone it can be resurrected from).
    WORK = {"versions": ON_REQUEST, "events": NONE, "tombstones": KEPT}
    DISK_PER_TRIPLE = 550  # 527-532 B at 2,000 children (docs/runs/users)

    @classmethod
    def option_values(cls, options: dict) -> dict:
        # A LAKEsuperior lakebench did not start (--system-url) runs as its owner set it up.
        return {} if options.get("system_url") else super().option_values(options)

    def start_server(self) -> str:
        self.server = None
        if self.options.get("system_url"):
            return self.options["system_url"]
        workers = int(self.options.get("server_workers") or DEFAULT_WORKERS)
        try:
            self.server = start(data_dir=self.data_dir / "lakesuperior", workers=workers)
        except LakesuperiorError as exc:
            raise SystemFailure(str(exc)) from None
        self.server_pid = self.server.pid
        return self.server.base_url

    def connect(self) -> None:
        super().connect()
        self.dataset = AbsoluteIriDataSet(self.dataset, self.base_url)

    def version_text(self) -> str | None:
        if self.server is None:  # a LAKEsuperior of the user's (--system-url)
            return super().version_text()
        workers = int(self.options.get("server_workers") or DEFAULT_WORKERS)
        return f"LAKEsuperior {VERSION} on Python 3.11 ({workers} gunicorn worker{'s' if workers > 1 else ''})"

    def prepare(self, child):
        if not isinstance(child, AbsoluteIriChild):  # e.g. from the runner's producer
            child = AbsoluteIriChild(child, self.base_url)
        child.turtle  # noqa: B018 - rewritten before the clock starts
        return child

    def create_child(self, child) -> None:
        if not isinstance(child, AbsoluteIriChild):  # a caller that did not use self.workload
            child = AbsoluteIriChild(child, self.base_url)
        super().create_child(child)

    def triples_total(self, children: int | None = None) -> int | None:
        self.check_stored(children=children)
        response = self._request("GET", self.base_url.replace(f"/{LDP_ROOT}", "/admin/stats", 1))
        if response.status != 200:
            return None
        match = re.search(rb"Total triples:\s*<strong>([\d,]+)</strong>", response.data)
        return int(match.group(1).replace(b",", b"")) if match else None

    def check_stored(self, sample: int = 3, children: int | None = None) -> None:
        """Read back ``sample`` children (first, middle, last of the ``children``
        created, default all the workload's) and compare their triples with those sent.

        Raises :class:`SystemFailure` when a child holds fewer or more of the
        workload's triples than were sent, or when one of its repository
        IRIs names nothing in the repository.
        """
        import pyoxigraph as ox

        from lakebench.dataset import NS

        n = self.dataset.children if children is None else children
        if n < 1:
            return
        indices = sorted({0, n // 2, n - 1})[:sample]
        for index in indices:
            child = self.dataset.child(index)
            url = self.base_url + child.path
            response = self._request("GET", url, headers={"Accept": TURTLE})
            expect(response, "GET", url, (200,))
            subject = ox.NamedNode(url)
            stored = [q for q in ox.parse(response.data, format=ox.RdfFormat.TURTLE, base_iri=url)
                      if q.subject == subject and q.predicate.value.startswith(NS)]
            sent = self.dataset.triples
            if len(stored) != sent:
                raise SystemFailure(
                    f"LAKEsuperior holds {len(stored)} of the {sent} triples sent for {url}: its "
                    "lenient referential integrity drops triples whose object is a repository IRI "
                    "that does not exist")
            internal = [q.object.value for q in stored
                        if isinstance(q.object, ox.NamedNode) and q.object.value.startswith(self.base_url)]
            for target in sorted(set(internal)):
                found = self._request("HEAD", target)
                if found.status != 200:
                    raise SystemFailure(f"{url} links to {target}, which answers HTTP {found.status}")

    def disk_path(self):
        return self.server.repository if self.server is not None else None

    def close(self) -> None:
        super().close()
        if getattr(self, "server", None) is not None:
            self.server.stop()
