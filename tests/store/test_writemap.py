"""The batch of the log's owner writes its pages in place through the map (MDB_WRITEMAP), its file
allocated ahead of what a write may take: a full disk is an error, never a SIGBUS.  A writer
reserves a map as large as its file system, so that it never remaps on the write path."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from lakebench._store import DEFAULT_INDEX_STAGE, TXN_PAGES, WRITEMAP_STEP
from lakebench.store import LmdbStore, check, map_reserve

from ..conftest import fill_disk, mounted_tmpfs


def test_the_log_owner_writes_in_place_the_others_do_not(tmp_path):
    with LmdbStore(tmp_path / "n", durability="nosync") as store:
        assert store.env.writemap
    with LmdbStore(tmp_path / "d", durability="durable") as store:
        assert store.env.writemap  # its commits flushed on a thread of their own (commitsync)
    with LmdbStore(tmp_path / "p", durability="durable", writemap=False) as store:
        assert not store.env.writemap
    with LmdbStore(tmp_path / "plain", durability="nosync", log=False) as store:
        assert not store.env.writemap  # several processes may write it
    with LmdbStore(tmp_path / "n", readonly=True, create=False) as store:
        assert not store.env.writemap


def test_the_file_holds_blocks_for_the_whole_map_and_gives_them_back_at_close(tmp_path):
    data = tmp_path / "s" / "data.mdb"
    store = LmdbStore(tmp_path / "s", durability="nosync", map_size=8 << 20)
    store.add([(f"http://e/s{k}", "http://e/p", f"http://e/o{k}", "http://e/g") for k in range(2000)])
    store.close()
    store = LmdbStore(tmp_path / "s", durability="nosync", map_size=8 << 20)
    info = store.env.info()
    assert os.stat(data).st_blocks * 512 >= info["map_size"] >= 8 << 20
    store.close()
    assert os.stat(data).st_size == info["used_bytes"] < 8 << 20  # past the last page: given back
    with LmdbStore(tmp_path / "s", durability="nosync") as store:
        assert store.count() == 2000
    assert check(tmp_path / "s") == []


#: A writer until the disk is full, in a child process (a SIGBUS would kill it): each write one
#: literal of LITERAL characters, to a store opened with STORE_ARGS.
WRITER_TEMPLATE = textwrap.dedent("""
    import sys
    from lakebench.store import LmdbStore, NoSpaceError
    store = LmdbStore(sys.argv[1], durability="nosync", STORE_ARGS)
    assert store.env.writemap
    acknowledged = 0
    try:
        for i in range(10**6):
            store.add([(f"http://e/s{i}", "http://e/p", "x" * LITERAL + str(i), "http://e/g")])
            acknowledged += 1
    except NoSpaceError as exc:
        print("refused", acknowledged, exc, flush=True)
    assert store.count() == acknowledged  # reads go on
    try:
        store.close()
    except NoSpaceError as exc:  # the last batch: in the log, for the next open
        print("close refused", exc, flush=True)
""")
WRITER = WRITER_TEMPLATE.replace("STORE_ARGS", "map_size=1 << 20, batch_writes=64").replace("LITERAL", "2000")


def test_a_full_disk_is_an_error_when_the_map_grows_not_a_sigbus(small_disk):
    """Writes until the disk is full (a tmpfs of 48 MB, 24 MB of it taken): the map cannot
    grow again, the write is refused with NoSpaceError, the process lives, and every
    acknowledged write is there once space is back."""
    path = small_disk / "s"
    filler = fill_disk(small_disk, 24 << 20)
    done = subprocess.run([sys.executable, "-c", WRITER, str(path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]  # a SIGBUS would be -7
    refused = next(line for line in done.stdout.splitlines() if line.startswith("refused"))
    acknowledged = int(refused.split()[1])
    assert acknowledged > 1000 and "no space" in refused
    filler.unlink()
    with LmdbStore(path, durability="nosync") as store:
        assert store.count() == acknowledged
    assert check(path) == []


def test_an_open_without_room_for_the_map_writes_with_pwrite(small_disk):
    """No room to allocate the map: the store opens all the same, written with pwrite."""
    filler = fill_disk(small_disk, 4 << 20)
    try:
        with LmdbStore(small_disk / "s", durability="nosync", map_size=32 << 20) as store:
            assert not store.env.writemap
            store.add([("http://e/s", "http://e/p", "http://e/o", "http://e/g")])
        assert os.stat(small_disk / "s" / "data.mdb").st_size < 4 << 20  # what the failed allocation took, back
    finally:
        filler.unlink()
    with LmdbStore(small_disk / "s", durability="nosync", map_size=32 << 20) as store:
        assert store.count() == 1 and store.env.writemap  # room again


@pytest.mark.parametrize("durability", ["nosync", "durable"])
def test_a_writer_reserves_its_file_system_and_never_remaps(tmp_path, durability):
    path = tmp_path / "s"
    with LmdbStore(path, durability=durability, batch_writes=50) as store:
        reserved = store.env.info()["map_size"]
        assert reserved == map_reserve(path) >= os.statvfs(path).f_blocks * os.statvfs(path).f_frsize - (1 << 20)
        for k in range(40):
            store.add([(f"http://e/s{k}", "http://e/p", "y" * 3000 + str(j), "http://e/g") for j in range(100)])
        info = store.env.info()
        assert info["map_size"] == reserved  # grown by nothing: no remap
        if durability == "nosync":
            # Blocks for the pages used and a transaction's room, not for the map reserved.
            blocks = os.stat(path / "data.mdb").st_blocks * 512
            room = TXN_PAGES * info["page_size"]
            assert info["used_bytes"] + room <= blocks <= info["used_bytes"] + room + (64 << 20) * 3 + WRITEMAP_STEP
    assert check(path) == []


@pytest.mark.parametrize("durability", ["nosync", "durable"])
def test_after_a_commit_the_next_batches_blocks_are_allocated_off_the_writing_thread(tmp_path, durability):
    """The writer's own ensure_room then finds them there: an allocation on the writing thread
    waited 51 ms once, for the file system's block bitmap read behind the disk's writes."""
    import time

    from lakebench.store.lmdb_store import _ROOM_AHEAD

    path = tmp_path / "s"
    with LmdbStore(path, durability=durability, batch_writes=3) as store:
        for k in range(3):  # the third commits the batch
            store.add([(f"http://e/s{k}-{j}", "http://e/p", f"http://e/o{j}", "http://e/g") for j in range(100)])
        info = store.env.info()
        ahead = info["used_bytes"] + TXN_PAGES * info["page_size"] + _ROOM_AHEAD
        deadline = time.monotonic() + 20
        # (the file has its blocks while the thread's fallocate runs; allocated is set once it returns)
        while ((os.stat(path / "data.mdb").st_blocks * 512 < ahead or store.env.allocated < ahead)
               and time.monotonic() < deadline):
            time.sleep(0.01)
        assert os.stat(path / "data.mdb").st_blocks * 512 >= ahead
        assert store.env.allocated >= ahead
        store.add([("http://e/after", "http://e/p", "http://e/o", "http://e/g")])
        assert store.count() == 301
    assert check(path) == []


def _faults_per_write(path, map_ahead: int) -> float:
    """The writing thread's minor page faults per write of 1,500 seed children into a durable
    store (after its first batch; each commit's flush and the work after it done before the
    next write; the writes right after a commit left out, up to the last that puts the
    first stage of index entries: theirs are mostly free pages taken again, as they copy
    the indexes' paths the commit left read-only)."""
    import resource
    import time

    from lakebench.dataset import LDP_CONTAINS, DataSet
    from lakebench.store.terms import iri

    dataset = DataSet(children=1500)
    parent, contains = iri(dataset.parent_uri), iri(LDP_CONTAINS)
    faults = []
    with LmdbStore(path, durability="durable", batch_writes=256, map_ahead=map_ahead) as store:
        store.write(lambda txn: txn.add_graph(parent))
        commits = store.batch_commits["count"]
        after_commit = 0   # writes since the last commit, while they are left out
        # a seed child stages its 201 quads' entries of posc and ospc: the stage first
        # fills in this write after a commit, and is put over the next half as many
        filled = DEFAULT_INDEX_STAGE // 201 + 1
        settled = filled + (filled + 1) // 2 if DEFAULT_INDEX_STAGE else 1
        for i, child in enumerate(dataset):
            uri = iri(child.uri)
            before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
            store.ingest(child.ntriples, uri, extra=[(parent, contains, uri, parent)])
            taken = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before
            if store.batch_commits["count"] != commits:
                commits = store.batch_commits["count"]
                time.sleep(0.5)  # its flush, then the pages mapped ahead (some 0.1 s here)
                after_commit = 1
                continue
            if i > 256 and not after_commit:
                faults.append(taken)
            after_commit = 0 if after_commit in (0, settled) else after_commit + 1
        assert store.count() == 1500 * 200 + 1500
    assert check(path) == []
    return sum(faults) / len(faults)


@pytest.mark.alone  # the flush and the mapping ahead are given 0.5 s of wall time after each commit
def test_a_durable_commits_flush_maps_the_next_pages_writable(tmp_path):
    """The writes of a durable batch take new pages past the last committed one, each a page
    fault on its first touch: mapped writable ahead after each commit's flush
    (``map_ahead``), they fault on few."""
    probe = LmdbStore(tmp_path / "probe", durability="durable")
    try:
        if not probe.env.map_ahead(4096):
            pytest.skip("this kernel has no MADV_POPULATE_WRITE (Linux 5.14)")
    finally:
        probe.close()
    ahead = _faults_per_write(tmp_path / "ahead", map_ahead=64 << 20)
    without = _faults_per_write(tmp_path / "without", map_ahead=0)
    assert without > 4, without  # each write takes several new pages
    assert ahead < without / 3, (ahead, without)


@pytest.fixture
def roomy_disk(tmp_path):
    """A tmpfs of 1 GiB: room for a map written in place and its room, then full."""
    yield from mounted_tmpfs(tmp_path, 1 << 30)


RESERVING_WRITER = WRITER_TEMPLATE.replace("STORE_ARGS", "batch_writes=16").replace("LITERAL", "200_000")


def test_a_reserved_map_written_in_place_fills_its_disk_without_a_sigbus(roomy_disk):
    """The default map (as large as the file system) written in place until the disk is full:
    every write is refused before it takes a page with no block, the process lives, and every
    acknowledged write is there once space is back."""
    path = roomy_disk / "s"
    done = subprocess.run([sys.executable, "-c", RESERVING_WRITER, str(path)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]  # a SIGBUS would be -7
    refused = next(line for line in done.stdout.splitlines() if line.startswith("refused"))
    acknowledged = int(refused.split()[1])
    # Refused while the disk still had the room a write may need (a transaction's room, TXN_PAGES):
    # 500 writes of 200 kB are 100 MB of this GiB.
    assert acknowledged > 500 and "no space" in refused
    for leftover in roomy_disk.iterdir():
        if leftover.name != "s":
            leftover.unlink()
    with LmdbStore(path, durability="nosync", map_size=1 << 30) as store:
        assert store.count() == acknowledged
    assert check(path) == []
