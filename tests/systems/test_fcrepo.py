"""The LDP client and the Fedora reference, against a real Fedora 4.7.5."""
from __future__ import annotations

import shutil

import pytest

from lakebench.systems import fcrepo
from lakebench.runner import RunConfig, count_containment, run
from lakebench.systems.base import SystemFailure
from lakebench.systems.ldp import LdpSystem
from lakebench.dataset import DataSet

pytestmark = [
    pytest.mark.fcrepo,
    pytest.mark.skipif(shutil.which("java") is None, reason="needs java to run Fedora"),
]


@pytest.fixture(scope="module")
def fedora(fedora_server):
    return fedora_server()


def test_ldp_system_against_a_running_fedora(fedora, tmp_path):
    workload = DataSet(children=8, seed=5, parent="ldp-test")
    system = LdpSystem(tmp_path, workload, {"system_url": fedora.base_url})
    system.setup()
    for child in workload:
        system.create_child(child)
    retrieval = system.retrieve_parent()
    assert count_containment(retrieval) == 8
    assert retrieval.content_type.startswith("text/turtle")
    assert system.pid() is None and system.disk_path() is None  # not ours to watch
    system.close()
    # A second run on the same parent is refused, not silently mixed in.
    again = LdpSystem(tmp_path, workload, {"system_url": fedora.base_url})
    with pytest.raises(SystemFailure, match="already exists"):
        again.setup()


def test_child_graph_stored_as_sent(fedora, tmp_path):
    import rdflib
    import urllib3
    from rdflib.compare import isomorphic

    workload = DataSet(children=2, seed=9, parent="graph-test")
    system = LdpSystem(tmp_path, workload, {"system_url": fedora.base_url})
    system.setup()
    child = workload.child(1)
    system.create_child(workload.child(0))
    system.create_child(child)
    url = fedora.base_url + child.path
    body = urllib3.request("GET", url, headers={"Accept": "text/turtle",
                                               "Prefer": 'return=representation; omit="http://fedora.info/definitions/v4/repository#ServerManaged"'}).data
    stored = rdflib.Graph().parse(data=body, format="turtle", publicID=url)
    sent = rdflib.Graph().parse(data=child.turtle, format="turtle", publicID=url)
    ours = rdflib.Graph()
    for s, p, o in stored:
        if str(p).startswith("http://lakebench.example/"):
            # Fedora 4 answers RDF 1.0 style: plain strings typed xsd:string,
            # the same term in RDF 1.1.
            if isinstance(o, rdflib.Literal) and o.datatype == rdflib.XSD.string:
                o = rdflib.Literal(str(o))
            ours.add((s, p, o))
    assert len(ours) == 200
    assert isomorphic(ours, sent)


def test_fcrepo_system_in_the_runner(tmp_path):
    config = RunConfig(systems=["fcrepo"], children=15, out=tmp_path, tail_seconds=1,
                       interval=0.25, progress=False)
    doc = run(config, log=lambda *_: None)
    entry = doc["systems"][0]
    assert entry["status"] == "ok", entry["error"]
    assert entry["parent"]["containment_triples"] == 15
    assert entry["transport"] == "http"
    assert entry["peak_rss_bytes"] > 100_000_000  # the JVM, not the client
    assert entry["disk_bytes"] > 0
    assert entry["cpu_seconds"] > 0
    assert doc["reference"] == "fcrepo"
    assert not fcrepo.status(tmp_path / "data" / "fcrepo-0" / "fcrepo")  # stopped afterwards
