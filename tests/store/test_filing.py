"""Term ids filed late in the hash index ``t2i`` (docs/store.rst, "Filing term ids").

The log's owner leaves new ids out of ``t2i`` until a commit finds enough of
them; every read must still find them, no term may get two ids, and
``check`` must tell a store that breaks the rule.
"""
from __future__ import annotations

import random
import struct

import lmdb
import pytest

from lakebench import _store
from lakebench._codec import expand_stored
from lakebench._tables import gather_by_hash, sort_by_hash
from lakebench.store import LmdbStore, StoreError, check
from lakebench.store.terms import DEFAULT_GRAPH, iri, literal

G = iri("http://ex.org/g")
P = iri("http://ex.org/p")


def _quads(n: int, start: int = 0) -> list[tuple]:
    return [(iri(f"http://ex.org/s{i}"), P, literal(f"value {i}"), G) for i in range(start, start + n)]


def _summary(path) -> dict:
    problems = check(path)
    assert problems == []
    return problems.summary


def _filed(summary: dict) -> int:
    """The filed ids check counted: its hash entries, but one for each id a
    merge pass of t2i's young level copied (in two trees)."""
    return summary["hash_entries"] - summary["hash_copies"]


def test_unfiled_ids_are_found_after_a_reopen_and_never_given_twice(tmp_path):
    path = tmp_path / "s"
    with LmdbStore(path) as store:
        store.add(_quads(50))
        with store.read() as txn:
            ids = {txn.term_id(literal(f"value {i}")) for i in range(50)}
    summary = _summary(path)
    assert summary["hash_entries"] == 0 and summary["unfiled_terms"] == summary["terms"]
    with LmdbStore(path) as store:  # a new process table, rebuilt from i2t
        assert store.count(o=literal("value 7")) == 1
        with store.read() as txn:
            assert {txn.term_id(literal(f"value {i}")) for i in range(50)} == ids
            terms = txn.term_count()
        assert store.add(_quads(50)) == 0           # the same quads: nothing new
        with store.read() as txn:
            assert txn.term_count() == terms        # and no second id for any term
    with LmdbStore(path, readonly=True) as store:   # a reader builds its own table
        assert store.count(s=iri("http://ex.org/s3"), o=literal("value 3")) == 1
        assert store.count(o=literal("no such value")) == 0
    assert _summary(path)["terms"] == terms


def test_a_commit_files_the_ids_once_they_are_enough(tmp_path):
    path = tmp_path / "s"
    with LmdbStore(path, filing_lag=64, batch_writes=4) as store:
        for i in range(40):
            store.add(_quads(10, start=10 * i))
            with store.read() as txn:
                unfiled, terms = txn.unfiled_terms(), txn.term_count()
            # a sweep starts at the commit that finds the unfiled ids due (64, or a
            # quarter of the filed ones), and ends at the one that finds as many
            # more; a batch is 80 ids, so each may come up to a batch late
            assert unfiled < 2 * (max(64, (terms - unfiled) // 4) + 80)
    summary = _summary(path)
    assert _filed(summary) > 300 and _filed(summary) + summary["unfiled_terms"] == summary["terms"]
    with LmdbStore(path) as store:
        assert store.count(o=literal("value 399")) == 1 and store.count(o=literal("value 0")) == 1


def test_the_writers_table_finds_every_unfiled_id_after_sweeps_end(tmp_path):
    """Each sweep's end drops the filed ids from the writer's table in place;
    the ids left must all still be found there.  The literals are too long
    for the process cache, so each lookup goes to that table or t2i."""
    def quads(k):
        return [(iri(f"http://ex.org/s{i}"), P, literal(f"a literal too long to be cached, number {i:08d}"), G)
                for i in range(10 * k, 10 * k + 10)]

    with LmdbStore(tmp_path / "s", filing_lag=64, batch_writes=4) as store:
        for k in range(60):
            store.add(quads(k))
            with store.read() as txn:
                terms = txn.term_count()
            assert store.add([q for j in range(k + 1) for q in quads(j)]) == 0
            with store.read() as txn:
                assert txn.term_count() == terms, f"a term got a second id after write {k}"


def test_the_bloom_filter_grows_and_keeps_finding_every_filed_term(tmp_path):
    """The writer's Bloom filter of t2i starts for 65,536 hashes; filing
    more builds it again, larger, and no filed term may ever be "surely not
    filed".  The literals are too long for the process cache, so each
    lookup asks the filter."""
    def quads(k):
        return [(iri(f"http://ex.org/s{i}"), P, literal(f"a literal too long to be cached, number {i:08d}"), G)
                for i in range(2000 * k, 2000 * k + 2000)]

    with LmdbStore(tmp_path / "s", filing_lag=4096, batch_writes=2) as store:
        written = 0
        while True:                               # until enough are filed (by sweeps) for two rebuilds
            store.add(quads(written))
            written += 1
            with store.read() as txn:
                terms, unfiled = txn.term_count(), txn.unfiled_terms()
            if terms - unfiled > 65536 + 131072:
                break
            assert written < 200
        assert sum(store.add(quads(k)) for k in range(written)) == 0
        with store.read() as txn:
            assert txn.term_count() == terms      # every term found: none got a second id


@pytest.mark.parametrize("n", [100, 5000, 40000])
def test_a_sweeps_sort_orders_by_hash_then_id_as_python_does(n):
    """A sweep files (hash, id) pairs in this order.  Besides uniform hashes,
    a third share their top 16 bits (one crowded radix bucket: the second
    counting pass), some their top 24 (a sub-bucket of more than 32: qsort),
    and some hashes repeat with other ids.  100 pairs take the path of
    small lists (qsort alone); 5,000 and 40,000 the radix sort."""
    rng = random.Random(n)
    pairs = [(rng.getrandbits(64), rng.getrandbits(32)) for _ in range(n // 3)]
    pairs += [((0xBEEF << 48) | rng.getrandbits(48), rng.getrandbits(32)) for _ in range(n // 3)]
    pairs += [((0xC0FFEE << 40) | rng.getrandbits(40), rng.getrandbits(32)) for _ in range(n // 6)]
    pairs += [(h, rng.getrandbits(32)) for h, _ in rng.sample(pairs, n // 6)]
    rng.shuffle(pairs)
    assert sort_by_hash(pairs) == sorted(pairs)


@pytest.mark.parametrize("n", [10, 3000, 40000])
def test_a_sweeps_slice_holds_every_entry_of_its_hashes_and_ids_and_no_other(n):
    """A sweep takes its slice from the table of unfiled ids by slots (the
    table keeps hashes near their home slot, their top bits): every pair
    whose hash is in the range and whose id in the generation, and no other,
    whatever the slice.  Besides uniform hashes, some crowd one home (long
    probe runs), and some sit at the top of the hash space, whose runs wrap
    round to the first slots."""
    rng = random.Random(n)
    top = (1 << 64) - 1
    pairs = [(rng.getrandbits(64), rng.randrange(1, 1 << 31)) for _ in range(n)]
    pairs += [((0xBEEF << 48) | rng.getrandbits(20), rng.randrange(1, 1 << 31)) for _ in range(n // 10 + 5)]
    pairs += [(top - rng.getrandbits(16), rng.randrange(1, 1 << 31)) for _ in range(n // 10 + 5)]
    bounds = [0, 1, 0xBEEF << 48, (0xBEEF << 48) + (1 << 19), 1 << 63, top - (1 << 15), top]
    bounds += [rng.getrandbits(64) for _ in range(6)]
    bounds.sort()
    after, upto = 1 << 29, 3 << 29
    for lo, hi in zip(bounds, bounds[1:]):
        want = sorted((h, i) for h, i in pairs if lo <= h < hi and after < i <= upto)
        assert gather_by_hash(pairs, lo, hi, after=after, upto=upto) == want
    for lo in bounds:
        want = sorted((h, i) for h, i in pairs if h >= lo)
        assert gather_by_hash(pairs, lo, 0, to_end=True) == want
    assert gather_by_hash(pairs, 0, 0, to_end=True) == sorted(pairs)


def test_a_writer_without_the_log_files_every_id_at_open(tmp_path):
    path = tmp_path / "s"
    with LmdbStore(path) as store:
        store.add(_quads(3000))                     # 6,000 ids: sorted by the radix sort, not qsort
    assert _summary(path)["unfiled_terms"] > 4096
    with LmdbStore(path, log=False) as store:
        with store.read() as txn:
            assert txn.unfiled_terms() == 0
        store.add(_quads(5, start=3000))            # and it files its own at once
        assert store.count(o=literal("value 3")) == 1
    summary = _summary(path)
    assert summary["unfiled_terms"] == 0 and summary["hash_entries"] == summary["terms"]


def test_a_write_undone_leaves_no_id_behind(tmp_path):
    """A write that fails after creating ids is undone (the batch is rebuilt
    from the log); the table must not keep the ids that were never committed."""
    path = tmp_path / "s"
    with LmdbStore(path) as store:
        store.add(_quads(10))

        def fails(txn):
            txn.add([(iri("http://ex.org/x"), P, literal("never stored"), G)])
            raise RuntimeError("refused")

        with pytest.raises(RuntimeError):
            store.write(fails)
        assert store.count(o=literal("never stored")) == 0
        store.add([(iri("http://ex.org/y"), P, literal("stored"), G)])   # reuses the freed ids
        assert store.count(o=literal("stored")) == 1 and store.count(o=literal("never stored")) == 0
        store.add([(iri("http://ex.org/x"), P, literal("never stored"), G)])
        assert store.count(o=literal("never stored")) == 1
    assert _summary(path)["quads"] == 12


def _damage(path, change) -> list[str]:
    env = lmdb.open(str(path), max_dbs=16)
    dbs = {name: env.open_db(name.encode(), dupsort=name == "t2i", dupfixed=name == "t2i",
                             integerkey=name in ("i2t", "i2l"), create=False)
           for name in ("meta", "t2i", "i2t", "i2l")}
    with env.begin(write=True) as txn:
        change(txn, dbs)
    env.close()
    return list(check(path))


@pytest.fixture
def half_filed(tmp_path):
    """A store whose first ids are filed and the others not."""
    path = tmp_path / "s"
    with LmdbStore(path, log=False) as store:
        store.add(_quads(3))
    with LmdbStore(path) as store:
        store.add(_quads(3, start=3))
    summary = _summary(path)
    assert 0 < summary["unfiled_terms"] < summary["terms"]
    return path, summary["terms"] - summary["unfiled_terms"], summary["terms"]


def _term_numbered(txn, dbs, seq: int) -> tuple[int, bytes]:
    """The id and encoded term numbered ``seq``: a literal in i2l (its id
    has the literal bit; stored compact), any other term in i2t."""
    term = txn.get(struct.pack("=I", seq), db=dbs["i2t"])
    if term is not None:
        return seq, term
    tid = seq | _store.ID_LITERAL_BIT
    return tid, expand_stored(txn.get(struct.pack("=I", tid), db=dbs["i2l"]))


def _file_the_last(last: int, put: list):
    """A damage: the id numbered ``last`` put in t2i under its hash (its id in ``put``)."""
    def change(txn, dbs):
        tid, term = _term_numbered(txn, dbs, last)
        txn.put(struct.pack(">Q", _store.hash_term(term)), struct.pack(">I", tid), db=dbs["t2i"])
        put.append(tid)
    return change


def test_check_finds_an_unfiled_id_in_t2i(half_filed):
    path, filed, last = half_filed
    put = []
    problems = _damage(path, _file_the_last(last, put))
    assert problems == [f"term {put[0]}: in t2i, though not filed (the last filed id is {filed})",
                        f"t2i: an entry points to term id {put[0]}, which is not filed (the last filed id is {filed})",
                        f"t2i holds {filed + 1} entries but i2t and i2l hold {filed} terms filed in it"]


def test_check_finds_the_filed_mark_beyond_the_last_id(half_filed):
    path, _, last = half_filed
    problems = _damage(path, lambda txn, dbs: txn.put(b"terms_filed", struct.pack(">I", last + 5), db=dbs["meta"]))
    assert f"meta: terms_filed is {last + 5}, above the last term id ({last})" in problems
    assert any(p.startswith("t2i holds") and "terms filed in it" in p for p in problems)


def test_check_finds_an_unfiled_term_stored_twice(half_filed):
    """An unfiled id naming a term that a filed id already names."""
    path, filed, last = half_filed

    def duplicate(txn, dbs):
        txn.put(struct.pack("=I", last + 1), txn.get(struct.pack("=I", 1), db=dbs["i2t"]), db=dbs["i2t"],
                append=True)

    problems = _damage(path, duplicate)
    assert f"terms 1 and {last + 1} are the same term stored twice" in problems


def test_check_finds_two_unfiled_ids_of_one_term(half_filed):
    """Two unfiled ids naming one term: found through check's own table of
    the unfiled ids it has met, not through t2i."""
    path, filed, last = half_filed
    first = []

    def duplicate(txn, dbs):
        cursor = txn.cursor(db=dbs["i2t"])
        assert cursor.set_range(struct.pack("=I", filed + 1))   # the first unfiled IRI
        first.append(struct.unpack("=I", cursor.key())[0])
        txn.put(struct.pack("=I", last + 1), cursor.value(), db=dbs["i2t"], append=True)

    problems = _damage(path, duplicate)
    assert f"terms {first[0]} and {last + 1} are the same term stored twice" in problems


def test_check_finds_a_sequence_number_used_by_an_iri_and_a_literal(half_filed):
    """Ids of every kind share one counter: an IRI in i2t under the number
    of a literal of i2l breaks it."""
    path, _, last = half_filed
    put = []

    def reuse(txn, dbs):
        literal_id, _ = _term_numbered(txn, dbs, last)
        assert literal_id & _store.ID_LITERAL_BIT
        txn.put(struct.pack("=I", last), iri("http://ex.org/stray"), db=dbs["i2t"])
        put.append(literal_id)

    problems = _damage(path, reuse)
    assert f"terms {last} (i2t) and {put[0]} (i2l) share the sequence number {last}" in problems


def test_reads_through_the_default_graph_find_unfiled_ids(tmp_path):
    with LmdbStore(tmp_path / "s") as store:
        store.add([(iri("http://ex.org/a"), P, literal("x"), DEFAULT_GRAPH)])
        store.close()
    with LmdbStore(tmp_path / "s") as store:
        assert store.quads(s=iri("http://ex.org/a")) == [(iri("http://ex.org/a"), P, literal("x"), DEFAULT_GRAPH)]


@pytest.mark.parametrize("writemap", [True, False])
def test_the_store_counts_its_batch_commits_and_their_pages(tmp_path, writemap):
    with LmdbStore(tmp_path / "s", batch_writes=4, writemap=writemap) as store:
        for i in range(10):
            store.add(_quads(5, start=5 * i))
        before_close = store.batch_commits
    after = store.batch_commits
    assert before_close["count"] == 2 and after["count"] == 3   # 4 + 4 writes, then the rest at close
    assert 0 < after["max_seconds"] <= after["seconds"]
    # durable: each commit flushed on a thread of its own
    assert 0 < after["flush_max_seconds"] <= after["flush_seconds"]
    if writemap:  # the pages are the file's: the writing thread writes none
        assert after["pages_written"] is None
    else:  # each commit writes at least the pages it changed and a meta page (Linux counts them)
        assert after["pages_written"] is None or after["pages_written"] >= 3 * 2


def test_check_follows_a_sweep_and_finds_its_mark_damaged(tmp_path):
    """Mid-sweep, t2i holds the filed ids and those of the sweep's first
    hashes, no others; a sweep mark beyond the last id is a problem."""
    path = tmp_path / "s"
    with LmdbStore(path, filing_lag=64, batch_writes=2) as store:
        for i in range(29):
            store.add(_quads(10, start=10 * i))
    env = lmdb.open(str(path), max_dbs=16, readonly=True)
    meta = env.open_db(b"meta", create=False)
    with env.begin() as txn:
        sweep = txn.get(b"terms_filing", db=meta)
        filed = struct.unpack(">I", txn.get(b"terms_filed", db=meta))[0]
    env.close()
    upto, position = struct.unpack(">IQ", sweep)   # these 29 writes stop mid-sweep (each files its share)
    summary = _summary(path)
    # t2i (and its young level) holds the filed ids and some of the sweep's, and check agrees with it
    assert filed < _filed(summary) < upto and 0 < position
    assert _filed(summary) + summary["unfiled_terms"] == summary["terms"]
    with LmdbStore(path, filing_lag=64, batch_writes=2) as store:   # the sweep goes on after a reopen
        assert all(store.count(o=literal(f"value {i}")) == 1 for i in range(0, 290, 7))
        for i in range(29, 40):
            store.add(_quads(10, start=10 * i))
        assert store.add(_quads(10, start=5)) == 0    # known terms, swept or not: no new id
    assert _filed(_summary(path)) > _filed(summary)
    problems = _damage(path, lambda txn, dbs: txn.put(b"terms_filing", struct.pack(">IQ", 10**6, position),
                                                      db=dbs["meta"]))
    assert any(p.startswith("meta: terms_filing is damaged (the sweep's last id 1000000") for p in problems)


RACE = """
import sys, threading, time
from lakebench._store import Environment
from lakebench.store.terms import iri, literal
env = Environment(sys.argv[1], defer_filing=True, durability="nosync", map_size=1 << 30)
G, P = iri("http://ex.org/g"), iri("http://ex.org/p")
with env.begin(write=True) as w:
    w.add([(iri(f"http://ex.org/s{i}"), P, literal(f"v{i}"), G) for i in range(5000)])
stop, missed = False, []
def reader():
    while not stop:
        with env.begin() as r:
            missed.extend(i for i in range(0, 5000, 499) if r.term_id(literal(f"v{i}")) == 0)
            r.term_id(literal("absent"))
t = threading.Thread(target=reader)
t.start()
k, end = 5000, time.time() + 3
while time.time() < end:
    w = env.begin(write=True)
    w.add([(iri(f"http://ex.org/s{i}"), P, literal(f"v{i}"), G) for i in range(k, k + 2000)])
    k += 2000
    w.abort() if k % 8000 == 0 else w.commit()
stop = True
t.join()
print(len(missed))
"""


def test_another_thread_reads_safely_while_the_owner_writes(tmp_path):
    """The owner's tables are its own thread's: another thread's reads built
    their own (sharing them was a segfault within seconds)."""
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-c", RACE, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "0"


def test_an_older_snapshot_finds_the_ids_a_later_sweep_took_out_of_the_writers_table(tmp_path):
    """A sweep's slice leaves the writer's table once filed in t2i.  A
    snapshot of the same thread taken before that filing finds the ids in
    neither its t2i nor that table: it must build its own, and find every
    term under the id it had.  (Long literals: the cache of terms, which
    answers first, holds short ones only.)"""

    def long(i):
        return literal(f"value {i} " + "x" * 60)

    def quads(n, start):
        return [(iri(f"http://ex.org/s{i}"), P, long(i), G) for i in range(start, start + n)]

    env = _store.Environment(str(tmp_path), defer_filing=True, filing_lag=1000, durability="nosync")
    try:
        with env.begin(write=True) as w:
            w.add(quads(600, 0))   # 1,200 ids: a sweep of them starts at this commit
        older = env.begin()
        ids = {i: older.term_id(long(i)) for i in range(600)}
        assert 0 not in ids.values()
        assert older.unfiled_terms() > 0
        mid_sweep = 0
        for start in range(600, 1800, 20):   # it ends once 1,000 more ids exist
            with env.begin(write=True) as w:
                w.add(quads(20, start))
                w.file_due_terms()
            with env.begin() as now:
                sweep = now.get_meta("terms_filing")
                mid_sweep += sweep is not None and struct.unpack(">IQ", sweep)[1] > 0
            assert {i: older.term_id(long(i)) for i in range(600)} == ids
        assert mid_sweep >= 10
        with env.begin() as now:
            assert now.unfiled_terms() < 2400   # the first ids were filed meanwhile
        assert older.term_id(long(1799)) == 0   # after its snapshot
        older.abort()
    finally:
        env.close()


@pytest.mark.parametrize("most", [200, None])
def test_filing_max_bounds_the_unfiled_ids_however_many_are_filed(tmp_path, most):
    """A generation is a quarter of the filed ids, at most ``filing_max``:
    the unfiled ids (what the writer's table holds) stay under about two
    generations as the store grows; without the bound they grow with it."""
    options = {"filing_max": most} if most else {}
    peak = 0
    with LmdbStore(tmp_path / "s", filing_lag=64, batch_writes=8, **options) as store:
        for i in range(150):
            store.add(_quads(20, start=20 * i))   # 40 new ids a write
            with store.read() as txn:
                peak = max(peak, txn.unfiled_terms())
        assert store.count() == 3000
    if most:
        assert peak <= 2 * most + 40
    else:
        assert peak > 2 * 200 + 40
    assert _summary(tmp_path / "s")["terms"] == 6002


def test_the_stores_own_tables_are_counted_and_filing_max_bounds_the_unfiled_ids_table(tmp_path):
    """``heap_bytes``: what the store's tables hold allocated.  The table of unfiled ids
    of a store bounded by ``filing_max`` stays at its smallest while an unbounded one's
    grows with its generations; the Bloom filter has its fixed size once built."""
    tables = {}
    for most in (200, None):
        options = {"filing_max": most} if most else {}
        store = LmdbStore(tmp_path / f"s{most}", filing_lag=64, batch_writes=8, **options)
        with store:
            for i in range(100):
                store.add(_quads(500, start=500 * i))   # 1,000 new ids a write
            tables[most] = store.heap_bytes()
        with pytest.raises(StoreError, match="the store is closed"):
            store.heap_bytes()
    bounded, unbounded = tables[200], tables[None]
    assert set(bounded) == {"unfiled_ids", "bloom_filter", "term_cache", "write_terms", "sweep_slice"}
    assert 0 < bounded["unfiled_ids"] and 2 * bounded["unfiled_ids"] < unbounded["unfiled_ids"]
    assert bounded["bloom_filter"] == unbounded["bloom_filter"] == 64 << 20
    # the open batch's table of terms counted, as is the one kept between writes
    assert bounded["term_cache"] > 0 and bounded["write_terms"] > 0 and bounded["sweep_slice"] > 0


def test_the_writes_time_filing_term_ids_is_counted(tmp_path):
    """``term_filing``: the seconds the writes spent on the sweep's shares.  A store whose
    generations are small files ids at many writes; nothing is counted before its first
    write, and the longest share is part of the total."""
    with LmdbStore(tmp_path / "s", filing_lag=64, filing_max=64, batch_writes=8) as store:
        assert store.term_filing == {"seconds": 0.0, "max_seconds": 0.0}
        for i in range(40):
            store.add(_quads(50, start=50 * i))   # 100 new ids a write: a sweep under way at each
        filing = store.term_filing
        with store.read() as txn:
            assert txn.unfiled_terms() < 2 * 64 + 100   # they were filed as they came
    assert 0 < filing["max_seconds"] <= filing["seconds"]


def test_a_stray_hash_entry_does_not_stop_the_commits(tmp_path):
    """An unfiled id already in t2i (damage check names) is taken as filed
    when the sweep reaches it, instead of failing every commit after."""
    path = tmp_path / "s"
    with LmdbStore(path) as store:
        store.add(_quads(40))
    last = _summary(path)["terms"]
    assert any("in t2i, though not filed" in p for p in _damage(path, _file_the_last(last, [])))
    with LmdbStore(path, filing_lag=8, batch_writes=1) as store:
        for i in range(1, 12):
            store.add(_quads(10, start=40 * i))
        assert store.batch_commits["count"] == 11
    LmdbStore(path, log=False).close()   # files every id, the stray one included
    summary = _summary(path)
    assert summary["unfiled_terms"] == 0 and _filed(summary) == summary["terms"]


def test_a_lag_of_zero_on_a_tiny_store_is_consistent(tmp_path):
    with LmdbStore(tmp_path / "s", filing_lag=0, batch_writes=1) as store:
        for i in range(3):
            store.add([(iri(f"http://ex.org/s{i}"), P, literal("x"), G)])
    _summary(tmp_path / "s")


def test_the_filing_marks_cannot_be_set_through_set_meta(tmp_path):
    env = _store.Environment(tmp_path)
    with env.begin(write=True) as txn:
        for name in ("terms_filed", "terms_filing", "terms_merging"):
            with pytest.raises(ValueError, match="reserved"):
                txn.set_meta(name, b"\0\0\0\1")
    env.close()
