"""The HTTP requests of the Locust side: their names in Locust's statistics, their headers.

Every timed request goes through a Locust client, so Locust's statistics,
CSV and HTML reports hold it under one of the names here; the parent's
creation is set-up, never timed, and goes through lakebench's own LDP client.
"""
from __future__ import annotations

import time

from lakebench.locust import LoadTestError
from lakebench.dataset import LDP_CONTAINS

TURTLE = "text/turtle"
PUT_NAME = "PUT child"
#: Locust request name of each retrieval variant of the parent.
GET_NAMES = {
    "full": "GET parent (full)",
    "omit_containment": "GET parent (omit containment)",
    "minimal": "GET parent (minimal container)",
}
#: ``Prefer`` header of each variant (None: a plain GET).
PREFER = {
    "full": None,
    "omit_containment": 'return=representation; omit="http://www.w3.org/ns/ldp#PreferContainment"',
    "minimal": 'return=representation; include="http://www.w3.org/ns/ldp#PreferMinimalContainer"',
}
CHILD_GET_NAME = "GET child"
CREATED = (201, 204)  # what a successful child PUT may answer
# Compressed answers would make sizes and times incomparable with
# lakebench's own client (urllib3, which asks for no encoding).
PUT_HEADERS = {"Content-Type": TURTLE, "Accept-Encoding": "identity"}


def create_parent(parent_url: str) -> None:
    """PUT the parent container; refuse if it exists.  Not a Locust request: set-up is not measured."""
    from lakebench.systems import ldp
    from lakebench.systems.base import SystemFailure

    http = ldp.new_pool()
    try:
        ldp.create_parent(http, parent_url)
    except SystemFailure as exc:
        raise LoadTestError(str(exc)) from None
    finally:
        http.clear()


def stats_session(environment, base_url: str):
    """A Locust HTTP client not tied to a user: its requests go to Locust's stats."""
    from locust.contrib.fasthttp import FastHttpSession

    return FastHttpSession(base_url=base_url, request_event=environment.events.request, user=None,
                           network_timeout=600.0, connection_timeout=30.0, max_retries=0)


def retrieve_parent(session, parent_url: str, variant: str, count: bool = True) -> dict:
    """GET the parent in one variant through a Locust client, timed.

    ``count``: also count its ``ldp:contains`` triples (after the clock).
    """
    headers = {"Accept": TURTLE, "Accept-Encoding": "identity"}
    if PREFER[variant]:
        headers["Prefer"] = PREFER[variant]
    t0 = time.perf_counter()
    with session.request("GET", parent_url, name=GET_NAMES[variant], headers=headers, catch_response=True) as resp:
        seconds = time.perf_counter() - t0
        body = resp.content or b""
        status = resp.status_code
        if status == 200:
            resp.success()
        else:
            resp.failure(f"HTTP {status}: {body[:200].decode('utf-8', 'replace').strip()}")
        content_type = resp.headers.get("Content-Type", TURTLE) if resp.headers else TURTLE
    out = {"seconds": seconds, "bytes": len(body), "status": status, "content_type": content_type, "body": body}
    if status == 200 and count:
        try:
            out["contains"] = len(parse_containment(body, content_type, parent_url))
        except Exception as exc:  # counted after the clock; a parse error is reported, not fatal
            out["contains"] = None
            out["parse_error"] = f"{type(exc).__name__}: {exc}"
    return out


def parse_containment(body: bytes, content_type: str, parent_url: str) -> list[str]:
    """Objects of ``<parent> ldp:contains ?o`` in a retrieved representation."""
    import pyoxigraph as ox

    formats = {"text/turtle": ox.RdfFormat.TURTLE, "application/n-triples": ox.RdfFormat.N_TRIPLES,
               "application/ld+json": ox.RdfFormat.JSON_LD}
    fmt = formats.get(content_type.split(";")[0].strip().lower(), ox.RdfFormat.TURTLE)
    parent = ox.NamedNode(parent_url)
    contains = ox.NamedNode(LDP_CONTAINS)
    return [q.object.value for q in ox.parse(body, format=fmt, base_iri=parent_url)
            if q.predicate == contains and q.subject == parent]

