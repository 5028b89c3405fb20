"""Reading request headers: content negotiation, Prefer, Link types, Range,
Content-Disposition.  Pure functions, no repository."""
from __future__ import annotations

import codecs
import re
from urllib.parse import unquote

from lakebench.server.errors import RepositoryError
from lakebench.server.vocabulary import BINARY, CONTAINER, LDP, RDF_SOURCE

#: Media types a GET of an RDF source can answer with; the first is the default.
SERIALIZERS = ("text/turtle", "application/n-triples", "application/ld+json")
PREFER_CONTAINMENT = LDP + "PreferContainment"
PREFER_MINIMAL = LDP + "PreferMinimalContainer"

#: The interaction model each LDP type asks for in ``Link: <type>; rel="type"``.
_MODELS = {
    LDP + "BasicContainer": CONTAINER,
    LDP + "Container": CONTAINER,
    LDP + "RDFSource": RDF_SOURCE,
    LDP + "NonRDFSource": BINARY,
}
_UNSUPPORTED_MODELS = (LDP + "DirectContainer", LDP + "IndirectContainer")
#: ``ldp:Resource`` alone: a resource that is not a container (LDP 5.2.3.4), an RDF
#: source or a binary by its Content-Type.
NOT_A_CONTAINER = "resource"
_LINK = re.compile(r'<([^>]*)>((?:\s*;\s*[^;,"=]+(?:="[^"]*"|=[^;,]*)?)*)')
_REL = re.compile(r'rel\s*=\s*(?:"([^"]*)"|([^;,\s]+))', re.I)


def negotiate(accept: str) -> str | None:
    """The best of SERIALIZERS for an Accept header (q-values honoured).

    >>> negotiate("application/n-triples;q=0.9, text/turtle;q=0.5")
    'application/n-triples'
    >>> negotiate("*/*"), negotiate("")
    ('text/turtle', 'text/turtle')
    >>> negotiate("image/png") is None
    True
    """
    if not accept.strip():
        return SERIALIZERS[0]
    best, best_q = None, 0.0
    for item in accept.split(","):
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


def prefer(header: str) -> tuple[bool, str | None]:
    """(include containment?, the Preference-Applied value or None) from a Prefer header.

    >>> prefer('return=representation; omit="http://www.w3.org/ns/ldp#PreferContainment"')
    (False, 'return=representation')
    >>> prefer('return=representation; include="http://www.w3.org/ns/ldp#PreferMinimalContainer"')
    (False, 'return=representation')
    >>> prefer("return=minimal")
    (False, 'return=minimal')
    >>> prefer("")
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


def link_types(header: str) -> list[str]:
    """The targets of the ``rel="type"`` links of a Link header.

    >>> link_types('<http://a>; rel="type", <http://b>; rel="describedby", <http://c>;rel=type')
    ['http://a', 'http://c']
    """
    types = []
    for target, params in _LINK.findall(header or ""):
        for quoted, bare in _REL.findall(params):
            if "type" in (quoted or bare).split():
                types.append(target)
    return types


def requested_model(header: str) -> str | None:
    """The interaction model a request's ``Link rel="type"`` asks for (None: not said).

    A model the server cannot honour is refused, never downgraded (LDP 5.2.3.4).

    >>> requested_model('<http://www.w3.org/ns/ldp#Resource>; rel="type", '
    ...                 '<http://www.w3.org/ns/ldp#RDFSource>; rel="type"')
    'rdfsource'
    >>> requested_model('<http://www.w3.org/ns/ldp#Resource>; rel="type"')
    'resource'
    >>> requested_model('<http://example.org/Other>; rel="type"') is None
    True
    """
    models = set()
    resource = False
    for target in link_types(header):
        if target in _UNSUPPORTED_MODELS:
            raise RepositoryError(409, f"interaction model <{target}> is not implemented by this server")
        if target in _MODELS:
            models.add(_MODELS[target])
        resource = resource or target == LDP + "Resource"
    if resource and not models:
        return NOT_A_CONTAINER
    if CONTAINER in models and RDF_SOURCE in models:  # a container is an RDF source too
        models.discard(RDF_SOURCE)
    if len(models) > 1:
        raise RepositoryError(400, "Link rel=\"type\" asks for more than one interaction model")
    return models.pop() if models else None


def byte_range(header: str | None, size: int) -> tuple[int, int] | None:
    """The ``(first, last)`` bytes of a ``Range`` header; None: send it all.

    Several ranges, or another unit, are answered with the whole body (RFC
    9110 lets a server ignore Range); a range that is malformed is ignored
    too; one that lies past the end is 416.

    >>> byte_range("bytes=0-9", 100), byte_range("bytes=90-", 100), byte_range("bytes=-5", 100)
    ((0, 9), (90, 99), (95, 99))
    >>> byte_range("bytes=50-500", 100), byte_range("bytes=0-1,5-6", 100), byte_range("items=0-1", 100)
    ((50, 99), None, None)
    """
    if not header:
        return None
    unit, _, spec = header.strip().partition("=")
    if unit.strip().lower() != "bytes" or "," in spec:
        return None
    first, dash, last = spec.strip().partition("-")
    if not dash or not (first.isdigit() or last.isdigit()) or (first and not first.isdigit()) or (
            last and not last.isdigit()):
        return None
    if not first:  # the last N bytes
        n = int(last)
        if n == 0 or size == 0:
            raise unsatisfiable(size)
        return max(0, size - n), size - 1
    start = int(first)
    end = min(int(last), size - 1) if last else size - 1
    if last and int(last) < start:
        return None  # invalid: ignored
    if start >= size:
        raise unsatisfiable(size)
    return start, end


def unsatisfiable(size: int) -> RepositoryError:
    return RepositoryError(416, f"the range is outside the {size} bytes of the binary",
                           headers=[("Content-Range", f"bytes */{size}")])


def disposition_filename(header: str | None) -> str | None:
    """The file name of a Content-Disposition header (``filename*`` preferred).

    >>> disposition_filename('attachment; filename="a b.txt"')
    'a b.txt'
    >>> disposition_filename("attachment; filename*=UTF-8''%C3%A9t%C3%A9.pdf; filename=x")
    'été.pdf'
    >>> disposition_filename("attachment; filename*=klingon''a%20b")
    'a b'
    """
    if not header:
        return None
    extended = re.search(r"filename\*\s*=\s*([^']*)'[^']*'([^;\s]+)", header, re.I)
    if extended:
        try:
            encoding = codecs.lookup(extended.group(1) or "utf-8").name
        except LookupError:  # a charset nobody knows: read it as UTF-8
            encoding = "utf-8"
        return unquote(extended.group(2), encoding=encoding, errors="replace")
    plain = re.search(r'filename\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;\s]+))', header, re.I)
    if plain:
        return re.sub(r"\\(.)", r"\1", plain.group(1)) if plain.group(1) is not None else plain.group(2)
    return None
