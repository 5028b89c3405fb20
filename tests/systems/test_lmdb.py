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


def test_the_parent_is_retrieved_and_counted_without_a_joined_copy(tmp_path):
    """In process, the harness's copy of the parent counts in the system's memory: the representation
    is kept in the chunks the store streamed and parsed from them, never joined into a second copy."""
    import tracemalloc

    from lakebench.dataset import DataSet
    from lakebench.store.terms import iri

    dataset = DataSet(children=1, seed=7)
    system = LmdbNosyncSystem(tmp_path, dataset)
    system.setup()
    parent, contains = iri(dataset.parent_uri), iri(LDP_CONTAINS)
    children = 30_000
    system.store.write(lambda txn: txn.add([(parent, contains, iri(f"{dataset.parent_uri}/c{n}"), parent)
                                            for n in range(children)]))
    tracemalloc.start()
    try:
        retrieval = system.retrieve_parent()
        assert count_containment(retrieval) == children
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        system.close()
    assert retrieval.size > 1 << 20
    # Joined, the peak would be twice the representation; kept in chunks, once and a little.
    assert peak < 1.4 * retrieval.size, (peak, retrieval.size)
    assert not isinstance(retrieval.body, bytes) and len(retrieval.body) > 10  # chunks, as streamed
