"""t2i's young level (``t2y0`` and ``t2y1``, docs/store.rst, "Filing term ids"):
the writer's sweeps file new ids into the current young tree while a merge pass
copies the other into t2i hash range by hash range and empties it at its end;
then the two swap.  Every filed id is in one tree (in t2i too once a pass copied
it), every read finds it, no term gets two ids, and ``check`` tells a store that
breaks the rule.  The oracle reads the trees with py-lmdb.
"""
from __future__ import annotations

import struct

import lmdb
import pytest

from lakebench import _store
from lakebench.store import LmdbStore, check
from lakebench.store.terms import iri, literal

G = iri("http://ex.org/g")
P = iri("http://ex.org/p")
YOUNG = ("t2y0", "t2y1")


def _long(i: int) -> bytes:   # longer than the cache of terms keeps: lookups go to the trees
    return literal(f"value {i} " + "x" * 60)


def _quads(n: int, start: int = 0) -> list[tuple]:
    return [(iri(f"http://ex.org/s{i}"), P, _long(i), G) for i in range(start, start + n)]


def _mark(value: bytes | None) -> tuple[int, int, int, int]:
    """meta's terms_merging: (current young tree, the pass's first id (0: none), its length, its position)."""
    return (0, 0, 0, 0) if value is None else struct.unpack(">IIIQ", value)


def _levels(path) -> tuple[set, dict[str, set], tuple[int, int, int, int]]:
    """t2i's (hash, id) pairs, each young tree's, and meta's terms_merging, read by py-lmdb."""
    env = lmdb.open(str(path), max_dbs=16, readonly=True, lock=False)
    try:
        with env.begin() as txn:
            t2i_db = env.open_db(b"t2i", txn=txn, create=False, dupsort=True, dupfixed=True)
            t2i = {(struct.unpack(">Q", k)[0], struct.unpack(">I", v)[0]) for k, v in txn.cursor(db=t2i_db)}
            young = {}
            for name in YOUNG:
                db = env.open_db(name.encode(), txn=txn, create=False)
                entries = list(txn.cursor(db=db))
                assert all(len(k) == 12 and v == b"" for k, v in entries)
                young[name] = {struct.unpack(">QI", k) for k, _ in entries}
            meta = env.open_db(b"meta", txn=txn, create=False)
            return t2i, young, _mark(txn.get(b"terms_merging", db=meta))
    finally:
        env.close()


def _assert_levels_agree(t2i: set, young: dict[str, set], mark: tuple[int, int, int, int]) -> None:
    """The rule the trees keep between writes: the young trees share no id; an
    id in t2i and a young tree is one the pass under way copied (the tree it
    copies, below its position), and every id there below it is copied; with
    no pass under way, the tree the sweeps do not file into is empty."""
    cur, start, _, pos = mark
    current, other = young[YOUNG[cur]], young[YOUNG[1 - cur]]
    assert not current & other and not current & t2i
    if start == 0:
        assert not other
    else:
        assert other & t2i == {e for e in other if e[0] < pos}


def _ingest(env, start: int, stop: int, step: int = 20, marks: list | None = None) -> None:
    """Quads ``start`` to ``stop``, ``step`` a write, each write's share of the
    sweep and the merge taken; ``marks``: each write's terms_merging."""
    for at in range(start, stop, step):
        with env.begin(write=True) as w:
            w.add(_quads(step, at))
            w.file_due_terms()
        if marks is not None:
            with env.begin() as now:
                marks.append(_mark(now.get_meta("terms_merging")))


def test_the_sweeps_file_into_a_young_tree_and_the_passes_copy_it_into_t2i_and_empty_it(tmp_path):
    env = _store.Environment(str(tmp_path), defer_filing=True, filing_lag=400, filing_max=800,
                             durability="nosync", young_level=True)
    marks: list = []
    try:
        with env.begin(write=True) as w:
            w.add(_quads(200))   # 400 ids: the first generation is due
        _ingest(env, 200, 4000, marks=marks)
        with env.begin() as txn:
            ids = {i: txn.term_id(_long(i)) for i in range(4000)}
            terms = txn.term_count()
        # passes began, went on a slice at a time, ended, and the trees swapped each time
        passes = [m for m in marks if m[1]]
        assert len(passes) > 20 and any(0 < pos < 1 << 63 for *_, pos in passes)
        assert len({start for _, start, _, _ in passes}) > 2
        assert {cur for cur, *_ in marks} == {0, 1}
        t2i, young, mark = _levels(tmp_path)
        _assert_levels_agree(t2i, young, mark)
        filed = t2i | young["t2y0"] | young["t2y1"]
        # the young level is a small part: the passes copied most of what was filed
        assert t2i and len(filed - t2i) < len(t2i) / 2
        # every term read back under its id, and the same quads again make no new term
        with env.begin(write=True) as w:
            assert w.add(_quads(4000)) == 0
        with env.begin() as txn:
            assert {i: txn.term_id(_long(i)) for i in range(4000)} == ids and txn.term_count() == terms
            assert 0 not in ids.values()
    finally:
        env.close()
    problems = check(tmp_path)
    assert list(problems) == []
    assert problems.summary["hash_entries"] == len(t2i) + len(young["t2y0"]) + len(young["t2y1"])


def test_between_every_two_writes_the_trees_keep_the_rule(tmp_path):
    env = _store.Environment(str(tmp_path), defer_filing=True, filing_lag=400, filing_max=800,
                             durability="nosync", young_level=True)
    seen = set()
    try:
        with env.begin(write=True) as w:
            w.add(_quads(200))
        for at in range(200, 2400, 40):
            if at > 200:
                _ingest(env, at - 40, at)
            t2i, young, mark = _levels(tmp_path)
            _assert_levels_agree(t2i, young, mark)
            seen.add((mark[0], mark[1] != 0, bool(young[YOUNG[1 - mark[0]]] & t2i)))
    finally:
        env.close()
    # it saw no pass (before the first sweep) and passes under way with copies made, on either tree
    assert {(0, False, False), (0, True, True), (1, True, True)} <= seen


def test_a_merge_pass_cut_by_a_reopen_goes_on_from_its_mark(tmp_path):
    path = tmp_path / "s"
    with LmdbStore(path, durability="nosync", filing_lag=400, filing_max=800, young_level=True,
                   batch_writes=4) as store:
        store.add(_quads(200))
        at = 200
        while not (_mark_now(store)[1] and _mark_now(store)[3]):   # until a pass is under way, committed
            store.add(_quads(20, at))
            at += 20
            assert at < 20000
    t2i, young, mark = _levels(path)
    _assert_levels_agree(t2i, young, mark)
    assert list(check(path)) == []   # mid-pass: the trees as the mark says
    filed = t2i | young["t2y0"] | young["t2y1"]
    with LmdbStore(path, durability="nosync", filing_lag=400, filing_max=800, young_level=True,
                   batch_writes=1) as store:
        assert _mark_now(store) == mark
        store.add(_quads(20, at))   # its commit takes the pass's next share: from the mark on
        cur, start, length, pos = _mark_now(store)
        assert (cur, start, length) == mark[:3] and pos >= mark[3] or start == 0 or start > mark[1]
        for start in range(at + 20, at + 4000, 20):
            store.add(_quads(20, start))
        with store.read() as txn:
            assert all(txn.term_id(_long(i)) for i in range(0, at + 4000, 97))
    later_t2i, later_young, later_mark = _levels(path)
    _assert_levels_agree(later_t2i, later_young, later_mark)
    assert filed <= later_t2i | later_young["t2y0"] | later_young["t2y1"]   # nothing filed was lost
    assert len(later_t2i) > len(t2i)
    assert list(check(path)) == []


def _mark_now(store):
    with store.read() as txn:
        return _mark(txn.get_meta("terms_merging"))


def test_without_the_young_level_the_sweeps_file_into_t2i(tmp_path):
    with LmdbStore(tmp_path / "s", durability="nosync", filing_lag=400, filing_max=800,
                   young_level=False) as store:
        for start in range(0, 3000, 20):
            store.add(_quads(20, start))
    t2i, young, mark = _levels(tmp_path / "s")
    assert t2i and not young["t2y0"] and not young["t2y1"] and mark == (0, 0, 0, 0)
    assert list(check(tmp_path / "s")) == []


def test_terms_removed_leave_every_tree(tmp_path):
    path = tmp_path / "s"
    with LmdbStore(path, durability="nosync", filing_lag=400, filing_max=800, young_level=True,
                   batch_writes=4) as store:
        at = 0
        while not (_mark_now(store)[1] and _mark_now(store)[3]):   # a pass under way: some ids in two trees
            store.add(_quads(20, at))
            at += 20
            assert at < 20000
        t2i, young, mark = _levels(path)
        copied = t2i & young[YOUNG[1 - mark[0]]]
        assert copied and young[YOUNG[mark[0]]]
        with store.read() as txn:   # each subject removed and its literal: only theirs
            gone = {txn.term_id(term) for i in range(0, at, 3) for term in (_long(i), iri(f"http://ex.org/s{i}"))}
        for i in range(0, at, 3):   # a third of the subjects go, and their literals with them
            store.remove(iri(f"http://ex.org/s{i}"), None, None, None)
        with store.read() as txn:
            assert txn.term_id(_long(3)) == 0 and txn.term_id(_long(4)) != 0
    t2i, young, mark = _levels(path)
    left = {tid for _, tid in t2i | young["t2y0"] | young["t2y1"]}
    assert left and not left & gone
    assert {tid for _, tid in copied} - gone <= left
    assert list(check(path)) == []


def _store_mid_pass(tmp_path):
    """A store whose merge pass is under way and has copied some ids."""
    path = tmp_path / "s"
    with LmdbStore(path, durability="nosync", filing_lag=400, filing_max=800, young_level=True,
                   batch_writes=4) as store:
        at = 0
        while True:
            store.add(_quads(20, at))
            at += 20
            assert at < 20000
            t2i, young, mark = _levels(path)
            other = young[YOUNG[1 - mark[0]]]
            if mark[1] and t2i & other and t2i - other and young[YOUNG[mark[0]]]:
                break
    assert list(check(path)) == []
    return path, t2i, young, mark


def _damage(path, change) -> list[str]:
    env = lmdb.open(str(path), max_dbs=16)
    dbs = {"t2i": env.open_db(b"t2i", dupsort=True, dupfixed=True, create=False)}
    dbs.update({name: env.open_db(name.encode(), create=False) for name in YOUNG})
    with env.begin(write=True) as txn:
        change(txn, dbs)
    env.close()
    return list(check(path))


def test_check_finds_an_id_filed_twice(tmp_path):
    path, t2i, young, mark = _store_mid_pass(tmp_path)
    h, tid = min(t2i - young[YOUNG[1 - mark[0]]])
    current = YOUNG[mark[0]]

    def copy_into_the_current_tree(txn, dbs):
        txn.put(struct.pack(">QI", h, tid), b"", db=dbs[current])

    problems = _damage(path, copy_into_the_current_tree)
    assert f"term {tid}: filed twice, in t2i and {current}" in problems
    assert any(p.startswith("t2i and its young level hold") for p in problems)


def test_check_finds_an_id_the_pass_passed_but_did_not_copy(tmp_path):
    path, t2i, young, mark = _store_mid_pass(tmp_path)
    other = YOUNG[1 - mark[0]]
    h, tid = min(t2i & young[other])

    def uncopy(txn, dbs):
        txn.delete(struct.pack(">Q", h), struct.pack(">I", tid), db=dbs["t2i"])

    problems = _damage(path, uncopy)
    assert problems == [f"term {tid}: in {other} below the merge pass's position, but not copied into t2i"]


def test_check_finds_a_young_entry_of_no_term_and_one_under_another_hash(tmp_path):
    path, _, young, mark = _store_mid_pass(tmp_path)
    current = YOUNG[mark[0]]
    # an id moved under a lower hash: one a sweep under way filed (by hash, below its position) stays filed there
    (h2, _), (h, tid) = sorted(young[current])[:2]
    assert h2 < h

    def damage(txn, dbs):
        txn.put(struct.pack(">QI", h, 0x7FFFFFF0), b"", db=dbs[current])   # no such term
        txn.delete(struct.pack(">QI", h, tid), db=dbs[current])
        txn.put(struct.pack(">QI", h2, tid), b"", db=dbs[current])   # under a hash not its own

    problems = _damage(path, damage)
    assert f"{current}: an entry points to term id {0x7FFFFFF0}, which does not exist" in problems
    assert f"{current}: term {tid} is filed under a hash that is not its own" in problems
    assert f"term {tid}: missing from the hash index" in problems


def test_check_finds_a_young_entry_of_the_wrong_size(tmp_path):
    path, _, young, mark = _store_mid_pass(tmp_path)
    current = YOUNG[mark[0]]
    problems = _damage(path, lambda txn, dbs: txn.put(b"\1" * 8, struct.pack(">I", 5), db=dbs[current]))
    assert f"{current}: an entry has the wrong key or value size" in problems


@pytest.mark.parametrize("value", [b"\0\0\0\1", struct.pack(">IIIQ", 2, 0, 0, 0), struct.pack(">IIIQ", 0, 5, 0, 0),
                                   struct.pack(">IIIQ", 0, 0, 0, 7), struct.pack(">IIIQ", 1, 1 << 30, 10, 0)])
def test_check_finds_the_merge_mark_damaged(tmp_path, value):
    path, _, _, _ = _store_mid_pass(tmp_path)
    env = lmdb.open(str(path), max_dbs=16)
    meta = env.open_db(b"meta", create=False)
    with env.begin(write=True) as txn:
        txn.put(b"terms_merging", value, db=meta)
    env.close()
    assert any(p.startswith("meta: terms_merging is damaged") for p in check(path))


def test_check_finds_ids_left_in_the_young_tree_no_pass_copies(tmp_path):
    path = tmp_path / "s"
    with LmdbStore(path, durability="nosync", filing_lag=400, filing_max=800, young_level=False) as store:
        for start in range(0, 3000, 20):
            store.add(_quads(20, start))
    t2i, _, mark = _levels(path)
    assert mark == (0, 0, 0, 0)
    h, tid = min(t2i)
    problems = _damage(path, lambda txn, dbs: txn.put(struct.pack(">QI", h, tid), b"", db=dbs["t2y1"]))
    assert "t2y1: holds ids (1) though no merge pass copies it and the sweeps file into the other" in problems
    assert f"term {tid}: filed twice, in t2i and t2y1" in problems
