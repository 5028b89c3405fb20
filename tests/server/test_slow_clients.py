"""Slow, silent and stalled clients cost a connection slot, never the worker
(issue 16, case 1), and the request head's size limits answer in one line.

Each case holds a few sockets open the way a hostile or broken client would
and checks that a normal GET from another client is answered promptly
meanwhile (under gunicorn's gthread worker with one thread, every one of
these timed out); then, with a short ``--client-timeout``, that the server
closes such connections itself, and that ``--max-connections`` caps them.
"""
from __future__ import annotations

import http.client
import socket
import threading
import time

import pytest

from .conftest import check_store

#: How long a normal GET may take while slow clients hold their sockets: the
#: answer takes milliseconds; this is for a loaded CI machine.
PROMPT = 3.0
#: The start of a TLS ClientHello, as a client sends it to an https:// URL (no
#: line break in it: the server waits for the rest of a "request line").
CLIENT_HELLO = (bytes.fromhex("16030100c4010000c00303") + bytes(range(0x20, 0x40))
                + b"\x00\x00\x02\x13\x01\x01\x00" + b"\x00" * 150)
TTL = {"Content-Type": "text/turtle"}


def prompt_get(server, path: str = "/") -> float:
    """A normal GET on a new connection; its time (it must answer 200 within PROMPT)."""
    started = time.monotonic()
    try:
        response = server.request("GET", path, headers={"Accept": "application/n-triples"}, timeout=PROMPT)
    except TimeoutError:
        pytest.fail(f"a normal GET was not answered within {PROMPT} s")
    elapsed = time.monotonic() - started
    assert response.status == 200, response
    assert elapsed < PROMPT
    return elapsed


def connect(server) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    return sock


def big_representation(server, path: str = "/big", triples: int = 100_000) -> int:
    """A resource whose N-Triples representation is about 12 MB; its size."""
    body = "".join(f'<> <http://example.org/p{i}> "{"x" * 80} {i}" .\n' for i in range(triples))
    response = server.request("PUT", path, body, TTL, timeout=120)
    assert response.status == 201, response
    head = server.request("HEAD", path, headers={"Accept": "application/n-triples"})
    assert head.status == 200
    return len(body)


@pytest.fixture(scope="module")
def durable(tmp_path_factory):
    """A durable server (the write-ahead log: its write batch serves every connection)."""
    from .conftest import Server

    tmp = tmp_path_factory.mktemp("slow")
    server = Server(tmp / "data", tmp / "serve.log").start()
    yield server
    if server.running:
        server.stop()
    assert check_store(server.data) == []


def test_an_unfinished_request_head_does_not_block_others(durable):
    sock = connect(durable)
    sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # and then nothing
    try:
        prompt_get(durable)
        # Writes too, on other connections, while the head is still pending.
        assert durable.request("PUT", "/head-pending", '<> <http://e/p> "1" .', TTL).status == 201
        prompt_get(durable, "/head-pending")
    finally:
        sock.close()


def test_200_silent_connections_do_not_block_others(durable):
    socks = [connect(durable) for _ in range(200)]
    try:
        time.sleep(0.2)
        prompt_get(durable)
    finally:
        for sock in socks:
            sock.close()


def test_a_body_shorter_than_its_content_length_does_not_block_others(durable):
    sock = connect(durable)
    sock.sendall(b"PUT /short HTTP/1.1\r\nHost: x\r\nContent-Type: text/turtle\r\nContent-Length: 100\r\n\r\n"
                 b'<> <http://e/p> "1" .')
    try:
        prompt_get(durable)
    finally:
        sock.close()
    # The client went away mid-body: nothing of it was stored.
    time.sleep(0.2)
    assert durable.request("GET", "/short").status == 404


def test_a_tls_client_hello_does_not_block_others(durable):
    sock = connect(durable)
    sock.sendall(CLIENT_HELLO)
    try:
        prompt_get(durable)
    finally:
        sock.close()


def test_a_client_that_never_reads_a_12_mb_representation_does_not_block_others(durable):
    size = big_representation(durable)
    assert size > 12_000_000
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", durable.port))
    sock.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\nAccept: application/n-triples\r\n\r\n")  # never read
    try:
        time.sleep(0.5)  # the response fills the socket buffers, then the server waits to send
        prompt_get(durable)
        assert durable.request("PUT", "/while-sending", '<> <http://e/p> "1" .', TTL).status == 201
        prompt_get(durable, "/while-sending")
    finally:
        sock.close()


def test_all_at_once_with_two_workers(serve):
    """With several workers, as many slow sockets as workers (and more) block nothing."""
    server = serve("--workers", "2", "--durability", "nosync")
    socks = []
    for _ in range(3):  # more of each than there are workers
        for data in (b"GET / HTTP/1.1\r\nHost: x\r\n", CLIENT_HELLO,
                     b"PUT /s HTTP/1.1\r\nHost: x\r\nContent-Type: text/turtle\r\nContent-Length: 9\r\n\r\n<",
                     b""):
            sock = connect(server)
            if data:
                sock.sendall(data)
            socks.append(sock)
    try:
        time.sleep(0.2)
        for _ in range(4):
            prompt_get(server)
    finally:
        for sock in socks:
            sock.close()


# -- the server closes them itself -------------------------------------------------
@pytest.fixture(scope="module")
def impatient(tmp_path_factory):
    """A server with a 1 s client timeout and room for 8 connections."""
    from .conftest import Server

    tmp = tmp_path_factory.mktemp("impatient")
    server = Server(tmp / "data", tmp / "serve.log", "--client-timeout", "1",
                    "--max-connections", "8").start()
    yield server
    if server.running:
        server.stop()
    assert check_store(server.data) == []


def read_until_closed(sock: socket.socket, limit: float = 10.0) -> tuple[bytes, float]:
    """Everything the server sends until it closes the connection, and when it did."""
    started = time.monotonic()
    sock.settimeout(limit)
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    return data, time.monotonic() - started


def test_an_unfinished_head_is_answered_408_and_closed(impatient):
    sock = connect(impatient)
    sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
    data, elapsed = read_until_closed(sock)
    sock.close()
    assert data.startswith(b"HTTP/1.1 408 "), data
    body = data.split(b"\r\n\r\n", 1)[1]
    assert body.count(b"\n") == 1 and b"within 1 s" in body, body
    assert 0.5 < elapsed < 5


def test_a_head_sent_one_byte_at_a_time_is_cut_off(impatient):
    """Progress is not enough: the whole head must arrive within the timeout."""
    sock = connect(impatient)
    started = time.monotonic()
    closed = False
    for byte in b"GET / HTTP/1.1\r\nX-Slow: " + b"a" * 100:
        try:
            sock.sendall(bytes([byte]))
        except OSError:
            closed = True
            break
        time.sleep(0.05)
        if time.monotonic() - started > 6:
            break
    if not closed:
        data, _ = read_until_closed(sock)
        assert data.startswith(b"HTTP/1.1 408 "), data
    sock.close()
    assert time.monotonic() - started < 6


def test_a_silent_connection_is_closed_without_an_answer(impatient):
    sock = connect(impatient)
    data, elapsed = read_until_closed(sock)
    sock.close()
    assert data == b"" and 0.5 < elapsed < 5


def test_a_stalled_body_is_refused_and_nothing_stored(impatient):
    sock = connect(impatient)
    sock.sendall(b"PUT /stalled HTTP/1.1\r\nHost: x\r\nContent-Type: text/turtle\r\nContent-Length: 100\r\n\r\n"
                 b'<> <http://e/p> "1" .')
    data, elapsed = read_until_closed(sock)
    sock.close()
    assert data.startswith(b"HTTP/1.1 400 "), data
    assert b"incomplete body" in data or b"cannot read the request body" in data
    assert elapsed < 5
    assert impatient.request("GET", "/stalled").status == 404


def test_a_stalled_binary_upload_leaves_nothing(impatient):
    sock = connect(impatient)
    sock.sendall(b"PUT /stalled-binary HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n"
                 b"Content-Length: 1000000\r\n\r\n" + b"\x00" * 1000)
    data, elapsed = read_until_closed(sock)
    sock.close()
    assert data.startswith(b"HTTP/1.1 400 ") and elapsed < 5, data
    assert impatient.request("GET", "/stalled-binary").status == 404
    assert [p.name for p in (impatient.data / "binaries").glob("*")] == []


def test_a_client_that_stops_reading_is_disconnected(impatient):
    big_representation(impatient)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", impatient.port))
    sock.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\nAccept: application/n-triples\r\n\r\n")
    time.sleep(3)  # stalled for longer than the client timeout: the server gives up
    data, _ = read_until_closed(sock, limit=20)
    sock.close()
    assert data.startswith(b"HTTP/1.1 200 ")
    assert len(data) < 12_000_000  # cut off before the end
    prompt_get(impatient)


@pytest.fixture(scope="module")
def crowded(tmp_path_factory):
    """A server with room for 8 connections and the default client timeout (30 s):
    a silent connection would hold its slot that long."""
    from .conftest import Server

    tmp = tmp_path_factory.mktemp("crowded")
    server = Server(tmp / "data", tmp / "serve.log", "--max-connections", "8").start()
    yield server
    if server.running:
        server.stop()


def test_the_connection_cap_keeps_room_for_new_clients(crowded):
    """A cap full of idle connections: a new client is served at once, and the
    connection idle longest is the one closed to make room for it."""
    socks = []
    try:
        for _ in range(8):  # every slot taken by a silent client, oldest first
            socks.append(connect(crowded))
            time.sleep(0.02)
        prompt_get(crowded)
        socks[0].settimeout(PROMPT)
        assert socks[0].recv(1) == b""  # closed by the server, unanswered
    finally:
        for sock in socks:
            sock.close()


def test_one_client_reconnecting_cannot_keep_others_out(crowded):
    """One client keeps opening connections and leaving them idle (the cap is 8):
    the others are still served at once."""
    socks = []
    try:
        for _ in range(5):
            socks += [connect(crowded) for _ in range(8)]
            prompt_get(crowded)
    finally:
        for sock in socks:
            sock.close()


def test_a_kept_alive_connection_serves_many_requests(impatient):
    conn = http.client.HTTPConnection("127.0.0.1", impatient.port, timeout=10)
    for i in range(5):
        conn.request("PUT", f"/kept-{i}", body=f'<> <http://e/p> "{i}" .', headers=TTL)
        response = conn.getresponse()
        response.read()
        assert response.status == 201
        time.sleep(0.3 if i == 2 else 0)  # idle between requests: only the keep-alive timeout applies
    conn.request("GET", "/kept-4")
    assert conn.getresponse().status == 200
    conn.close()


def test_pipelined_requests_are_all_answered(impatient):
    sock = connect(impatient)
    sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * 3 + b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    data, _ = read_until_closed(sock)
    sock.close()
    assert data.count(b"HTTP/1.1 200 ") == 4


# -- the request head's limits: one line each ----------------------------------------
def one_line_answer(server, request: bytes) -> tuple[int, bytes]:
    sock = connect(server)
    try:
        sock.sendall(request)
    except OSError:
        pass
    data, _ = read_until_closed(sock)
    sock.close()
    head, _, body = data.partition(b"\r\n\r\n")
    assert b"<html" not in body and body.count(b"\n") == 1, data
    return int(head.split()[1]), body


@pytest.mark.parametrize("request_bytes, status", [
    (b"GET /" + b"a" * 5000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
    (b"GET / HTTP/1.1\r\nHost: x\r\n" + b"X-Big: " + b"a" * 9000 + b"\r\n\r\n", 431),
    (b"GET / HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: 1\r\n" % i for i in range(101)) + b"\r\n", 431),
    (b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + b"Link: <" + b"a" * 8000 + b">\r\n"
     + b"Link: <" + b"b" * 8000 + b">\r\n" + b"Link: <" + b"c" * 8000 + b">\r\n\r\n", 431),
    (b"\x16\x03\x01 garbage\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n", 400),
])
def test_limits_and_malformed_heads_get_one_line(impatient, request_bytes, status):
    got, body = one_line_answer(impatient, request_bytes)
    assert got == status, body


def test_gets_in_parallel_with_writes_keep_the_store_consistent(durable):
    """Many connections reading and writing at once through the one write batch."""
    errors = []

    def client(n: int) -> None:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", durable.port, timeout=30)
            for i in range(20):
                conn.request("PUT", f"/par-{n}-{i}", body=f'<> <http://e/p> "{i}" .', headers=TTL)
                r = conn.getresponse()
                r.read()
                assert r.status == 201, r.status
                conn.request("GET", "/", headers={"Accept": "application/n-triples"})
                r = conn.getresponse()
                assert r.status == 200 and f"/par-{n}-{i}>".encode() in r.read()
            conn.close()
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
