"""The LDP HTTP layer: a plain WSGI application over :class:`Repository`.

It knows HTTP and LDP, not LMDB.  Every client mistake is a 4xx with a
one-line message in the body and a link to the constraints document; anything
else is a 500 and is logged.
"""
from __future__ import annotations

import io
import logging
import re
import uuid
from urllib.parse import parse_qsl, unquote

from lakebench.server import constraints, responses
from lakebench.server.binaries import (
    DEFAULT_MAX_BINARY,
    digest_value,
    file_digest,
    parse_digest,
    wanted_digests,
)
from lakebench.server import mementos
from lakebench.server.errors import RepositoryError, read_body
from lakebench.server.headers import (
    MAX_PAGE_SIZE,
    NOT_A_CONTAINER,
    SERIALIZERS,
    byte_range,
    disposition_filename,
    modified_since,
    negotiate,
    prefer,
    requested_model,
    whole_number,
)
from lakebench.server.patch import MEDIA_TYPE as SPARQL_UPDATE
from lakebench.server.rdfbody import PARSERS, one_line
from lakebench.server.responses import (
    CONSTRAINTS_ALLOW,
    CONTAINER_ALLOW,
    DESCRIPTION_ALLOW,
    PAGE_ALLOW,
    ROOT_ALLOW,
    TOMBSTONE_ALLOW,
)
from lakebench.server.repository import (
    IsBinary,
    Repository,
    ResourceInfo,
    check_model,
    etag_matches,
    gone,
)
from lakebench.server.vocabulary import (
    BINARY,
    CONSTRAINTS_SEGMENT,
    CONTAINER,
    METADATA_SEGMENT,
    RDF_SOURCE,
    RESERVED_PREFIX,
    TOMBSTONE_SEGMENT,
    VERSIONS_SEGMENT,
)

log = logging.getLogger("lakebench.server")

ALLOW = CONTAINER_ALLOW
DEFAULT_MAX_BODY = 16 * 1024 * 1024

# One path segment: RFC 3986 pchar without percent-escapes (those are decoded
# before we see the path, so an encoded '/' or '..' cannot sneak through).
_SEGMENT = re.compile(r"[A-Za-z0-9._~!$&'()*+,;=:@-]+")
#: The media type that asks for external content (RFC 2017), which this server has not.
EXTERNAL_BODY = "message/external-body"
#: The query parameters of a page's URL: ``<container>?page=START&size=N``.
PAGE_PARAMS = ("page", "size")
_MAX_PAGE_START = (1 << 32) - 1


class LdpApplication:
    """WSGI callable: ``LdpApplication(repository_factory, max_body, max_binary)``.

    The repository is opened lazily in the process that serves requests
    (after the server forks its workers), never inherited across a fork.
    ``max_body`` limits RDF bodies and updates (parsed in memory),
    ``max_binary`` binaries (streamed to a file).
    """

    def __init__(self, open_repository, max_body: int = DEFAULT_MAX_BODY,
                 max_binary: int = DEFAULT_MAX_BINARY):
        self._open_repository = open_repository
        self._repository: Repository | None = None
        self.max_body = max_body
        self.max_binary = max_binary

    def close(self) -> None:
        """Close the repository if this process opened it; what fails is logged,
        since everything acknowledged is in the store's log anyway."""
        repository, self._repository = self._repository, None
        if repository is not None:
            try:
                repository.close()
            except Exception:
                log.exception("closing the repository")

    def settle(self) -> None:
        """Return once every write a response may show is durable (RepositoryError
        503 if its flush failed); :func:`lakebench.server.serving.complete_responses`
        calls it before a response is sent."""
        if self._repository is not None:
            self._repository.settle()

    @property
    def repository(self) -> Repository:
        if self._repository is None:
            self._repository = self._open_repository()
            # After it is published: starting the helpers cannot make another request open it again.
            self._repository.start_helpers()
        return self._repository

    def __call__(self, environ, start_response):
        try:
            self.repository.upkeep()
            status, headers, body = self.handle(environ)
        except RepositoryError as exc:
            status, headers, body = self._error(exc.status, exc.message, exc.allow,
                                                exc.headers + self._refused_resource_links(environ, exc))
        except Exception:  # a bug, not the client's fault: log it, answer 500
            log.exception("error handling %s %s", environ.get("REQUEST_METHOD"), environ.get("PATH_INFO"))
            status, headers, body = self._error(500, "internal server error")
        start_response(responses.STATUS[status], headers)
        if environ["REQUEST_METHOD"] == "HEAD":
            if hasattr(body, "close"):
                body.close()
            return []
        return [body] if isinstance(body, bytes) else body

    def _error(self, status: int, message: str, allow: str | None = None, extra=()):
        links = [value for name, value in extra if name == "Link"]
        headers = [("Content-Type", "text/plain; charset=utf-8"), *(h for h in extra if h[0] != "Link")]
        if status == 405:
            headers.append(("Allow", allow or ALLOW))
        if 400 <= status < 500:  # LDP 4.2.1.6: every refusal says where the constraints are
            links.append(constraints.link(self.repository.base_url)[1])
        if links:  # one Link header: some clients read only the first
            headers.append(("Link", ", ".join(links)))
        return status, headers, (message + "\n").encode("utf-8")

    def _refused_resource_links(self, environ, exc: RepositoryError) -> list[tuple[str, str]]:
        """The type links of an existing resource a request to it was refused
        (LDP 4.2.1.4: on all responses); a lookup, on refusals only."""
        target = environ.get("lakebench.target")
        if not 400 <= exc.status < 500 or exc.status in (404, 410) or target is None or target[1]:
            return []
        info = self.repository.info(target[0])
        return [("Link", responses.links(info.kind, info.uri))] if info is not None else []

    # -- dispatch --------------------------------------------------------
    def handle(self, environ):
        method = environ["REQUEST_METHOD"]
        uri, special = environ["lakebench.target"] = self._target(environ)
        page = _page_query(environ.get("QUERY_STRING", ""))
        if page is not None:
            if special is not None:
                raise RepositoryError(400, "only a container's URL takes page and size")
            return self.get_page(environ, method, uri, *page)
        if special == CONSTRAINTS_SEGMENT:
            return self.constraints(method)
        if special == TOMBSTONE_SEGMENT:
            return self.tombstone(method, uri)
        if special == METADATA_SEGMENT:
            return self.description(environ, method, uri)
        if special == VERSIONS_SEGMENT:
            return self.timemap(environ, method, uri)
        if special is not None and special.startswith(VERSIONS_SEGMENT + "/"):
            return self.memento(environ, method, uri, special[len(VERSIONS_SEGMENT) + 1:])
        if method in ("GET", "HEAD") and environ.get("HTTP_ACCEPT_DATETIME") and uri != self.repository.base_url:
            return self.timegate(environ, uri)
        if method in ("GET", "HEAD"):
            return self.get(environ, uri)
        if method == "PUT":
            return self.put(environ, uri)
        if method == "POST":
            return self.post(environ, uri)
        if method == "PATCH":
            return self.patch(environ, uri)
        if method == "DELETE":
            if uri == self.repository.base_url:
                raise RepositoryError(405, "the root container cannot be deleted", allow=ROOT_ALLOW)
            self.repository.delete(uri, if_match=environ.get("HTTP_IF_MATCH"),
                                   if_unmodified_since=environ.get("HTTP_IF_UNMODIFIED_SINCE"))
            return 204, [], b""
        info = self.repository.info(uri)
        if info is None:
            raise self._missing(uri)
        if method == "OPTIONS":
            return 204, responses.resource_headers(info, self.repository.base_url, etag=False), b""
        raise RepositoryError(405, f"method {method} not allowed", allow=responses.allow(info, self.repository.base_url))

    def _target(self, environ) -> tuple[str, str | None]:
        """(the resource's IRI, the reserved segment addressed under it, if any: a memento's
        is ``fcr:versions/ID``)."""
        uri = self._uri(environ)
        base = self.repository.base_url
        if uri == base + CONSTRAINTS_SEGMENT:
            return uri, CONSTRAINTS_SEGMENT
        head, _, last = uri.rpartition("/")
        if last in (METADATA_SEGMENT, TOMBSTONE_SEGMENT, VERSIONS_SEGMENT):
            return (base if head + "/" == base else head), last
        owner, _, segment = head.rpartition("/")
        if segment == VERSIONS_SEGMENT:  # <uri>/fcr:versions/ID: a memento of <uri>
            return (base if owner + "/" == base else owner), f"{VERSIONS_SEGMENT}/{last}"
        return uri, None

    def _uri(self, environ) -> str:
        raw = environ.get("RAW_URI") or environ.get("REQUEST_URI") or environ.get("PATH_INFO", "/")
        raw_path = raw.split("?", 1)[0]
        if "%2f" in raw_path.lower() or "%5c" in raw_path.lower():
            raise RepositoryError(400, "encoded '/' or '\\' in a path is not allowed")
        path = unquote(raw_path) if raw_path.startswith("/") else environ.get("PATH_INFO", "/")
        segments = [s for s in path.split("/")]
        # "/a/b/" names the same resource as "/a/b"; "//" and dot segments are refused.
        if segments and segments[-1] == "" and len(segments) > 2:
            segments.pop()
        segments = segments[1:]
        if segments == [""]:
            return self.repository.base_url
        for segment in segments:
            if segment in (".", "..") or not _SEGMENT.fullmatch(segment):
                raise RepositoryError(400, f"invalid path segment {segment!r}")
        return self.repository.base_url + "/".join(segments)

    def _missing(self, uri: str) -> RepositoryError:
        """404, or 410 when ``uri`` (or a container above it) was deleted."""
        deleted = self.repository.tombstone(uri)
        return gone(deleted) if deleted is not None else RepositoryError(404, f"<{uri}> does not exist")

    # -- reading ---------------------------------------------------------
    def get(self, environ, uri):
        accept = environ.get("HTTP_ACCEPT", "")
        media_type = negotiate(accept)
        preferences = self.repository.affordable(uri, prefer(environ.get("HTTP_PREFER", "")))
        if preferences.page_size is not None and self.repository.paged(uri, preferences.page_size):
            # LDP Paging 1.0: a client that pages is sent to the first page of a
            # container of more children than it wants a page to hold.
            return 303, [("Location", page_url(uri, 0, preferences.page_size)), ("Vary", "Prefer")], b""
        found = self.repository.representation(uri, media_type or SERIALIZERS[0], prefer=preferences)
        if found is None:
            for _ in range(2):
                binary = self.repository.binary(uri)
                if binary is None:
                    raise self._missing(uri)
                try:
                    return self.get_binary(environ, binary)
                except FileNotFoundError:  # replaced or deleted since it was looked up
                    continue
            raise self._missing(uri)
        info, chunks = found
        if media_type is None:
            chunks.close()
            raise not_acceptable(environ, SERIALIZERS)
        return self._rdf_response(environ, info, chunks, media_type, preferences.applied,
                                  responses.resource_headers(info, self.repository.base_url))

    def _rdf_response(self, environ, info, chunks, media_type, applied, headers):
        try:
            unchanged = _not_modified(environ, info.etag, info.last_modified)
        except RepositoryError:
            chunks.close()
            raise
        if unchanged:
            chunks.close()
            return 304, headers, b""
        headers = responses.vary(headers, "Accept", "Prefer") + [("Content-Type", responses.content_type(media_type))]
        if applied:
            headers.append(("Preference-Applied", applied))
        return 200, headers, chunks

    def get_page(self, environ, method, uri, start: int, size: int):
        """``<container>?page=START&size=N``: one page of its children (LDP Paging 1.0), read only."""
        if method not in ("GET", "HEAD", "OPTIONS"):
            raise RepositoryError(405, f"a page is read only: {method} it at <{uri}>", allow=PAGE_ALLOW)
        if method == "OPTIONS":
            info = self.repository.info(uri)
            if info is None:
                raise self._missing(uri)
            if not info.container:
                raise RepositoryError(404, f"<{uri}> is not a container: it has no pages")
            return 204, [("Allow", PAGE_ALLOW)], b""
        accept = environ.get("HTTP_ACCEPT", "")
        media_type = negotiate(accept)
        if media_type is None:
            raise not_acceptable(environ, SERIALIZERS)
        found = self.repository.page(uri, media_type, start, size)
        if found is None:
            if self.repository.info(uri) is None:
                raise self._missing(uri)
            raise RepositoryError(404, f"<{uri}> is not a container: it has no pages")
        info, chunks, next_start = found
        headers = responses.page_headers(info, page_url(uri, 0, size),
                                         None if next_start is None else page_url(uri, next_start, size))
        return 200, headers + [("Content-Type", responses.content_type(media_type)), ("Vary", "Accept")], chunks

    def get_binary(self, environ, binary, headers=None):
        """The bytes of ``binary``; ``headers``: those of what it is (a binary's own by default)."""
        if headers is None:
            headers = responses.resource_headers(
                ResourceInfo(binary.uri, BINARY, binary.etag, binary.last_modified), self.repository.base_url)
        else:
            headers = [*responses.validators(binary), *headers]
        wanted = wanted_digests(environ.get("HTTP_WANT_DIGEST"))  # 400 before anything else
        if _not_modified(environ, binary.etag, binary.last_modified):
            return 304, headers, b""
        for algorithm in wanted:
            hexdigest = binary.digests.get(algorithm) or file_digest(binary.path, algorithm)
            headers.append(("Digest", digest_value(algorithm, hexdigest)))
            break
        headers += [("Content-Type", binary.media_type), ("Accept-Ranges", "bytes")]
        if binary.filename:
            headers.append(("Content-Disposition", responses.disposition(binary.filename)))
        first, last = byte_range(environ.get("HTTP_RANGE"), binary.size) or (0, binary.size - 1)
        partial = (first, last) != (0, binary.size - 1)
        headers.append(("Content-Length", str(last - first + 1)))
        if partial:
            headers.append(("Content-Range", f"bytes {first}-{last}/{binary.size}"))
        body = responses.FileRange(binary.path, first, last + 1) if environ["REQUEST_METHOD"] != "HEAD" else b""
        return (206 if partial else 200), headers, body

    def description(self, environ, method, uri):
        """``<binary>/fcr:metadata``: the binary's description, an RDF source of its own."""
        base = self.repository.base_url
        if method in ("GET", "HEAD"):
            media_type = negotiate(environ.get("HTTP_ACCEPT", ""))
            if media_type is None:
                raise not_acceptable(environ, SERIALIZERS)
            found = self.repository.representation(uri, media_type, description=True)
            if found is None:
                raise self._description_missing(uri)
            info, chunks = found
            return self._rdf_response(environ, info, chunks, media_type, None,
                                      responses.description_headers(info, base))
        if method == "PUT":
            body = self._body(environ)
            media_type = self._media_type(environ, body)
            etag = self.repository.put_description(uri, body, media_type,
                                                   if_match=environ.get("HTTP_IF_MATCH"),
                                                   if_none_match=environ.get("HTTP_IF_NONE_MATCH"),
                                                   if_unmodified_since=environ.get("HTTP_IF_UNMODIFIED_SINCE"))
            return 204, [("ETag", f'"{etag}"'), ("Link", responses.description_links(uri))], b""
        if method == "PATCH":
            info = self.repository.patch(uri, self._update(environ), description=True,
                                         if_match=environ.get("HTTP_IF_MATCH"),
                                         if_unmodified_since=environ.get("HTTP_IF_UNMODIFIED_SINCE"))
            return 204, [("ETag", f'"{info.etag}"'), ("Link", responses.description_links(uri))], b""
        info = self.repository.description_info(uri)
        if info is None:
            raise self._description_missing(uri)
        if method == "OPTIONS":
            return 204, responses.description_headers(info, base, etag=False), b""
        raise RepositoryError(405, f"method {method} not allowed on a description (DELETE the binary)",
                              allow=DESCRIPTION_ALLOW)

    def _description_missing(self, uri: str) -> RepositoryError:
        if self.repository.info(uri) is not None:
            return RepositoryError(404, f"<{uri}> is not a binary: it has no description")
        return self._missing(uri)

    def constraints(self, method):
        if method in ("GET", "HEAD"):
            return 200, [("Content-Type", "text/plain; charset=utf-8"), ("Allow", CONSTRAINTS_ALLOW)],\
                constraints.TEXT.encode()
        if method == "OPTIONS":
            return 204, [("Allow", CONSTRAINTS_ALLOW)], b""
        raise RepositoryError(405, "the constraints document is read-only", allow=CONSTRAINTS_ALLOW)

    def tombstone(self, method, uri):
        """``<uri>/fcr:tombstone``: DELETE it, and ``uri`` can be created again."""
        if method == "DELETE":
            self.repository.delete_tombstone(uri)
            return 204, [], b""
        if self.repository.tombstone(uri) != uri:
            raise RepositoryError(404, f"<{uri}> has no tombstone")
        if method == "OPTIONS":
            return 204, [("Allow", TOMBSTONE_ALLOW)], b""
        raise RepositoryError(405, f"a tombstone only takes DELETE", allow=TOMBSTONE_ALLOW)

    # -- versions (Fedora API 4, Memento) --------------------------------
    def _versioned(self, uri: str) -> list[str]:
        """The IDs of the mementos of ``uri``; 404 or 410 when it is not a versioned resource."""
        found = self.repository.mementos(uri)
        if found is None:
            if uri == self.repository.base_url:
                raise RepositoryError(404, "the root container is not versioned")
            raise self._missing(uri)
        return found

    def timegate(self, environ, uri):
        """A GET of a resource with Accept-Datetime (RFC 7089 4.1.1, Fedora API 4.1.1): 302 to
        its last memento taken at or before that date, 406 when it has none."""
        when = mementos.accept_datetime(environ["HTTP_ACCEPT_DATETIME"])  # 400 before a lookup
        chosen = mementos.chosen(self._versioned(uri), when)
        links = ", ".join(mementos.original_links(uri)[2:] + [f'<{uri}>; rel="original"'])
        if chosen is None:
            raise RepositoryError(406, f"<{uri}> has no memento taken at or before "
                                       f"{environ['HTTP_ACCEPT_DATETIME'].strip()[:60]}",
                                  headers=[("Vary", "Accept-Datetime"), ("Link", links)])
        return 302, [("Location", mementos.memento_uri(uri, chosen)), ("Vary", "Accept-Datetime"),
                     ("Link", links)], b""

    def timemap(self, environ, method, uri):
        """``<uri>/fcr:versions``: the TimeMap of ``uri`` (an LDPCv, Fedora API 4.3): its mementos
        in link-format or RDF; POST takes a memento of ``uri`` as it is now."""
        links = mementos.timemap_links_header(uri, responses.type_links(CONTAINER))
        if method == "POST":
            if environ.get("HTTP_MEMENTO_DATETIME"):
                raise RepositoryError(400, "a memento of a given date (Memento-Datetime) is not taken here: "
                                           "POST without it takes one of the resource as it is now")
            if uri == self.repository.base_url:
                raise RepositoryError(404, "the root container is not versioned")
            taken = self.repository.create_memento(uri)
            location = mementos.memento_uri(uri, taken)
            return 201, [("Location", location), ("Memento-Datetime", mementos.http_datetime(taken)),
                         ("Link", links), ("Content-Type", "text/plain")], (location + "\n").encode()
        if method not in ("GET", "HEAD", "OPTIONS"):
            raise RepositoryError(405, f"a TimeMap takes POST (a new memento), not {method}",
                                  allow=mementos.TIMEMAP_ALLOW)
        taken = self._versioned(uri)
        headers = [("Link", links), ("Allow", mementos.TIMEMAP_ALLOW)]
        if method == "OPTIONS":
            return 204, headers, b""
        accept = environ.get("HTTP_ACCEPT", "")
        media_type = mementos.timemap_format(accept)
        if media_type is None:
            raise not_acceptable(environ, (mementos.LINK_FORMAT, *SERIALIZERS))
        headers.append(("Vary", "Accept"))
        if media_type == mementos.LINK_FORMAT:
            return 200, headers + [("Content-Type", mementos.LINK_FORMAT)], mementos.timemap_links(uri, taken)
        body = b"".join(self.repository.timemap_rdf(uri, taken, media_type))
        return 200, headers + [("Content-Type", responses.content_type(media_type))], body

    def memento(self, environ, method, uri, memento: str):
        """``<uri>/fcr:versions/ID``: a memento (LDPRm, Fedora API 4.2): read only, deletable."""
        if not mementos.is_memento_id(memento):
            raise RepositoryError(404, f"<{uri}> has no memento {memento!r} (a memento is named "
                                       "by its date, yyyymmddHHMMSS)")
        if method not in ("GET", "HEAD", "OPTIONS", "DELETE"):
            raise RepositoryError(405, f"a memento is immutable: {method} is not allowed",
                                  allow=mementos.MEMENTO_ALLOW)
        if method == "DELETE":
            self.repository.delete_memento(uri, memento)
            return 204, [], b""
        media_type = negotiate(environ.get("HTTP_ACCEPT", ""))
        found = self.repository.memento(uri, memento, media_type or SERIALIZERS[0])
        if found is None:
            self._versioned(uri)  # 404 or 410 for the resource first
            raise RepositoryError(404, f"<{uri}> has no memento {memento}")
        info, chunks = found
        headers = [("Memento-Datetime", mementos.http_datetime(memento)),
                   ("Link", mementos.memento_links_header(uri, responses.type_links(info.kind))),
                   ("Allow", mementos.MEMENTO_ALLOW)]
        if method == "OPTIONS":
            if chunks is not None:
                chunks.close()
            return 204, headers, b""
        if chunks is None:  # a binary's: its bytes, as the binary's own
            found = self.repository.memento_binary(uri, memento)
            try:
                if found is not None:
                    return self.get_binary(environ, found[1], headers)
            except FileNotFoundError:  # deleted since it was looked up
                pass
            raise RepositoryError(404, f"<{uri}> has no memento {memento}")
        if media_type is None:
            chunks.close()
            raise not_acceptable(environ, SERIALIZERS)
        return self._rdf_response(environ, info, chunks, media_type, None, [*responses.validators(info), *headers])

    # -- request bodies --------------------------------------------------
    def _length(self, environ) -> int | None:
        length = environ.get("CONTENT_LENGTH") or ""
        if not length:
            return None
        try:
            return int(length)
        except ValueError:
            raise RepositoryError(400, f"invalid Content-Length {length!r}") from None

    def _body(self, environ) -> bytes:
        size = self._length(environ)
        stream = environ["wsgi.input"]
        if size is not None:
            if size > self.max_body:
                raise RepositoryError(413, f"body of {size} bytes exceeds the limit of {self.max_body}")
            body = read_body(stream, size)
            if len(body) != size:  # the client went away mid-body: store nothing of it
                raise RepositoryError(400, f"incomplete body: {len(body)} of {size} bytes")
            return body
        body = read_body(stream, self.max_body + 1)  # chunked: read up to the limit
        if len(body) > self.max_body:
            raise RepositoryError(413, f"body exceeds the limit of {self.max_body} bytes")
        return body

    def _media_type(self, environ, body: bytes) -> str:
        content_type = _bare(environ.get("CONTENT_TYPE", ""))
        if not content_type:
            if body.strip():
                raise RepositoryError(415, "a body needs a Content-Type: " + ", ".join(PARSERS))
            return "text/turtle"
        if content_type not in PARSERS:
            raise RepositoryError(415, f"unsupported media type {content_type!r}; send one of "
                                       f"{', '.join(PARSERS)}")
        return content_type

    def _update(self, environ) -> str:
        """The SPARQL Update of a PATCH."""
        if _bare(environ.get("CONTENT_TYPE", "")) != SPARQL_UPDATE:
            raise RepositoryError(415, f"PATCH takes {SPARQL_UPDATE}")
        try:
            return self._body(environ).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RepositoryError(400, f"malformed SPARQL Update: {one_line(exc)}") from None

    def _receive(self, environ):
        """Stream a binary body into a file (digests checked); the upload."""
        properties = self._binary_properties(environ)  # a bad Digest header: 400 before reading
        return self.repository.binaries.receive(environ["wsgi.input"], self._length(environ),
                                                self.max_binary, *properties)

    @staticmethod
    def _binary_properties(environ):
        """(media type, file name, expected digests) of a binary upload."""
        return (environ.get("CONTENT_TYPE", "").strip() or "application/octet-stream",
                disposition_filename(environ.get("HTTP_CONTENT_DISPOSITION")),
                parse_digest(environ.get("HTTP_DIGEST")))

    def _model(self, environ, existing) -> str:
        """The interaction model of a write: the resource's own, else the one asked
        for (Link rel="type"), else a binary for a non-RDF body, else a container."""
        requested = requested_model(environ.get("HTTP_LINK", ""))
        content_type = _bare(environ.get("CONTENT_TYPE", ""))
        if requested == NOT_A_CONTAINER:
            if existing is not None:
                return existing.kind  # every resource is an ldp:Resource: no change asked
            return BINARY if content_type and content_type not in PARSERS else RDF_SOURCE
        if existing is not None:
            check_model(existing, requested)  # before the body is read
            return existing.kind
        if requested is not None:
            return requested
        return BINARY if content_type and content_type not in PARSERS else CONTAINER

    # -- writing ---------------------------------------------------------
    def put(self, environ, uri):
        if uri == self.repository.base_url:
            raise RepositoryError(405, "the root container cannot be replaced", allow=ROOT_ALLOW)
        _check_name(uri.rsplit("/", 1)[1])
        _check_not_external(environ)
        requested = requested_model(environ.get("HTTP_LINK", ""))
        content_type = _bare(environ.get("CONTENT_TYPE", ""))
        if requested is None and (not content_type or content_type in PARSERS):
            # The common case, an RDF body and no Link type, needs no lookup first.
            return self._put_rdf(environ, uri, None)
        existing = self.repository.info(uri)
        model = self._model(environ, existing)
        if model == BINARY:
            if existing is None and self.repository.tombstone(uri) is not None:
                raise self._missing(uri)  # before streaming a body that could not be kept
            return self._put_binary(environ, uri, self._receive(environ))
        return self._put_rdf(environ, uri, model)

    def _put_rdf(self, environ, uri, model):
        body = self._body(environ)
        media_type = self._media_type(environ, body)
        try:
            created, info = self.repository.put_rdf(uri, body, media_type, model=model,
                                                    if_match=environ.get("HTTP_IF_MATCH"),
                                                    if_none_match=environ.get("HTTP_IF_NONE_MATCH"),
                                                    if_unmodified_since=environ.get("HTTP_IF_UNMODIFIED_SINCE"))
        except IsBinary:  # a binary keeps its model: the body is its new bytes
            upload = self.repository.binaries.receive(io.BytesIO(body), len(body), self.max_binary,
                                                      *self._binary_properties(environ))
            return self._put_binary(environ, uri, upload)
        return responses.written(created, info.kind, uri, info.etag)

    def _put_binary(self, environ, uri, upload):
        """Record an upload as the binary ``uri``; the upload is discarded if refused."""
        try:
            created, etag = self.repository.put_binary(uri, upload, model_requested=BINARY,
                                                       if_match=environ.get("HTTP_IF_MATCH"),
                                                       if_none_match=environ.get("HTTP_IF_NONE_MATCH"),
                                                       if_unmodified_since=environ.get("HTTP_IF_UNMODIFIED_SINCE"))
        except BaseException:
            upload.discard()
            raise
        return responses.written(created, BINARY, uri, etag)

    def post(self, environ, uri):
        info = self.repository.info(uri)
        if info is None:
            raise self._missing(uri)
        if not info.container:
            raise RepositoryError(405, f"<{uri}> is not a container: POST is not allowed",
                                  allow=responses.allow(info, self.repository.base_url))
        _check_not_external(environ)
        model = self._model(environ, None)
        slug = environ.get("HTTP_SLUG", "").strip()
        prefix = uri if uri.endswith("/") else uri + "/"
        candidates = []
        if slug and _SEGMENT.fullmatch(slug) and slug not in (".", "..") and not slug.startswith(RESERVED_PREFIX):
            # A Slug naming a live child or a tombstone is a hint not taken: the child gets a
            # fresh name, as Fedora does, so a deleted URI is never reused (LDP 5.2.3.11).
            candidates.append(slug)
        names = candidates + [uuid.uuid4().hex for _ in range(3)]
        if model == BINARY:
            upload = self._receive(environ)
            try:
                location, etag = self._create_first(
                    prefix, names, lambda target: self.repository.put_binary(
                        target, upload, model_requested=BINARY, if_none_match="*"))
            except BaseException:
                upload.discard()
                raise
        else:
            body = self._body(environ)
            media_type = self._media_type(environ, body)
            location, etag = self._create_first(
                prefix, names, lambda target: self.repository.put(target, body, media_type, model=model,
                                                                  if_none_match="*"))
        # The container's types (the request URI's), and the new binary's description.
        links = responses.links(CONTAINER, uri) + (", " + responses.describedby(location) if model == BINARY else "")
        headers = [("Location", location), ("ETag", f'"{etag}"'), ("Link", links),
                   ("Content-Type", "text/plain")]
        return 201, headers, (location + "\n").encode()

    @staticmethod
    def _create_first(prefix, names, create):
        """Create at the first free name; (location, ETag).  A taken name is skipped, never overwritten."""
        for name in names:
            try:
                _, etag = create(prefix + name)
            except RepositoryError as exc:
                if exc.status in (412, 410):  # that name is taken, or was: try the next
                    continue
                raise
            return prefix + name, etag
        raise RepositoryError(409, "could not find a free name for the new resource")

    def patch(self, environ, uri):
        if uri == self.repository.base_url:
            raise RepositoryError(405, "the root container cannot be changed", allow=ROOT_ALLOW)
        update = self._update(environ)
        info = self.repository.patch(uri, update, if_match=environ.get("HTTP_IF_MATCH"),
                                     if_unmodified_since=environ.get("HTTP_IF_UNMODIFIED_SINCE"))
        return 204, [("ETag", f'"{info.etag}"'), ("Link", responses.links(info.kind, uri))], b""


def not_acceptable(environ, available) -> RepositoryError:
    """The 406 for a request whose Accept names none of the media types ``available``."""
    return RepositoryError(406, f"cannot answer with {environ.get('HTTP_ACCEPT', '')!r}; "
                                f"available: {', '.join(available)}")


def _bare(content_type: str) -> str:
    """A media type without its parameters, lowercase."""
    return content_type.split(";")[0].strip().lower()


def _not_modified(environ, etag: str, last_modified: str | None) -> bool:
    """The preconditions of a GET or HEAD, in RFC 9110's order (13.2.2): 412 when
    If-Match (strong comparison) or, without it, If-Unmodified-Since fails; whether
    the answer is 304: If-None-Match matches or, without it, the resource has not
    changed since If-Modified-Since (dates to the second, as Last-Modified is sent)."""
    if_match = environ.get("HTTP_IF_MATCH")
    if if_match is not None:
        if not etag_matches(etag, if_match, weak=False):
            raise RepositoryError(412, "If-Match does not match the current ETag (a weak ETag never does)")
    elif modified_since(last_modified, environ.get("HTTP_IF_UNMODIFIED_SINCE")):
        raise RepositoryError(412, "the resource was modified after the If-Unmodified-Since date")
    if_none_match = environ.get("HTTP_IF_NONE_MATCH")
    if if_none_match is not None:
        return etag_matches(etag, if_none_match)
    return modified_since(last_modified, environ.get("HTTP_IF_MODIFIED_SINCE")) is False


def _check_not_external(environ) -> None:
    # Fedora API 3.9: a server without external content refuses every
    # message/external-body with 415 (MUST); storing it as a binary would keep
    # the pointer and lose the content.
    if _bare(environ.get("CONTENT_TYPE", "")) == EXTERNAL_BODY:
        raise RepositoryError(415, f"external content ({EXTERNAL_BODY}) is not supported by this server: "
                                   "send the bytes themselves")


def _check_name(segment: str) -> None:
    if segment.startswith(RESERVED_PREFIX):
        raise RepositoryError(409, f"path segments starting with {RESERVED_PREFIX!r} are reserved by the server")


def page_url(uri: str, start: int, size: int) -> str:
    """The URL of the page of ``uri``'s children from id ``start`` on, ``size`` of them at most."""
    return f"{uri}?page={start}&size={size}"


def _page_query(query: str) -> tuple[int, int] | None:
    """(start, size) of a page's URL query (``page=START&size=N``), None when it names
    no page (other parameters are ignored, as before); 400 for a page named wrong."""
    if "page=" not in query and "size=" not in query:
        return None
    try:
        params = dict(parse_qsl(query, keep_blank_values=True, max_num_fields=16))
    except ValueError:  # more fields than that
        raise RepositoryError(400, "the URL's query has too many parameters to name a page "
                                   "(<container>?page=START&size=N)") from None
    if not any(name in params for name in PAGE_PARAMS):
        return None
    start, size = params.get("page", ""), params.get("size", "")
    if not (whole_number(start) and whole_number(size)) or len(start) > 10 or len(size) > 10:
        raise RepositoryError(400, "a page's URL is <container>?page=START&size=N, both whole numbers")
    if int(start) > _MAX_PAGE_START or not 1 <= int(size) <= MAX_PAGE_SIZE:
        raise RepositoryError(400, f"a page starts at 0 to {_MAX_PAGE_START} and holds 1 to "
                                   f"{MAX_PAGE_SIZE:,} children")
    return int(start), int(size)
