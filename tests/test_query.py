"""The ``query`` workload: the same answers from every system with SPARQL, and the ones the data set implies."""
from __future__ import annotations

import copy

import pytest

from lakebench import results
from lakebench.cli import main
from lakebench.dataset import DataSet
from lakebench.workloads.query import disagreements, queries

SPARQL_SYSTEMS = ["lmdb", "oxigraph", "memory"]
CHILDREN = 20


@pytest.fixture(scope="module")
def document(tmp_path_factory):
    out = tmp_path_factory.mktemp("query")
    rc = main(["run", "--workload", "query", "--systems", ",".join([*SPARQL_SYSTEMS, "lmdb-http"]),
               "--children", str(CHILDREN), "--query-repeats", "2", "--out", str(out),
               "--tail-seconds", "0", "--quiet"])
    assert rc == 0
    return results.load(out)


def _entry(document, name):
    return next(s for s in document["systems"] if s["name"] == name)


@pytest.mark.parametrize("name", SPARQL_SYSTEMS)
def test_expected_answers(document, name):
    entry = _entry(document, name)
    assert entry["status"] == "ok", entry.get("error")
    found = entry["queries"]
    assert found["triples"]["answer"] == CHILDREN * 201  # 200 per child and its containment triple
    assert found["children"]["answer"] == CHILDREN
    assert found["lookup"]["rows"] == 1
    assert found["join"]["rows"] == CHILDREN - 1
    assert all(q["answer"] == q["expected"] for q in found.values())
    assert entry["held"] == entry["sent"]
    for name in queries(DataSet(children=CHILDREN)):
        assert entry["operations"][f"query {name}"]["count"] == 2
    assert entry["per_resource_ms"]["mean"] > 0  # the lookup's times


def test_every_system_gives_the_same_rows(document):
    digests = {name: {q: v["digest"] for q, v in _entry(document, name)["queries"].items()}
               for name in SPARQL_SYSTEMS}
    assert digests["lmdb"] == digests["oxigraph"] == digests["memory"]
    assert disagreements(document) == {}


def test_a_wrong_answer_is_named(document):
    changed = copy.deepcopy(document)
    entry = _entry(changed, "memory")
    entry["queries"]["children"].update(answer=CHILDREN - 1, digest="0" * 16)
    assert disagreements(changed) == {"children": ["memory"]}


def test_http_systems_are_not_applicable(document):
    entry = _entry(document, "lmdb-http")
    assert entry["status"] == "skipped"
    assert entry["skip_reason"].startswith("not applicable")
