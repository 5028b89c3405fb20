"""The durable batch commit flushed off the request path (lakebench.store.commitsync):
a cut between a commit and its flush's confirmation, a flush that fails, and the
reader that finds a commit not yet undone.  tests/store/test_powerloss.py replays
every crash point of the same path."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from lakebench._store import LmdbError
from lakebench.store import WRITE_BACK_EVERY, LmdbStore, StoreError, check
from lakebench.store.commitsync import CommitIntent
from lakebench.store.terms import iri

P = iri("http://e/p")

# Writes batches of 4 whose commits are never confirmed (the flush's confirmation
# sleeps), acknowledging each write on stdout; the test kills it.
UNCONFIRMED_WRITER = textwrap.dedent("""
    import sys, time
    from lakebench.store import LmdbStore, commitsync
    commitsync.CommitIntent.confirm = lambda self: time.sleep(3600)
    store = LmdbStore(sys.argv[1], batch_writes=4)
    for i in range(int(sys.argv[2])):
        store.add([(f"http://e/s{i}", "http://e/p", f"http://e/o{i}", "http://e/g")])
        print("ACK", i, flush=True)
    print("DONE", flush=True)
    time.sleep(3600)
""")


# Holds the store's LMDB environment open, read-only, as another process's reader would.
HOLDER = textwrap.dedent("""
    import sys, time
    from lakebench._store import Environment
    env = Environment(sys.argv[1], readonly=True, map_size=0)
    print("OPEN", flush=True)
    time.sleep(3600)
""")


def _subjects(store) -> set[bytes]:
    return {q[0] for q in store.quads(None, P, None, None)}


def test_a_commit_cut_before_its_flush_was_confirmed_is_undone_and_replayed(tmp_path):
    path = tmp_path / "s"
    writer = subprocess.Popen([sys.executable, "-c", UNCONFIRMED_WRITER, str(path), "6"], stdout=subprocess.PIPE,
                              text=True)
    acked = []
    for line in writer.stdout:
        if line.startswith("DONE"):
            break
        acked.append(int(line.split()[1]))
    # the commit after the 4th write waits for its confirmation: the 5th and 6th write
    # went on into the other log meanwhile
    assert acked == list(range(6))
    assert CommitIntent.pending_at(path) is not None
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    with pytest.raises(StoreError, match="open the store for writing once"):
        LmdbStore(path, readonly=True, create=False)
    assert check(path).summary["commit_cut"]
    checked = subprocess.run([sys.executable, "-m", "lakebench.cli", "check", str(path)], capture_output=True,
                             text=True)
    assert "its last batch commit was cut before its flush was confirmed" in checked.stdout, checked.stdout
    # another process with the environment open: its lock file names the cut commit
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "OPEN"
    with pytest.raises(StoreError, match="another process has the store open"):
        LmdbStore(path)
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert CommitIntent.pending_at(path) is not None  # nothing was changed
    with LmdbStore(path) as store:  # writes the snapshot before the commit back, replays both logs
        assert CommitIntent.pending_at(path) is None
        assert _subjects(store) == {iri(f"http://e/s{i}") for i in acked}
    assert not check(path)
    with LmdbStore(path, readonly=True, create=False) as store:
        assert len(_subjects(store)) == 6


@pytest.mark.alone  # the writes after the commit count on its flush (a thread) not having failed yet
@pytest.mark.parametrize("error", [OSError(5, "Input/output error"), LmdbError(5, "mdb_env_sync")],
                         ids=["fdatasync", "msync"])
def test_a_failed_flush_stops_the_writes_and_the_next_open_recovers_them(tmp_path, monkeypatch, error):
    def fail(self):
        raise error

    store = LmdbStore(tmp_path / "s", batch_writes=2)
    monkeypatch.setattr(CommitIntent, "confirm", fail)
    for i in range(3):  # the 2nd write commits; its flush's confirmation fails on the thread
        store.add([(f"http://e/s{i}", "http://e/p", f"http://e/o{i}", "http://e/g")])
    with pytest.raises(StoreError, match="could not be flushed"):
        for i in range(3, 6):  # the next commit finds it
            store.add([(f"http://e/s{i}", "http://e/p", f"http://e/o{i}", "http://e/g")])
    with pytest.raises(StoreError, match="close the store and open it again"):
        store.add([("http://e/late", "http://e/p", "http://e/o", "http://e/g")])
    acked = len(_subjects(store))
    store.close()
    monkeypatch.undo()
    assert CommitIntent.pending_at(tmp_path / "s") is not None
    with LmdbStore(tmp_path / "s") as store:
        assert len(_subjects(store)) == acked >= 4
        store.add([("http://e/after", "http://e/p", "http://e/o", "http://e/g")])
    assert not check(tmp_path / "s")


def test_each_batch_writes_the_other_log_and_a_clean_close_leaves_none(tmp_path):
    path = tmp_path / "s"
    with LmdbStore(path, batch_writes=3) as store:
        for i in range(7):
            store.add([(f"http://e/s{i}", "http://e/p", f"http://e/o{i}", "http://e/g")])
            # the batch's records are in one log, the last batch's in the other until it is reused
            assert os.path.getsize(path / "wal") > 0
        assert os.path.getsize(path / "wal.2") > 0
        assert store.batch_commits["count"] == 2
    assert os.path.getsize(path / "wal") == os.path.getsize(path / "wal.2") == 0
    assert CommitIntent.pending_at(path) is None
    with LmdbStore(path, readonly=True, create=False) as store:
        assert len(_subjects(store)) == 7


def _cachestat(path, offset: int = 0, length: int = 0):
    """The file's pages in the page cache from ``offset`` for ``length`` bytes (0: to the
    end), by cachestat (Linux 6.5): cached, dirty, writeback, evicted, recently evicted."""
    import ctypes
    import errno

    libc = ctypes.CDLL(None, use_errno=True)
    byte_range = (ctypes.c_uint64 * 2)(offset, length)
    counts = (ctypes.c_uint64 * 5)()
    fd = os.open(path, os.O_RDONLY)
    try:
        if libc.syscall(451, fd, byte_range, counts, 0) != 0:  # 451: cachestat on x86-64 and arm64
            if ctypes.get_errno() == errno.ENOSYS:
                pytest.skip("the kernel has no cachestat (Linux 6.5)")
            raise OSError(ctypes.get_errno(), "cachestat")
    finally:
        os.close(fd)
    return tuple(counts)


def _pages_to_write(path, offset: int = 0, length: int = 0) -> int:
    """The file's pages dirty or under writeback in the page cache (see _cachestat)."""
    counts = _cachestat(path, offset, length)
    return counts[1] + counts[2]


def test_a_write_back_in_steps_leaves_no_page_of_the_data_file_to_write(tmp_path):
    with LmdbStore(tmp_path / "s", durability="nosync", batch_writes=1_000_000) as store:
        # LMDB's nosync commits, several steps' worth: written through the map, not flushed
        for k in range(20):
            store.add([(f"http://e/s{k}-{j}", "http://e/p", f"http://e/o{j}" * 20, "http://e/g") for j in range(2000)])
        store.checkpoint()
        data = tmp_path / "s" / "data.mdb"
        if _pages_to_write(data) == 0:  # the kernel's flusher got there first (a loaded machine)
            pytest.skip("the data file's pages were written back before the test could")
        store.env.write_back(step=64 << 10)
        assert _pages_to_write(data) == 0
        assert store.count() == 40_000
        for step in (0, 1 << 41):
            with pytest.raises(ValueError, match="step"):
                store.env.write_back(step=step)


def test_a_durable_flush_leaves_the_next_batchs_new_pages_alone(tmp_path):
    """Written in place, the flush of a commit writes up to its last page, not the pages the
    next batch has taken past it meanwhile (they would be written twice)."""
    with LmdbStore(tmp_path / "s", batch_writes=1_000_000) as store:
        assert store.env.writemap
        store.add([(f"http://e/s{j}", "http://e/p", f"http://e/o{j}" * 20, "http://e/g") for j in range(2000)])
        store.checkpoint()  # committed and flushed
        committed = store.env.info()["used_bytes"]
        # the next batch, open: its new pages lie past the committed end
        for k in range(10):
            store.add([(f"http://e/t{k}-{j}", "http://e/p", f"http://e/o{j}" * 20, "http://e/g") for j in range(2000)])
        data = tmp_path / "s" / "data.mdb"
        past_the_commit = _pages_to_write(data, committed)
        if past_the_commit == 0:  # the kernel's flusher got there first (a loaded machine)
            pytest.skip("the open batch's pages were written back before the test could")
        store.env.sync_in_steps()
        assert _pages_to_write(data, 0, committed) == 0
        assert _pages_to_write(data, committed) == past_the_commit
        assert store.count() == 22_000
    assert not check(tmp_path / "s")


def test_the_next_batchs_new_pages_are_cached_ahead_the_first_mapped_writable(tmp_path):
    """After a durable commit's flush, the pages past the last committed one are read into
    the page cache (a write's first touch of one then finds it there); the first MAP_AHEAD
    bytes of them are mapped writable (dirty, with the bytes they hold: a write's first touch
    then takes no fault), the others are left clean; with ``map_ahead=0`` all are clean."""
    from lakebench._store import CACHE_AHEAD, MAP_AHEAD

    for name, map_ahead in (("s", MAP_AHEAD), ("c", 0)):
        with LmdbStore(tmp_path / name, batch_writes=1_000_000, map_ahead=map_ahead) as store:
            store.add([(f"http://e/s{j}", "http://e/p", f"http://e/o{j}" * 20, "http://e/g") for j in range(2000)])
            store.checkpoint()  # committed, flushed, then cached and mapped ahead on the flushing thread
            used, allocated = store.env.info()["used_bytes"], store.env.allocated
            ahead = min(CACHE_AHEAD, allocated - used)
            assert ahead > MAP_AHEAD + (8 << 20)  # more than one readahead window of the kernel's
            cached, dirty, writeback = _cachestat(tmp_path / name / "data.mdb", used, ahead)[:3]
            assert cached == ahead // 4096 and writeback == 0
            # none on a kernel without MADV_POPULATE_WRITE (Linux 5.14), where map_ahead says False
            mapped = map_ahead if map_ahead and store.env.map_ahead(4096) else 0
            assert dirty == mapped // 4096, (name, dirty)
    with LmdbStore(tmp_path / "p", batch_writes=1_000_000, writemap=False) as store:
        assert store.env.cache_ahead() is None  # a map not written in place: nothing to do
    with LmdbStore(tmp_path / "n", batch_writes=1_000_000, cache_ahead=0, map_ahead=0) as store:  # turned off
        store.add([(f"http://e/s{j}", "http://e/p", f"http://e/o{j}" * 20, "http://e/g") for j in range(2000)])
        store.checkpoint()
        used = store.env.info()["used_bytes"]
        assert _cachestat(tmp_path / "n" / "data.mdb", used, 64 << 20)[0] < (8 << 20) // 4096


def test_an_unsynced_store_caches_the_next_batchs_pages_ahead_too(tmp_path):
    import time

    from lakebench._store import CACHE_AHEAD

    with LmdbStore(tmp_path / "s", durability="nosync", batch_writes=3) as store:
        for i in range(3):  # the third commits the batch, unflushed; a thread then caches ahead
            store.add([(f"http://e/s{i}-{j}", "http://e/p", f"http://e/o{j}" * 20, "http://e/g") for j in range(500)])
        used, allocated = store.env.info()["used_bytes"], store.env.allocated
        ahead = min(CACHE_AHEAD, allocated - used)
        assert ahead > 8 << 20
        deadline = time.monotonic() + 20
        while _cachestat(tmp_path / "s" / "data.mdb", used, ahead)[0] < ahead // 4096 and time.monotonic() < deadline:
            time.sleep(0.01)
        cached, dirty, writeback = _cachestat(tmp_path / "s" / "data.mdb", used, ahead)[:3]
        assert cached == ahead // 4096 and dirty == writeback == 0
        store.add([("http://e/after", "http://e/p", "http://e/o", "http://e/g")])
        assert store.count() == 1501
    assert not check(tmp_path / "s")


def test_an_unsynced_store_starts_writing_its_commits_pages_back_every_few_commits(tmp_path):
    """Nosync, written in place: after every ``write_back`` batch commits (WRITE_BACK_EVERY by
    default), the thread that caches ahead sends the committed pages to disk (unflushed, not
    waited for), so that the kernel never holds enough of them dirty to write an open batch's
    pages; the commits between leave theirs dirty, and ``write_back=0`` leaves them all to the
    kernel's writeback."""
    import time

    def commit_a_batch(store, k):
        for i in range(3):  # the third commits the batch
            store.add([(f"http://e/s{k}-{i}-{j}", "http://e/p", f"http://e/o{j}" * 20, "http://e/g")
                       for j in range(500)])
        time.sleep(0.3)  # the work after the commit done (a write-back started would be under way)
        return store.env.info()["used_bytes"]

    def dirty(name, used):
        return _cachestat(tmp_path / name / "data.mdb", 0, used)[1]

    every = 4
    with LmdbStore(tmp_path / "on", durability="nosync", batch_writes=3, write_back=every) as store:
        for k in range(every - 1):  # no write-back yet: each commit's pages stay dirty
            used = commit_a_batch(store, k)
            assert dirty("on", used) > 0
        used = commit_a_batch(store, every)  # this one starts it, for them all
        deadline = time.monotonic() + 20
        while dirty("on", used) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert dirty("on", used) == 0
        store.add([("http://e/after", "http://e/p", "http://e/o", "http://e/g")])
        assert store.count() == 1500 * every + 1
    assert not check(tmp_path / "on")
    with LmdbStore(tmp_path / "default", durability="nosync", batch_writes=3) as store:  # WRITE_BACK_EVERY
        for k in range(WRITE_BACK_EVERY):
            used = commit_a_batch(store, k)
        deadline = time.monotonic() + 20
        while dirty("default", used) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert dirty("default", used) == 0
    with LmdbStore(tmp_path / "off", durability="nosync", batch_writes=3, write_back=0) as store:
        for k in range(every + 1):
            used = commit_a_batch(store, k)
        assert dirty("off", used) > 0  # the batches' pages, dirty
        assert store.count() == 1500 * (every + 1)
    with pytest.raises(ValueError, match="write_back"):
        LmdbStore(tmp_path / "bad", durability="nosync", write_back=-1)


SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "durable-commit.py")


@pytest.mark.alone  # its slowest write's time on the processor and in the run queue, read apart from its wall time
@pytest.mark.parametrize("mode", ["durable", "durable-pwrite", "nosync"])
def test_the_commit_measurement_script_reports_each_mode(tmp_path, mode):
    import json

    out = subprocess.run([sys.executable, SCRIPT, "--children", "1100", "--mode", mode, "--dir", str(tmp_path / "s"),
                          "--slow-ms", "0"], capture_output=True, text=True, check=True)
    report = json.loads(out.stdout)
    assert report["children"] == 1100 and 0 < report["per_resource_ms"]["p50"] <= report["per_resource_ms"]["max"]
    assert report["batch_writes"] == (256 if mode == "nosync" else 1024)
    assert report["batch_commits"]["count"] == (5 if mode == "nosync" else 2)  # full batches, then the rest at close
    assert (report["batch_commits"]["flush_seconds"] is None) == (mode == "nosync")
    assert report["rss_anon_bytes"] > 0
    assert 0 <= report["after_commit_major_faults"] <= report["major_faults"]
    assert len(report["slowest"]) == 10 and abs(report["slowest"][0]["ms"] - report["per_resource_ms"]["max"]) < 0.001
    # (the close's commit is no timed write: among the slowest, at most the others)
    assert report["committing_ms"]["p50"] > 0
    assert sum(s["committed"] for s in report["slowest"]) <= report["batch_commits"]["count"] - 1
    assert report["cache_ahead"] > 0 and report["write_back"] == (WRITE_BACK_EVERY if mode == "nosync" else None)
    # the bytes each tenth's children dirtied: every write adds pages (its log record, its batch's)
    assert len(report["written_kib_per_child"]) == 10 and all(k > 0 for k in report["written_kib_per_child"])
    assert report["filing_max"] == 1 << 22
    # by tenth: the mean write, and the part of it that filed term ids (none due at 1,100 children)
    assert len(report["tenths_ms"]) == 10 and all(ms > 0 for ms in report["tenths_ms"])
    assert len(report["filing_ms_per_child"]) == 10
    assert all(0 <= f < ms for f, ms in zip(report["filing_ms_per_child"], report["tenths_ms"]))
    # by tenth, the processor time a child: the writing thread's (user, kernel) and the other threads'
    cpu = report["cpu_ms_per_child"]
    assert set(cpu) == {"writer_user", "writer_kernel", "others"}
    assert all(len(ms) == 10 and min(ms) >= 0 for ms in cpu.values()) and sum(cpu["writer_user"]) > 0
    # --slow-ms 0: every write's time accounted on its thread (on a processor, waiting for one, asleep)
    assert report["slow_writes"]["count"] == 1100 and report["slow_writes"]["on_cpu_ms"] > 0
    for write in report["slowest"]:
        assert write["on_cpu_ms"] > 0 and write["run_queue_ms"] >= 0 and write["switches"]["voluntary"] >= 0
        # one thread: neither its time on a processor nor its wait for one outlasts the write
        assert write["on_cpu_ms"] + write["run_queue_ms"] <= write["ms"] + 0.5  # (the two read apart)
        # its log flush (durable: one a write, inside its clock; unsynced: none)
        assert 0 <= write["log_flush_ms"] <= write["ms"] and (write["log_flush_ms"] > 0) == (mode != "nosync")
    flushes = report["log_flushes"]
    assert flushes["writes"] == 1101 and set(flushes["over_ms"]) == {"5", "20", "50"}
    assert (flushes["flushes"] >= 1101) == (mode != "nosync") and (flushes["flushes"] == 0) == (mode == "nosync")
    assert report["slow_writes"]["log_flush_ms"] <= report["slow_writes"]["ms"]
    # where each of the slowest was: its place in its batch, and whether a batch's flush ran then
    # (--slow-ms 0: every write) durable, at least the write right after the commit began during its
    # flush, and the first batch's writes, with no commit before them, did not; unsynced, none did
    during = report["slow_writes"]["during_flush"]
    assert (1 <= during <= 1100 - 1020) if mode != "nosync" else during == 0
    for write in report["slowest"]:
        assert 0 <= write["place_in_batch"] < report["batch_writes"] and isinstance(write["during_flush"], bool)
        assert not write["committed"] or write["place_in_batch"] > 0
    assert not (tmp_path / "s").exists()


@pytest.mark.alone  # compares bytes the kernel's write-back sends, which other workers' memory use moves
def test_the_commit_measurement_script_files_term_ids_in_generations_of_filing_max(tmp_path):
    """--filing-max reaches the store: with generations of 4,096 ids, a run of 1,100 children
    (some 110,000 literals) makes many sweeps, each rewriting t2i's leaves, so its children
    dirty more bytes than with the default (whose first generation is 2^20 ids: no sweep)."""
    import json

    def run(*extra):
        out = subprocess.run([sys.executable, SCRIPT, "--children", "1100", "--mode", "nosync",
                              "--dir", str(tmp_path / "s"), *extra], capture_output=True, text=True, check=True)
        return json.loads(out.stdout)

    small, default = run("--filing-max", "4096"), run()
    assert small["filing_max"] == 4096 and default["filing_max"] == 1 << 22
    assert small["filing_lag"] == 4096 and default["filing_lag"] == 1 << 20
    # --filing-lag reaches it too: with generations of at least 4,096 ids and at most 2^22, sweeps again
    lagged = run("--filing-lag", "4096")
    assert lagged["filing_lag"] == 4096 and lagged["term_filing"]["seconds"] > default["term_filing"]["seconds"]
    assert sum(small["written_kib_per_child"][5:]) > sum(default["written_kib_per_child"][5:])
    # the sweeps' time is counted in the writes that filed them
    assert small["term_filing"]["seconds"] > default["term_filing"]["seconds"]
    assert sum(small["filing_ms_per_child"]) > sum(default["filing_ms_per_child"])


def test_a_map_that_fills_while_a_flush_runs_grows_once_it_is_confirmed(tmp_path, monkeypatch):
    import time

    confirm = CommitIntent.confirm

    def slow_confirm(self):  # the pin is still held when the batch fills the map
        time.sleep(0.05)
        confirm(self)

    monkeypatch.setattr(CommitIntent, "confirm", slow_confirm)
    with LmdbStore(tmp_path / "s", map_size=1 << 17, batch_writes=2, writemap=False) as store:
        for i in range(40):
            store.add([(f"http://e/s{i}", "http://e/p", "http://e/" + "o" * 3000 + str(i), "http://e/g")])
        assert store.env.info()["map_size"] > 1 << 17
        assert len(_subjects(store)) == 40
    assert not check(tmp_path / "s")


def test_a_durable_store_says_while_a_batch_commits_flush_runs(tmp_path, monkeypatch):
    import threading

    confirm = CommitIntent.confirm
    release = threading.Event()

    def held_confirm(self):  # the flush's end waits for the test
        release.wait(10)
        confirm(self)

    monkeypatch.setattr(CommitIntent, "confirm", held_confirm)
    with LmdbStore(tmp_path / "s", batch_writes=3) as store:
        store.add([("http://e/s0", "http://e/p", "http://e/o", "http://e/g")])
        assert not store.flushing  # no batch committed yet
        for i in (1, 2):  # the third write commits the batch, whose flush starts
            store.add([(f"http://e/s{i}", "http://e/p", "http://e/o", "http://e/g")])
        assert store.flushing
        release.set()
        store.add([("http://e/s3", "http://e/p", "http://e/o", "http://e/g")])
        deadline = time.monotonic() + 10
        while store.flushing and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not store.flushing
    with LmdbStore(tmp_path / "n", durability="nosync", batch_writes=3) as store:
        for i in range(4):
            store.add([(f"http://e/s{i}", "http://e/p", "http://e/o", "http://e/g")])
            assert not store.flushing  # an unsynced commit has no flush


def test_an_intent_of_another_store_is_refused_and_changes_nothing(tmp_path, monkeypatch):
    import shutil

    for name in ("a", "b"):
        with LmdbStore(tmp_path / name, batch_writes=2) as store:
            for i in range(5 if name == "a" else 9):
                store.add([(f"http://e/{name}{i}", "http://e/p", f"http://e/o{i}", "http://e/g")])
    # a pending intent of store a, put beside store b
    intent = CommitIntent(tmp_path / "a")
    with LmdbStore(tmp_path / "a", readonly=True, create=False) as store:
        info = store.env.info()
    from lakebench.store.commitsync import meta_pages

    intent.write(info["last_txnid"], info["page_size"], meta_pages(tmp_path / "a" / "data.mdb", info["page_size"]))
    intent.close()
    shutil.copy(tmp_path / "a" / "commit.intent", tmp_path / "b" / "commit.intent")
    before = (tmp_path / "b" / "data.mdb").read_bytes()[:8192]
    with pytest.raises(StoreError, match="does not belong"):
        LmdbStore(tmp_path / "b")
    assert (tmp_path / "b" / "data.mdb").read_bytes()[:8192] == before
