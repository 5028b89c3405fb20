"""A plain Linked Data Platform client: any LDP server at a base URL.

The parent is a container created with ``PUT {base}{parent}``; each child is
``PUT {base}{parent}/{slug}`` with the child's Turtle (``<>`` subject,
relative IRIs), as a repository client sends it; the parent is read with
``GET`` and ``Accept: text/turtle``.  Requests go through one pooled
keep-alive connection (urllib3), so connection set-up is not measured.

``ldp`` itself talks to a server someone else runs (``--system-url``): its
process and disk are not ours to watch, so they are reported as unknown.
Subclasses (``fcrepo``, ``lmdb-http``) start their own server and say which
process and directory to watch.

A server lakebench does not start is reached with the system's ``access``
(:class:`~lakebench.systems.base.HttpAccess`): HTTP Basic credentials on
every request, TLS verified against ``--system-ca`` or the system's CAs; an
answer 401 or 403 fails the run with one line saying which.
"""
from __future__ import annotations

import ssl
from urllib.parse import urljoin

import urllib3

from lakebench.server.headers import link_targets, link_types
from lakebench.server.vocabulary import LDP_PAGE
from lakebench.systems.base import NO_ACCESS, HttpAccess, HttpSystem, Page, Retrieval, SystemFailure
from lakebench.dataset import Child, escape_string
from lakebench.durability import Durability
from lakebench.work import UNKNOWN, versions_probed

TURTLE = "text/turtle"


class LdpSystem(HttpSystem):
    name = "ldp"
    durability = Durability.UNKNOWN  # whatever the server does; not ours to know

    def start_server(self) -> str:
        """Start the server if this system owns one; return the base URL (ends with /)."""
        url = self.options.get("system_url")
        if not url:
            raise SystemFailure("the ldp system needs --system-url (base URL of an LDP server)")
        return url

    def setup(self) -> None:
        self.connect()
        create_parent(self.http, self.parent_url)

    def connect(self) -> None:
        self.server_pid: int | None = None
        base = self.start_server()
        if self.server_pid is not None:  # a server of lakebench's own, on loopback: no credentials
            self.access = NO_ACCESS
        self.base_url = base if base.endswith("/") else base + "/"
        self.http = new_pool(self.access)
        self.parent_url = self.base_url + self.dataset.parent

    def declared_work(self) -> dict[str, str]:
        # A server lakebench does not start (--system-url) is configured by its owner.
        return {} if self.options.get("system_url") else super().declared_work()

    def probe_work(self) -> dict[str, str]:
        """The parent's versions, from its Link header (lakebench.work.versions_probed)."""
        try:
            response = self._request("HEAD", self.parent_url)
        except Exception:  # noqa: BLE001  (a probe that cannot be made leaves the declaration)
            return {}
        if not 200 <= response.status < 300:
            return {}
        seen = versions_probed(", ".join(response.headers.getlist("Link")),
                               self.declared_work().get("versions", UNKNOWN))
        return {"versions": seen} if seen else {}

    def _request(self, method: str, url: str, **kwargs) -> urllib3.BaseHTTPResponse:
        return request(self.http, method, url, **kwargs)

    def create_child(self, child: Child) -> None:
        url = f"{self.base_url}{child.path}"
        response = self._request("PUT", url, body=child.turtle, headers={"Content-Type": TURTLE})
        expect(response, "PUT", url, (200, 201, 204))

    def retrieve_parent(self) -> Retrieval:
        response = self._request("GET", self.parent_url, headers={"Accept": TURTLE})
        expect(response, "GET", self.parent_url, (200,))
        return Retrieval(
            body=response.data,
            parent_uri=self.parent_url,
            content_type=response.headers.get("Content-Type", TURTLE),
        )

    def first_page(self, page_size: int) -> Page:
        headers = {"Accept": TURTLE, "Prefer": f'return=representation; max-member-count="{page_size}"'}
        response = self._request("GET", self.parent_url, headers=headers, redirect=False)
        expect(response, "GET", self.parent_url, (200, 303))
        if response.status == 200:  # the whole parent: this server does not page it
            return self._page(response, self.parent_url)
        location = response.headers.get("Location")
        if not location:
            raise SystemFailure(f"GET {self.parent_url}: HTTP 303 without a Location")
        return self.next_page(urljoin(self.parent_url, location))

    def next_page(self, url: str) -> Page:
        response = self._request("GET", url, headers={"Accept": TURTLE}, redirect=False)
        expect(response, "GET", url, (200,))
        return self._page(response, url)

    def _page(self, response, url: str) -> Page:
        links = ", ".join(response.headers.getlist("Link"))
        paged = LDP_PAGE in link_types(links)
        following = link_targets(links, "next") if paged else []
        retrieval = Retrieval(body=response.data, parent_uri=self.parent_url,
                              content_type=response.headers.get("Content-Type", TURTLE))
        return Page(retrieval, urljoin(url, following[0]) if following else None, paged)

    # -- versions: Memento as the Fedora API has it (Fedora 6, lakebench serve) -------------
    def create_version(self, path: str) -> str:
        url = f"{self.base_url}{path}/fcr:versions"
        response = self._request("POST", url)
        expect(response, "POST", url, (201,))
        return self._location(response, url)

    def list_versions(self, path: str) -> list[str]:
        url = f"{self.base_url}{path}/fcr:versions"
        response = self._request("GET", url, headers={"Accept": "application/link-format"})
        expect(response, "GET", url, (200,))
        return [urljoin(url, target) for target in link_targets(response.data.decode("utf-8", "replace"), "memento")]

    def get_version(self, path: str, url: str) -> Retrieval:
        # A memento's triples keep their resource as subject (Fedora 6, lakebench serve).
        return self._get_turtle(url, self.base_url + path)

    @staticmethod
    def _location(response, url: str) -> str:
        location = response.headers.get("Location")
        if not location:
            raise SystemFailure(f"POST {url}: HTTP {response.status} without a Location")
        return urljoin(url, location)

    def create_binary(self, path: str, data: bytes, content_type: str) -> None:
        url = self.base_url + path
        response = self._request("PUT", url, body=data, headers={"Content-Type": content_type})
        expect(response, "PUT", url, (200, 201, 204))

    def get_binary(self, path: str) -> bytes:
        url = self.base_url + path
        response = self._request("GET", url)
        expect(response, "GET", url, (200,))
        return response.data

    def create_container(self, path: str) -> None:
        url = self.base_url + path
        response = self._request("PUT", url, body=b"", headers={"Content-Type": TURTLE})
        expect(response, "PUT", url, (200, 201, 204))

    def list_container(self, path: str) -> Retrieval:
        return self.get_resource(path)

    def create_resource(self, child: Child, path: str) -> None:
        url = self.base_url + path
        body = self.prepare(child).turtle
        response = self._request("PUT", url, body=body, headers={"Content-Type": TURTLE})
        expect(response, "PUT", url, (200, 201, 204))

    def get_resource(self, path: str) -> Retrieval:
        return self._get_turtle(self.base_url + path, self.base_url + path)

    def _get_turtle(self, url: str, subject: str) -> Retrieval:
        """GET ``url`` as Turtle: its triples about ``subject``, as received."""
        response = self._request("GET", url, headers={"Accept": TURTLE})
        expect(response, "GET", url, (200,))
        return Retrieval(body=response.data, parent_uri=subject,
                         content_type=response.headers.get("Content-Type", TURTLE))

    def replace_literals(self, path: str, replacements: list[tuple[str, str, str]]) -> None:
        url = self.base_url + path
        response = self._request("PATCH", url, body=sparql_update(replacements),
                                 headers={"Content-Type": "application/sparql-update"})
        expect(response, "PATCH", url, (200, 204))

    def pid(self) -> int | None:
        return self.server_pid

    def version_text(self) -> str | None:
        """What the server says it is (its ``Server`` header), one line of at most 200
        characters; None when it says nothing or cannot be reached."""
        try:
            response = self._request("HEAD", self.base_url)
        except Exception:  # noqa: BLE001 - a version is worth a request, never a failed run
            return None
        server = response.headers.get("Server")
        if not server:
            return None
        printable = "".join(c for c in server if c.isprintable())[:200].strip()
        return printable or None

    def disk_path(self):
        return None

    def close(self) -> None:
        http = getattr(self, "http", None)
        if http is not None:
            http.clear()


def sparql_update(replacements: list[tuple[str, str, str]]) -> bytes:
    """The SPARQL Update replacing ``(predicate, old, new)`` literals of the resource (``<>``).

    >>> print(sparql_update([("http://x/p", 'a"b', "c")]).decode())
    DELETE DATA { <> <http://x/p> "a\\"b" . } ;
    INSERT DATA { <> <http://x/p> "c" . }
    """
    deleted = " ".join(f'<> <{p}> "{escape_string(old)}" .' for p, old, _ in replacements)
    inserted = " ".join(f'<> <{p}> "{escape_string(new)}" .' for p, _, new in replacements)
    return f"DELETE DATA {{ {deleted} }} ;\nINSERT DATA {{ {inserted} }}".encode("utf-8")


#: How Fedora 4 and LAKEsuperior list a resource's versions (in the RDF of its ``fcr:versions``).
HAS_VERSION = "http://fedora.info/definitions/v4/repository#hasVersion"


class LabelledVersions:
    """Versions as Fedora 4 and LAKEsuperior keep them, before Memento: ``POST <path>/fcr:versions``
    with a ``Slug`` naming the version (Fedora 4 refuses one without), the versions listed as
    ``fedora:hasVersion`` in the RDF of ``<path>/fcr:versions``.  Mixed into an
    :class:`LdpSystem` ahead of it."""

    _labels = 0

    def create_version(self, path: str) -> str:
        url = f"{self.base_url}{path}/fcr:versions"
        self._labels += 1  # unique in the run, so in each resource
        response = self._request("POST", url, headers={"Slug": f"v{self._labels}"})
        expect(response, "POST", url, (201,))
        return self._location(response, url)

    def list_versions(self, path: str) -> list[str]:
        import pyoxigraph as ox

        url = f"{self.base_url}{path}/fcr:versions"
        response = self._request("GET", url, headers={"Accept": TURTLE})
        expect(response, "GET", url, (200,))
        return list(dict.fromkeys(
            quad.object.value for quad in ox.parse(response.data, format=ox.RdfFormat.TURTLE, base_iri=url)
            if quad.predicate.value == HAS_VERSION and isinstance(quad.object, ox.NamedNode)))

    def get_version(self, path: str, url: str) -> Retrieval:
        # A version's triples have the version as subject (LAKEsuperior's, and Fedora 4's).
        return self._get_turtle(url, url)


class Pool(urllib3.PoolManager):
    """urllib3's pool, and the access (credentials, TLS trust) every request of it goes with."""

    def __init__(self, access: HttpAccess = NO_ACCESS, **kwargs):
        if access.ca_file is not None:
            kwargs["ssl_context"] = access.ssl_context()
        super().__init__(**kwargs)
        self.access = access


def new_pool(access: HttpAccess = NO_ACCESS) -> Pool:
    """One keep-alive connection, no retries: a failed request is a result, never repeated.
    ``access``: the credentials sent and the CAs trusted (default: none, the system's)."""
    return Pool(access, num_pools=1, maxsize=1, retries=False, timeout=urllib3.Timeout(connect=10.0, read=600.0))


def request(http: urllib3.PoolManager, method: str, url: str, *, headers: dict | None = None,
            **kwargs) -> urllib3.BaseHTTPResponse:
    """One request through ``http``, with its access's ``Authorization`` header.

    SystemFailure, in one line, when it cannot be sent (no connection, TLS not verified) or the
    server answers 401 or 403 (credentials needed, refused, or not enough).
    """
    access = getattr(http, "access", NO_ACCESS)
    # urllib3 replaces, not merges, a pool's headers with a request's: merged here.
    headers = {**access.headers(), **(headers or {})}
    try:
        response = http.request(method, url, headers=headers, **kwargs)
    except urllib3.exceptions.NewConnectionError as exc:  # refused, no such host: say so, not urllib3's repr
        reason = getattr(exc.__cause__ or exc.__context__, "strerror", None) or exc
        raise SystemFailure(f"{method} {url}: cannot connect ({reason})") from exc
    except urllib3.exceptions.SSLError as exc:
        cause = exc.__cause__ or exc.__context__ or exc
        if not isinstance(cause, ssl.SSLCertVerificationError):  # no TLS there, a protocol refused, ...
            raise SystemFailure(f"{method} {url}: TLS failed ({getattr(cause, 'reason', None) or cause})") from exc
        against = "" if access.ca_file is None else f" against {access.ca_file}"
        raise SystemFailure(f"{method} {url}: TLS: the server's certificate is not verified{against} "
                            f"({cause.verify_message}); give the CA bundle that signed it with --system-ca") from exc
    except urllib3.exceptions.HTTPError as exc:
        raise SystemFailure(f"{method} {url}: {exc}") from exc
    if response.status in (401, 403):
        raise SystemFailure(f"{method} {url}: {access.refusal(response.status)}")
    return response


def expect(response, method: str, url: str, statuses: tuple[int, ...]) -> None:
    if response.status not in statuses:
        detail = response.data[:300].decode("utf-8", "replace").strip()
        raise SystemFailure(f"{method} {url}: HTTP {response.status} {detail}")


def create_parent(http: urllib3.PoolManager, parent_url: str) -> None:
    """PUT an empty container at ``parent_url``; refuse if something is there already."""
    existing = request(http, "HEAD", parent_url)
    if existing.status != 404:
        raise SystemFailure(f"{parent_url} already exists (HTTP {existing.status}): "
                            "choose another parent name with --parent")
    made = request(http, "PUT", parent_url, body=b"", headers={"Content-Type": TURTLE})
    expect(made, "PUT", parent_url, (200, 201, 204))
