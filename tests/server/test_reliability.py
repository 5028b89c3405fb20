"""Reliability of ``lakebench serve``: bad requests, concurrent clients, SIGKILL.

* a corpus of bad requests, each answered with its exact 4xx, after which
  the server is healthy and nothing is partially written (a resource
  replaced with a bad body keeps its content, no child appears), and the
  store passes its consistency check;
* 8 clients PUT (and POST) children into one parent through 2 workers (one serving, one parsing):
  exactly the children sent, none lost or duplicated;
* the server is SIGKILLed in the middle of an ingest, again and again on the
  same data directory: every acknowledged child is there in full, and the
  parent contains exactly those, plus at most the request in flight.
"""
from __future__ import annotations

import http.client
import random
import threading
from concurrent.futures import ThreadPoolExecutor

import pyoxigraph as ox
import pytest

from lakebench.dataset import DataSet

from .conftest import LDP_CONTAINS, RDF_TYPE, SERVER_DATES, Response, Server, check_store, contained, free_port

LDP = "http://www.w3.org/ns/ldp#"
TTL = {"Content-Type": "text/turtle"}
NT = {"Content-Type": "application/n-triples"}
JSONLD = {"Content-Type": "application/ld+json"}
AS_SOURCE = {**TTL, "Link": f'<{LDP}RDFSource>; rel="type"'}
MAX_BODY = 256 * 1024
MAX_BINARY = 1024 * 1024
VICTIM = "/bad/victim"
BLOB = "/bin/blob"  # a binary
BLOB_BYTES = bytes(range(256)) * 40
PNG = {"Content-Type": "image/png"}
SPARQL = {"Content-Type": "application/sparql-update"}
PREMIS = "http://www.loc.gov/premis/rdf/v1#"
FEDORA = "http://fedora.info/definitions/v4/repository#"
XSD = "http://www.w3.org/2001/XMLSchema#"
DIGEST_OF_NOTHING = "sha-256=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="
LDP_PREFIX = f"@prefix ldp: <{LDP}> .\n"


def user_triples(body: bytes, fmt=ox.RdfFormat.N_TRIPLES) -> set:
    """The triples of a representation without the server-managed ones (no blank nodes here)."""
    return {t for t in ox.parse(body, format=fmt)
            if t.predicate.value not in (LDP_CONTAINS, *SERVER_DATES)
            and not (t.predicate.value == RDF_TYPE and t.object.value.startswith(LDP))}


def get_nt(server, path) -> Response:
    return server.request("GET", path, headers={"Accept": "application/n-triples"})


# -- the corpus ----------------------------------------------------------------------
def case(name, method, path, status, body=None, headers=None, raw=None, shutdown=False):
    return pytest.param(method, path, status, body, headers, raw, shutdown, id=name)


def raw_put(path: str, headers: str, body: bytes = b"", content_type: str = "text/turtle") -> bytes:
    """A PUT request's bytes, verbatim (the body may be less than announced)."""
    return (f"PUT {path} HTTP/1.1\r\nHost: x\r\nContent-Type: {content_type}\r\n{headers}\r\n".encode()
            + body)


def chunks_of(body: bytes, size: int = 8192) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + size]), body[i:i + size])
                    for i in range(0, len(body), size))


DEEP_JSONLD = ('{"@context": {"@vocab": "http://e/"}, "@id": "", ' + '"a": {' * 20_000 + '"a": "x"'
               + "}" * 20_000 + "}")
VALID_THEN_BROKEN = "".join(f'<> <http://e/p{i}> "v{i}" .\n' for i in range(150)) + '<> <http://e/q> "oops .\n'

CORPUS = [
    # Malformed RDF: 400 with the parser's message.
    case("turtle-unterminated-string", "PUT", VICTIM, 400, '<> <http://e/p> "x .', TTL),
    case("turtle-undefined-prefix", "PUT", VICTIM, 400, '<> ex:p "x" .', TTL),
    case("turtle-missing-final-dot", "PUT", VICTIM, 400, '<> <http://e/p> "x"', TTL),
    case("turtle-invalid-utf8", "PUT", VICTIM, 400, b'<> <http://e/p> "\xff\xfe" .', TTL),
    case("turtle-bad-escape", "PUT", VICTIM, 400, r'<> <http://e/p> "\q" .', TTL),
    case("turtle-surrogate-escape", "PUT", VICTIM, 400, r'<> <http://e/p> "\uD800" .', TTL),
    case("turtle-literal-subject", "PUT", VICTIM, 400, '"x" <http://e/p> <http://e/o> .', TTL),
    case("turtle-150-valid-then-broken", "PUT", VICTIM, 400, VALID_THEN_BROKEN, TTL),
    case("ntriples-relative-iri", "PUT", VICTIM, 400, '<> <http://e/p> "x" .\n', NT),
    case("ntriples-missing-dot", "PUT", VICTIM, 400, '<http://e/s> <http://e/p> "x"\n', NT),
    case("turtle-sent-as-ntriples", "PUT", VICTIM, 400, '@prefix e: <http://e/> . <> e:p "x" .', NT),
    case("jsonld-invalid-json", "PUT", VICTIM, 400, '{"@id": ', JSONLD),
    case("jsonld-nested-20000-deep", "PUT", VICTIM, 400, DEEP_JSONLD, JSONLD),
    case("jsonld-remote-context", "PUT", VICTIM, 400,
         '{"@context": "http://127.0.0.1:9/context.jsonld", "@id": "", "name": "x"}', JSONLD),
    case("jsonld-named-graph", "PUT", VICTIM, 400,
         '{"@id": "g", "@graph": [{"@id": "", "http://e/p": "x"}]}', JSONLD),
    case("rdf12-triple-term", "PUT", VICTIM, 400, "<> <http://e/p> << <http://e/a> <http://e/b> <http://e/c> >> .", TTL),
    case("rdf12-base-direction", "PUT", VICTIM, 400, '<> <http://e/p> "x"@en--ltr .', TTL),
    case("post-malformed-into-root", "POST", "/", 400, "<> <http://e/p> .", TTL),
    # Media types: 415.
    case("rdf-xml", "PUT", VICTIM, 415, "<rdf:RDF/>", {"Content-Type": "application/rdf+xml"}),
    case("text-plain", "PUT", VICTIM, 415, '<> <http://e/p> "x" .', {"Content-Type": "text/plain"}),
    case("no-content-type", "PUT", VICTIM, 415, '<> <http://e/p> "x" .', {"Content-Type": ""}),
    case("post-png-as-rdf-source", "POST", "/bad", 415, b"\x89PNG\r\n",
         {"Content-Type": "image/png", "Link": f'<{LDP}RDFSource>; rel="type"'}),
    case("put-png-onto-rdf-source", "PUT", VICTIM, 415, b"\x89PNG\r\n", {"Content-Type": "image/png"}),
    # Bodies: 413 over the limit, 400 when broken.
    # Over the limit, the client sends 64 KiB and waits: the 413 comes at once, from the
    # declared length or from reading one byte past the limit of a chunked body.
    case("body-over-limit", "PUT", VICTIM, 413, raw=raw_put(
        VICTIM, f"Content-Length: {MAX_BODY + 1}\r\n", b"#" * 65536)),
    case("declared-10GB-body", "PUT", VICTIM, 413, raw=raw_put(
        VICTIM, "Content-Length: 10000000000\r\n"), shutdown=True),
    case("chunked-body-over-limit", "PUT", VICTIM, 413, raw=raw_put(
        VICTIM, "Transfer-Encoding: chunked\r\n", chunks_of(b"#" * (MAX_BODY + 8192)))),
    case("truncated-body", "PUT", VICTIM, 400, raw=raw_put(
        VICTIM, "Content-Length: 1000\r\n", b'<> <http://e/p> "short" .'), shutdown=True),
    case("truncated-chunked-body", "PUT", VICTIM, 400, raw=raw_put(
        VICTIM, "Transfer-Encoding: chunked\r\n", b'1a\r\n<> <http://e/p> "short" .\r\n'), shutdown=True),
    case("invalid-content-length", "PUT", VICTIM, 400, raw=raw_put(VICTIM, "Content-Length: abc\r\n")),
    case("two-content-lengths", "PUT", VICTIM, 400, raw=raw_put(
        VICTIM, "Content-Length: 3\r\nContent-Length: 5\r\n", b"<> <"), shutdown=True),
    # Path tricks: 400.
    case("dot-dot", "PUT", "/bad/../bad/victim", 400, "", TTL),
    case("encoded-dot-dot", "PUT", "/bad/%2e%2e/victim", 400, "", TTL),
    case("single-dot", "PUT", "/bad/./victim", 400, "", TTL),
    case("encoded-slash", "PUT", "/bad%2Fvictim", 400, "", TTL),
    case("encoded-slash-lowercase", "GET", "/bad/victim%2fx", 400),
    case("encoded-backslash", "PUT", "/bad/%5Cvictim", 400, "", TTL),
    case("leading-double-slash", "PUT", "//bad/victim", 400, "", TTL),
    case("inner-double-slash", "PUT", "/bad//victim", 400, "", TTL),
    case("raw-space", "PUT", "/bad/vic tim", 400, raw=b"PUT /bad/vic tim HTTP/1.1\r\nHost: x\r\n"
         b"Content-Type: text/turtle\r\nContent-Length: 0\r\n\r\n"),
    case("encoded-space", "PUT", "/bad/vic%20tim", 400, "", TTL),
    case("encoded-nul", "PUT", "/bad/%00", 400, "", TTL),
    case("non-ascii-segment", "PUT", "/bad/%C3%A9", 400, "", TTL),
    # Server-managed triples: 409.
    case("write-ldp-contains", "PUT", VICTIM, 409, LDP_PREFIX + "<> ldp:contains <x> .", TTL),
    case("write-basic-container-type", "PUT", VICTIM, 409, LDP_PREFIX + "<> a ldp:BasicContainer .", TTL),
    case("create-source-with-container-type", "PUT", "/bad/new", 409, LDP_PREFIX + "<> a ldp:Container .",
         AS_SOURCE),
    case("post-with-ldp-contains", "POST", "/bad", 409, LDP_PREFIX + "<> ldp:contains <x> .", TTL),
    case("jsonld-non-rdf-source-type", "PUT", VICTIM, 409, f'{{"@id": "", "@type": "{LDP}NonRDFSource"}}',
         JSONLD),
    # Conditional requests: 412.
    case("if-match-stale", "PUT", VICTIM, 412, '<> <http://e/p> "x" .', {**TTL, "If-Match": '"stale"'}),
    case("if-none-match-star-existing", "PUT", VICTIM, 412, '<> <http://e/p> "x" .',
         {**TTL, "If-None-Match": "*"}),
    case("delete-if-match-stale", "DELETE", VICTIM, 412, None, {"If-Match": '"stale"'}),
    case("if-match-on-missing", "PUT", "/bad/new", 412, "", {**TTL, "If-Match": "*"}),
    # Missing or wrong parents: 404 / 409 / 405.
    case("missing-parent", "PUT", "/nope/child", 404, "", TTL),
    case("missing-grandparent", "PUT", "/bad/nope/child", 404, "", TTL),
    case("parent-is-rdf-source", "PUT", "/bad/victim/sub", 409, "", TTL),
    case("post-to-missing", "POST", "/nope", 404, "", TTL),
    case("post-to-rdf-source", "POST", VICTIM, 405, "", TTL),
    # The root, unknown paths and methods, negotiation.
    case("put-root", "PUT", "/", 405, "", TTL),
    case("delete-root", "DELETE", "/", 405),
    case("patch-with-turtle", "PATCH", VICTIM, 415, "", TTL),
    case("unknown-method", "FOO", "/", 405),
    case("lowercase-method", "get", "/", 400, raw=b"get / HTTP/1.1\r\nHost: x\r\n\r\n"),
    case("get-missing", "GET", "/nope", 404),
    case("delete-missing", "DELETE", "/bad/nope", 404),
    case("options-missing", "OPTIONS", "/nope", 404),
    case("unacceptable", "GET", VICTIM, 406, None, {"Accept": "image/png"}),
    # Interaction models: refused, never downgraded or changed.
    case("direct-container", "PUT", "/bad/new", 409, "", {**TTL, "Link": f'<{LDP}DirectContainer>; rel="type"'}),
    case("indirect-container-post", "POST", "/bad", 409, "",
         {**TTL, "Link": f'<{LDP}IndirectContainer>; rel="type"'}),
    case("two-models", "PUT", "/bad/new", 400, "", {**TTL, "Link": f'<{LDP}RDFSource>; rel="type", '
                                                               f'<{LDP}NonRDFSource>; rel="type"'}),
    case("source-to-binary", "PUT", VICTIM, 409, "x", {"Content-Type": "text/plain",
                                                        "Link": f'<{LDP}NonRDFSource>; rel="type"'}),
    case("source-to-container", "PUT", VICTIM, 409, "", {**TTL, "Link": f'<{LDP}BasicContainer>; rel="type"'}),
    case("binary-to-source", "PUT", BLOB, 409, "", AS_SOURCE),
    case("reserved-segment", "PUT", "/bad/fcr:x", 409, "", TTL),
    case("put-under-binary", "PUT", BLOB + "/child", 409, "", TTL),
    case("post-to-binary", "POST", BLOB, 405, "", TTL),
    case("managed-about-another", "PUT", VICTIM, 409, LDP_PREFIX + "<../bad> ldp:contains <x> .", TTL),
    case("put-constraints", "PUT", "/fcr:constraints", 405, "", TTL),
    # Binaries: digests, ranges, limits, descriptions.
    case("digest-mismatch", "PUT", BLOB, 409, b"other bytes", {**PNG, "Digest": DIGEST_OF_NOTHING}),
    case("digest-mismatch-new", "PUT", "/bin/new", 409, b"other bytes", {**PNG, "Digest": DIGEST_OF_NOTHING}),
    case("digest-mismatch-post", "POST", "/bin", 409, b"other bytes", {**PNG, "Digest": DIGEST_OF_NOTHING}),
    case("digest-unknown-algorithm", "PUT", BLOB, 400, b"x", {**PNG, "Digest": "crc32=AAAAAA=="}),
    # A value no body can match is a mismatch (Fedora API 3.6.2: 409), bad base64 or a short digest.
    case("digest-malformed-base64", "PUT", BLOB, 409, b"x", {**PNG, "Digest": "sha-256=!!!"}),
    case("digest-wrong-length", "PUT", BLOB, 409, b"x", {**PNG, "Digest": "sha-256=AAAA"}),
    case("digest-md5-1234-post", "POST", "/bin", 409, b"x", {**PNG, "Digest": "md5=1234"}),
    case("digest-hex", "PUT", BLOB, 409, b"x", {**PNG, "Digest": "MD5=97c4627dc7734f65f5195f1d5f556d7a"}),
    case("digest-without-value", "PUT", BLOB, 400, b"x", {**PNG, "Digest": "sha-256"}),
    case("want-digest-unsupported", "GET", BLOB, 400, None, {"Want-Digest": "crc32, unixsum"}),
    # External content (Fedora API 3.9): this server has none, 415 whatever else is asked.
    case("external-body-new", "PUT", "/bin/new", 415, b"",
         {"Content-Type": 'message/external-body; access-type=URL; URL="http://127.0.0.1:9/x"'}),
    case("external-body-replace", "PUT", BLOB, 415, b"",
         {"Content-Type": 'Message/External-Body; access-type=URL; URL="http://127.0.0.1:9/x"'}),
    case("external-body-post", "POST", "/bin", 415, b"",
         {"Content-Type": 'message/external-body; access-type=local-file; name="/etc/passwd"',
          "Link": f'<{LDP}NonRDFSource>; rel="type"'}),
    case("range-past-the-end", "GET", BLOB, 416, None, {"Range": f"bytes={len(BLOB_BYTES)}-"}),
    case("range-suffix-zero", "GET", BLOB, 416, None, {"Range": "bytes=-0"}),
    case("binary-over-limit", "PUT", BLOB, 413, raw=raw_put(
        BLOB, f"Content-Length: {MAX_BINARY + 1}\r\n", b"#" * 65536, content_type="image/png")),
    case("binary-chunked-over-limit", "PUT", BLOB, 413, raw=raw_put(
        BLOB, "Transfer-Encoding: chunked\r\n", chunks_of(b"#" * (MAX_BINARY + 8192)), content_type="image/png")),
    case("binary-truncated", "PUT", BLOB, 400, raw=raw_put(
        BLOB, "Content-Length: 100000\r\n", b"#" * 5000, content_type="image/png"), shutdown=True),
    case("binary-truncated-new", "PUT", "/bin/new", 400, raw=raw_put(
        "/bin/new", "Content-Length: 100000\r\n", b"#" * 5000, content_type="image/png"), shutdown=True),
    case("binary-if-match-stale", "PUT", BLOB, 412, b"x", {**PNG, "If-Match": '"stale"'}),
    case("description-of-rdf-source", "GET", VICTIM + "/fcr:metadata", 404),
    case("description-changes-size", "PUT", BLOB + "/fcr:metadata", 409,
         f'<> <{PREMIS}hasSize> "1"^^<http://www.w3.org/2001/XMLSchema#long> .', TTL),
    case("description-malformed", "PUT", BLOB + "/fcr:metadata", 400, "<> <http://e/p> .", TTL),
    case("delete-description", "DELETE", BLOB + "/fcr:metadata", 405),
    case("tombstone-of-a-live-resource", "DELETE", VICTIM + "/fcr:tombstone", 404),
    # PATCH: SPARQL Update only, well formed, on the resource's own triples.
    case("patch-malformed", "PATCH", VICTIM, 400, "INSERT DATA { <> <http://e/p> ", SPARQL),
    case("patch-not-utf8", "PATCH", VICTIM, 400, b'INSERT DATA { <> <http://e/p> "\xff" }', SPARQL),
    case("patch-load", "PATCH", VICTIM, 400, "LOAD <http://127.0.0.1:9/x>", SPARQL),
    case("patch-drop", "PATCH", VICTIM, 400, "DROP ALL", SPARQL),
    case("patch-named-graph", "PATCH", VICTIM, 400, 'INSERT DATA { GRAPH <http://e/g> { <> <http://e/p> "x" } }',
         SPARQL),
    case("patch-server-managed", "PATCH", VICTIM, 409, f"INSERT DATA {{ <> <{LDP}contains> <x> }}", SPARQL),
    case("patch-delete-types", "PATCH", VICTIM, 409, f"DELETE WHERE {{ <> a <{LDP}RDFSource> }}", SPARQL),
    case("patch-date", "PATCH", VICTIM, 409,
         f'INSERT DATA {{ <> <{FEDORA}lastModified> "2000-01-01T00:00:00Z"^^<{XSD}dateTime> }}', SPARQL),
    case("put-date", "PUT", VICTIM, 409, f'<> <{FEDORA}created> "2000-01-01T00:00:00Z"^^<{XSD}dateTime> .', TTL),
    case("put-date-of-another", "PUT", VICTIM, 409,
         f'<../bad> <{FEDORA}lastModified> "2000-01-01T00:00:00Z"^^<{XSD}dateTime> .', TTL),
    case("put-if-unmodified-since-past", "PUT", VICTIM, 412, '<> <http://e/p> "x" .',
         {**TTL, "If-Unmodified-Since": "Sat, 01 Jan 2000 00:00:00 GMT"}),
    case("patch-if-unmodified-since-past", "PATCH", VICTIM, 412, 'INSERT DATA { <> <http://e/p> "x" }',
         {**SPARQL, "If-Unmodified-Since": "Sat, 01 Jan 2000 00:00:00 GMT"}),
    case("delete-if-unmodified-since-past", "DELETE", VICTIM, 412, None,
         {"If-Unmodified-Since": "Sat, 01 Jan 2000 00:00:00 GMT"}),
    case("binary-if-unmodified-since-past", "PUT", BLOB, 412, b"x",
         {**PNG, "If-Unmodified-Since": "Sat, 01 Jan 2000 00:00:00 GMT"}),
    case("get-if-unmodified-since-past", "GET", VICTIM, 412, None,
         {"If-Unmodified-Since": "Sat, 01 Jan 2000 00:00:00 GMT"}),
    case("patch-weak-if-match", "PATCH", VICTIM, 412, 'INSERT DATA { <> <http://e/p> "x" }',
         {**SPARQL, "If-Match": 'W/"stale"'}),
    case("patch-if-match-stale", "PATCH", VICTIM, 412, 'INSERT DATA { <> <http://e/p> "x" }',
         {**SPARQL, "If-Match": '"stale"'}),
    case("patch-binary", "PATCH", BLOB, 405, 'INSERT DATA { <> <http://e/p> "x" }', SPARQL),
    case("patch-missing", "PATCH", "/bad/nope", 404, 'INSERT DATA { <> <http://e/p> "x" }', SPARQL),
    case("patch-over-limit", "PATCH", VICTIM, 413, "#" * (MAX_BODY + 1), SPARQL),
]


@pytest.fixture(scope="module")
def corpus_server(tmp_path_factory):
    pytest.importorskip("gunicorn")
    tmp = tmp_path_factory.mktemp("corpus")
    server = Server(tmp / "data", tmp / "serve.log", "--max-body", str(MAX_BODY),
                    "--max-binary", str(MAX_BINARY)).start()
    w = DataSet(children=1, seed=1, parent="bad", base=server.base)
    assert server.request("PUT", "/bad", "", TTL).status == 201
    assert server.request("PUT", VICTIM, w.child(0).turtle, AS_SOURCE).status == 201
    original = user_triples(get_nt(server, VICTIM).body)
    assert len(original) == 200
    server.victim = original
    assert server.request("PUT", "/bin", "", TTL).status == 201
    assert server.request("PUT", BLOB, BLOB_BYTES, PNG).status == 201
    server.blob_etag = server.request("HEAD", BLOB).header("ETag")
    server.blob_description = server.request("GET", BLOB + "/fcr:metadata").body
    yield server
    if server.running:
        server.stop()


def assert_intact(server):
    """Healthy, and exactly what the setup wrote: the root holds /bad and /bin, /bad holds
    the victim, /bin the binary (same bytes, same ETag, same description), no stray file."""
    assert server.running, server.log()
    assert server.request("GET", "/").status == 200
    assert sorted(contained(server, "/")) == [server.base + "bad", server.base + "bin"]
    assert contained(server, "/bad") == [server.base + "bad/victim"]
    assert user_triples(get_nt(server, VICTIM).body) == server.victim
    assert user_triples(get_nt(server, "/bad").body) == set()
    assert contained(server, "/bin") == [server.base + "bin/blob"]
    blob = server.request("GET", BLOB)
    assert blob.body == BLOB_BYTES and blob.header("ETag") == server.blob_etag
    assert server.request("GET", BLOB + "/fcr:metadata").body == server.blob_description
    assert len(list((server.data / "binaries").iterdir())) == 1


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 30
    assert len({p.id for p in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize("method,path,status,body,headers,raw,shutdown", CORPUS)
def test_bad_request(corpus_server, method, path, status, body, headers, raw, shutdown):
    if raw is not None:
        resp = corpus_server.raw(raw, shutdown=shutdown)
    else:
        resp = corpus_server.request(method, path, body, headers)
    assert resp.status == status, resp.body[:500]
    if resp.status in (400, 405, 409, 410, 412, 413, 415, 416) and raw is None:
        assert resp.body.strip(), "an error says why"
        assert len(resp.body.strip().splitlines()) == 1, "in one line"
        assert f'rel="{LDP}constrainedBy"' in resp.header("Link"), "and links to the constraints"
    if path == VICTIM and status == 400 and raw is None and method == "PUT":
        assert b"malformed" in resp.body or b"unsupported" in resp.body, resp.body
    assert_intact(corpus_server)


def test_after_the_corpus_the_store_is_consistent(corpus_server):
    assert_intact(corpus_server)
    log = corpus_server.log()
    for sign in ("Traceback", "error handling", "SIGSEGV", "SIGABRT", "was sent", "Worker exiting"):
        assert sign not in log, log
    assert corpus_server.stop() == 0
    assert check_store(corpus_server.data) == []


# -- concurrency -----------------------------------------------------------------
def test_8_clients_put_children_into_one_parent(serve):
    server = serve("--workers", "2", "--durability", "nosync")
    n_clients, per_client = 8, 25
    total = n_clients * per_client
    w = DataSet(children=total, seed=3, parent="conc", base=server.base)
    assert server.request("PUT", "/conc", "", TTL).status == 201

    def client(t: int) -> list[tuple[int, int]]:
        conn = server.connection()  # one keep-alive connection per client
        try:
            mine: list[int] = []
            out = []
            for k in range(t, total, n_clients):
                child = w.child(k, recent=mine[::-1])
                r = server.request("PUT", "/" + child.path, child.turtle, TTL, connection=conn)
                out.append((k, r.status))
                mine.append(k)
            return out
        finally:
            conn.close()

    with ThreadPoolExecutor(n_clients) as pool:
        results = [r for rs in pool.map(client, range(n_clients)) for r in rs]
    assert sorted(k for k, _ in results) == list(range(total))
    assert {status for _, status in results} == {201}
    children = contained(server, "/conc")
    assert len(children) == total  # no duplicate
    assert set(children) == {w.child(k).uri for k in range(total)}  # none lost
    for k in (0, 77, total - 1):
        expected = set(ox.parse(w.child(k, recent=[j for j in range(k - n_clients, -1, -n_clients)][:4])
                                .ntriples, format=ox.RdfFormat.N_TRIPLES))
        assert user_triples(get_nt(server, "/" + w.child(k).path).body) == expected
    assert server.stop() == 0
    assert check_store(server.data) == []


def test_8_clients_post_the_same_slug(serve):
    server = serve("--workers", "2", "--durability", "nosync")
    assert server.request("PUT", "/slug", "", TTL).status == 201
    barrier = threading.Barrier(8)

    def client(t: int) -> str:
        conn = server.connection()
        try:
            barrier.wait(10)
            r = server.request("POST", "/slug", f'<> <http://e/client> "{t}" .', {**TTL, "Slug": "same"},
                               connection=conn)
            assert r.status == 201
            return r.header("Location")
        finally:
            conn.close()

    with ThreadPoolExecutor(8) as pool:
        locations = list(pool.map(client, range(8)))
    assert len(set(locations)) == 8
    assert locations.count(server.base + "slug/same") == 1
    assert sorted(contained(server, "/slug")) == sorted(locations)
    clients = set()
    for loc in locations:
        body = get_nt(server, loc[len(server.base) - 1:]).body
        clients |= {t.object.value for t in user_triples(body)}
    assert clients == {str(t) for t in range(8)}  # nobody overwrote anybody
    assert server.stop() == 0


# -- crashes ---------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("clients", [1, 8])
def test_sigkill_during_ingest_loses_nothing_acknowledged(serve, tmp_path, clients):
    """With 8 clients, writes share the write-ahead log's flushes (group commit):
    a kill lands while some are written to the log but not yet flushed, which
    were never acknowledged, so any of them may be there or not."""
    rounds = 4
    data, port = tmp_path / "crash", free_port()
    base = f"http://127.0.0.1:{port}/"  # same port every time: same IRIs
    # Enough children for every round to be cut short: about 1,000 go in per round on a fast machine.
    w = DataSet(children=8000 * clients, seed=5, parent="crash", base=base)
    rng = random.Random(20240)
    acked: set[int] = set()
    in_flight: set[int] = set()  # requests the kill interrupted: committed or not
    verified: set[int] = set()
    errors: list[str] = []
    log: list[str] = []
    next_k = 0

    def verify(server) -> None:
        uris = contained(server, "/crash")
        assert len(uris) == len(set(uris)), "a child is contained twice"
        present = {int(u.rsplit("/c", 1)[1]) for u in uris}
        assert acked <= present, f"acknowledged but lost: {sorted(acked - present)}"
        assert present - acked <= in_flight, f"never sent: {sorted(present - acked - in_flight)}"
        for k in sorted(present - verified):  # each child once, in full
            got = user_triples(get_nt(server, "/" + w.child(k).path).body)
            assert got == set(ox.parse(w.child(k).ntriples, format=ox.RdfFormat.N_TRIPLES)), k
            verified.add(k)
        for k in in_flight - present:  # not committed: not there at all
            assert server.request("GET", "/" + w.child(k).path).status == 404

    server = serve(data=data, port=port)
    assert server.request("PUT", "/crash", "", TTL).status == 201
    for round_ in range(rounds):
        if round_:
            server = serve(data=data, port=port)
            verify(server)
        current: list[int | None] = [None] * clients  # each client's request in flight

        def ingest(client: int, start: int) -> None:
            conn = server.connection(timeout=20)
            k = start + client
            while k < w.children:
                current[client] = k
                try:
                    r = server.request("PUT", "/" + w.child(k).path, w.child(k).turtle, TTL, connection=conn)
                except (OSError, http.client.HTTPException):
                    return  # the server is gone: k is in flight
                if r.status != 201:
                    errors.append(f"child {k}: {r.status} {r.body[:200]!r}")
                    return
                acked.add(k)
                current[client] = None
                k += clients

        for k in range(next_k, min(next_k + 400 * clients, w.children)):  # build the bodies off the clock
            w.child(k).turtle
        threads = [threading.Thread(target=ingest, args=(c, next_k)) for c in range(clients)]
        for thread in threads:
            thread.start()
        threading.Event().wait(rng.uniform(0.3, 1.5))
        server.kill()
        for thread in threads:
            thread.join(30)
        assert not any(t.is_alive() for t in threads) and not errors, errors
        cut = {k for k in current if k is not None}
        in_flight |= cut
        assert len(acked) > len(verified), "no child was acknowledged in this round"
        log.append(f"round {round_}: {len([k for k in acked if k >= next_k])} acknowledged, "
                   f"in flight: {sorted(cut)}")
        next_k = max(acked | in_flight) + 1
    server = serve(data=data, port=port)
    verify(server)
    committed = sorted(k for k in in_flight if k in verified)
    print("\n".join(log), f"\nin flight and committed anyway: {committed}")
    assert verified >= acked and len(acked) >= rounds
    assert server.stop() == 0
    assert check_store(data) == []


# -- random requests ----------------------------------------------------------------------
FUZZ_PATHS = ["/", "/c", "/c/s", "/c/b", "/c/b/fcr:metadata", "/c/s/fcr:metadata", "/fcr:constraints", "/c/gone",
              "/c/gone/fcr:tombstone", "/fcr:metadata", "/fcr:tombstone", "/c/fcr:x", "/c/b/x", "/nope/fcr:metadata"]
FUZZ_HEADERS = [
    {}, TTL, PNG, SPARQL, {"Content-Type": ";;;"}, {"Link": "<"}, {"Link": f'<{LDP}DirectContainer>; rel="type"'},
    {"Link": f"<{LDP}NonRDFSource>; rel=type"}, {"Link": f'<{LDP}Resource>; rel="type"'},
    {"Range": "bytes=abc"}, {"Range": "bytes=-"}, {"Range": "bytes=5-1"}, {"Range": "bytes=1-2"},
    {"Range": "bytes=999999-"}, {"Want-Digest": "sha-256;q=abc, md5"}, {"Want-Digest": ";;"}, {"Digest": "="},
    {"Digest": "sha-256=%%%"}, {"Digest": "md5=AAAAAAAAAAAAAAAAAAAAAA=="}, {"Slug": "fcr:metadata"},
    {"Slug": "../x"}, {"Slug": "ok"}, {"Content-Disposition": "attachment; filename*=bad''%ZZ"},
    {"Content-Disposition": 'filename="\\'}, {"Prefer": 'return=representation; omit="'}, {"If-Match": "*"},
    {"If-None-Match": "*"}, {"If-Match": '"x"'}, {"Accept": "image/png"}, {"Accept": "application/ld+json;q=abc"},
]
FUZZ_BODIES = [b"", b"<> <http://e/p> 1 .", b"\xff\xfe", b"INSERT DATA { <> <http://e/p> 2 }",
               b"DELETE WHERE { ?s ?p ?o }", b"{", b"x" * 70000,
               f"@prefix ldp: <{LDP}> . <> a ldp:Resource, ldp:RDFSource .".encode()]


def test_random_requests_are_never_a_500(tmp_path):
    """3,000 requests mixing methods, paths (reserved ones too), headers and bodies, in-process."""
    from lakebench.server.app import LdpApplication
    from lakebench.server.repository import Repository

    from .conftest import call

    repo = Repository(tmp_path / "store", "http://test.example/", durability="nosync")
    app = LdpApplication(lambda: repo, max_body=1 << 16, max_binary=1 << 18)

    def request(method, path, body=b"", headers=None):
        r = call(app, method, path, body, headers)
        return r.status, r.body

    def reset():  # the fixtures back, tombstones gone
        for path in ("/c", "/c/s", "/c/b", "/c/gone"):
            request("DELETE", path + "/fcr:tombstone")
        request("PUT", "/c", b"", TTL)
        request("PUT", "/c/s", b"<> <http://e/p> 1 .", AS_SOURCE)
        request("PUT", "/c/b", b"bytes", PNG)
        request("PUT", "/c/gone", b"", TTL)
        request("DELETE", "/c/gone")

    rng = random.Random(2024)
    seen = set()
    for i in range(3000):
        if i % 20 == 0:
            reset()
        headers = {}
        for _ in range(rng.randrange(3)):
            headers.update(rng.choice(FUZZ_HEADERS))
        method = rng.choice(["GET", "HEAD", "PUT", "POST", "PATCH", "DELETE", "OPTIONS", "FOO"])
        path, body = rng.choice(FUZZ_PATHS), rng.choice(FUZZ_BODIES)
        status, answer = request(method, path, body, headers)
        assert status < 500, (method, path, body[:60], headers, answer)
        seen.add(status)
    assert {200, 201, 204, 206, 400, 404, 405, 409, 410, 413, 415, 416} <= seen
    assert not [p for p in (tmp_path / "store" / "binaries").iterdir() if p.name.startswith(".tmp")]
    repo.close()
    assert check_store(tmp_path / "store") == []
