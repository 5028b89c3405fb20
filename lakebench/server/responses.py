"""The shapes of the server's answers: status lines, the headers of each kind
of resource (LDP type links, Allow, Accept-Post, Accept-Patch), and a file
range as a WSGI body.  No repository, no request."""
from __future__ import annotations

from urllib.parse import quote

from lakebench.server.headers import http_date
from lakebench.server.mementos import original_links
from lakebench.server.patch import MEDIA_TYPE as SPARQL_UPDATE
from lakebench.server.rdfbody import PARSERS
from lakebench.server.vocabulary import BINARY, CONTAINER, LDP_PAGE, METADATA_SEGMENT, MODEL_TYPES, RDF_SOURCE

#: The methods each kind of resource takes (the root can be neither replaced nor deleted).
CONTAINER_ALLOW = "GET, HEAD, PUT, POST, PATCH, DELETE, OPTIONS"
ROOT_ALLOW = "GET, HEAD, POST, OPTIONS"
SOURCE_ALLOW = "GET, HEAD, PUT, PATCH, DELETE, OPTIONS"
BINARY_ALLOW = "GET, HEAD, PUT, DELETE, OPTIONS"
DESCRIPTION_ALLOW = "GET, HEAD, PUT, PATCH, OPTIONS"
TOMBSTONE_ALLOW = "DELETE, OPTIONS"
CONSTRAINTS_ALLOW = "GET, HEAD, OPTIONS"
#: A container's page (LDP Paging 1.0) is read only.
PAGE_ALLOW = "GET, HEAD, OPTIONS"

#: What a POST to a container takes: RDF, and anything else as a binary.
ACCEPT_POST = ", ".join((*PARSERS, "*/*"))
CHUNK = 1 << 16
STATUS = {
    200: "200 OK", 201: "201 Created", 204: "204 No Content", 206: "206 Partial Content",
    302: "302 Found", 303: "303 See Other", 304: "304 Not Modified", 400: "400 Bad Request", 404: "404 Not Found",
    405: "405 Method Not Allowed", 406: "406 Not Acceptable", 409: "409 Conflict", 410: "410 Gone",
    411: "411 Length Required", 412: "412 Precondition Failed", 413: "413 Content Too Large",
    415: "415 Unsupported Media Type", 416: "416 Range Not Satisfiable",
    500: "500 Internal Server Error", 503: "503 Service Unavailable", 507: "507 Insufficient Storage",
}
MODEL_NAMES = {CONTAINER: "ldp:BasicContainer", RDF_SOURCE: "ldp:RDFSource", BINARY: "ldp:NonRDFSource"}


def written(created: bool, kind: str, uri: str, etag: str):
    """The answer to a PUT: 201 with Location, or 204; the new ETag and the type links."""
    headers = [("ETag", f'"{etag}"'), ("Link", links(kind, uri))]
    if created:
        headers += [("Location", uri), ("Content-Type", "text/plain")]
        return 201, headers, (uri + "\n").encode()
    return 204, headers, b""


class FileRange:
    """Bytes ``[start, stop)`` of a file, read in chunks; closing closes the file."""

    def __init__(self, path, start: int, stop: int):
        self._file = open(path, "rb")
        self._file.seek(start)
        self._left = stop - start

    def __iter__(self):
        while self._left > 0:
            chunk = self._file.read(min(CHUNK, self._left))
            if not chunk:
                break
            self._left -= len(chunk)
            yield chunk
        self.close()

    def close(self) -> None:
        self._file.close()


def content_type(media_type: str) -> str:
    # JSON media types define no charset parameter (RFC 8259); the others are UTF-8 text.
    return media_type if media_type == "application/ld+json" else f"{media_type}; charset=utf-8"


def allow(info, base_url: str) -> str:
    """The methods a resource takes."""
    if info.uri == base_url:
        return ROOT_ALLOW
    return {CONTAINER: CONTAINER_ALLOW, RDF_SOURCE: SOURCE_ALLOW, BINARY: BINARY_ALLOW}[info.kind]


def describedby(uri: str) -> str:
    # anchor: the link is about the binary, also when the request went to its container (POST).
    return f'<{uri}/{METADATA_SEGMENT}>; rel="describedby"; anchor="{uri}"'


def type_links(kind: str) -> list[str]:
    """``Link`` values naming the LDP types of a kind of resource."""
    return [f'<{t}>; rel="type"' for t in MODEL_TYPES[kind]]


def links(kind: str, uri: str) -> str:
    """The Link header of a resource: its LDP types (LDP 4.2.1.4), a binary's description."""
    return ", ".join(type_links(kind) + ([describedby(uri)] if kind == BINARY else []))


def resource_headers(info, base_url: str, etag: bool = True) -> list[tuple[str, str]]:
    """The headers of a resource on GET, HEAD and OPTIONS; every one but the root is
    versioned (Fedora API 4.1.1: its Memento links, and its answer varies with
    Accept-Datetime, which its TimeGate, itself, negotiates)."""
    methods = allow(info, base_url)
    link = links(info.kind, info.uri)
    if info.uri != base_url:
        link = ", ".join([link, *original_links(info.uri)])
    headers = [("Link", link), ("Allow", methods)]
    if info.uri != base_url:
        headers.append(("Vary", "Accept-Datetime"))
    if etag:
        headers[:0] = validators(info)
    if info.container:
        headers.append(("Accept-Post", ACCEPT_POST))
    if "PATCH" in methods:
        headers.append(("Accept-Patch", SPARQL_UPDATE))
    return headers


def description_links(uri: str) -> str:
    """The Link header of a binary's description: an RDF source that describes it."""
    return ", ".join(type_links(RDF_SOURCE) + [f'<{uri}>; rel="describes"'])


def description_headers(info, base_url: str, etag: bool = True) -> list[tuple[str, str]]:
    headers = [("Link", description_links(info.uri)), ("Allow", DESCRIPTION_ALLOW),
               ("Accept-Patch", SPARQL_UPDATE)]
    if etag:
        headers[:0] = validators(info)
    return headers


def page_headers(info, first: str, following: str | None) -> list[tuple[str, str]]:
    """The headers of a page of the container ``info`` (LDP Paging 1.0): its type, the
    first page and the next (none on the last), and the container as canonical with its
    ETag, by which a client walking the pages sees that the container changed."""
    etag = f'"{info.etag}"'.replace("\\", "\\\\").replace('"', '\\"')
    links = [*type_links(RDF_SOURCE), f'<{LDP_PAGE}>; rel="type"', f'<{info.uri}>; rel="canonical"; etag="{etag}"',
             f'<{first}>; rel="first"']
    if following is not None:
        links.append(f'<{following}>; rel="next"')
    return [("Link", ", ".join(links)), ("Allow", PAGE_ALLOW)]


def vary(headers: list[tuple[str, str]], *fields: str) -> list[tuple[str, str]]:
    """``headers`` with ``fields`` added to their Vary header (one header: some clients read one).

    >>> vary([("Vary", "Accept-Datetime")], "Accept", "Prefer")
    [('Vary', 'Accept-Datetime, Accept, Prefer')]
    """
    for k, (name, value) in enumerate(headers):
        if name == "Vary":
            return [*headers[:k], (name, ", ".join([value, *fields])), *headers[k + 1:]]
    return [*headers, ("Vary", ", ".join(fields))]


def validators(info) -> list[tuple[str, str]]:
    """``ETag``, and ``Last-Modified`` when the resource has a date (RFC 9110 8.8)."""
    headers = [("ETag", f'"{info.etag}"')]
    if info.last_modified:
        headers.append(("Last-Modified", http_date(info.last_modified)))
    return headers


def disposition(filename: str) -> str:
    """A Content-Disposition naming ``filename`` (ASCII fallback, and RFC 6266's ``filename*``)."""
    # Control characters are refused on the way in; a store written before
    # that may still hold one, and a header must never carry it.
    ascii_name = "".join("_" if c < " " or c == "\x7f" else c
                         for c in filename.encode("ascii", "replace").decode().replace('"', "'").replace("\\", "_"))
    return f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(filename, safe='')}"
