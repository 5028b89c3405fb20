from __future__ import annotations

import pytest

from lakebench.runner import count_containment
from lakebench.store import LmdbStore, check
from lakebench.systems.lmdb import LmdbNosyncSystem, LmdbSystem
from lakebench.dataset import LDP_CONTAINS


@pytest.mark.parametrize("cls, durability", [(LmdbSystem, "durable"), (LmdbNosyncSystem, "nosync")])
def test_lmdb_system_one_graph_per_child(tmp_path, small_workload, cls, durability):
    system = cls(tmp_path, small_workload)
    assert system.durability == durability
    system.setup()
    assert system.store.durability == durability
    for child in small_workload:
        system.create_child(child)
    retrieval = system.retrieve_parent()
    assert retrieval.parent_uri == small_workload.parent_uri
    assert count_containment(retrieval) == 20
    assert system.triples_total() == 20 * 200 + 20
    assert system.disk_path() == tmp_path
    system.close()
    assert check(tmp_path) == []
    with LmdbStore(tmp_path, readonly=True) as store:  # reopens from disk
        child = small_workload.child(9)
        assert store.count(graph=child.uri) == 200
        parent = small_workload.parent_uri
        assert store.count(parent, LDP_CONTAINS, child.uri, parent) == 1
