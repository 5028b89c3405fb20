from __future__ import annotations

from lakebench.runner import count_containment

import rdflib

from lakebench.systems.memory import MemorySystem


def test_memory_system_stores_children_and_membership(tmp_path, small_workload):
    system = MemorySystem(tmp_path, small_workload)
    system.setup()
    for child in small_workload:
        system.create_child(child)
    retrieval = system.retrieve_parent()
    assert count_containment(retrieval) == 20
    assert system.triples_total() == 20 * 200 + 20
    assert system.disk_path() is None
    child = small_workload.child(4)
    stored = system.quads.graph(rdflib.URIRef(child.uri))
    expected = rdflib.Graph().parse(data=child.turtle, format="turtle", publicID=child.uri)
    assert set(stored) == set(expected)
    system.close()
