"""Property-based fuzzing (hypothesis) of ``lakebench serve``: its front door
(raw request bytes on a socket) and its RDF endpoints (PUT, POST, PATCH with
random bodies, media types and headers), against a real durable server.

For every request: never a 500, never a traceback in a reply, and a normal
GET is answered afterwards; at the end, ``lakebench check`` passes on the
store.  Bounded in time: ``LAKEBENCH_FUZZ_EXAMPLES`` examples per property
(default 300; about 10 s in all here), derandomized so CI is repeatable
(``LAKEBENCH_FUZZ_RANDOM=1`` draws new examples each run).
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from .conftest import PACKAGE_ROOT, Server  # noqa: E402

EXAMPLES = int(os.environ.get("LAKEBENCH_FUZZ_EXAMPLES", "300"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                derandomize=os.environ.get("LAKEBENCH_FUZZ_RANDOM") != "1",
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])
LDP = "http://www.w3.org/ns/ldp#"

# -- strategies ----------------------------------------------------------------------
#: Characters that parsers of headers and RDF trip on, and some that are not ASCII.
TRICKY = '<>;,"=\\ \t\'*/?#%:@[](){}.^_-+!$&|~`' + "aZ09" + "\x00\x7f\xb2\xe9\u0661\u20ac\U0001f600"
METHODS = ["GET", "HEAD", "PUT", "POST", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT", "PROPFIND", "get"]
PATHS = ["/", "/fuzz", "/fuzz/a", "/fuzz/a/b", "/fuzz/bin", "/fuzz/bin/fcr:metadata", "/fuzz/a/fcr:tombstone",
         "/fcr:constraints", "/fuzz/fcr:x", "/fuzz/%2F", "/fuzz/..", "//fuzz", "/fuzz?x=1", "/fuzz/a%20b",
         "/fuzz/\u00e9", "*", "http://x/fuzz"]
MEDIA_TYPES = ["text/turtle", "application/n-triples", "application/ld+json", "application/sparql-update",
               "application/octet-stream", "text/plain", "image/png", "", "text/turtle; charset=latin1",
               "TEXT/TURTLE", "application/ld+json; profile=x", "multipart/form-data; boundary=x", ";", "*/*"]
HEADER_NAMES = ["Link", "Accept", "Prefer", "If-Match", "If-None-Match", "Slug", "Digest", "Want-Digest",
                "Content-Disposition", "Range", "Content-Type", "Content-Length", "Transfer-Encoding",
                "Expect", "Connection", "Host", "X-Other"]
LINKS = [f"<{LDP}{t}>; rel=\"type\"" for t in ("BasicContainer", "Container", "RDFSource", "NonRDFSource",
                                               "Resource", "DirectContainer", "IndirectContainer")]
HEADER_VALUES = {
    "Link": LINKS + ["<x>; rel=type", "<", '<a>; rel="', "<a>;;;,,,"],
    "Accept": ["text/turtle", "application/n-triples;q=0.5, application/ld+json", "*/*;q=0", "image/png",
               "text/*;q=nan", "application/*;q=inf"],
    "Prefer": ["return=minimal", f'return=representation; omit="{LDP}PreferContainment"',
               f'return=representation; include="{LDP}PreferMinimalContainer"', 'return=representation; omit="'],
    "If-Match": ["*", '"x"', 'W/"x"', '"', ",,,"],
    "If-None-Match": ["*", '"x"', ""],
    "Digest": ["sha-256=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=", "md5=x", "sha-256", "crc32=AAAA", "=",
               "sha=2jmj7l5rSw0yVb/vlWAYkK/YBwk="],
    "Want-Digest": ["sha-256", "md5;q=0.5, sha-512", "sha;q=x"],
    "Content-Disposition": ['attachment; filename="a.txt"', "attachment; filename*=UTF-8''%E2%82%AC.txt",
                            "attachment; filename*=x'y'%ZZ", 'inline; filename="unclosed'],
    "Range": ["bytes=0-0", "bytes=-1", "bytes=5-", "bytes=0-1,2-3", "bytes=\xb2-", "bytes=9-1", "bytes=-0"],
    "Slug": ["a", "fcr:x", "..", "a/b", "\u00e9", ""],
}
TURTLE_TOKENS = ["<>", "<#x>", "<../y>", "<a/b>", "<http://e/p>", "<http://e/o>", "a", "ldp:contains",
                 "ldp:BasicContainer", "ldp:DirectContainer", '"lit"', '"""long"""', "'x'", "@en", "@en--ltr",
                 "^^", "<http://www.w3.org/2001/XMLSchema#integer>", "1", "1.5e3", "true", "_:b", "[", "]", "(",
                 ")", ".", ";", ",", "<<", ">>", "{", "}", "GRAPH", "@prefix ldp: <http://www.w3.org/ns/ldp#> .",
                 "PREFIX ldp: <http://www.w3.org/ns/ldp#>", "@base <http://other/> .", "\\u0000", "#comment\n",
                 "INSERT DATA", "DELETE DATA", "DELETE WHERE", "WHERE", "INSERT", "DELETE", "?s", "?p", "?o",
                 "LOAD", "CLEAR", "SERVICE", "WITH", "USING", "<http://www.w3.org/ns/ldp#contains>",
                 "<http://fedora.info/definitions/v4/repository#created>", "\n", "\u20ac"]


def rdfish():
    """Bodies that are nearly Turtle, N-Triples or SPARQL Update, or nearly JSON-LD."""
    tokens = st.lists(st.sampled_from(TURTLE_TOKENS), max_size=40).map(" ".join)
    json_values = st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(TRICKY, max_size=10)
        | st.sampled_from(["@id", "@type", "@context", "@graph", "@list", "./", "http://e/p", LDP + "contains"]),
        lambda children: st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(["@id", "@type", "@context", "@graph", "@value", "@language",
                                           "@list", "@reverse", "http://e/p", LDP + "contains"]),
                          children, max_size=4),
        max_leaves=12)
    return st.one_of(tokens.map(str.encode), json_values.map(lambda v: json.dumps(v).encode()),
                     st.binary(max_size=300), st.text(TRICKY, max_size=200).map(lambda t: t.encode("utf-8")))


SUBJECTS = ["<>", "<#x>", "<#y>", "_:b", "<a/b>", "<../fuzz>", "<http://e/s>"]
PREDICATES = ["<http://e/p>", "<http://e/q>", "a", f"<{LDP}contains>", "<http://purl.org/dc/terms/title>"]


def literal():
    text = st.text(TRICKY, max_size=20).map(lambda t: json.dumps(t, ensure_ascii=False))
    suffix = st.sampled_from(["", "", "@en", "@fr-CA", "^^<http://www.w3.org/2001/XMLSchema#string>",
                              "^^<http://e/type>"])
    return st.one_of(st.builds(str.__add__, text, suffix), st.integers().map(str),
                     st.sampled_from(["true", "<http://e/o>", "<>", "<#x>", "_:c", f"<{LDP}Container>"]))


@st.composite
def valid_rdf(draw) -> tuple[str, bytes]:
    """(media type, a body that parses): what makes the server write."""
    triples = draw(st.lists(st.tuples(st.sampled_from(SUBJECTS), st.sampled_from(PREDICATES), literal()),
                            max_size=6))
    pattern = " ".join(f"{s} {p} {o} ." for s, p, o in triples)
    kind = draw(st.sampled_from(["turtle", "update", "update", "jsonld"]))
    if kind == "turtle":
        return "text/turtle", pattern.encode()
    if kind == "jsonld":
        values = draw(st.lists(st.text(TRICKY, max_size=10), max_size=3))
        return "application/ld+json", json.dumps({"@id": "", "http://e/p": values}).encode()
    form = draw(st.sampled_from(["INSERT DATA {{ {p} }}", "DELETE DATA {{ {p} }}",
                                 "DELETE WHERE {{ <> <http://e/p> ?o }}",
                                 "DELETE {{ <> <http://e/p> ?o }} INSERT {{ <> <http://e/q> ?o }} "
                                 "WHERE {{ <> <http://e/p> ?o }}",
                                 "INSERT DATA {{ {p} }} ; DELETE DATA {{ {p} }}"]))
    return "application/sparql-update", form.format(p=pattern).encode()


def header_pairs():
    known = st.sampled_from(sorted(HEADER_VALUES)).flatmap(
        lambda name: st.tuples(st.just(name), st.sampled_from(HEADER_VALUES[name]) | st.text(TRICKY, max_size=60)))
    other = st.tuples(st.sampled_from(HEADER_NAMES), st.text(TRICKY, max_size=60))
    return st.lists(known | other, max_size=6)


def latin1(text: str) -> bytes:
    return text.encode("latin-1", "replace")


@st.composite
def raw_requests(draw) -> bytes:
    """Bytes a client might send: requests well or badly framed, or garbage."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.binary(max_size=400))
    method = draw(st.sampled_from(METHODS) | st.text(TRICKY, min_size=1, max_size=8))
    path = draw(st.sampled_from(PATHS) | st.text(TRICKY, max_size=30).map(lambda t: "/fuzz/" + t))
    version = draw(st.sampled_from(["HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTP/1.1 ", "http/1.1", "HTTP/9"]))
    headers = draw(header_pairs())
    body = draw(rdfish())
    framing = draw(st.sampled_from(["length", "short", "none", "chunked", "bad-chunked"]))
    lines = [latin1(f"{method} {path} {version}"), b"Host: fuzz"]
    lines += [latin1(f"{name}: {value}") for name, value in headers]
    if framing == "length":
        lines.append(b"Content-Length: %d" % len(body))
    elif framing == "short":  # fewer bytes than announced: the client then half-closes
        lines.append(b"Content-Length: %d" % (len(body) + draw(st.integers(1, 1000))))
    elif framing in ("chunked", "bad-chunked"):
        lines.append(b"Transfer-Encoding: chunked")
        if framing == "chunked":
            body = (b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n") if body else b"0\r\n\r\n"
        else:
            body = draw(st.sampled_from([b"zz\r\n", b"5\r\nab\r\n0\r\n\r\n", b"-1\r\n", b"1;" + b"x" * 50]))
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


# -- the server and its checks --------------------------------------------------------
@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory):
    """A durable server with a small body limit and a short client timeout; at the
    end, stopped and its store checked by ``lakebench check``."""
    tmp = tmp_path_factory.mktemp("fuzz")
    server = Server(tmp / "data", tmp / "serve.log", "--max-body", "65536", "--client-timeout", "2").start()
    ttl = {"Content-Type": "text/turtle"}
    assert server.request("PUT", "/fuzz", "", ttl).status == 201
    assert server.request("PUT", "/fuzz/a", "", ttl).status == 201
    assert server.request("PUT", "/fuzz/bin", b"\x00\x01\x02",
                          {"Content-Type": "application/octet-stream"}).status == 201
    yield server
    assert server.stop() == 0, server.log()[-2000:]
    assert "Traceback" not in server.log(), server.log()[-4000:]
    env = {**os.environ, "PYTHONPATH": PACKAGE_ROOT}
    check = subprocess.run([sys.executable, "-m", "lakebench.cli", "check", str(server.data)],
                           capture_output=True, text=True, timeout=120, env=env)
    assert check.returncode == 0, check.stdout + check.stderr


def exchange(server: Server, data: bytes, timeout: float = 10.0) -> bytes:
    """Send ``data``, half-close, and read until the server closes."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=timeout) as sock:
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
        except OSError:  # the server answered and closed before the end
            pass
        received = b""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            received += chunk
        return received


def assert_sound(reply: bytes, what) -> None:
    statuses = [line.split()[1] for line in reply.split(b"\r\n")
                if line.startswith(b"HTTP/1.") and len(line.split()) > 1]
    assert b"Traceback" not in reply and b'File "' not in reply, (what, reply[:2000])
    assert b"500" not in statuses, (what, reply[:2000])
    if reply:
        assert reply.startswith(b"HTTP/1."), (what, reply[:300])


def assert_healthy(server: Server) -> None:
    """A normal GET is answered; and the containers the requests aim at are there again."""
    response = server.request("GET", "/", headers={"Accept": "application/n-triples"}, timeout=10)
    assert response.status == 200
    for path in ("/fuzz", "/fuzz/a"):
        if server.request("HEAD", path, timeout=10).status in (404, 410):
            server.request("DELETE", path + "/fcr:tombstone", timeout=10)
            assert server.request("PUT", path, "", {"Content-Type": "text/turtle"}, timeout=10).status == 201


# -- the properties ------------------------------------------------------------------
@FUZZ
@given(request=raw_requests())
def test_front_door(fuzzed, request):
    """Raw bytes on the socket: an answer that is not a 500 (or a closed connection), no traceback."""
    reply = exchange(fuzzed, request)
    assert_sound(reply, request)
    assert_healthy(fuzzed)


@FUZZ
@given(method=st.sampled_from(["PUT", "POST", "PATCH", "PUT", "POST", "PATCH", "GET", "DELETE"]),
       path=st.sampled_from(["/fuzz", "/fuzz/a", "/fuzz/a", "/fuzz/a", "/fuzz/new", "/fuzz/new", "/fuzz/a/b",
                             "/fuzz/bin", "/fuzz/bin/fcr:metadata", "/fuzz/a/fcr:tombstone",
                             "/fuzz/new/fcr:metadata"]),
       typed_body=valid_rdf() | st.tuples(st.sampled_from(MEDIA_TYPES) | st.text(TRICKY, max_size=30), rdfish()),
       headers=st.just([]) | header_pairs())
def test_rdf_endpoints(fuzzed, method, path, typed_body, headers):
    """Well-framed requests with random bodies (valid or not), media types and headers."""
    media_type, body = typed_body
    lines = [f"{method} {path} HTTP/1.1", "Host: fuzz", "Connection: close", f"Content-Length: {len(body)}"]
    if media_type:
        lines.append(f"Content-Type: {media_type}")
    lines += [f"{name}: {value}" for name, value in headers
              if name.lower() not in ("content-length", "transfer-encoding", "connection", "host", "content-type")]
    request = latin1("\r\n".join(lines)) + b"\r\n\r\n" + body
    reply = exchange(fuzzed, request)
    assert reply.startswith(b"HTTP/1.1 "), (request[:500], reply[:500])
    assert_sound(reply, request[:2000])
    assert_healthy(fuzzed)
