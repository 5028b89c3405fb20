"""Reading request headers: content negotiation, Prefer, Link types, Range,
Content-Disposition.  Pure functions, no repository."""
from __future__ import annotations

import codecs
import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import format_datetime, parsedate_to_datetime
from urllib.parse import unquote

from lakebench.server.errors import RepositoryError
from lakebench.server.vocabulary import (
    BINARY,
    CONTAINER,
    LDP,
    PREFER_CONTAINED,
    PREFER_CONTAINMENT,
    PREFER_EMPTY,
    PREFER_INBOUND,
    PREFER_MEMBERSHIP,
    PREFER_MINIMAL,
    RDF_SOURCE,
)

#: Media types a GET of an RDF source can answer with; the first is the default.
SERIALIZERS = ("text/turtle", "application/n-triples", "application/ld+json")
#: What ``include``/``omit`` of a Prefer header may name and the server honours.
#: There being no membership (no Direct or Indirect Containers), PreferMembership is
#: honoured by having nothing to add or leave out.
PREFER_KNOWN = frozenset((PREFER_CONTAINMENT, PREFER_MEMBERSHIP, PREFER_MINIMAL, PREFER_EMPTY,
                          PREFER_INBOUND, PREFER_CONTAINED))
#: The page size hints of LDP Paging 1.0 (parameters of ``return=representation``)
#: that are honoured: a page holds at most that many children, each one containment
#: triple (the container's own few triples come on the first page besides).
PAGE_SIZE_HINTS = ("max-member-count", "max-triple-count")
#: The most children a page holds; a larger hint is held to it (a page is listed in
#: memory, from one read transaction, before it is sent).
MAX_PAGE_SIZE = 100_000

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
# Header parsing runs in time linear in the header's length: every pattern
# below is anchored, or stops at a character that cannot occur inside what it
# matches, so the regular expression engine never backtracks over a long
# stretch, and each scan resumes where the last ended.  (The server bounds
# the length too: lakebench.server.serving.MAX_HEADER.)
#: A link-value's target: no '<' or '>' inside (RFC 3986), so a run of '<' costs one step each.
_TARGET = re.compile(r"<([^<>]*)>")
#: One ``; name[=value]`` parameter (RFC 8288, RFC 6266), its value a token or
#: a quoted string (closed or not: an unclosed one runs to the end).
#: In a Link header a bare value also ends at ',' (the next link-value) and '<'.
_PARAM = re.compile(r'[ \t]*;[ \t]*([^\s;,="<>]*)[ \t]*(?:=[ \t]*(?:"((?:[^"\\]|\\.)*)"?|([^\s;,"<>]*)))?')
_DISPOSITION_PARAM = re.compile(r'[ \t]*;[ \t]*([^\s;="]*)[ \t]*(?:=[ \t]*(?:"((?:[^"\\]|\\.)*)"?|([^\s;"]*)))?')
_ESCAPE = re.compile(r"\\(.)")


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
    for media, q in _accept_items(accept):
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


def quality(accept: str, media_type: str) -> float:
    """The q-value an Accept header gives ``media_type`` (its most specific range: the type
    itself, then ``type/*``, then ``*/*``); 1 for an empty header.

    >>> quality("text/*;q=0.5, application/link-format", "text/turtle"), quality("", "text/turtle")
    (0.5, 1.0)
    >>> quality("application/link-format", "text/turtle")
    0.0
    """
    if not accept.strip():
        return 1.0
    major = media_type.split("/")[0] + "/*"
    found: dict[str, float] = {}
    for media, q in _accept_items(accept):
        found.setdefault(media, q)
    for candidate in (media_type, major, "*/*"):
        if candidate in found:
            return found[candidate]
    return 0.0


def _accept_items(accept: str) -> list[tuple[str, float]]:
    """(media range, lowercase; its q-value) of each item of an Accept header, in order
    (a q that is not a number is 0)."""
    items = []
    for item in accept.split(","):
        parts = [p.strip() for p in item.split(";")]
        q = 1.0
        for param in parts[1:]:
            if param.startswith("q="):
                try:
                    q = float(param[2:])
                except ValueError:
                    q = 0.0
        items.append((parts[0].lower(), q))
    return items


@dataclass(frozen=True)
class Preferences:
    """What a GET of an RDF resource is to hold, from its ``Prefer`` header.

    ``minimal``: the minimal-container triples (LDP 7.2.2: the resource's own
    triples, its types and dates, all but containment and membership);
    ``containment``: its ``ldp:contains``; ``inbound``: the triples of other
    resources with the resource as object (Fedora's PreferInboundReferences);
    ``contained``: the triples of its children (PreferContainedDescriptions).
    ``applied`` is the ``Preference-Applied`` value, or None: it is only sent
    for a preference that was honoured in full (RFC 7240 section 3).
    ``page_size``: the client pages (LDP Paging 1.0), at most this many
    children a page (the least of its ``max-member-count`` and
    ``max-triple-count`` hints); None: it does not.
    """

    minimal: bool = True
    containment: bool = True
    inbound: bool = False
    contained: bool = False
    applied: str | None = None
    page_size: int | None = None


#: One preference of a Prefer header (RFC 7240: ``token [= word]``); a quoted value may
#: be unclosed (it runs to the end).  The commas and spaces before it are skipped apart
#: (_SEPARATORS), so that a failed match never backtracks over a run of them.
_PREFERENCE = re.compile(r'([^\s;,="]+)[ \t]*(?:=[ \t]*(?:"((?:[^"\\]|\\.)*)"?|([^\s;,"]*)))?')
_SEPARATORS = re.compile(r"[\s,]*")


def prefer(header: str) -> Preferences:
    """The :class:`Preferences` of a Prefer header.

    >>> prefer('return=representation; omit="http://www.w3.org/ns/ldp#PreferContainment"')
    Preferences(minimal=True, containment=False, inbound=False, contained=False, applied='return=representation', page_size=None)
    >>> prefer('return=representation; max-member-count="500"; max-triple-count="800"').page_size
    500
    >>> prefer('return=representation; max-member-count="0"; max-kbyte-count="9"').page_size is None
    True
    >>> prefer('return=representation; max-member-count="²"').page_size is None
    True
    >>> prefer('return=representation; max-triple-count="12345678901234567890"').page_size
    100000
    >>> prefer('return=representation; include="http://www.w3.org/ns/ldp#PreferMinimalContainer"').containment
    False
    >>> prefer('return=representation; omit="http://www.w3.org/ns/ldp#PreferMinimalContainer"').minimal
    False
    >>> prefer('return=representation; include="http://example.org/unknown"').applied is None
    True
    >>> prefer("return=minimal")
    Preferences(minimal=True, containment=False, inbound=False, contained=False, applied='return=minimal', page_size=None)
    >>> prefer("") == Preferences()
    True
    """
    returned = _return_preference(header or "")
    if returned is None:
        return Preferences()
    value, params = returned
    if value == "minimal":  # a minimal response: the minimal container
        return Preferences(containment=False, applied="return=minimal")
    if value != "representation":
        return Preferences()
    include: set[str] = set()
    omit: set[str] = set()
    sizes = []
    for name, text in params:
        name = name.lower()
        if name in ("include", "omit"):
            (include if name == "include" else omit).update(text.split())
        elif name in PAGE_SIZE_HINTS and whole_number(text) and text.strip("0"):
            # Held to MAX_PAGE_SIZE (read no further than needed); a zero, or a unit
            # not known (max-kbyte-count), is ignored (LDP Paging: MAY).
            digits = text.lstrip("0")
            sizes.append(min(int(digits), MAX_PAGE_SIZE) if len(digits) <= 7 else MAX_PAGE_SIZE)
    minimal_asked = bool(include & {PREFER_MINIMAL, PREFER_EMPTY})
    return Preferences(
        minimal=not omit & {PREFER_MINIMAL, PREFER_EMPTY},
        # Asking for the minimal container leaves containment out unless it is asked for too.
        containment=PREFER_CONTAINMENT not in omit and (PREFER_CONTAINMENT in include or not minimal_asked),
        inbound=PREFER_INBOUND in include and PREFER_INBOUND not in omit,
        contained=PREFER_CONTAINED in include and PREFER_CONTAINED not in omit,
        applied="return=representation" if (include | omit) <= PREFER_KNOWN else None,
        page_size=min(sizes) if sizes else None,
    )


def _return_preference(header: str) -> tuple[str, list[tuple[str, str]]] | None:
    """(value, [(name, value), ...] of its parameters) of the ``return`` preference, or
    None; one left-to-right pass over the header (what is not a preference is skipped)."""
    pos = 0
    while True:
        pos = _SEPARATORS.match(header, pos).end()
        if pos >= len(header):
            return None
        preference = _PREFERENCE.match(header, pos)
        if preference is None or preference.end() == pos:  # junk: on to the next ','
            comma = header.find(",", pos + 1)
            if comma < 0:
                return None
            pos = comma
            continue
        name, quoted, bare = preference.groups()
        params, pos = _params_at(header, preference.end())
        if name.lower() == "return":
            value = _ESCAPE.sub(r"\1", quoted) if quoted is not None else bare or ""
            return value.lower(), params
        if pos < len(header) and header[pos] != ",":
            comma = header.find(",", pos)
            if comma < 0:
                return None
            pos = comma


def http_date(xsd_datetime: str) -> str:
    """An xsd:dateTime as an HTTP-date (RFC 9110 section 5.6.7), to the second.

    >>> http_date("2024-05-01T12:00:00.12Z")
    'Wed, 01 May 2024 12:00:00 GMT'
    """
    return format_datetime(_seconds(xsd_datetime), usegmt=True)


def modified_since(xsd_datetime: str | None, header: str | None) -> bool | None:
    """Whether a resource last modified at ``xsd_datetime`` changed after the HTTP-date
    of an If-Modified-Since / If-Unmodified-Since header; None when either is missing
    or not a date (RFC 9110 13.1.3, 13.1.4: the header is then ignored).  Compared to
    the second, as Last-Modified is sent.

    >>> modified_since("2024-05-01T12:00:00.5Z", "Wed, 01 May 2024 12:00:00 GMT")
    False
    >>> modified_since("2024-05-01T12:00:01Z", "Wed, 01 May 2024 12:00:00 GMT")
    True
    >>> modified_since("2024-05-01T12:00:01Z", "yesterday") is None
    True
    """
    if not xsd_datetime or not header:
        return None
    since = parse_http_date(header)
    if since is None:
        return None
    try:
        return _seconds(xsd_datetime) > since
    except ValueError:
        return None


def parse_http_date(text: str) -> datetime | None:
    """An HTTP-date (RFC 9110 5.6.7) as a UTC datetime; None when ``text`` is not one (or is
    out of the range a datetime holds).

    >>> parse_http_date("Wed, 01 May 2024 12:00:00 GMT").isoformat()
    '2024-05-01T12:00:00+00:00'
    >>> parse_http_date("Fri, 31 Dec 9999 23:59:59 -0100") is None, parse_http_date("soon") is None
    (True, True)
    """
    try:
        when = parsedate_to_datetime(text.strip())
        if when is None:
            return None
        # An HTTP-date is always GMT (one without a zone too).
        return when.replace(tzinfo=timezone.utc) if when.tzinfo is None else when.astimezone(timezone.utc)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def _seconds(xsd_datetime: str) -> datetime:
    when = datetime.fromisoformat(xsd_datetime.replace("Z", "+00:00"))
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.astimezone(timezone.utc).replace(microsecond=0)


def link_types(header: str) -> list[str]:
    """The targets of the ``rel="type"`` links of a Link header.

    >>> link_types('<http://a>; rel="type", <http://b>; rel="describedby", <http://c>;rel=type')
    ['http://a', 'http://c']
    """
    return link_targets(header, "type")


def link_targets(header: str, relation: str) -> list[str]:
    """The targets of the links of a Link header whose ``rel`` names ``relation``.

    >>> link_targets('<p?page=0>; rel="first", <p?page=9>; rel="next"', "next")
    ['p?page=9']
    """
    targets = []
    for target, params in _link_values(header or ""):
        for name, value in params:
            if name.lower() == "rel" and relation in value.lower().split():
                targets.append(target)
                break
    return targets


def _link_values(header: str):
    """``(target, [(name, value), ...])`` of each link-value of a Link header, in one
    left-to-right pass; what is not a link-value is skipped."""
    pos = 0
    while True:
        link = _TARGET.search(header, pos)
        if link is None:
            return
        params, pos = _params_at(header, link.end())
        yield link.group(1), params


def _params_at(header: str, pos: int) -> tuple[list[tuple[str, str]], int]:
    """The ``; name=value`` parameters that follow ``pos`` (a Prefer's or a link-value's), unquoted,
    and where they end."""
    params = []
    while True:
        param = _PARAM.match(header, pos)
        if param is None or param.end() == pos:
            return params, pos
        pos = param.end()
        name, quoted, bare = param.groups()
        params.append((name, _ESCAPE.sub(r"\1", quoted) if quoted is not None else bare or ""))


def _parameters(header: str) -> list[tuple[str, str]]:
    """The ``; name=value`` parameters of a Content-Disposition (``type; a=1; b="x"``), in one pass."""
    pos = header.find(";")
    params = []
    while pos >= 0:
        param = _DISPOSITION_PARAM.match(header, pos)
        if param is None or param.end() == pos:  # junk: on to the next ';'
            pos = header.find(";", pos + 1)
            continue
        pos = param.end()
        name, quoted, bare = param.groups()
        params.append((name, _ESCAPE.sub(r"\1", quoted) if quoted is not None else bare or ""))
        if pos < len(header) and header[pos] != ";":
            pos = header.find(";", pos)
    return params


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
    if not dash or not (whole_number(first) or whole_number(last)) or (first and not whole_number(first)) or (
            last and not whole_number(last)):
        return None
    if not first:  # the last N bytes
        n = _position(last)
        if n == 0 or size == 0:
            raise unsatisfiable(size)
        return max(0, size - n), size - 1
    start = _position(first)
    end = min(_position(last), size - 1) if last else size - 1
    if last and _position(last) < start:
        return None  # invalid: ignored
    if start >= size:
        raise unsatisfiable(size)
    return start, end


def whole_number(text: str) -> bool:
    """ASCII digits only (``str.isdigit`` takes '²' and other digits ``int`` refuses)."""
    return text.isascii() and text.isdigit()


def _position(digits: str) -> int:
    """A byte position; one past any file's size when it has more than 19 digits
    (``int`` refuses strings of over 4,300 digits, and none is needed)."""
    return int(digits) if len(digits) <= 19 else 10 ** 19


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
    >>> disposition_filename("attachment; filename*=UTF-8''a%0D%0Ab")
    Traceback (most recent call last):
    ...
    lakebench.server.errors.RepositoryError: the file name of Content-Disposition holds a control character (U+000D)
    """
    name = _disposition_filename(header)
    bad = next((c for c in name or "" if unicodedata.category(c) == "Cc"), None)
    if bad is not None:
        # It would be sent back in a header of every GET: refused, not stored.
        raise RepositoryError(400, f"the file name of Content-Disposition holds a control character "
                                   f"(U+{ord(bad):04X})")
    return name


def _disposition_filename(header: str | None) -> str | None:
    if not header:
        return None
    params = _parameters(header)
    for name, value in params:
        charset, quote, rest = value.partition("'")
        _language, quote2, encoded = rest.partition("'")
        if name.lower() == "filename*" and quote and quote2 and encoded:
            try:
                encoding = codecs.lookup(charset or "utf-8").name
            except (LookupError, ValueError):  # a charset nobody knows: read it as UTF-8
                encoding = "utf-8"
            return unquote(encoded, encoding=encoding, errors="replace")
    for name, value in params:
        if name.lower() == "filename" and value:
            return value
    return None
