"""The HTTP requests of the Locust side: their names in Locust's statistics, their headers.

Every timed request goes through a Locust client, so Locust's statistics,
CSV and HTML reports hold it under one of the names here; the parent's
creation is set-up, never timed, and goes through lakebench's own LDP client.

Every client here, Locust's included, goes with the run's access
(:class:`~lakebench.systems.base.HttpAccess`): its ``Authorization`` header
on each request, and TLS verified (Locust's ``FastHttpUser`` verifies
nothing by default; these users and sessions always do), against
``--system-ca`` or the system's CAs.  A Locust process keeps its access as
``environment.lakebench_access`` (:func:`environment_access`).
"""
from __future__ import annotations

import functools
import time

from lakebench.locust import LoadTestError
from lakebench.dataset import LDP_CONTAINS
from lakebench.systems.base import NO_ACCESS, HttpAccess

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


def create_parent(parent_url: str, access: HttpAccess = NO_ACCESS) -> None:
    """PUT the parent container; refuse if it exists.  Not a Locust request: set-up is not measured."""
    from lakebench.systems import ldp
    from lakebench.systems.base import SystemFailure

    http = ldp.new_pool(access)
    try:
        ldp.create_parent(http, parent_url)
    except SystemFailure as exc:
        raise LoadTestError(str(exc)) from None
    finally:
        http.clear()


def environment_access(environment) -> HttpAccess:
    """The access of this Locust process: what the library entry points or the locustfiles' options
    set as ``environment.lakebench_access``; none (TLS still verified) when nothing did."""
    return getattr(environment, "lakebench_access", None) or NO_ACCESS


def ssl_context_factory(access: HttpAccess):
    """geventhttpclient's ``ssl_context_factory``: a verifying context from ``access`` (it passes its
    own ``cafile``, certifi's bundle, which is ignored: the CAs trusted are the run's)."""
    import gevent.ssl

    def factory(cafile=None, **_kw):
        return access.ssl_context(gevent.ssl.create_default_context)

    return factory


def session_options(access: HttpAccess) -> dict:
    """What a ``FastHttpSession`` is given so that it verifies TLS as ``access`` says."""
    return {"insecure": False, "ssl_context_factory": ssl_context_factory(access)}


def authorize(session, access: HttpAccess) -> None:
    """Send ``access``'s credentials with every request of a ``FastHttpSession`` (its own header slot,
    which a request's ``auth=`` alone overrides)."""
    session.auth_header = access.authorization


def stats_session(environment, base_url: str, access: HttpAccess | None = None):
    """A Locust HTTP client not tied to a user: its requests go to Locust's stats."""
    from locust.contrib.fasthttp import FastHttpSession

    access = environment_access(environment) if access is None else access
    session = FastHttpSession(base_url=base_url, request_event=environment.events.request, user=None,
                              network_timeout=600.0, connection_timeout=30.0, max_retries=0,
                              **session_options(access))
    authorize(session, access)
    return session


@functools.cache
def access_user_class() -> type:
    """The base of lakebench's Locust users: a ``FastHttpUser`` whose client goes with the process's
    access (:func:`environment_access`) and verifies TLS.  Imports Locust on the first call."""
    from locust import FastHttpUser

    class AccessUser(FastHttpUser):
        abstract = True
        insecure = False  # Locust's default is True: no certificate verified, silently

        def __init__(self, environment) -> None:
            access = environment_access(environment)
            self.ssl_context_factory = ssl_context_factory(access)  # read by FastHttpUser.__init__
            super().__init__(environment)
            authorize(self.client, access)

    AccessUser.__module__ = __name__
    return AccessUser


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

