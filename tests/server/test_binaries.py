"""Binaries (non-RDF sources): upload, GET, HEAD, Range, Digest, descriptions, limits."""
from __future__ import annotations

import base64
import hashlib
import os
import threading

import pyoxigraph as ox
import pytest

from .conftest import check_store, contained

LDP = "http://www.w3.org/ns/ldp#"
PREMIS = "http://www.loc.gov/premis/rdf/v1#"
EBUCORE = "http://www.ebu.ch/metadata/ontologies/ebucore/ebucore#"
TTL = {"Content-Type": "text/turtle"}
PNG = {"Content-Type": "image/png"}
DATA = bytes(range(256)) * 1000  # 256,000 bytes, every byte value


def b64(algorithm: str, data: bytes) -> str:
    return base64.b64encode(hashlib.new(algorithm, data).digest()).decode()


@pytest.fixture(scope="module")
def bins(server):
    assert server.request("PUT", "/bins", "", TTL).status == 201
    return server


def test_upload_get_head(bins):
    r = bins.request("PUT", "/bins/img", DATA, {**PNG, "Content-Disposition": 'attachment; filename="pic.png"'})
    assert r.status == 201 and r.header("ETag")
    assert f'<{bins.base}bins/img/fcr:metadata>; rel="describedby"' in r.header("Link")
    got = bins.request("GET", "/bins/img")
    assert got.status == 200 and got.body == DATA
    assert got.header("Content-Type") == "image/png" and got.header("ETag") == r.header("ETag")
    assert got.header("Accept-Ranges") == "bytes" and "pic.png" in got.header("Content-Disposition")
    link = got.header("Link")
    assert f'<{LDP}NonRDFSource>; rel="type"' in link and "#RDFSource>" not in link
    assert "describedby" in link
    head = bins.request("HEAD", "/bins/img")
    assert head.status == 200 and head.body == b"" and head.header("Content-Length") == str(len(DATA))
    assert bins.request("GET", "/bins/img", headers={"If-None-Match": r.header("ETag")}).status == 304
    assert bins.base + "bins/img" in contained(bins, "/bins")


def test_bytes_come_back_as_they_came_whatever_the_type(bins):
    for k, content_type in enumerate(["application/octet-stream", "text/plain; charset=latin-1",
                                      "application/rdf+xml", "application/x-weird"]):
        body = os.urandom(1000)
        r = bins.request("POST", "/bins", body, {"Content-Type": content_type, "Slug": f"any{k}"})
        assert r.status == 201
        got = bins.request("GET", f"/bins/any{k}")
        assert got.body == body and got.header("Content-Type") == content_type


def test_replace_a_binary(bins):
    bins.request("PUT", "/bins/rep", b"one", {"Content-Type": "text/plain"})
    etag = bins.request("HEAD", "/bins/rep").header("ETag")
    r = bins.request("PUT", "/bins/rep", b"two!", {"Content-Type": "text/csv", "If-Match": etag})
    assert r.status == 204 and r.header("ETag") != etag
    got = bins.request("GET", "/bins/rep")
    assert got.body == b"two!" and got.header("Content-Type") == "text/csv"
    # A Turtle body PUT to a binary replaces its bytes; it stays a binary.
    assert bins.request("PUT", "/bins/rep", b'<> <http://e/p> "x" .', TTL).status == 204
    assert bins.request("GET", "/bins/rep").body == b'<> <http://e/p> "x" .'
    assert bins.request("PUT", "/bins/rep", b"x", {"Content-Type": "text/plain", "If-Match": etag}).status == 412


@pytest.mark.parametrize("range_,status,span", [
    ("bytes=0-9", 206, (0, 9)),
    ("bytes=1000-", 206, (1000, 255999)),
    ("bytes=-256", 206, (255744, 255999)),
    ("bytes=255990-300000", 206, (255990, 255999)),
    ("bytes=0-", 200, None),  # the whole: 200
    ("bytes=0-1,5-6", 200, None),  # several ranges: the whole
    ("bytes=5-2", 200, None),  # invalid: ignored
    ("bytes=256000-", 416, None),
    ("bytes=-0", 416, None),
])
def test_ranges(bins, range_, status, span):
    bins.request("PUT", "/bins/ranged", DATA, PNG)
    r = bins.request("GET", "/bins/ranged", headers={"Range": range_})
    assert r.status == status
    if status == 206:
        first, last = span
        assert r.body == DATA[first:last + 1] and r.header("Content-Length") == str(last - first + 1)
        assert r.header("Content-Range") == f"bytes {first}-{last}/{len(DATA)}"
    elif status == 416:
        assert r.header("Content-Range") == f"bytes */{len(DATA)}"
    else:
        assert r.body == DATA


@pytest.mark.parametrize("algorithm,name", [("sha256", "sha-256"), ("sha512", "sha-512"), ("md5", "md5"),
                                            ("sha1", "sha")])
def test_digest_checked_on_upload(bins, algorithm, name):
    path = f"/bins/dig-{name}"
    good = {**PNG, "Digest": f"{name}={b64(algorithm, DATA)}"}
    assert bins.request("PUT", path, DATA, good).status == 201
    bad = {**PNG, "Digest": f"{name}={b64(algorithm, b'other')}"}
    r = bins.request("PUT", path, b"changed", bad)
    assert r.status == 409 and b"digest" in r.body
    assert bins.request("GET", path).body == DATA  # nothing stored
    r = bins.request("PUT", path + "-new", DATA, bad)
    assert r.status == 409 and bins.request("GET", path + "-new").status == 404


@pytest.mark.parametrize("method,path,digest", [
    ("POST", "/bins", "md5=1234"),                                  # base64, 3 bytes: no md5 is
    ("PUT", "/bins/dig-sha-256", "MD5=97c4627dc7734f65f5195f1d5f556d7a"),  # hex, not base64
    ("PUT", "/bins/dig-new", "sha-256=!!!"),
    ("PUT", "/bins/dig-new", f"sha-256={b64('sha256', DATA)}, sha=AAAA"),  # one good, one that cannot be
])
def test_a_digest_no_body_can_match_is_a_mismatch(bins, method, path, digest):
    """Fedora API 3.5.1 and 3.6.2 (MUST): a Digest that does not match the content is 409,
    a malformed value of a known algorithm included; nothing is stored."""
    bins.request("PUT", "/bins/dig-sha-256", DATA, PNG)
    before = bins.request("HEAD", "/bins/dig-sha-256").header("ETag")
    children = contained(bins, "/bins")
    r = bins.request(method, path, DATA, {**PNG, "Digest": digest, "Slug": "dig-slug"})
    assert r.status == 409 and b"digest" in r.body and b"\n" not in r.body.strip()
    assert f'rel="{LDP}constrainedBy"' in r.header("Link")
    assert contained(bins, "/bins") == children
    assert bins.request("HEAD", "/bins/dig-sha-256").header("ETag") == before


def test_an_unsupported_digest_algorithm_is_400(bins):
    """Fedora API 3.5.1 and 3.6.2 (SHOULD): an unsupported Digest type is 400."""
    for method, path in (("POST", "/bins"), ("PUT", "/bins/dig-abc")):
        r = bins.request(method, path, b"TestString.", {"Content-Type": "text/plain", "Digest": "abc=abc"})
        assert r.status == 400 and b"unsupported digest algorithm" in r.body
    assert bins.request("GET", "/bins/dig-abc").status == 404


def test_want_digest(bins):
    bins.request("PUT", "/bins/want", DATA, PNG)
    for want, expected in (("sha-256", f"sha-256={b64('sha256', DATA)}"),
                           ("md5;q=0.3, sha-512;q=0.9", f"sha-512={b64('sha512', DATA)}"),
                           ("MD5", f"md5={b64('md5', DATA)}")):
        for method in ("GET", "HEAD"):
            r = bins.request(method, "/bins/want", headers={"Want-Digest": want})
            assert r.header("Digest") == expected, (want, method)
    # Fedora API 3.2.3: only algorithms the server does not compute is 400 (HEAD as GET, 3.3);
    # one it computes among them is answered; one it computes, refused with q=0, is no digest.
    for method in ("GET", "HEAD"):
        r = bins.request(method, "/bins/want", headers={"Want-Digest": "crc32, unixsum;q=0.5"})
        assert r.status == 400 and r.header("Digest") is None
        assert f'rel="{LDP}constrainedBy"' in r.header("Link")
        r = bins.request(method, "/bins/want", headers={"Want-Digest": "md5,abc"})
        assert r.status == 200 and r.header("Digest") == f"md5={b64('md5', DATA)}"
        r = bins.request(method, "/bins/want", headers={"Want-Digest": "md5;q=0"})
        assert r.status == 200 and r.header("Digest") is None
    assert b"Want-Digest" in bins.request("GET", "/bins/want", headers={"Want-Digest": "abc"}).body


def test_description_get_put_patch(bins):
    bins.request("PUT", "/bins/described", b"hello", {"Content-Type": "text/plain",
                                                      "Content-Disposition": "inline; filename=hello.txt"})
    r = bins.request("GET", "/bins/described/fcr:metadata", headers={"Accept": "application/n-triples"})
    assert r.status == 200 and r.header("Content-Type").startswith("application/n-triples")
    assert f'<{bins.base}bins/described>; rel="describes"' in r.header("Link")
    described = {(t.predicate.value, t.object.value) for t in ox.parse(r.body, format=ox.RdfFormat.N_TRIPLES)
                 if t.subject.value == bins.base + "bins/described"}
    assert (PREMIS + "hasSize", "5") in described
    assert (EBUCORE + "hasMimeType", "text/plain") in described
    assert (EBUCORE + "filename", "hello.txt") in described
    assert (PREMIS + "hasMessageDigest", "urn:sha-256:" + hashlib.sha256(b"hello").hexdigest()) in described
    # GET, add a triple, PUT it back with If-Match: the server-managed triples are restated, true.
    body = r.body + f'<{bins.base}bins/described> <http://purl.org/dc/terms/title> "Hello" .\n'.encode()
    put = bins.request("PUT", "/bins/described/fcr:metadata", body,
                       {"Content-Type": "application/n-triples", "If-Match": r.header("ETag")})
    assert put.status == 204, put.body
    turtle = bins.request("GET", "/bins/described/fcr:metadata")
    assert b'"Hello"' in turtle.body and b"hasSize" in turtle.body
    # ... and PUT as Turtle with <> for the binary.
    assert bins.request("PUT", "/bins/described/fcr:metadata", turtle.body, TTL).status == 204
    # Changing a server-managed property is 409.
    lie = f'<> <{PREMIS}hasSize> "99"^^<http://www.w3.org/2001/XMLSchema#long> .'
    r = bins.request("PUT", "/bins/described/fcr:metadata", lie, TTL)
    assert r.status == 409 and f"{LDP}constrainedBy" in r.header("Link")
    patched = bins.request("PATCH", "/bins/described/fcr:metadata",
                           'INSERT DATA { <> <http://purl.org/dc/terms/creator> "me" }',
                           {"Content-Type": "application/sparql-update"})
    assert patched.status == 204
    assert b'"me"' in bins.request("GET", "/bins/described/fcr:metadata").body
    r = bins.request("PATCH", "/bins/described/fcr:metadata", f'DELETE WHERE {{ <> <{PREMIS}hasSize> ?s }}',
                     {"Content-Type": "application/sparql-update"})
    assert r.status == 409
    assert bins.request("GET", "/bins/described").body == b"hello"  # the bytes never changed
    assert bins.request("GET", "/bins/fcr:metadata").status == 404  # a container has no description
    assert bins.request("DELETE", "/bins/described/fcr:metadata").status == 405


def test_delete_a_binary_removes_its_file(serve):
    server = serve("--durability", "nosync")
    server.request("PUT", "/b", DATA, PNG)
    files = [p for p in (server.data / "binaries").iterdir()]
    assert len(files) == 1 and files[0].read_bytes() == DATA
    server.request("PUT", "/b", b"smaller", PNG)  # the old file goes when replaced
    assert [p.read_bytes() for p in (server.data / "binaries").iterdir()] == [b"smaller"]
    assert server.request("DELETE", "/b").status == 204
    assert list((server.data / "binaries").iterdir()) == []
    assert server.request("GET", "/b").status == 410
    assert server.stop() == 0
    assert check_store(server.data) == []


def test_large_chunked_upload_is_streamed_and_limited(serve):
    server = serve("--durability", "nosync", "--max-binary", str(8 << 20), "--max-body", "4096")
    conn = server.connection()
    blob = os.urandom(1 << 20)

    def chunks():
        for _ in range(6):  # 6 MiB, chunked: over --max-body, under --max-binary
            yield blob

    conn.request("PUT", "/big", body=chunks(), headers={**PNG, "Transfer-Encoding": "chunked"},
                 encode_chunked=True)
    r = conn.getresponse()
    r.read()
    assert r.status == 201
    head = server.request("HEAD", "/big")
    assert head.header("Content-Length") == str(6 << 20)
    r = server.request("GET", "/big", headers={"Range": f"bytes={5 << 20}-{(5 << 20) + 9}"})
    assert r.status == 206 and r.body == blob[:10]
    # Over the limit: the declared length is refused at once, before the body is read.
    over = server.raw(b"PUT /over HTTP/1.1\r\nHost: x\r\nContent-Type: image/png\r\n"
                      + f"Content-Length: {(8 << 20) + 1}\r\n\r\n".encode() + b"#" * 65536)
    assert over.status == 413
    assert server.request("GET", "/over").status == 404
    assert sorted(p.name.startswith(".tmp") for p in (server.data / "binaries").iterdir()) == [False]
    assert server.stop() == 0


def test_sigkill_during_uploads_never_leaves_a_partial_binary(serve, tmp_path):
    """Killed mid-upload, again and again: every acknowledged binary is complete, one
    in flight is complete or absent, and no temporary file outlives a restart."""
    import http.client
    import random
    import time

    from .conftest import free_port

    data, port = tmp_path / "crash", free_port()
    rng = random.Random(7)
    bodies = {k: os.urandom(rng.randrange(1 << 19, 3 << 20)) for k in range(60)}
    acked: set[int] = set()
    server = serve(data=data, port=port)
    assert server.request("PUT", "/up", "", TTL).status == 201
    k = 0
    for round_ in range(3):
        if round_:
            server = serve(data=data, port=port)
        stop = time.monotonic() + rng.uniform(0.3, 1.0)
        killer = threading.Timer(max(0.0, stop - time.monotonic()), server.kill)
        killer.start()
        try:
            while k < len(bodies):
                try:
                    r = server.request("PUT", f"/up/b{k}", bodies[k], {
                        **PNG, "Digest": f"sha-256={b64('sha256', bodies[k])}"}, timeout=10)
                except (OSError, http.client.HTTPException):
                    break  # killed: k was in flight
                assert r.status == 201
                acked.add(k)
                k += 1
        finally:
            killer.join()
        k += 1  # never reuse the URI of the request in flight
    server = serve(data=data, port=port)
    assert acked, "nothing was acknowledged"
    for n, body in bodies.items():
        r = server.request("GET", f"/up/b{n}")
        if n in acked:
            assert r.status == 200 and r.body == body, n
        else:
            assert r.status == 404 or r.body == body, n  # in flight: all or nothing
    assert not [p for p in (data / "binaries").iterdir() if p.name.startswith(".tmp")]
    assert server.stop() == 0
    assert check_store(data) == []


def test_temporary_files_of_interrupted_uploads_are_swept_at_start(serve, tmp_path):
    from .conftest import free_port

    data, port = tmp_path / "sweep", free_port()  # same port: same IRIs
    server = serve(data=data, port=port)
    server.request("PUT", "/kept", b"kept", PNG)
    assert server.stop() == 0
    (data / "binaries" / ".tmp-interrupted").write_bytes(b"half an upl")
    server = serve(data=data, port=port)
    assert [p.read_bytes() for p in (data / "binaries").iterdir()] == [b"kept"]
    assert server.request("GET", "/kept").body == b"kept"


@pytest.mark.slow
def test_a_1_gib_upload_keeps_the_worker_memory_flat(serve):
    import psutil

    server = serve("--durability", "nosync")
    workers = psutil.Process(server.proc.pid).children()
    assert len(workers) == 1
    worker = workers[0]
    before = worker.memory_info().rss
    peak = [before]
    done = threading.Event()

    def sample():
        while not done.wait(0.05):
            peak[0] = max(peak[0], worker.memory_info().rss)

    sampler = threading.Thread(target=sample)
    sampler.start()
    block = os.urandom(1 << 20)
    digest = hashlib.sha256()
    for _ in range(1024):
        digest.update(block)

    def body():
        for _ in range(1024):
            yield block

    conn = server.connection(timeout=300)
    try:
        conn.request("PUT", "/huge", body=body(), headers={**PNG, "Content-Length": str(1 << 30),
                                                           "Digest": "sha-256=" + base64.b64encode(
                                                               digest.digest()).decode()})
        r = conn.getresponse()
        r.read()
    finally:
        conn.close()
        done.set()
        sampler.join()
    assert r.status == 201
    print(f"1 GiB upload: the worker grew by {(peak[0] - before) / 2**20:.1f} MiB")
    assert peak[0] - before < 64 << 20, f"the worker grew by {(peak[0] - before) >> 20} MiB"
    head = server.request("HEAD", "/huge", headers={"Want-Digest": "sha-256"})
    assert head.header("Content-Length") == str(1 << 30)
    assert head.header("Digest") == "sha-256=" + base64.b64encode(digest.digest()).decode()
    tail = server.request("GET", "/huge", headers={"Range": "bytes=-16"})
    assert tail.status == 206 and tail.body == block[-16:]
    assert server.request("DELETE", "/huge").status == 204


@pytest.mark.parametrize("disposition", ["attachment; filename*=UTF-8''a%0D%0Ab",
                                         "attachment; filename*=UTF-8''a%00b",
                                         "attachment; filename*=UTF-8''%1B%5B31m"])
def test_a_file_name_that_cannot_be_a_header_is_refused(bins, disposition):
    path = f"/bins/badname-{abs(hash(disposition))}"
    r = bins.request("PUT", path, b"x", {**PNG, "Content-Disposition": disposition})
    assert r.status == 400 and b"control character" in r.body and b"\n" not in r.body.strip()
    assert bins.request("GET", path).status == 404


def test_a_stored_file_name_with_a_control_character_is_sent_safely():
    from lakebench.server.responses import disposition

    header = disposition("a\r\nSet-Cookie: x\x00.txt")
    assert all(c >= " " and c != "\x7f" for c in header)
    assert header.endswith("filename*=UTF-8''a%0D%0ASet-Cookie%3A%20x%00.txt")
