"""The shapes of versioning (Memento, RFC 7089, as the Fedora API's section 4 uses it):
memento names and dates, Accept-Datetime, the TimeMap in link-format, and the
headers of an original resource, its TimeMap and its mementos.  No repository.

Every resource but the root is versioned (an LDPRv): its TimeMap (LDPCv) is
``<uri>/fcr:versions``, and each memento (LDPRm) ``<uri>/fcr:versions/ID``, where
ID is the second it was taken, in UTC, as ``yyyymmddHHMMSS`` (Fedora's form):
a resource has at most one memento a second, as in Fedora.
"""
from __future__ import annotations

import re
from datetime import datetime, timezone
from email.utils import format_datetime

from lakebench.server.errors import RepositoryError
from lakebench.server.headers import negotiate, parse_http_date, quality
from lakebench.server.vocabulary import MEMENTO_TYPE, ORIGINAL_RESOURCE, TIMEGATE, TIMEMAP, VERSIONS_SEGMENT

LINK_FORMAT = "application/link-format"
#: A TimeMap takes POST (a memento of the resource as it is now); it cannot be replaced,
#: changed or deleted (its resource's versions go with the resource).
TIMEMAP_ALLOW = "GET, HEAD, POST, OPTIONS"
#: A memento is immutable (Fedora API 4.2.4: 405 on PUT, POST and PATCH); it can be deleted.
MEMENTO_ALLOW = "GET, HEAD, DELETE, OPTIONS"
_ID = re.compile(r"[0-9]{14}")
_ID_FORMAT = "%Y%m%d%H%M%S"


def memento_id(when: datetime) -> str:
    """The ID of a memento taken at ``when`` (its second, UTC).

    >>> memento_id(datetime(2026, 11, 27, 3, 4, 5, 999, tzinfo=timezone.utc))
    '20261127030405'
    """
    return when.astimezone(timezone.utc).strftime(_ID_FORMAT)


def is_memento_id(text: str) -> bool:
    """Whether ``text`` names a memento (14 digits that are a date).

    >>> is_memento_id("20261127030405"), is_memento_id("20261327030405"), is_memento_id("2026")
    (True, False, False)
    """
    if not _ID.fullmatch(text):
        return False
    try:
        datetime.strptime(text, _ID_FORMAT)
    except ValueError:
        return False
    return True


def memento_datetime(memento: str) -> datetime:
    """When the memento named ``memento`` was taken (UTC)."""
    return datetime.strptime(memento, _ID_FORMAT).replace(tzinfo=timezone.utc)


def http_datetime(memento: str) -> str:
    """The memento's datetime as an HTTP-date (its ``Memento-Datetime``).

    >>> http_datetime("20261127030405")
    'Fri, 27 Nov 2026 03:04:05 GMT'
    """
    return format_datetime(memento_datetime(memento), usegmt=True)


def timemap_uri(uri: str) -> str:
    return f"{uri}/{VERSIONS_SEGMENT}"


def memento_uri(uri: str, memento: str) -> str:
    return f"{uri}/{VERSIONS_SEGMENT}/{memento}"


def accept_datetime(header: str) -> datetime:
    """The date of an ``Accept-Datetime`` header (an HTTP-date); 400 when it is not one.

    >>> accept_datetime("Fri, 27 Nov 2026 03:04:05 GMT").isoformat()
    '2026-11-27T03:04:05+00:00'
    """
    when = parse_http_date(header)
    if when is None:
        raise RepositoryError(400, f"Accept-Datetime {header.strip()[:60]!r} is not an HTTP-date")
    return when


def chosen(mementos: list[str], when: datetime) -> str | None:
    """The memento a TimeGate sends a client asking for ``when`` to: the last taken at or
    before it; None when every one is later (or there is none).

    >>> chosen(["20260101000000", "20260201000000"], datetime(2026, 1, 15, tzinfo=timezone.utc))
    '20260101000000'
    >>> chosen(["20260101000000"], datetime(999, 1, 1, tzinfo=timezone.utc)) is None
    True
    """
    earlier = [m for m in mementos if memento_datetime(m) <= when]
    return max(earlier, key=memento_datetime) if earlier else None


def timemap_format(accept: str) -> str | None:
    """What a TimeMap is sent as: link-format (RFC 7089 5) when the client wants it at least as
    much as the RDF format it would get, else that RDF format; None: neither.

    >>> timemap_format("application/link-format"), timemap_format("text/turtle, application/link-format;q=0.5")
    ('application/link-format', 'text/turtle')
    >>> timemap_format("text/html, application/link-format;q=0.5, text/turtle;q=0.4")
    'application/link-format'
    """
    rdf = negotiate(accept)
    link = quality(accept, LINK_FORMAT) if accept.strip() else 0.0
    if link > 0 and (rdf is None or link >= quality(accept, rdf)):
        return LINK_FORMAT
    return rdf


def timemap_links(uri: str, mementos: list[str]) -> bytes:
    """The TimeMap of ``uri`` in link-format (RFC 7089 5.1): the original, its TimeGate,
    the TimeMap itself (with the span of its mementos), then every memento and its date."""
    timemap = f'<{timemap_uri(uri)}>; rel="self"; type="{LINK_FORMAT}"'
    if mementos:
        timemap += f'; from="{http_datetime(mementos[0])}"; until="{http_datetime(mementos[-1])}"'
    lines = [f'<{uri}>; rel="original"', f'<{uri}>; rel="timegate"', timemap]
    lines += [f'<{memento_uri(uri, m)}>; rel="memento"; datetime="{http_datetime(m)}"' for m in mementos]
    return (",\n".join(lines) + "\n").encode()


def original_links(uri: str) -> list[str]:
    """What a versioned resource's Link header adds (Fedora API 4.1.1): it is an original
    resource and its own TimeGate, and where its TimeMap is."""
    return [f'<{ORIGINAL_RESOURCE}>; rel="type"', f'<{TIMEGATE}>; rel="type"',
            f'<{uri}>; rel="timegate"', f'<{timemap_uri(uri)}>; rel="timemap"']


def timemap_links_header(uri: str, type_links: list[str]) -> str:
    """The Link header of a TimeMap (Fedora API 4.3): a container of mementos."""
    return ", ".join([*type_links, f'<{TIMEMAP}>; rel="type"', f'<{uri}>; rel="original"',
                      f'<{uri}>; rel="timegate"', f'<{timemap_uri(uri)}>; rel="timemap"'])


def memento_links_header(uri: str, type_links: list[str]) -> str:
    """The Link header of a memento (Fedora API 4.2.1): its original's LDP types, the
    memento type, and its original, TimeGate and TimeMap."""
    return ", ".join([*type_links, f'<{MEMENTO_TYPE}>; rel="type"', f'<{uri}>; rel="original"',
                      f'<{uri}>; rel="timegate"', f'<{timemap_uri(uri)}>; rel="timemap"'])
