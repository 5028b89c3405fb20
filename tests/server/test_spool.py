"""A response body is produced in full before it is sent (no store transaction is held while a
greenlet waits on a socket), held in memory up to a bound and past it in a temporary file, so a
representation of any size costs the worker bounded memory (lakebench.server.serving.Spooled)."""
from __future__ import annotations

import tempfile

from lakebench.server import serving

CHUNK = b"<http://e/s> <http://e/p> \"" + b"x" * 1000 + b"\" .\n"


def _call(app, spool_memory: int):
    started: list = []

    def start_response(status, headers, exc_info=None):
        started.append((status, dict(headers)))

    body = serving.complete_responses(app, spool_memory=spool_memory)({"REQUEST_METHOD": "GET", "PATH_INFO": "/"},
                                                                    start_response)
    return started, body


def _chunks(n: int, produced: list):
    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "application/n-triples")])

        def chunks():
            for _ in range(n):
                produced.append(1)
                yield CHUNK
        return chunks()
    return app


def test_a_large_body_goes_to_a_file_and_comes_back_whole():
    produced: list = []
    started, body = _call(_chunks(300, produced), spool_memory=16 * len(CHUNK))
    assert len(produced) == 300  # produced in full before the first byte is sent
    assert isinstance(body, serving.Spooled) and body.on_disk and body.size == 300 * len(CHUNK)
    assert b"".join(body) == CHUNK * 300
    assert all(len(chunk) <= serving.SPOOL_CHUNK for chunk in body)
    body.close()
    assert started == [("200 OK", {"Content-Type": "application/n-triples"})]


def test_a_small_body_stays_in_memory():
    _, body = _call(_chunks(3, []), spool_memory=16 * len(CHUNK))
    assert not body.on_disk and b"".join(body) == CHUNK * 3
    body.close()


def test_a_temporary_file_that_fails_is_a_503_that_says_why(monkeypatch):
    def no_space(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tempfile, "TemporaryFile", no_space)
    started, body = _call(_chunks(300, []), spool_memory=16 * len(CHUNK))
    (status, headers) = started[-1]
    assert status.startswith("503") and headers["Retry-After"] == "10"
    assert b"its temporary file failed (No space left on device)" in b"".join(body)
