"""The posc and ospc entries a write transaction stages (``Environment.index_stage``):
sorted once enough are staged and put a share at each following write, all of them
before anything reads or deletes from those indexes and at the commit, and none left
for a batch's commit; so a store holds the very same entries whatever its stage.
"""
from __future__ import annotations

import lmdb
import pytest

from lakebench import _store
from lakebench.dataset import DataSet
from lakebench.store import LmdbStore, check
from lakebench.store.terms import iri

CHILDREN = DataSet(children=40, seed=3)
LIT_P0 = "http://lakebench.example/ns/lit#p0"
EXT_P0 = "http://lakebench.example/ns/ext#p0"


def _entries(path) -> dict[str, list[tuple[bytes, bytes]]]:
    """Every sub-database's entries, read by py-lmdb (not by the core)."""
    env = lmdb.open(str(path), max_dbs=16, readonly=True, lock=False)
    try:
        with env.begin() as txn:
            out = {}
            for name in _store.DB_NAMES:
                db = env.open_db(name.encode(), txn=txn, create=False,
                                 dupsort=name in ("t2i", *_store.INDEX_ORDER, "cs"))
                out[name] = list(txn.cursor(db=db))
            return out
    finally:
        env.close()


def _history(store: LmdbStore) -> list:
    """Writes with reads of posc and ospc, and deletes, between them: what each read saw."""
    seen = []
    for i, child in enumerate(CHILDREN):
        store.ingest(child.ntriples, child.uri)
        if i % 3 == 1:  # by predicate, by object: each needs this write's entries
            seen.append(store.count(p=LIT_P0))
            seen.append(len(store.quads(o=iri("http://external.example/e0"))))
        if i % 7 == 5:  # by subject (spoc): the deleted quads' posc and ospc entries were staged
            seen.append(store.remove(s=CHILDREN.child(i - 1).uri))
            seen.append(store.count(p=EXT_P0))
    store.add([("http://e/s", "http://e/p", "http://e/o", "http://e/g")])
    return seen


@pytest.mark.parametrize("mode", ["log durable", "log nosync", "no log", "pending"])
def test_a_store_holds_the_same_entries_whatever_its_stage(tmp_path, mode):
    durability = "nosync" if mode == "log nosync" else "durable"
    stores = {}
    # A child is 200 quads: 1 and 150 put each write's at once, 450 and 1,000 fill
    # and drain while the batch's stage is open, 4,096 only once it is closed.
    for stage in (0, 1, 150, 450, 1000, 4096):
        path = tmp_path / f"stage{stage}"
        with LmdbStore(path, durability=durability, log=mode != "no log",
                       batch_writes=_store.STAGE_DRAIN_WRITES + 12) as store:
            store.env.index_stage = stage
            if mode == "pending":
                store.begin()
            seen = _history(store)
            if mode == "pending":
                store.commit()
        assert check(path) == [], stage
        stores[stage] = (seen, _entries(path))
    unstaged_seen, unstaged = stores.pop(0)
    assert len(unstaged["posc"]) == len(unstaged["ospc"]) == len(unstaged["spoc"]) > 30 * 200
    assert any(n for n in unstaged_seen)
    for stage, (seen, entries) in stores.items():
        assert seen == unstaged_seen, stage
        assert entries == unstaged, stage


def test_reads_of_posc_and_ospc_put_the_staged_entries_first(tmp_path):
    child = CHILDREN.child(0)
    with LmdbStore(tmp_path / "s", durability="nosync") as store:
        store.env.index_stage = 1000

        def write(txn):
            txn.ingest_ntriples(child.ntriples, iri(child.uri))
            staged = [txn.staged]
            list(txn.quads(iri(child.uri), None, None, None))   # spoc: nothing put
            staged.append(txn.staged)
            staged.append(txn.count(None, iri(LIT_P0), None, None))   # posc
            staged.append(txn.staged)
            txn.add([(iri("http://e/s"), iri("http://e/p"), iri("http://e/o"), iri("http://e/g"))])
            staged.append(txn.staged)
            staged.append(len(list(txn.quads(None, None, iri("http://e/o"), None))))   # ospc
            staged.append(txn.staged)
            return staged

        assert store.write(write) == [200, 200, 2, 0, 1, 1, 0]


def test_a_full_stage_is_put_a_share_at_each_following_write(tmp_path):
    with LmdbStore(tmp_path / "s", durability="nosync") as store:
        store.env.index_stage = 450

        def write(txn):
            counts = []
            for child in CHILDREN:
                txn.ingest_ntriples(child.ntriples, iri(child.uri))
                counts.append(txn.staged)
                if len(counts) == 6:
                    return counts

        # the third fills the stage and puts twice its own 200 of the 600; the fourth
        # stages its 200 and puts the other 200; the sixth fills it again
        assert store.write(write) == [200, 400, 200, 200, 400, 200]
        assert store.count(p=LIT_P0) == 2 * 6


def test_a_batchs_last_writes_drain_the_stage_and_its_commit_finds_none(tmp_path):
    batch = _store.STAGE_DRAIN_WRITES + 4
    with LmdbStore(tmp_path / "s", durability="nosync", batch_writes=batch) as store:
        store.env.index_stage = 4096   # twenty children: never full in the batch's 4 open writes
        seen = []
        for child in CHILDREN:
            store.ingest(child.ntriples, child.uri)
            seen.append(store.write(lambda txn: (txn.staged, txn.stage_closed)))  # (nothing logged)
        commits = store.batch_commits["count"]
    # the state before each write: open for the first 4, closed for the last 32
    assert [closed for _, closed in seen[:batch - 1]] == [False] * 3 + [True] * (batch - 4)
    assert [staged for staged, _ in seen[:4]] == [200, 400, 600, 800]
    assert seen[batch - 2] == (0, True)    # before the write that commits: nothing staged
    assert seen[batch - 1] == (0, False)   # a new batch
    assert commits == 1
    assert check(tmp_path / "s") == []
