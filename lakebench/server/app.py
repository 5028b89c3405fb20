"""The LDP HTTP layer: a plain WSGI application over :class:`Repository`.

It knows HTTP and LDP, not LMDB.  Every client mistake is a 4xx with a
one-line message in the body; anything else is a 500 and is logged.
"""
from __future__ import annotations

import logging
import re
import uuid
from urllib.parse import unquote

from lakebench.server.repository import LDP, PARSERS, Repository, RepositoryError, etag_matches

log = logging.getLogger("lakebench.server")

ALLOW = "GET, HEAD, PUT, POST, DELETE, OPTIONS"
#: The root container can be neither replaced nor deleted; an RDF source takes no POST.
ROOT_ALLOW = "GET, HEAD, POST, OPTIONS"
SOURCE_ALLOW = "GET, HEAD, PUT, DELETE, OPTIONS"
#: Media types a GET can answer with; the first is the default.
SERIALIZERS = ("text/turtle", "application/n-triples", "application/ld+json")
PREFER_CONTAINMENT = LDP + "PreferContainment"
PREFER_MINIMAL = LDP + "PreferMinimalContainer"
DEFAULT_MAX_BODY = 16 * 1024 * 1024

# One path segment: RFC 3986 pchar without percent-escapes (those are decoded
# before we see the path, so an encoded '/' or '..' cannot sneak through).
_SEGMENT = re.compile(r"[A-Za-z0-9._~!$&'()*+,;=:@-]+")
_STATUS = {
    200: "200 OK", 201: "201 Created", 204: "204 No Content", 304: "304 Not Modified",
    400: "400 Bad Request", 404: "404 Not Found", 405: "405 Method Not Allowed",
    406: "406 Not Acceptable", 409: "409 Conflict", 411: "411 Length Required",
    412: "412 Precondition Failed", 413: "413 Content Too Large",
    415: "415 Unsupported Media Type", 500: "500 Internal Server Error",
    507: "507 Insufficient Storage",
}


class LdpApplication:
    """WSGI callable: ``LdpApplication(repository_factory, max_body)``.

    The repository is opened lazily in the process that serves requests
    (after the server forks its workers), never inherited across a fork.
    """

    def __init__(self, open_repository, max_body: int = DEFAULT_MAX_BODY):
        self._open_repository = open_repository
        self._repository: Repository | None = None
        self.max_body = max_body

    @property
    def repository(self) -> Repository:
        if self._repository is None:
            self._repository = self._open_repository()
        return self._repository

    def __call__(self, environ, start_response):
        try:
            status, headers, body = self.handle(environ)
        except RepositoryError as exc:
            status, headers, body = _error(exc.status, exc.message, exc.allow)
        except Exception:  # a bug, not the client's fault: log it, answer 500
            log.exception("error handling %s %s", environ.get("REQUEST_METHOD"), environ.get("PATH_INFO"))
            status, headers, body = _error(500, "internal server error")
        start_response(_STATUS[status], headers)
        if environ["REQUEST_METHOD"] == "HEAD":
            if hasattr(body, "close"):
                body.close()
            return []
        return [body] if isinstance(body, bytes) else body

    # -- dispatch --------------------------------------------------------
    def handle(self, environ):
        method = environ["REQUEST_METHOD"]
        uri = self._uri(environ)
        if method in ("GET", "HEAD"):
            return self.get(environ, uri)
        if method == "PUT":
            return self.put(environ, uri)
        if method == "POST":
            return self.post(environ, uri)
        if method == "DELETE":
            if uri == self.repository.base_url:
                raise RepositoryError(405, "the root container cannot be deleted", allow=ROOT_ALLOW)
            self.repository.delete(uri, if_match=environ.get("HTTP_IF_MATCH"))
            return 204, [], b""
        info = self.repository.info(uri)
        if method == "OPTIONS":
            if info is None:
                raise RepositoryError(404, f"<{uri}> does not exist")
            headers = [("Allow", _allow(info, self.repository.base_url))]
            if info.container:
                headers.append(("Accept-Post", ", ".join(PARSERS)))
            return 204, headers, b""
        allow = ALLOW if info is None else _allow(info, self.repository.base_url)
        raise RepositoryError(405, f"method {method} not allowed", allow=allow)

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

    # -- methods ---------------------------------------------------------
    def get(self, environ, uri):
        media_type = _negotiate(environ.get("HTTP_ACCEPT", ""))
        if media_type is None:
            raise RepositoryError(406, f"cannot answer with {environ.get('HTTP_ACCEPT')!r}; "
                                       f"available: {', '.join(SERIALIZERS)}")
        containment, applied = _prefer(environ.get("HTTP_PREFER", ""))
        found = self.repository.representation(uri, media_type, containment=containment)
        if found is None:
            raise RepositoryError(404, f"<{uri}> does not exist")
        info, chunks = found
        headers = _resource_headers(info, self.repository.base_url) + [
            ("Content-Type", f"{media_type}; charset=utf-8"),
            ("Vary", "Accept, Prefer"),
        ]
        if applied:
            headers.append(("Preference-Applied", applied))
        inm = environ.get("HTTP_IF_NONE_MATCH")
        if inm is not None and etag_matches(info.etag, inm):
            chunks.close()
            return 304, _resource_headers(info, self.repository.base_url), b""
        return 200, headers, chunks

    def _body(self, environ) -> bytes:
        length = environ.get("CONTENT_LENGTH") or ""
        stream = environ["wsgi.input"]
        if length:
            try:
                size = int(length)
            except ValueError:
                raise RepositoryError(400, f"invalid Content-Length {length!r}") from None
            if size > self.max_body:
                raise RepositoryError(413, f"body of {size} bytes exceeds the limit of {self.max_body}")
            body = _read(stream, size)
            if len(body) != size:  # the client went away mid-body: store nothing of it
                raise RepositoryError(400, f"incomplete body: {len(body)} of {size} bytes")
            return body
        body = _read(stream, self.max_body + 1)  # chunked: read up to the limit
        if len(body) > self.max_body:
            raise RepositoryError(413, f"body exceeds the limit of {self.max_body} bytes")
        return body

    def _media_type(self, environ, body: bytes) -> str:
        content_type = environ.get("CONTENT_TYPE", "").split(";")[0].strip().lower()
        if not content_type:
            if body.strip():
                raise RepositoryError(415, "a body needs a Content-Type: " + ", ".join(PARSERS))
            return "text/turtle"
        if content_type not in PARSERS:
            raise RepositoryError(415, f"unsupported media type {content_type!r}; send one of "
                                       f"{', '.join(PARSERS)}")
        return content_type

    def put(self, environ, uri):
        if uri == self.repository.base_url:
            raise RepositoryError(405, "the root container cannot be replaced", allow=ROOT_ALLOW)
        body = self._body(environ)
        media_type = self._media_type(environ, body)
        container = _link_type(environ.get("HTTP_LINK", "")) != LDP + "RDFSource"
        created, etag = self.repository.put(
            uri, body, media_type, container=container,
            if_match=environ.get("HTTP_IF_MATCH"), if_none_match=environ.get("HTTP_IF_NONE_MATCH"),
        )
        headers = [("ETag", f'"{etag}"')]
        if created:
            headers += [("Location", uri), ("Content-Type", "text/plain")]
            return 201, headers, (uri + "\n").encode()
        return 204, headers, b""

    def post(self, environ, uri):
        info = self.repository.info(uri)
        if info is None:
            raise RepositoryError(404, f"<{uri}> does not exist")
        if not info.container:
            raise RepositoryError(405, f"<{uri}> is not a container: POST is not allowed",
                                  allow=SOURCE_ALLOW)
        body = self._body(environ)
        media_type = self._media_type(environ, body)
        container = _link_type(environ.get("HTTP_LINK", "")) != LDP + "RDFSource"
        slug = environ.get("HTTP_SLUG", "").strip()
        prefix = uri if uri.endswith("/") else uri + "/"
        candidates = [slug] if slug and _SEGMENT.fullmatch(slug) and slug not in (".", "..") else []
        for name in candidates + [uuid.uuid4().hex for _ in range(3)]:
            try:
                _, etag = self.repository.put(prefix + name, body, media_type, container=container,
                                              if_none_match="*")
            except RepositoryError as exc:
                if exc.status == 412:  # that name is taken: try the next
                    continue
                raise
            location = prefix + name
            return 201, [("Location", location), ("ETag", f'"{etag}"'),
                         ("Content-Type", "text/plain")], (location + "\n").encode()
        raise RepositoryError(409, "could not find a free name for the new resource")


def _read(stream, size: int) -> bytes:
    """Up to ``size`` bytes of the request body; a broken or truncated body is a 400."""
    try:
        return stream.read(size)
    except Exception as exc:  # the server's own errors for bad chunking or a dropped client
        raise RepositoryError(400, f"cannot read the request body: {type(exc).__name__}: {exc}") from None


def _allow(info, base_url: str) -> str:
    if info.uri == base_url:
        return ROOT_ALLOW
    return ALLOW if info.container else SOURCE_ALLOW


def _resource_headers(info, base_url: str) -> list[tuple[str, str]]:
    links = [f'<{LDP}Resource>; rel="type"', f'<{LDP}RDFSource>; rel="type"']
    if info.container:
        links += [f'<{LDP}Container>; rel="type"', f'<{LDP}BasicContainer>; rel="type"']
    headers = [("ETag", f'"{info.etag}"'), ("Link", ", ".join(links)), ("Allow", _allow(info, base_url))]
    if info.container:
        headers.append(("Accept-Post", ", ".join(PARSERS)))
    return headers


def _error(status: int, message: str, allow: str | None = None):
    return status, [("Content-Type", "text/plain; charset=utf-8"), *(
        [("Allow", allow or ALLOW)] if status == 405 else [])], (message + "\n").encode("utf-8")


def _negotiate(accept: str) -> str | None:
    """The best of SERIALIZERS for an Accept header (q-values honoured).

    >>> _negotiate("application/n-triples;q=0.9, text/turtle;q=0.5")
    'application/n-triples'
    >>> _negotiate("*/*"), _negotiate("")
    ('text/turtle', 'text/turtle')
    >>> _negotiate("image/png") is None
    True
    """
    if not accept.strip():
        return SERIALIZERS[0]
    best, best_q = None, 0.0
    for n, item in enumerate(accept.split(",")):
        parts = [p.strip() for p in item.split(";")]
        media = parts[0].lower()
        q = 1.0
        for param in parts[1:]:
            if param.startswith("q="):
                try:
                    q = float(param[2:])
                except ValueError:
                    q = 0.0
        if media in ("*/*", "text/*"):
            candidate = SERIALIZERS[0]
        elif media == "application/*":
            candidate = SERIALIZERS[1]
        elif media in SERIALIZERS:
            candidate = media
        else:
            continue
        if q > best_q:
            best, best_q = candidate, q
    return best


def _prefer(header: str) -> tuple[bool, str | None]:
    """(include containment?, the Preference-Applied value or None) from a Prefer header.

    >>> _prefer('return=representation; omit="http://www.w3.org/ns/ldp#PreferContainment"')
    (False, 'return=representation')
    >>> _prefer('return=representation; include="http://www.w3.org/ns/ldp#PreferMinimalContainer"')
    (False, 'return=representation')
    >>> _prefer("return=minimal")
    (False, 'return=minimal')
    >>> _prefer("")
    (True, None)
    """
    if "return=representation" in header:
        omit = re.search(r'omit="([^"]*)"', header)
        include = re.search(r'include="([^"]*)"', header)
        omitted = omit.group(1).split() if omit else []
        included = include.group(1).split() if include else []
        if PREFER_CONTAINMENT in omitted or PREFER_MINIMAL in included:
            return False, "return=representation"
        return True, "return=representation"
    if "return=minimal" in header:
        return False, "return=minimal"
    return True, None


def _link_type(header: str) -> str | None:
    match = re.search(r'<([^>]*)>\s*;\s*rel="?type"?', header)
    return match.group(1) if match else None
