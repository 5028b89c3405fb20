"""The nosync batch writes its pages in place through the map (MDB_WRITEMAP), its file
allocated to the map's size: a full disk is an error when the map grows, never a SIGBUS."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from lakebench.store import LmdbStore, check

from ..conftest import fill_disk


def test_the_nosync_writer_writes_in_place_the_others_do_not(tmp_path):
    with LmdbStore(tmp_path / "n", durability="nosync") as store:
        assert store.env.writemap
    with LmdbStore(tmp_path / "d", durability="durable") as store:
        assert not store.env.writemap  # its pwrites are what the power-loss harness sees
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


WRITER = textwrap.dedent("""
    import sys
    from lakebench.store import LmdbStore, NoSpaceError
    store = LmdbStore(sys.argv[1], durability="nosync", map_size=1 << 20, batch_writes=64)
    assert store.env.writemap
    acknowledged = 0
    try:
        for i in range(10**6):
            store.add([(f"http://e/s{i}", "http://e/p", "x" * 2000 + str(i), "http://e/g")])
            acknowledged += 1
    except NoSpaceError as exc:
        print("refused", acknowledged, exc, flush=True)
    assert store.count() == acknowledged  # reads go on
    try:
        store.close()
    except NoSpaceError as exc:  # the last batch: in the log, for the next open
        print("close refused", exc, flush=True)
""")


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
