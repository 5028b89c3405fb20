from __future__ import annotations

from lakebench.runner import count_containment

import pyoxigraph as ox

from lakebench.systems.oxigraph import OxigraphSystem
from lakebench.dataset import LDP_CONTAINS


def test_oxigraph_system_one_graph_per_child(tmp_path, small_workload):
    system = OxigraphSystem(tmp_path, small_workload)
    system.setup()
    for child in small_workload:
        system.create_child(child)
    assert count_containment(system.retrieve_parent()) == 20
    assert system.triples_total() == 20 * 200 + 20
    child = small_workload.child(9)
    graph = ox.NamedNode(child.uri)
    assert len(list(system.store.quads_for_pattern(None, None, None, graph))) == 200
    parent = ox.NamedNode(small_workload.parent_uri)
    assert ox.Quad(parent, ox.NamedNode(LDP_CONTAINS), graph, parent) in system.store
    system.close()
    # Reopens from disk with everything there.
    store = ox.Store(str(tmp_path / "oxigraph"))
    assert len(store) == 20 * 201
