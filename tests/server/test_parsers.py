"""``lakebench serve --workers N``: one worker owns the store (its write batch and
write-ahead log), N-1 helper processes parse request bodies for it
(lakebench.server.sandbox, ``Sandboxes.parse``)."""
from __future__ import annotations

import psutil
import pytest

from lakebench.server.errors import RepositoryError
from lakebench.server.rdfbody import parse_body
from lakebench.server.sandbox import Sandboxes, decode_triples, encode_triples

TTL = {"Content-Type": "text/turtle"}
FEDORA = "http://fedora.info/definitions/v4/repository#"
LDP = "http://www.w3.org/ns/ldp#"

BODIES = [
    # the body, its media type, as a description
    ('<> <http://e/p> "x", "y"@en ; <http://e/q> <other>, _:b . _:b <http://e/r> 1 .', "text/turtle", False),
    (f'<> a <{LDP}BasicContainer> ; <{FEDORA}created> "2020-01-01T00:00:00Z" ; <http://e/p> "z" .',
     "text/turtle", False),
    ('{"@id": "", "http://e/p": "j"}', "application/ld+json", False),
    ('<http://h/r> <http://www.loc.gov/premis/rdf/v1#hasSize> "3" .', "application/n-triples", True),
    ("", "text/turtle", False),
    ('<> <http://e/p> <<( <http://a> <http://b> <http://c> )>> .', "text/turtle", False),  # the store refuses it
]

REFUSED = [
    ("<> <http://e/p> .", "text/turtle", 400),                         # malformed
    (f'<http://elsewhere/x> <{LDP}contains> <http://h/r/c> .', "text/turtle", 409),  # managed, another resource
    ("<> <http://e/p> 1 .", "application/rdf+xml", 415),               # not a type the server reads
]


@pytest.fixture
def parsers():
    pool = Sandboxes(timeout=30, size=1)
    yield pool
    pool.close()


@pytest.mark.parametrize("body, media_type, description", BODIES)
def test_a_helper_parses_a_body_as_the_worker_would(parsers, body, media_type, description):
    here = parse_body(body.encode(), media_type, "http://h/r", description=description)
    there = parsers.parse(body.encode(), media_type, "http://h/r", description=description)
    assert there == here


@pytest.mark.parametrize("body, media_type, status", REFUSED)
def test_a_helper_refuses_a_body_as_the_worker_would(parsers, body, media_type, status):
    with pytest.raises(RepositoryError) as here:
        parse_body(body.encode(), media_type, "http://h/r")
    with pytest.raises(RepositoryError) as there:
        parsers.parse(body.encode(), media_type, "http://h/r")
    assert (there.value.status, there.value.message) == (here.value.status, here.value.message)
    assert here.value.status == status


def test_a_helper_that_dies_mid_parse_is_a_400_and_the_next_body_gets_a_new_one(parsers):
    parsers.prestart()
    (helper,) = parsers._idle  # white-box: the one helper, to kill it while it works
    body = b"".join(b'<> <http://e/p> "%d" .\n' % i for i in range(400_000))
    import threading

    threading.Timer(0.05, helper.process.kill).start()
    with pytest.raises(RepositoryError) as refused:
        parsers.parse(body, "text/turtle", "http://h/r")
    assert refused.value.status == 400 and "ended the process parsing it" in refused.value.message
    assert parsers.parse(b'<> <http://e/p> "ok" .', "text/turtle", "http://h/r").ntriples.count(b"\n") == 1


def test_managed_triples_travel_as_bytes_and_a_broken_payload_is_refused():
    triples = ((b"Ia", b"Ib", b"Lc"), (b"I", b"", b"L\x00\xff"))
    assert decode_triples(encode_triples(triples)) == triples
    assert decode_triples(b"") == ()
    assert decode_triples(encode_triples(triples)[:-1]) is None      # cut short
    assert decode_triples(encode_triples(triples[:1])[:12]) is None  # two terms, not three


def test_with_workers_one_process_owns_the_store_and_the_others_parse(serve):
    server = serve("--workers", "3")
    assert "3 workers: one serves and writes (the write-ahead log, group commit), 2 parse request bodies" \
        in server.log()
    assert server.request("PUT", "/box", "", TTL).status == 201  # the worker's store is open from here on
    (worker,) = psutil.Process(server.proc.pid).children()  # one gunicorn worker
    helpers = [p for p in worker.children() if "lakebench.server.sandbox" in " ".join(p.cmdline())]
    assert len(helpers) == 2, [p.cmdline() for p in worker.children()]
    used = sum(sum(p.cpu_times()[:2]) for p in helpers)
    big = "".join(f'<> <http://e/p{i}> "v{i}" .\n' for i in range(5000))
    for k in range(20):  # one client: a helper is always free, so each body is parsed by one
        assert server.request("PUT", f"/box/c{k}", big, TTL).status == 201
    assert sum(sum(p.cpu_times()[:2]) for p in helpers) > used, "the helpers parsed nothing"
    r = server.request("GET", "/box/c7", headers={"Accept": "application/n-triples"})
    assert r.status == 200 and r.body.count(b"<http://e/p") == 5000
    refused = server.request("PUT", "/box/bad", "<> <http://e/p> .", TTL)
    assert refused.status == 400 and b"malformed text/turtle" in refused.body
    # The write-ahead log holds the writes (no LMDB commit per write).
    assert (server.data / "wal").stat().st_size > 0
    assert "LMDB commit" not in server.log()


def test_a_helper_that_cannot_be_started_leaves_the_body_to_the_worker(tmp_path, monkeypatch):
    """Out of processes: the repository still opens, and a body is parsed where it would have been."""
    from lakebench.server import sandbox
    from lakebench.server.repository import Repository

    def refused(*args, **kwargs):
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(sandbox.subprocess, "Popen", refused)
    repository = Repository(tmp_path / "store", "http://h/", durability="nosync", parsers=2)
    try:
        repository.start_helpers()  # says so in the log, and goes on
        created, _ = repository.put_rdf("http://h/a", b'<> <http://e/p> "x" .', "text/turtle")
        assert created
        with pytest.raises(RepositoryError) as refused_update:  # a PATCH has no fallback: 503, not 500
            repository.sandboxes.evaluate("INSERT DATA { <http://h/a> <http://e/q> 1 }", b"", "http://h/a")
        assert refused_update.value.status == 503 and "cannot start a helper process" in refused_update.value.message
    finally:
        repository.close()
