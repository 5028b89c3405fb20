"""Terms no quad uses any more are removed at the commit (docs/store.rst,
"Removing unused terms"): a store whose resources are rewritten keeps the
terms it uses, every read and write still finds the live ones, and
``check`` finds nothing wrong, whether the removed ids were filed in
``t2i``, waiting in the writer's table or in a sweep's list.
"""
from __future__ import annotations

import subprocess
import sys

import lmdb
import pytest

from lakebench.store import LmdbStore, check
from lakebench.store.terms import iri, literal

G = iri("http://ex.org/g")
P = iri("http://ex.org/p")
Q = iri("http://ex.org/q")


def _subject(i: int) -> bytes:
    return iri(f"http://ex.org/s{i}")


def _rewrite(store: LmdbStore, subject: bytes, label: str, n: int = 10) -> None:
    store.remove(s=subject)
    store.add([(subject, P, literal(f"{label} {k}"), G) for k in range(n)])


def _clean(path) -> dict:
    problems = check(path)
    assert problems == [], problems
    return problems.summary


def _i2l_entries(path) -> int:
    """Literals stored, read with py-lmdb (the oracle: not through the core)."""
    env = lmdb.open(str(path), readonly=True, lock=False, max_dbs=16, subdir=True)
    try:
        with env.begin() as txn:
            return txn.stat(env.open_db(b"i2l", txn=txn, create=False))["entries"]
    finally:
        env.close()


@pytest.mark.parametrize("filing_lag", [16, 1 << 20], ids=["sweeping", "unfiled"])
def test_rewritten_resources_keep_only_the_terms_they_use(tmp_path, filing_lag):
    path = tmp_path / "s"
    with LmdbStore(path, filing_lag=filing_lag, batch_writes=3) as store:
        for rnd in range(40):
            for i in range(20):
                _rewrite(store, _subject(i), f"round {rnd} of {i}")
        live = {(s, o) for s, _, o, _ in store.quads()}
        assert store.env.terms_removed >= 39 * 200 - 1
    summary = _clean(path)
    # 200 literals, 20 subjects, P and G; nothing of the 39 earlier rounds
    assert summary["terms"] == 222 and _i2l_entries(path) == 200
    with LmdbStore(path, filing_lag=filing_lag) as store:   # a new process: its tables rebuilt
        assert {(s, o) for s, _, o, _ in store.quads()} == live
        assert store.count(o=literal("round 39 of 7 3")) == 1
        assert store.count(o=literal("round 38 of 7 3")) == 0
        # a removed literal written again gets an id of its own, found after a reopen
        store.add([(_subject(0), Q, literal("round 0 of 0 0"), G)])
    with LmdbStore(path) as store:
        assert store.count(s=_subject(0), o=literal("round 0 of 0 0")) == 1
    assert _clean(path)["terms"] == 224   # and Q


def test_a_term_still_named_elsewhere_stays(tmp_path):
    path = tmp_path / "s"
    shared = literal("shared")
    other = iri("http://ex.org/other")
    with LmdbStore(path) as store:
        store.add([(_subject(1), P, shared, G), (_subject(2), P, shared, G),
                   (_subject(1), P, other, G), (other, Q, literal("x"), G)])
        store.remove(s=_subject(1))      # 'shared' is still s2's object, 'other' a subject
        store.remove(s=_subject(2))      # P stays: 'other' has no P, but the subject iri stays
    with LmdbStore(path) as store:
        assert store.count(o=shared) == 0
        assert store.count(s=other, o=literal("x")) == 1
        with store.read() as txn:
            assert txn.term_id(shared) == 0       # removed with its last quad
            assert txn.term_id(other) != 0 and txn.term_id(Q) != 0
    _clean(path)


def test_a_removal_undone_by_an_abort_removes_nothing(tmp_path):
    path = tmp_path / "s"
    with LmdbStore(path, log=False) as store:
        store.add([(_subject(i), P, literal(f"v{i}"), G) for i in range(10)])
        txn = store.env.begin(write=True)
        txn.remove(s=_subject(3))
        txn.abort()
        assert store.count(o=literal("v3")) == 1
        store.add([(_subject(3), Q, literal("v3"), G)])   # the cached id is still the term's
    _clean(path)


def test_removing_a_declared_graph_removes_its_term(tmp_path):
    path = tmp_path / "s"
    g2 = iri("http://ex.org/g2")
    with LmdbStore(path, log=False) as store:
        store.add([(_subject(1), P, literal("a"), G)])
        with store.env.begin(write=True) as txn:
            txn.add_graph(g2)
            txn.add_graph(iri("http://ex.org/last"))   # the highest id is never removed
        with store.env.begin(write=True) as txn:
            txn.remove_graph(g2)
        with store.read() as txn:
            assert txn.term_id(g2) == 0
    _clean(path)


WRITER = """
import sys
from lakebench.store import LmdbStore
from lakebench.store.terms import iri, literal
G, P = iri("http://ex.org/g"), iri("http://ex.org/p")
with LmdbStore(sys.argv[1], log=False) as store:
    store.remove(s=iri("http://ex.org/s1"))
    store.add([(iri("http://ex.org/s9"), P, literal("last"), G)])
"""


def test_another_process_removing_a_cached_term_is_seen(tmp_path):
    """Writers of several processes (``serve --workers N``): a term one of them
    cached may be removed by another; the next write must not reuse its id."""
    path = tmp_path / "s"
    kept = literal("kept in the cache")
    with LmdbStore(path, log=False) as store:
        store.add([(_subject(1), P, kept, G), (_subject(2), P, literal("other"), G)])   # cached here
        subprocess.run([sys.executable, "-c", WRITER, str(path)], check=True)
        with store.read() as txn:
            assert txn.term_id(kept) == 0     # the other process removed it
        store.add([(_subject(3), P, kept, G)])   # must not take the removed id from the cache
        assert store.count(s=_subject(3), o=kept) == 1
    _clean(path)


def test_a_literal_named_as_a_subject_or_a_graph_stays(tmp_path):
    """The store takes a literal in any position (rdflib does); it is in use wherever it is named."""
    path = tmp_path / "s"
    lit = literal("a literal as a subject")
    lit_graph = literal("a literal as a graph")
    with LmdbStore(path, log=False) as store:
        store.add([(lit, P, literal("x"), G), (_subject(1), P, lit, G), (_subject(1), Q, lit_graph, G)])
        with store.env.begin(write=True) as txn:
            txn.add_graph(lit_graph)
            txn.add_graph(iri("http://ex.org/last"))   # the highest id is never removed
        store.remove(s=_subject(1))    # neither literal is an object any more
    with LmdbStore(path) as store:
        assert store.count(s=lit) == 1
        assert lit_graph in store.env.begin().contexts()
    _clean(path)


def test_a_reader_older_than_a_removal_keeps_its_snapshot(tmp_path):
    """A read transaction that began before the commit that removed a term
    still finds it (its snapshot holds it), and finding it fills none of the
    writer's tables with the removed id (a later filing would put it in t2i)."""
    path = tmp_path / "s"
    one = literal("one")
    with LmdbStore(path, batch_writes=1, filing_lag=4) as store:
        store.add([(_subject(1), P, one, G), (_subject(2), P, literal("two"), G)])
        reader = store.read()
        store.remove(s=_subject(1))

        def failing(txn):
            txn.add([(_subject(3), P, literal("three"), G)])
            raise RuntimeError("the operation failed")

        with pytest.raises(RuntimeError):
            store.write(failing)        # the batch is rebuilt: the writer's table dropped
        assert reader.term_id(one) != 0
        assert reader.count(o=one) == 1 and reader.count(s=_subject(1)) == 1
        reader.abort()
        for i in range(6):              # enough new ids for a sweep to file the writer's table
            store.add([(_subject(10 + i), P, literal(f"n{i}"), G)])
        with store.read() as txn:
            assert txn.term_id(one) == 0
    _clean(path)


def test_writes_from_another_thread_leave_the_filing_threads_tables_right(tmp_path):
    """A deferring environment written from its own thread and from another:
    every live term stays found, none gets a second id."""
    from concurrent.futures import ThreadPoolExecutor

    from lakebench._store import Environment

    path = tmp_path / "s"
    path.mkdir()
    env = Environment(str(path), defer_filing=True, filing_lag=16, durability="nosync")
    live: list[bytes] = []

    def step(first: int) -> None:
        with env.begin(write=True) as txn:
            for n in range(first, first + 7):
                live.append(literal(f"{n} " + "y" * 60))
                txn.add([(_subject(n), P, live[-1], G)])
        with env.begin(write=True) as txn:
            assert all(txn.term_id(term) for term in live)

    with ThreadPoolExecutor(1) as other:
        for rnd in range(120):
            if rnd % 3 == 0:
                other.submit(step, rnd * 7).result()
            else:
                step(rnd * 7)
    env.close()
    assert _clean(path)["terms"] == 2 * len(live) + 2   # each literal and its subject, P and G


def test_check_names_a_declared_graph_without_a_term(tmp_path):
    """The checker's side of graph declarations: written with py-lmdb, not the core."""
    path = tmp_path / "s"
    with LmdbStore(path, log=False) as store:
        store.add([(_subject(1), P, literal("a"), G)])
    assert check(path) == []
    env = lmdb.open(str(path), max_dbs=16, subdir=True)
    with env.begin(write=True) as txn:
        txn.put((12345).to_bytes(4, "big"), b"", db=env.open_db(b"graphs", txn=txn))
    env.close()
    assert check(path) == ["graphs declares graph 12345, an id that names no term"]
