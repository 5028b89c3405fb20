"""The IRIs the server writes and reserves: LDP, the terms of binary
descriptions (as Fedora names them), and the store graphs the server keeps
its own triples in."""
from __future__ import annotations

LDP = "http://www.w3.org/ns/ldp#"
RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
XSD = "http://www.w3.org/2001/XMLSchema#"
PREMIS = "http://www.loc.gov/premis/rdf/v1#"
EBUCORE = "http://www.ebu.ch/metadata/ontologies/ebucore/ebucore#"
FEDORA = "http://fedora.info/definitions/v4/repository#"
MEMENTO = "http://mementoweb.org/ns#"

LDP_CONTAINS = LDP + "contains"
#: The type a page of a container has (LDP Paging 1.0; said in a Link header).
LDP_PAGE = LDP + "Page"
CONSTRAINED_BY = LDP + "constrainedBy"

#: What a ``Prefer: return=representation`` may include or omit (LDP 7.2.2, Fedora 3.2.1).
PREFER_CONTAINMENT = LDP + "PreferContainment"
PREFER_MEMBERSHIP = LDP + "PreferMembership"
PREFER_MINIMAL = LDP + "PreferMinimalContainer"
PREFER_EMPTY = LDP + "PreferEmptyContainer"  # LDP's earlier name for PreferMinimalContainer
PREFER_INBOUND = "http://fedora.info/definitions/fcrepo#PreferInboundReferences"
PREFER_CONTAINED = "http://www.w3.org/ns/oa#PreferContainedDescriptions"

#: The three interaction models the server implements, by the LDP types it writes for each.
CONTAINER = "container"
RDF_SOURCE = "rdfsource"
BINARY = "binary"
MODEL_TYPES = {
    CONTAINER: (LDP + "Resource", LDP + "RDFSource", LDP + "Container", LDP + "BasicContainer"),
    RDF_SOURCE: (LDP + "Resource", LDP + "RDFSource"),
    BINARY: (LDP + "Resource", LDP + "NonRDFSource"),
}
#: Every LDP interaction type: only the server may state these of a resource.
LDP_TYPES = frozenset(MODEL_TYPES[CONTAINER] + (LDP + "NonRDFSource", LDP + "DirectContainer",
                                                LDP + "IndirectContainer"))

#: The types of versioning (Memento, RFC 7089; Fedora API 4): every resource but the root is an
#: original resource and its own TimeGate; its versions container is a TimeMap of mementos.
ORIGINAL_RESOURCE = MEMENTO + "OriginalResource"
TIMEGATE = MEMENTO + "TimeGate"
TIMEMAP = MEMENTO + "TimeMap"
MEMENTO_TYPE = MEMENTO + "Memento"
MEMENTO_ORIGINAL = MEMENTO + "original"

#: When every resource was created and last changed (xsd:dateTime), as Fedora names them:
#: the server writes them (a client may restate, not change).
CREATED = FEDORA + "created"
LAST_MODIFIED = FEDORA + "lastModified"
DATES = frozenset((CREATED, LAST_MODIFIED))
#: What a binary's description holds that the server writes from the upload.
HAS_SIZE = PREMIS + "hasSize"
HAS_DIGEST = PREMIS + "hasMessageDigest"
HAS_MIME_TYPE = EBUCORE + "hasMimeType"
FILENAME = EBUCORE + "filename"
UPLOAD_PREDICATES = frozenset((HAS_SIZE, HAS_DIGEST, HAS_MIME_TYPE, FILENAME))
DESCRIPTION_PREDICATES = UPLOAD_PREDICATES | DATES

#: Store graphs of the server's own triples.
SERVER_GRAPH = "urn:lakebench:server"      # shown: LDP types, ldp:contains, binary descriptions
META_GRAPH = "urn:lakebench:meta"          # never shown: ETags, binary file names
TOMBSTONE_GRAPH = "urn:lakebench:tombstones"  # never shown: deleted URIs and when
ETAG = "urn:lakebench:etag"
DESCRIPTION_ETAG = "urn:lakebench:description-etag"
BINARY_FILE = "urn:lakebench:file"
DELETED = "urn:lakebench:deleted"
VERSIONS_GRAPH = "urn:lakebench:versions"  # never shown: each resource's mementos
HAS_MEMENTO = "urn:lakebench:memento"

#: Path segments the server reserves (Fedora's names for a binary's description,
#: a tombstone, the constraints document and a resource's versions); no resource may take them.
RESERVED_PREFIX = "fcr:"
METADATA_SEGMENT = "fcr:metadata"
TOMBSTONE_SEGMENT = "fcr:tombstone"
CONSTRAINTS_SEGMENT = "fcr:constraints"
VERSIONS_SEGMENT = "fcr:versions"
