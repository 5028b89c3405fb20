"""The constraints document: what the server restricts, and why.

Every 4xx answer links to it (``Link: <...>; rel="http://www.w3.org/ns/ldp#constrainedBy"``,
LDP 4.2.1.6), and ``GET <base>fcr:constraints`` serves it as plain text.
"""
from __future__ import annotations

from lakebench.server.vocabulary import CONSTRAINED_BY, CONSTRAINTS_SEGMENT

TEXT = """\
Constraints of this lakebench LDP server
========================================

Interaction models
  * A resource is created as an ldp:BasicContainer (an RDF body, or no body),
    an ldp:RDFSource (Link: <http://www.w3.org/ns/ldp#RDFSource>; rel="type"),
    or an ldp:NonRDFSource, a binary (a Content-Type that is not Turtle,
    N-Triples or JSON-LD, or Link: <http://www.w3.org/ns/ldp#NonRDFSource>; rel="type").
  * ldp:DirectContainer and ldp:IndirectContainer are not implemented: a request
    for either is refused with 409, not downgraded to a basic container.
  * A resource keeps its interaction model: a PUT that asks for another is 409.
  * Only containers have children: a PUT or POST under an RDF source or a binary is 409.

Server-managed triples
  * Only the server writes the LDP types of a resource (ldp:Resource,
    ldp:RDFSource, ldp:Container, ldp:BasicContainer, ldp:NonRDFSource,
    ldp:DirectContainer, ldp:IndirectContainer), each container's
    ldp:contains, every resource's fedora:created and fedora:lastModified
    (a container's lastModified changes when a child is created or deleted),
    and, in a binary's description, premis:hasSize, premis:hasMessageDigest,
    ebucore:hasMimeType and ebucore:filename.
  * A PUT or POST body may restate those that are true of the resource (they
    are ignored): a representation can be PUT back as it was read.  A body
    that states one that is not true (a lastModified read before a later
    change included), or states one about any other resource, is refused
    with 409.  A PATCH that would add one, or that names one it removes
    (DELETE DATA, or a template naming its predicate, or rdf:type and its
    LDP type), is 409; a pattern that merely matches them
    (DELETE WHERE { <> ?p ?o }) removes the client's triples and leaves them.

RDF
  * Bodies are Turtle, N-Triples or JSON-LD; relative IRIs resolve against the
    resource's own URL (for a description, the binary's URL).
  * RDF 1.1 only: triple terms and base directions are 400.  No named graphs
    in a body (400); JSON-LD remote contexts are not fetched (400).
  * PATCH takes application/sparql-update: INSERT DATA, DELETE DATA,
    DELETE WHERE and DELETE/INSERT WHERE on the resource's own triples.
    LOAD, CLEAR, DROP, CREATE, ADD, MOVE, COPY, GRAPH, WITH, USING and SERVICE
    are 400.  Binaries take no PATCH (405): PATCH their description.

Binaries
  * Stored as they came, up to the server's --max-binary bytes (413 beyond).
  * No external content: a body of Content-Type message/external-body is
    refused with 415, whatever its access-type.
  * A Digest header (sha-256, sha-512, md5, sha) is checked: a mismatch is
    409 and nothing is stored, and so is a value that is not the base64 of
    a digest of that algorithm; another algorithm is 400.
  * Want-Digest naming no algorithm of these four is 400.
  * Range: one byte range per request (several: the whole binary, 200).

Representations and preconditions
  * Prefer: return=representation honours include and omit of
    ldp:PreferContainment, ldp:PreferMembership (there is no membership),
    ldp:PreferMinimalContainer (and ldp:PreferEmptyContainer),
    fcrepo:PreferInboundReferences (triples of other resources with the
    resource as object; not its parent's ldp:contains) and
    oa:PreferContainedDescriptions (the children's triples).
    Preference-Applied is sent only when every value named was honoured.
  * If-Match compares strongly: a weak ETag (W/"...") never matches (412).
    If-Unmodified-Since and If-Modified-Since compare to the second.

Versions (Fedora API section 4, Memento)
  * Every resource but the root is versioned: POST <uri>/fcr:versions takes a
    memento of it as it is now (any body is ignored); <uri>/fcr:versions lists
    them (application/link-format, or RDF); GET <uri> with Accept-Datetime is
    redirected (302) to the last memento taken at or before that date (406
    when there is none).
  * A memento is named by the second it was taken (yyyymmddHHMMSS, UTC): a
    resource has at most one a second (409 for a second in the same second).
  * A memento holds the resource's triples and its server-managed ones but its
    containment; a binary's memento, its bytes and properties (its
    description has no mementos of its own).
  * A POST with Memento-Datetime (a memento of a given date and body) is 400.
  * A memento is read only (405 on PUT, POST and PATCH) and can be deleted;
    a TimeMap cannot be replaced, changed or deleted (405).  A resource's
    mementos are deleted with it.

Names and deletion
  * Path segments are A-Z a-z 0-9 . _ ~ ! $ & ' ( ) * + , ; = : @ -; segments
    starting with "fcr:" are reserved by the server (409 on creation).
  * The root container can be neither replaced nor deleted (405).
  * A deleted resource leaves a tombstone: its URI, and every URI under it,
    answer 410 Gone, a PUT to it is 410, and a POST with that Slug creates
    the child under a fresh name, until the tombstone (<uri>/fcr:tombstone)
    is deleted.

Limits
  * RDF bodies and SPARQL updates up to the server's --max-body bytes (413).
"""


def url(base_url: str) -> str:
    return base_url + CONSTRAINTS_SEGMENT


def link(base_url: str) -> tuple[str, str]:
    """The ``Link`` header every 4xx carries."""
    return "Link", f'<{url(base_url)}>; rel="{CONSTRAINED_BY}"'
