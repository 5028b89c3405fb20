"""What a write costs a system beyond storing its triples: the work behind each figure.

A time per child means little without what the system did in it: Fedora 6
writes an OCFL version of every change, Fedora 4 publishes a message per
change, ``lakebench serve`` does neither.  Each system declares what it does,
as lakebench runs it (:attr:`lakebench.systems.base.System.WORK`, with its
options: ``--system-option autoversioning=off`` changes what Fedora 6
declares), and what a client can observe is probed at the end of each run and
marked so (an LDP server's versions, from its parent's ``Link`` header:
:func:`versions_probed`).  Each record
of results.json holds it (``work``), and the report shows it beside the
speed figures.  Durability, the other half of that work, has its own word
(:mod:`lakebench.durability`).

>>> record({"versions": PER_CHANGE}, probed={"versions": ON_REQUEST})["versions"]
{'value': 'on request', 'how': 'probed'}
>>> record({})["events"]
{'value': 'unknown', 'how': 'declared'}
"""
from __future__ import annotations

#: The values an item takes.
PER_CHANGE = "per change"
ON_REQUEST = "on request"
NONE = "none"
EVALUATED = "evaluated"
KEPT = "kept"
UNKNOWN = "unknown"

#: Each item: its key in results.json, its heading, and what each value means.
ITEMS = {
    "versions": ("versions kept", {
        PER_CHANGE: "a version of every change, kept automatically",
        ON_REQUEST: "a version when a client asks for one",
        NONE: "no versions"}),
    "events": ("change events", {
        PER_CHANGE: "a message published for every change",
        NONE: "none"}),
    "access": ("access control", {
        EVALUATED: "every request checked against access rules",
        NONE: "none: every request is allowed"}),
    "tombstones": ("tombstones", {
        KEPT: "a deleted resource leaves a tombstone (410 Gone)",
        NONE: "a deleted resource is gone (404)"}),
}

#: How a value is known.
DECLARED, PROBED = "declared", "probed"

MEMENTO_ORIGINAL = "http://mementoweb.org/ns#OriginalResource"


def record(declared: dict[str, str], probed: dict[str, str] | None = None) -> dict[str, dict[str, str]]:
    """Each item's value and how it is known: probed where a probe saw it, else declared, else unknown."""
    probed = probed or {}
    out = {}
    for key in ITEMS:
        if key in probed:
            out[key] = {"value": probed[key], "how": PROBED}
        else:
            out[key] = {"value": declared.get(key, UNKNOWN), "how": DECLARED}
    return out


def versions_probed(link_header: str | None, declared: str) -> str | None:
    """What an LDP resource's ``Link`` header shows of its versions (Fedora API §4, Memento): a
    resource typed ``memento:OriginalResource`` with a ``timemap`` is versioned, on request unless
    the system declares every change versioned; None when it shows neither (a system may keep
    versions through an API of its own, as Fedora 4 does: its declaration stands).

    >>> versions_probed('<http://mementoweb.org/ns#OriginalResource>; rel="type", <a/fcr:versions>; rel="timemap"', NONE)
    'on request'
    >>> versions_probed('<http://www.w3.org/ns/ldp#Resource>; rel="type"', PER_CHANGE) is None
    True
    """
    text = link_header or ""
    if f"<{MEMENTO_ORIGINAL}>" not in text or 'rel="timemap"' not in text:
        return None
    return PER_CHANGE if declared == PER_CHANGE else ON_REQUEST

