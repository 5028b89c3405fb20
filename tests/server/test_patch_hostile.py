"""PATCH from a hostile client: no connection opened, no crash, no worker held past the limit.

Each case of issue 27's list is here with the input that showed it: a
listener on loopback must receive nothing whatever form names it; deeply
nested updates are a 400 and the worker that answered them still serves;
a join that would run for seconds is stopped at ``--patch-timeout`` while
other clients are served.
"""
from __future__ import annotations

import socket
import subprocess
import sys
import threading

import psutil
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakebench._sparql import MAX_NESTING, check_update

from .test_patch import AS_SOURCE, own, patch


class Listener:
    """A TCP listener on loopback that records every connection made to it."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/x"

    def _accept(self):
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.connections += 1  # held open, never answered: a fetch would wait
            self._held = conn

    def close(self):
        self._stop.set()
        self._thread.join()
        self.sock.close()


@pytest.fixture
def listener():
    listening = Listener()
    yield listening
    listening.close()


def workers(server) -> list[int]:
    """The pids of the server's gunicorn workers (the master's children)."""
    return sorted(p.pid for p in psutil.Process(server.proc.pid).children()
                  if "sandbox" not in " ".join(p.cmdline()))


FORMS = [
    # The walk past the old keyword filter: a long string ending in an escaped quote.
    'INSERT DATA {{ <> <http://p/x> """a\\"""" }} ; LOAD <{url}> ; INSERT DATA {{ <> <http://p/y> "b" }}',
    "LOAD <{url}>",
    "LOAD SILENT <{url}>",
    "LOAD <{url}> INTO GRAPH <http://e/g>",
    "INSERT {{ <> <http://e/p> ?o }} WHERE {{ SERVICE <{url}> {{ ?s ?p ?o }} }}",
    "INSERT {{ <> <http://e/p> ?o }} WHERE {{ SERVICE SILENT <{url}> {{ ?s ?p ?o }} }}",
    "INSERT {{ <> <http://e/p> 1 }} WHERE {{ FILTER EXISTS {{ SERVICE <{url}> {{ ?s ?p ?o }} }} }}",
    "INSERT {{ <> <http://e/p> 1 }} WHERE {{ <> ?p ?o OPTIONAL {{ SERVICE <{url}> {{ ?s ?p ?o }} }} }}",
    "# LOAD in a comment is a comment\nLOAD <{url}>",
    "CLEAR GRAPH <{url}>",
    "DROP GRAPH <{url}>",
    "CREATE GRAPH <{url}>",
    "ADD DEFAULT TO <{url}>",
    "MOVE DEFAULT TO <{url}>",
    "COPY DEFAULT TO <{url}>",
    "WITH <{url}> INSERT {{ <> <http://e/p> 1 }} WHERE {{ }}",
    "INSERT {{ <> <http://e/p> ?o }} USING <{url}> WHERE {{ ?s ?p ?o }}",
    "INSERT {{ <> <http://e/p> ?o }} USING NAMED <{url}> WHERE {{ GRAPH ?g {{ ?s ?p ?o }} }}",
    "INSERT {{ <> <http://e/p> ?o }} WHERE {{ GRAPH <{url}> {{ ?s ?p ?o }} }}",
    'INSERT DATA {{ GRAPH <{url}> {{ <> <http://e/p> "x" }} }}',
]


@pytest.mark.parametrize("form", FORMS)
def test_no_form_of_update_reaches_the_network(server, listener, form):
    path = f"/hostile-{FORMS.index(form)}"
    assert server.request("PUT", path, '<> <http://e/p> "1" .', AS_SOURCE).status == 201
    before = own(server, path)
    r = patch(server, path, form.format(url=listener.url))
    assert r.status == 400, r.body
    assert b"\n" not in r.body.strip() and (b"not allowed" in r.body or b"another graph" in r.body)
    assert own(server, path) == before
    assert listener.connections == 0


def test_the_servers_helper_is_confined(server):
    """The helper the server evaluates with runs under a seccomp filter (mode 2)."""
    assert server.request("PUT", "/hostile-confined", "", AS_SOURCE).status == 201
    assert patch(server, "/hostile-confined", 'INSERT DATA { <> <http://e/p> "1" }').status == 204
    helpers = [p for p in psutil.Process(server.proc.pid).children(recursive=True)
               if "sandbox" in " ".join(p.cmdline())]
    assert helpers
    for helper in helpers:
        with open(f"/proc/{helper.pid}/status") as status:
            assert "Seccomp:\t2" in status.read()


def test_the_evaluating_process_cannot_open_a_socket(listener):
    """The helper confines itself before it reads an update: no socket at all."""
    code = ("import socket\nfrom lakebench._sparql import confine\nconfine()\n"
            f"try:\n    socket.create_connection(('127.0.0.1', {listener.port}), timeout=2)\n"
            "except PermissionError:\n    print('refused')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "refused", out.stderr
    assert listener.connections == 0


DEEP = [
    "INSERT { <> <http://e/n> 1 } WHERE { FILTER(" + "!" * 20_000 + "true) }",
    "INSERT { <> <http://e/n> 1 } WHERE { FILTER(" + "-" * 20_000 + "1) }",
    "INSERT { <> <http://e/n> 1 } WHERE { " + "{ " * 5_000 + "}" * 5_000 + " }",
    "INSERT { <> <http://e/n> 1 } WHERE { " + "OPTIONAL { " * 3_000 + "}" * 3_000 + " }",
    "INSERT DATA { <> <http://e/p> " + "[ <http://e/q> " * 20_000 + "1" + " ]" * 20_000 + " }",
    "INSERT { <> <http://e/n> ?x } WHERE { BIND(" + "(" * 20_000 + "1" + ")" * 20_000 + " AS ?x) }",
    "INSERT { <> <http://e/n> 1 } WHERE { <> " + "(" * 20_000 + "<http://e/p>" + ")" * 20_000 + " ?o }",
    "INSERT { <> <http://e/n> 1 } WHERE { <> <http://e/p>" + "/<http://e/p>" * 20_000 + " ?o }",
    "INSERT { <> <http://e/n> 1 } WHERE { " + "{ } UNION " * 20_000 + "{ } }",
    "INSERT { <> <http://e/n> 1 } WHERE { FILTER(1" + " || 1" * 20_000 + ") }",
    "INSERT { <> <http://e/n> 1 } WHERE { FILTER(1" + " + 1" * 20_000 + " > 0) }",
    # SPARQL 1.2's reified triples, which the parser recurses into before refusing them
    "INSERT DATA { " + "<< " * 20_000 + "<http://e/a> <http://e/b> <http://e/c>" + " >>" * 20_000 + " }",
    # brackets hidden from a lexer in strings and IRI-shaped spans
    'INSERT { <> <http://e/n> 1 } WHERE { ' + ' { ?s ?p "}}}}" . ' * 3_000 + "}" * 3_000 + " }",
    "INSERT { <> <http://e/n> 1 } WHERE { FILTER(1<" + "(" * 5_000 + "2>" + ")" * 5_000 + ") }",
]


def test_deep_updates_are_refused_and_the_worker_lives(server):
    path = "/hostile-deep"
    assert server.request("PUT", path, '<> <http://e/p> "1" .', AS_SOURCE).status == 201
    before, pids = own(server, path), workers(server)
    for update in DEEP:
        r = patch(server, path, update)
        assert r.status == 400, (update[:80], r.status, r.body[:300])
        assert b"\n" not in r.body.strip()
    assert own(server, path) == before
    assert workers(server) == pids  # no worker died and was replaced


def _check(update: str) -> str:
    """check_update on a thread with a large stack, as the helper runs it."""
    threading.stack_size(1 << 30)
    try:
        result = []
        thread = threading.Thread(target=lambda: result.append(_attempt(update)))
        thread.start()
        thread.join()
    finally:
        threading.stack_size(0)
    if isinstance(result[0], Exception):
        raise result[0]
    return result[0]


def _attempt(update):
    try:
        return check_update(update, "http://e/r")
    except (SyntaxError, ValueError) as exc:
        return exc


def test_nesting_check_counts_what_the_parser_counts():
    def nested_too_deeply(update):
        with pytest.raises(ValueError, match="nested too deeply"):
            _check(update)

    # In a string, a comment or an IRI, brackets are no nesting.
    _check('INSERT DATA { <> <http://e/p> "' + "(" * 1000 + '" }')
    _check('INSERT DATA { <> <http://e/p> """a\\"""" }')
    _check("# " + "{" * 1000 + "\nINSERT DATA { }")
    _check("INSERT DATA { <> <http://e/p> <http://e/a_(b)> }")
    _check('INSERT DATA { <> <http://e/p> "' + "-" * 1000 + '" }')
    # The limit itself is allowed (the WHERE clause's braces are one level).
    _check("INSERT { <> <http://e/n> 1 } WHERE { " + "{ " * (MAX_NESTING - 1) + "}" * MAX_NESTING)
    nested_too_deeply("INSERT { <> <http://e/n> 1 } WHERE { " + "{ " * MAX_NESTING + "}" * (MAX_NESTING + 1))
    # Brackets a lexer could hide in strings and IRI-shaped spans are counted.
    nested_too_deeply('INSERT { <> <http://e/n> 1 } WHERE { ' + ' { ?s ?p "}}}}" . ' * 200 + "}" * 200 + "}")
    nested_too_deeply("INSERT { <> <http://e/n> 1 } WHERE { FILTER(1<" + "(" * 200 + "2>" + ")" * 200 + ") }")
    nested_too_deeply("INSERT { <> <http://e/n> 1 } WHERE { FILTER(" + "! " * 200 + "true) }")
    nested_too_deeply("INSERT DATA { " + "<< " * 200 + "<http://e/a> <http://e/b> <http://e/c>" + " >>" * 200 + " }")
    _check("INSERT { <> <http://e/n> 1 } WHERE { FILTER(?a<<http://e/x>) }")  # a less-than sign and an IRI
    with pytest.raises(SyntaxError, match="not closed"):
        _check('INSERT DATA { <> <http://e/p> """never closed }')


CUBIC = ("INSERT { <> <http://e/n> ?n } WHERE { SELECT (COUNT(*) AS ?n) "
         "WHERE { ?a ?b ?c . ?d ?e ?f . ?g ?h ?i } }")


@pytest.mark.slow
def test_a_long_update_is_stopped_and_others_are_served_meanwhile(serve):
    server = serve("--durability", "nosync", "--patch-timeout", "2")
    triples = " ".join(f"<> <http://e/p{i}> {i} ." for i in range(500))
    assert server.request("PUT", "/big", triples, AS_SOURCE).status == 201
    assert server.request("PUT", "/other", '<> <http://e/p> "1" .', AS_SOURCE).status == 201
    before = own(server, "/big")
    answer = {}
    slow = threading.Thread(target=lambda: answer.setdefault("r", patch(server, "/big", CUBIC)))
    slow.start()
    # While the join runs (it would take seconds), the same worker serves another client.
    served = [server.request("GET", "/other").status for _ in range(5)]
    still_running = slow.is_alive()
    slow.join(60)
    assert served == [200] * 5 and still_running
    r = answer["r"]
    assert r.status == 503 and b"--patch-timeout" in r.body and r.header("Retry-After")
    assert own(server, "/big") == before
    # The helper it had was killed and replaced: the next update is evaluated.
    assert patch(server, "/big", 'INSERT DATA { <> <http://e/q> "after" }').status == 204


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(parts=st.lists(st.sampled_from([
    "{", "}", "(", ")", "[", "]", "!", "-", "<http://e/p>", "<>", '"LOAD <x>"', "'''SERVICE'''",
    '"""a\\""""', "# DROP ALL\n", "?o", "1", " UNION ", " OPTIONAL ", " FILTER", " . ", " ; ", "LOAD ",
    "SERVICE ", "CLEAR ", "DROP ", "CREATE ", "ADD ", "MOVE ", "COPY ", "WITH ", "USING ", "GRAPH ", "<<", ">>",
    "INSERT DATA ", "DELETE DATA ", "DELETE WHERE ", "INSERT ", "DELETE ", "WHERE ", "a ", "\\"]),
    max_size=40), depth=st.integers(0, 400))
def test_fuzzed_updates(server, listener, parts, depth):
    """Random token soups and nestings: a 204 or a one-line 4xx, never a connection or a dead worker."""
    path = "/hostile-fuzz"
    if server.request("HEAD", path).status == 404:
        server.request("PUT", path, '<> <http://e/p> "1" .', AS_SOURCE)
    pids = workers(server)
    text = " ".join(parts).replace("<x>", f"<{listener.url}>")
    update = "INSERT { <> <http://e/n> 1 } WHERE { " + "{ " * depth + text + " }" * depth + " }"
    for body in (text, update):
        r = patch(server, path, body)
        assert r.status in (204, 400, 409), (body[:200], r.status, r.body[:200])
        assert b"\n" not in r.body.strip()
    assert listener.connections == 0
    assert workers(server) == pids


@pytest.mark.slow
def test_an_evaluator_that_crashes_costs_its_request_only(serve):
    """Whatever crashes the evaluator (here a SIGSEGV sent to it mid-join) ends the
    helper, not the worker: that PATCH is a 400 saying so, the next gets a new helper."""
    import os
    import signal
    import time

    server = serve("--durability", "nosync", "--patch-timeout", "60")
    triples = " ".join(f"<> <http://e/p{i}> {i} ." for i in range(500))
    assert server.request("PUT", "/big", triples, AS_SOURCE).status == 201
    pids = workers(server)
    answer = {}
    slow = threading.Thread(target=lambda: answer.setdefault("r", patch(server, "/big", CUBIC)))
    slow.start()
    helper = None
    for _ in range(200):
        helper = next((p for p in psutil.Process(server.proc.pid).children(recursive=True)
                       if "sandbox" in " ".join(p.cmdline())), None)
        if helper is not None and helper.cpu_times().user > 0.2:  # in the join
            break
        time.sleep(0.05)
    assert helper is not None
    os.kill(helper.pid, signal.SIGSEGV)
    slow.join(60)
    r = answer["r"]
    assert r.status == 400 and b"SIGSEGV" in r.body and b"\n" not in r.body.strip()
    assert workers(server) == pids
    assert patch(server, "/big", 'INSERT DATA { <> <http://e/q> "after" }').status == 204


@pytest.mark.slow
def test_a_difference_too_large_is_refused(serve):
    """A cross product of a resource with itself (300 x 300 triples of 1 KB each,
    about 100 MB): refused by the helper, not sent to the worker (which would
    then have to parse and store it)."""
    from lakebench.server.sandbox import MAX_ANSWER

    server = serve("--durability", "nosync", "--patch-timeout", "60")
    triples = " ".join(f'<> <http://e/p{i}> "{i:04d}{"x" * 1000}" .' for i in range(300))
    assert server.request("PUT", "/big", triples, AS_SOURCE).status == 201
    assert 300 * 300 * 1000 > MAX_ANSWER
    r = patch(server, "/big", "INSERT { ?a ?b ?o2 } WHERE { ?a ?b ?o . ?c ?d ?o2 }")
    assert r.status == 400 and b"MiB" in r.body, r.body
    assert patch(server, "/big", 'INSERT DATA { <> <http://e/q> "small" }').status == 204
