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
    ldp:contains, and, in a binary's description, premis:hasSize,
    premis:hasMessageDigest, ebucore:hasMimeType, ebucore:filename,
    fedora:created and fedora:lastModified.
  * A PUT or POST body may restate those that are true of the resource (they
    are ignored): a representation can be PUT back as it was read.  A body
    that states one that is not true, or states one about any other
    resource, is refused with 409.  A PATCH that would add or remove one is 409.

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
  * A Digest header (sha-256, sha-512, md5, sha) is checked: a mismatch is
    409 and nothing is stored; another algorithm is 400.
  * Range: one byte range per request (several: the whole binary, 200).

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
