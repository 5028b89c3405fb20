"""The tiny interface every measured system implements.

A system knows one repository and nothing about timing: the driver
(``lakebench.drivers``) holds the only clock, like YCSB's DB wrapper.  One
instance lives in one fresh worker process with its own data directory.

What every HTTP system's requests share is here too: :class:`HttpAccess`,
the credentials and TLS trust for a server lakebench does not start
(``--system-url``), read from the environment or a netrc file, never from a
command line, and written nowhere.
"""
from __future__ import annotations

import base64
import io
import ipaddress
import json
import os
import ssl
import stat
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, MutableMapping

from lakebench.dataset import Child, DataSet
from lakebench.durability import Durability
from lakebench.work import record as work_record


class SystemFailure(RuntimeError):
    """A system could not do what was asked (server down, bad reply, ...)."""


class NotApplicable(Exception):
    """The system cannot do this kind of operation at all (no binaries in-process, no SPARQL, ...).

    Not a failure: a workload that needs it is reported "not applicable" for the system.
    """


@dataclass(frozen=True)
class Retrieval:
    """The parent's representation exactly as a client received it.

    The workload counts its containment triples after the clock stops, so the
    count is checked from what was really returned, for every system alike.
    """

    #: The serialized representation: whole, or in the chunks an in-process store streamed it in
    #: (joined, the parent of a million children would be held twice at once: ~47 MB each).
    body: bytes | tuple[bytes, ...]
    parent_uri: str  # IRI of the parent in that representation
    content_type: str = "text/turtle"

    @property
    def size(self) -> int:
        """The representation's length in bytes."""
        return len(self.body) if isinstance(self.body, bytes) else sum(map(len, self.body))

    def reader(self) -> io.RawIOBase:
        """The representation as a binary stream, for a parser that reads as it goes (no joined copy).

        >>> Retrieval((b"<a> <b> ", b"<c> ."), "a").reader().read(), Retrieval(b"x", "a").size
        (b'<a> <b> <c> .', 1)
        """
        if isinstance(self.body, bytes):
            return io.BytesIO(self.body)
        return _ChunksReader(self.body)


class _ChunksReader(io.RawIOBase):
    """A raw stream over a sequence of byte chunks, read in order.

    A read returns at most the rest of one chunk, as a raw stream may: a parser that asks for
    megabytes at a time (pyoxigraph's grow to 4 MiB) then holds no buffer of that size.
    """

    def __init__(self, chunks: tuple[bytes, ...]):
        self._chunks = iter(chunks)
        self._current = memoryview(b"")

    def readable(self) -> bool:
        return True

    def _next(self) -> memoryview:
        while not self._current:
            chunk = next(self._chunks, None)
            if chunk is None:
                break
            self._current = memoryview(chunk)
        return self._current

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            return self.readall()
        current = self._next()
        taken, self._current = current[:size], current[size:]
        return bytes(taken)

    def readinto(self, buffer) -> int:
        current = self._next()
        n = min(len(buffer), len(current))
        buffer[:n] = current[:n]
        self._current = current[n:]
        return n


@dataclass(frozen=True)
class Page:
    """One page of the parent (LDP Paging 1.0) as a client received it: its
    representation, and the URL of the next page (None on the last one).
    ``paged`` is False when the system answered the paging client with the
    whole parent instead (it does not page, or the parent fits in one page)."""

    retrieval: Retrieval
    next_url: str | None
    paged: bool = True


@dataclass(frozen=True)
class Option:
    """One ``--system-option KEY=VALUE`` a system takes (its ``OPTIONS``).

    ``type`` reads the text (a :mod:`lakebench.argtypes` type, which states
    its ``range`` and raises ``argparse.ArgumentTypeError``); ``default`` is
    what the system does without it, recorded in the results alike.
    """

    help: str
    type: Callable[[str], object]
    default: object = None

    def describe(self) -> str:
        """The option as --help and the docs state it: what it does, its range, its default."""
        return f"{self.help}, {self.type.range} (default: {self.default})"


class System:
    """Base class: one repository, driven by the runner.

    Subclasses set ``name`` and ``durability`` and implement the five calls.
    ``transport`` says whether requests cross HTTP or stay in-process, so
    the report can group rows honestly.
    """

    name: str = "?"
    #: When a write is acknowledged (lakebench.durability: durable, nosync,
    #: volatile, or a server's own default).
    durability: Durability = Durability.UNKNOWN
    transport: str = "in-process"
    #: The ``--system-option`` keys this system takes (``lakebench run``
    #: refuses a key no chosen system takes, or a value outside its range).
    OPTIONS: dict[str, Option] = {}
    #: What a write costs it beyond storing the triples, as lakebench runs it
    #: (lakebench.work: versions, events, access, tombstones); an item left out is unknown.
    WORK: dict[str, str] = {}
    #: The disk it takes per triple held, in bytes, as measured (the runs kept in docs/runs), so
    #: that a case that cannot fit is refused before it starts; None: not known, or no disk.
    DISK_PER_TRIPLE: float | None = None

    def __init__(self, data_dir: Path, dataset: DataSet, options: dict | None = None):
        self.data_dir = Path(data_dir)
        self.dataset = dataset
        self.options = dict(options or {})

    @classmethod
    def check_options(cls, values: dict) -> None:
        """Raise ValueError, in one line, if the options given (``values``: those of OPTIONS) do not go together."""

    @classmethod
    def option_values(cls, options: dict) -> dict:
        """What each of OPTIONS is in a run given ``options``, defaults included (recorded in results).

        >>> System.option_values({"server_workers": 2})
        {}
        """
        return {key: options.get(key, option.default) for key, option in cls.OPTIONS.items()}

    def version_text(self) -> str | None:
        """The software measured and its version, one line (``"pyoxigraph 0.4.11"``), recorded
        with every run as ``version``; None when the system cannot tell."""
        return None

    def work(self) -> dict[str, dict[str, str]]:
        """What a write costs it (recorded with every run as ``work``): what it declares with its
        options, and what :meth:`probe_work` saw."""
        return work_record(self.declared_work(), self.probe_work())

    def declared_work(self) -> dict[str, str]:
        """:attr:`WORK`, as this run's options make it."""
        return dict(self.WORK)

    def probe_work(self) -> dict[str, str]:
        """The items a client can observe, as observed now (after the workload); none by default."""
        return {}

    # -- the calls the runner times -------------------------------------
    def setup(self) -> None:
        """Create an empty repository holding only the parent container."""
        raise NotImplementedError

    def prepare(self, child: Child) -> Child:
        """The child as this system will send it, built before the clock starts
        (default: as the data set made it)."""
        return child

    def create_child(self, child: Child) -> None:
        """Store one child graph and its ``ldp:contains`` membership."""
        raise NotImplementedError

    def retrieve_parent(self) -> Retrieval:
        """Read the parent's whole representation (Turtle), as a client would."""
        raise NotImplementedError

    # -- operations of the other workloads (lakebench.workloads) ---------
    # A system that cannot do one raises NotApplicable (the default); a
    # workload asks :meth:`supports` before it is run, so such a system's
    # row says "not applicable" instead of failing.  Paths are relative to
    # the repository base, like ``Child.path``.

    @classmethod
    def supports(cls, operation: str) -> bool:
        """Whether this system implements ``operation`` (one of the methods below).

        >>> System.supports("create_binary")
        False
        """
        return getattr(cls, operation) is not getattr(System, operation)

    def create_binary(self, path: str, data: bytes, content_type: str) -> None:
        """Store ``data`` as a binary (LDP NonRDFSource) at ``path``, contained by its parent."""
        raise NotApplicable(f"{self.name} stores no binaries")

    def get_binary(self, path: str) -> bytes:
        """The bytes of the binary at ``path``."""
        raise NotApplicable(f"{self.name} stores no binaries")

    def create_container(self, path: str) -> None:
        """Create an empty container at ``path``, contained by the container its parent path names."""
        raise NotApplicable(f"{self.name} has no containers")

    def list_container(self, path: str) -> Retrieval:
        """Read the container at ``path`` as a client lists it (its ``ldp:contains`` included)."""
        raise NotApplicable(f"{self.name} has no containers")

    def create_resource(self, child: Child, path: str) -> None:
        """Store ``child``'s graph at ``path`` (not necessarily under the workload's parent)."""
        raise NotApplicable(f"{self.name} cannot place a graph at a path")

    def get_resource(self, path: str) -> Retrieval:
        """Read the RDF resource at ``path`` (its own triples, as N-Triples or Turtle)."""
        raise NotApplicable(f"{self.name} cannot read one resource")

    def replace_literals(self, path: str, replacements: list[tuple[str, str, str]]) -> None:
        """In the resource at ``path``, replace each ``(predicate IRI, old literal, new literal)``:
        over HTTP one SPARQL Update PATCH, in-process the same change through the store's API."""
        raise NotApplicable(f"{self.name} cannot update a resource")

    def create_version(self, path: str) -> str:
        """Take a version of the resource at ``path`` as it is now (a memento: Fedora API 4.3.3,
        ``POST <path>/fcr:versions``); the version's URL, which :meth:`get_version` reads."""
        raise NotApplicable(f"{self.name} keeps no versions")

    def list_versions(self, path: str) -> list[str]:
        """The URLs of the versions of the resource at ``path`` (its TimeMap), oldest first."""
        raise NotApplicable(f"{self.name} keeps no versions")

    def get_version(self, path: str, url: str) -> Retrieval:
        """The version at ``url`` of the resource at ``path``: its triples as the version holds
        them (``parent_uri``: the subject they have there)."""
        raise NotApplicable(f"{self.name} keeps no versions")

    def first_page(self, page_size: int) -> Page:
        """The parent's first page, asked for as a client that pages asks (LDP Paging 1.0:
        ``Prefer: return=representation; max-member-count="N"``), redirect followed."""
        raise NotApplicable(f"{self.name} has no pages")

    def next_page(self, url: str) -> Page:
        """The page at ``url``, a :attr:`Page.next_url` of the one before."""
        raise NotApplicable(f"{self.name} has no pages")

    def query(self, sparql: str) -> list[tuple]:
        """The rows of a SPARQL SELECT over the repository's union of graphs, as tuples of strings."""
        raise NotApplicable(f"{self.name} has no SPARQL")

    # -- facts the runner reads outside the clock (after the driver's timing) --
    def triples_total(self, children: int | None = None) -> int | None:
        """Triples the repository holds now, or None if it cannot say.

        ``children``: how many of the data set's children were created (fewer
        than the data set's when a budget stopped the ingest; None: all)."""
        return None

    def internals(self) -> dict | None:
        """What the system reports of its own work, recorded as ``internals``
        (the in-process LMDB store: its batch commits); None when nothing.
        Read after :meth:`close`."""
        return None

    def pid(self) -> int:
        """The process whose CPU and memory are the system's cost."""
        return os.getpid()

    def disk_path(self) -> Path | None:
        """The directory whose size is the system's on-disk cost (None: in memory)."""
        return self.data_dir

    def close(self) -> None:
        """Release the repository; after this, disk size is final."""


#: Where ``lakebench run`` (and the locustfiles) read the HTTP Basic credentials of a server
#: lakebench does not start; never from a command line.
USER_VARIABLE = "LAKEBENCH_SYSTEM_USER"
PASSWORD_VARIABLE = "LAKEBENCH_SYSTEM_PASSWORD"
#: How the credentials and the CA bundle cross into a worker process: one JSON value in its
#: environment (never its argv, where ``ps`` shows it), removed as the worker reads it.
WORKER_VARIABLE = "LAKEBENCH_SYSTEM_ACCESS"
#: What to do instead, said by every refusal of credentials.
CREDENTIALS_HOW = (f"set {USER_VARIABLE} and {PASSWORD_VARIABLE}, or give --system-netrc FILE "
                   "(a netrc file only you can read)")


@dataclass(frozen=True)
class HttpAccess:
    """How a server lakebench does not start is reached: HTTP Basic credentials, and the CA bundle
    its TLS certificate is verified against (None: the system's trusted CAs).

    Verification is always on; the credentials are sent with every request, and written nowhere:
    the repr hides the password, and they cross into a worker in its environment
    (:meth:`environment`, :meth:`from_environment`).

    >>> access = HttpAccess("alice", "s3cret", source="test")
    >>> access.authorization, "s3cret" in repr(access)
    ('Basic YWxpY2U6czNjcmV0', False)
    >>> HttpAccess.from_environment(access.environment()) == access
    True
    """

    user: str | None = None
    password: str | None = field(default=None, repr=False)
    ca_file: str | None = None
    #: Where the credentials came from, for messages ("LAKEBENCH_SYSTEM_USER and
    #: LAKEBENCH_SYSTEM_PASSWORD", "the netrc entry for HOST in FILE"); never the credentials.
    source: str = ""

    def __repr__(self) -> str:
        hidden = "'***'" if self.password is not None else "None"
        return f"HttpAccess(user={self.user!r}, password={hidden}, ca_file={self.ca_file!r}, source={self.source!r})"

    @property
    def authorization(self) -> str | None:
        """The ``Authorization`` header's value (RFC 7617, UTF-8), or None without credentials."""
        if self.user is None:
            return None
        token = base64.b64encode(f"{self.user}:{self.password or ''}".encode("utf-8")).decode("ascii")
        return f"Basic {token}"

    def headers(self) -> dict[str, str]:
        """The headers every request carries: the ``Authorization`` one, if any."""
        value = self.authorization
        return {"Authorization": value} if value else {}

    def ssl_context(self, create: Callable[..., ssl.SSLContext] | None = None) -> ssl.SSLContext:
        """A context that verifies the server's certificate and name: against ``ca_file`` alone when
        given (as ``curl --cacert``), else the system's trusted CAs.  ``create``: the
        ``create_default_context`` to use (gevent's, for Locust)."""
        return (create or ssl.create_default_context)(cafile=self.ca_file)

    def refusal(self, status: int) -> str:
        """What an answer 401 or 403 means, in one line."""
        if status == 401:
            if self.user is None:
                return f"HTTP 401: the server needs credentials: {CREDENTIALS_HOW}"
            return f"HTTP 401: the server refused the credentials in {self.source}"
        if self.user is None:
            return f"HTTP 403: the server forbids it without credentials ({CREDENTIALS_HOW})"
        return f"HTTP 403: the server forbids it to the user of the credentials in {self.source}"

    # -- into a worker, and out -------------------------------------------
    def environment(self) -> dict[str, str]:
        """What a worker's environment gets (:data:`WORKER_VARIABLE`); nothing without access settings."""
        if self == NO_ACCESS:
            return {}
        fields = {"user": self.user, "password": self.password, "ca_file": self.ca_file, "source": self.source}
        return {WORKER_VARIABLE: json.dumps(fields)}

    @classmethod
    def from_environment(cls, environ: MutableMapping[str, str]) -> "HttpAccess":
        """The access a worker was given, removed from ``environ`` (so that no process the worker starts
        inherits it); :data:`NO_ACCESS` when none."""
        text = environ.pop(WORKER_VARIABLE, None)
        if not text:
            return NO_ACCESS
        return cls(**json.loads(text))

    # -- from what the user gave ------------------------------------------
    @classmethod
    def resolve(cls, url: str, *, netrc_file: str | os.PathLike | None = None,
                ca_file: str | os.PathLike | None = None, insecure_http: bool = False,
                environ: MutableMapping[str, str] | None = None) -> "HttpAccess":
        """The access to the server at ``url``: credentials from :data:`USER_VARIABLE` and
        :data:`PASSWORD_VARIABLE` or from ``netrc_file``'s entry for the URL's host, and ``ca_file``.

        Raises ValueError, in one line that never holds a credential, for a URL with credentials in
        it, credentials given both ways or half given, a netrc file others may read or without an
        entry for the host, credentials bound for plain ``http://`` to a host other than loopback
        (unless ``insecure_http``), or a CA bundle that is not one.
        """
        environ = os.environ if environ is None else environ
        refuse_userinfo(url, "--system-url")
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or ""
        user, password = environ.get(USER_VARIABLE), environ.get(PASSWORD_VARIABLE)
        source = ""
        if netrc_file is not None:
            if user is not None or password is not None:
                raise ValueError(f"credentials given twice: in {USER_VARIABLE}/{PASSWORD_VARIABLE} and "
                                 "with --system-netrc; give one")
            user, password = netrc_credentials(netrc_file, host)
            source = f"the netrc entry for {host} in {netrc_file}"
        elif user is not None or password is not None:
            if not user or not password:
                missing = [name for name, value in ((USER_VARIABLE, user), (PASSWORD_VARIABLE, password))
                           if not value]
                raise ValueError(f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} empty or "
                                 f"not set: set both {USER_VARIABLE} and {PASSWORD_VARIABLE}, or neither")
            source = f"{USER_VARIABLE} and {PASSWORD_VARIABLE}"
        if user is not None and ":" in user:
            raise ValueError("the user name of HTTP Basic credentials cannot hold ':' (RFC 7617)")
        if insecure_http and parts.scheme != "http":
            raise ValueError("--system-insecure-http applies to an http:// --system-url")
        if insecure_http and user is None:
            raise ValueError("--system-insecure-http lets credentials go over http://, and none are given")
        if user is not None and parts.scheme == "http" and not is_loopback(host) and not insecure_http:
            raise ValueError(f"credentials would cross the network in clear text to {host} over http://: "
                             "use https://, or give --system-insecure-http if the network between is yours")
        if ca_file is not None:
            if parts.scheme != "https":
                raise ValueError("--system-ca verifies an https:// server; --system-url is not https://")
            check_ca_bundle(ca_file)
        return cls(user=user, password=password, ca_file=str(ca_file) if ca_file is not None else None,
                   source=source)


#: No credentials; certificates verified against the system's trusted CAs.
NO_ACCESS = HttpAccess()


def refuse_userinfo(url: str, option: str) -> None:
    """ValueError if ``url`` holds credentials (``https://user:password@host/``), in a message that
    does not repeat them.

    >>> refuse_userinfo("https://host/rest/", "--host")
    >>> refuse_userinfo("https://alice:s3cret@host/", "--host")
    Traceback (most recent call last):
    ...
    ValueError: --host holds credentials (user:password@): remove them and set LAKEBENCH_SYSTEM_USER and LAKEBENCH_SYSTEM_PASSWORD, or give --system-netrc FILE (a netrc file only you can read)
    """
    parts = urllib.parse.urlsplit(url.strip())
    well_formed = parts.scheme in ("http", "https") and parts.netloc
    if "@" in (parts.netloc if well_formed else url):
        raise ValueError(f"{option} holds credentials (user:password@): remove them and {CREDENTIALS_HOW}")


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine's loopback (``localhost``, 127.0.0.0/8, ``::1``).

    >>> is_loopback("127.0.0.2"), is_loopback("::1"), is_loopback("localhost"), is_loopback("fedora.example")
    (True, True, True, False)
    """
    if host.lower() == "localhost" or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def netrc_credentials(path: str | os.PathLike, host: str) -> tuple[str, str]:
    """``(login, password)`` of ``host``'s entry in the netrc file at ``path`` (else its ``default``).

    Refuses (ValueError) a file that is not the user's own or that others may read or write, as
    ``ftp`` and Python's ``netrc`` do for ``~/.netrc``; a syntax error is reported by line alone
    (the netrc module's message may quote a password).
    """
    import netrc

    try:
        st = os.stat(path)
    except OSError as exc:
        raise ValueError(f"--system-netrc {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"--system-netrc {path}: not a regular file")
    if st.st_uid != os.getuid():
        raise ValueError(f"--system-netrc {path}: owned by another user; it must be yours")
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ValueError(f"--system-netrc {path}: others may read or change it (mode {stat.S_IMODE(st.st_mode):o}): "
                         f"chmod 600 {path}")
    try:
        entry = netrc.netrc(os.fspath(path)).authenticators(host)
    except netrc.NetrcParseError as exc:
        raise ValueError(f"--system-netrc {path}: not a netrc file (line {exc.lineno})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"--system-netrc {path}: cannot read it ({type(exc).__name__})") from None
    if entry is None:
        raise ValueError(f"--system-netrc {path}: no entry for {host} (machine {host}) and no default")
    login, _account, password = entry
    if not login or not password:
        raise ValueError(f"--system-netrc {path}: the entry for {host} lacks a "
                         + ("login" if not login else "password"))
    return login, password


def check_ca_bundle(path: str | os.PathLike) -> None:
    """ValueError unless ``path`` is a PEM file of CA certificates that TLS verification can load."""
    try:
        ssl.create_default_context(cafile=os.fspath(path))
    except ssl.SSLError as exc:
        raise ValueError(f"--system-ca {path}: no PEM CA certificate in it ({exc.reason or exc})") from None
    except OSError as exc:
        raise ValueError(f"--system-ca {path}: {exc.strerror or exc}") from None


class HttpSystem(System):
    """A system reached over HTTP: what a driver needs from it, and no more.

    Locust users and lakebench's client both send plain HTTP to
    ``base_url``, with ``access`` (credentials, TLS trust); they never reach
    into a concrete system's attributes.
    """

    transport = "http"
    #: How its server is reached: what ``lakebench run`` was given (credentials, CA bundle) for a
    #: server lakebench does not start, set by the worker; a server of lakebench's own takes none.
    access: HttpAccess = NO_ACCESS
    #: The repository's base URL (ends with ``/``); set by :meth:`connect`.
    base_url: str
    #: The parent container's URL; set by :meth:`connect`.
    parent_url: str

    def connect(self) -> None:
        """Start the server (if the system owns one) and open a client; the parent is not created
        (a Locust ingest creates it itself)."""
        raise NotImplementedError
