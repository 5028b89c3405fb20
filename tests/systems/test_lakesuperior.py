"""The lakesuperior system: the workload as LAKEsuperior accepts it, driven by both drivers."""
from __future__ import annotations

import psutil
import pytest

from lakebench.systems import lakesuperior
from lakebench.systems.base import SystemFailure
from lakebench.systems.lakesuperior.system import AbsoluteIriChild, LakesuperiorSystem, absolute_iris
from lakebench.dataset import DataSet

# -- the Turtle it is sent (no server) -------------------------------------------


def test_absolute_iris_resolves_relative_references_only():
    turtle = (b'@prefix int: <http://lakebench.example/ns/int#> .\n<>\n'
              b'    int:p0 <../parent> ;\n    int:p1 <../parent/c00000003> ;\n'
              b'    <http://x/p> "a <../parent> \\" <c> in a string" ;\n'
              b"    <http://x/q> '''long <x>\n''' ;\n"
              b'    <http://x/r> <#frag> . # a comment <../not>\n')
    out = absolute_iris(turtle, "http://127.0.0.1:8000/ldp/parent/c00000004")
    assert b"int:p0 <http://127.0.0.1:8000/ldp/parent> ;" in out
    assert b"int:p1 <http://127.0.0.1:8000/ldp/parent/c00000003> ;" in out
    assert b'"a <../parent> \\" <c> in a string"' in out  # strings untouched
    assert b"'''long <x>\n'''" in out
    assert b"<http://127.0.0.1:8000/ldp/parent/c00000004#frag>" in out
    assert b"# a comment <../not>" in out
    assert out.startswith(b"@prefix int: <http://lakebench.example/ns/int#> .\n<>\n")


def test_the_child_sent_holds_the_same_triples():
    import pyoxigraph as ox

    workload = DataSet(children=8, seed=4)
    base = "http://127.0.0.1:9/ldp/"
    for index in (0, 7):
        child = workload.child(index)
        url = base + child.path
        wrapped = AbsoluteIriChild(child, base)
        assert wrapped.path == child.path and wrapped.index == index
        assert b"<../" not in wrapped.turtle
        sent = set(ox.parse(wrapped.turtle, format=ox.RdfFormat.TURTLE, base_iri=url))
        original = set(ox.parse(child.turtle, format=ox.RdfFormat.TURTLE, base_iri=url))
        assert len(sent) == 200 and sent == original


# -- against a real LAKEsuperior -----------------------------------------------

pytestmark_real = pytest.mark.lakesuperior


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with lakesuperior.start(data_dir=tmp_path_factory.mktemp("lakesuperior")) as running:
        yield running


@pytestmark_real
def test_child_graph_stored_as_sent(server, tmp_path):
    import pyoxigraph as ox
    import urllib3

    workload = DataSet(children=6, seed=9, parent="graph-test")
    system = LakesuperiorSystem(tmp_path, workload, {"system_url": server.base_url})
    system.setup()
    for child in system.dataset:
        system.create_child(child)
    for index in (0, 5):  # the first links only to the parent, the last to 4 siblings
        child = system.dataset.child(index)
        url = server.base_url + child.path
        body = urllib3.request("GET", url, headers={"Accept": "text/turtle"}).data
        stored = {t for t in ox.parse(body, format=ox.RdfFormat.TURTLE, base_iri=url)
                  if t.predicate.value.startswith("http://lakebench.example/")}
        sent = set(ox.parse(child.turtle, format=ox.RdfFormat.TURTLE, base_iri=url))
        assert len(sent) == 200 and stored == sent
    system.check_stored()
    assert system.triples_total() > 6 * 200  # and LAKEsuperior's own triples
    system.close()


def test_a_budget_stopped_ingest_is_checked_on_the_children_created(server, tmp_path):
    workload = DataSet(children=100, seed=9, parent="budget-test")
    system = LakesuperiorSystem(tmp_path, workload, {"system_url": server.base_url})
    system.setup()
    for child in list(system.dataset)[:5]:  # the runner stopped after 5 of 100
        system.create_child(child)
    assert system.triples_total(children=5) > 5 * 200
    with pytest.raises(SystemFailure, match="HTTP 404"):  # child 50 was never created
        system.check_stored()
    system.close()


@pytestmark_real
def test_a_dropped_triple_fails_the_check(server, tmp_path):
    """Lenient referential integrity: a link to a missing resource is dropped without a word."""
    workload = DataSet(children=1, seed=2, parent="lenient-test")
    system = LakesuperiorSystem(tmp_path, workload, {"system_url": server.base_url})
    system.setup()
    child = system.dataset.child(0)
    missing = f"<{server.base_url}lenient-test/nothing-here>".encode()
    body = child.turtle.replace(f"<{server.base_url}lenient-test>".encode(), missing, 1)
    response = system._request("PUT", server.base_url + child.path, body=body,
                               headers={"Content-Type": "text/turtle"})
    assert response.status == 201
    with pytest.raises(SystemFailure, match="holds 199 of the 200 triples sent"):
        system.check_stored()
    system.close()


@pytestmark_real
@pytest.mark.parametrize("driver", ["client", pytest.param("locust", marks=pytest.mark.slow)])
def test_lakesuperior_system_in_the_runner(tmp_path, driver):
    from lakebench.runner import RunConfig, run

    config = RunConfig(systems=["lakesuperior"], children=20, out=tmp_path, tail_seconds=0.5,
                       interval=0.25, progress=False, driver=driver, users=2 if driver == "locust" else 1)
    doc = run(config, log=lambda *_: None)
    entry = doc["systems"][0]
    assert entry["status"] == "ok", entry["error"]
    assert entry["durability"] == "durable" and entry["transport"] == "http"
    assert entry["parent"]["containment_triples"] == 20
    assert entry["triples_total"] >= 20 * 200
    assert entry["peak_rss_bytes"] > 50_000_000  # gunicorn and its worker, not the client
    assert entry["disk_bytes"] > 0 and entry["cpu_seconds"] > 0
    # Stopped afterwards: no process of the run's data directory is left.
    left = [p for p in psutil.process_iter(["cmdline"]) if str(tmp_path) in " ".join(p.info["cmdline"] or [])]
    assert left == []


@pytestmark_real
def test_lakebench_run_lakesuperior_from_the_command_line(tmp_path, capsys):
    import json

    from lakebench.cli import main

    out = tmp_path / "out"
    code = main(["run", "--systems", "lakesuperior", "--children", "20", "--out", str(out), "--quiet",
                 "--tail-seconds", "0.5", "--interval", "0.25"])
    assert code == 0, capsys.readouterr().err
    entry = json.loads((out / "results.json").read_text())["systems"][0]
    assert (entry["name"], entry["status"], entry["children"]) == ("lakesuperior", "ok", 20)
    assert "lakesuperior  durable" in capsys.readouterr().out


@pytestmark_real
def test_an_update_misreads_an_escaped_backslash(server, tmp_path):
    """Why the versions workload finds some of LAKEsuperior's versions not as sent (docs/performance.rst):
    its SPARQL Update parser (rdflib 5.0.0's ``decodeUnicodeEscape``) decodes an escaped backslash
    followed by ``b``, ``f``, ``n``, ``r`` or ``t`` as that escape.  The update's ``DELETE DATA``
    of such a literal then matches nothing and its ``INSERT DATA`` stores another literal, while a literal
    without a backslash is replaced as sent by the same request.  The update sent is right: a correct
    SPARQL implementation replaces both."""
    import pyoxigraph as ox
    import urllib3

    from lakebench.systems.ldp import sparql_update

    workload = DataSet(children=1, seed=3, parent="escape-test")
    system = LakesuperiorSystem(tmp_path, workload, {"system_url": server.base_url})
    system.setup()
    url = server.base_url + "escape-test/x"
    p = "http://lakebench.example/p"
    body = f'<> <{p}> "a\\\\bc", "plain" .'.encode()  # the literals a\bc (a backslash, then b) and plain
    assert urllib3.request("PUT", url, body=body, headers={"Content-Type": "text/turtle"}).status == 201
    replacements = [(p, "a\\bc", "x\\fy"), (p, "plain", "new")]
    correct = ox.Store()  # the same update on a correct SPARQL implementation
    correct.load(body, format=ox.RdfFormat.TURTLE, base_iri=url)
    correct.update(sparql_update(replacements).decode(), base_iri=url)
    assert {q.object.value for q in correct} == {"x\\fy", "new"}
    system.replace_literals("escape-test/x", replacements)
    held = urllib3.request("GET", url, headers={"Accept": "text/turtle"}).data
    literals = {t.object.value for t in ox.parse(held, format=ox.RdfFormat.TURTLE, base_iri=url)
                if t.predicate.value == p}
    assert literals == {"a\\bc", "x\\\fy", "new"}
    system.close()
