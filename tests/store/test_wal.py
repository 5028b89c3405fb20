"""The write-ahead log: its records, recovery, and how the store uses it."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from lakebench.store import LmdbStore, StoreError, check
from lakebench.store.terms import iri
from lakebench.store.wal import LogError, WriteAheadLog, decode_changes, encode_changes

from .conftest import crash_with_logged_writes

S, P = iri("http://ex.org/s"), iri("http://ex.org/p")


def _quad(i: int) -> tuple:
    return (S, P, iri(f"http://ex.org/o{i}"), S)


def test_changes_round_trip_every_mutation():
    changes = [
        ("ingest_ntriples", (b"<http://a> <http://b> <http://c> .\n", b"Ig", [(b"Ia", b"Ib", b"Lc", b"Ig")])),
        ("add", ([(b"Ia", b"Ib", b"Gen\x00x", b"Ig")],)),
        ("remove", (b"Ia", None, None, b"Ig")),
        ("add_graph", (b"Ig",)),
        ("remove_graph", (b"Bb1",)),
        ("set_namespace", ("ex", "http://ex.org/")),
        ("del_namespace", ("",)),
    ]
    assert decode_changes(encode_changes(changes)) == changes


def test_a_torn_or_damaged_tail_ends_the_log(tmp_path):
    log = WriteAheadLog(tmp_path / "wal", durability="nosync")
    for seq in (1, 2, 3):
        log.append(seq, b"x" * 100)
    log.close()
    size = os.path.getsize(tmp_path / "wal")
    with open(tmp_path / "wal", "r+b") as f:  # the last record half written
        f.truncate(size - 50)
    log = WriteAheadLog(tmp_path / "wal", durability="nosync")
    assert [seq for seq, _ in log.records()] == [1, 2]
    log.close()
    with open(tmp_path / "wal", "r+b") as f:  # a flipped byte in the second record's payload
        f.seek(size // 3 + 60)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0xFF]))
    log = WriteAheadLog(tmp_path / "wal", durability="nosync")
    assert [seq for seq, _ in log.records()] == [1]
    log.close()


def test_stale_records_after_a_reset_are_not_read(tmp_path):
    log = WriteAheadLog(tmp_path / "wal", durability="nosync")
    for seq in (1, 2, 3):
        log.append(seq, b"a" * 10)
    log.reset()
    log.append(4, b"b" * 10)  # overwrites record 1: records 2 and 3 follow, out of sequence
    assert [seq for seq, _ in log.records()] == [4]
    log.close()


def test_one_writer_process_owns_the_log(tmp_path):
    with LmdbStore(tmp_path / "s"):
        code = "import sys; from lakebench.store import LmdbStore; LmdbStore(sys.argv[1])"
        proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "s")], capture_output=True, text=True)
        assert proc.returncode != 0
        assert "open for writing in another process" in proc.stderr


def test_a_crash_leaves_writes_in_the_log_and_the_next_open_replays_them(tmp_path):
    crash_with_logged_writes(tmp_path / "s")
    problems = check(tmp_path / "s")
    assert problems == [] and problems.summary["log_pending"] == 10
    with pytest.raises(StoreError, match="in the log only"):
        LmdbStore(tmp_path / "s", readonly=True)
    with LmdbStore(tmp_path / "s") as store:  # recovery
        assert store.count(S) == 10
    assert check(tmp_path / "s").summary["log_pending"] == 0
    with LmdbStore(tmp_path / "s", readonly=True) as store:
        assert store.count(S) == 10
    assert os.path.getsize(tmp_path / "s" / "wal") == 0  # a clean close empties the log


def _damage_record(path, index: int) -> None:
    """Flip a byte in the payload of the log's record number ``index`` (0-based)."""
    import struct

    header = struct.Struct("<4sQII")
    data = bytearray((path / "wal").read_bytes())
    offset = 0
    for _ in range(index):
        offset += header.size + header.unpack_from(data, offset)[2]
    data[offset + header.size] ^= 0xFF
    (path / "wal").write_bytes(data)


def test_a_record_damaged_in_the_middle_is_reported_and_refused(tmp_path):
    """Acknowledged writes after a damaged record are never dropped silently."""
    crash_with_logged_writes(tmp_path / "s")
    _damage_record(tmp_path / "s", 3)
    problems = check(tmp_path / "s")
    assert len(problems) == 1 and "write 4" in problems[0] and "6 acknowledged write(s)" in problems[0]
    with pytest.raises(LogError, match="damaged.*--truncate-damaged-log"):
        LmdbStore(tmp_path / "s")
    assert len(check(tmp_path / "s")) == 1  # the refused open changed nothing
    out = subprocess.run([sys.executable, "-m", "lakebench.cli", "check", str(tmp_path / "s")],
                         capture_output=True, text=True)
    assert out.returncode == 1 and "damaged" in out.stdout + out.stderr
    # The operator's choice, and then a crash again: the dropped records stay dropped.
    crash_with_logged_writes(tmp_path / "s", writes=1, first=10, truncate_damaged_log=True)
    assert check(tmp_path / "s") == []
    with LmdbStore(tmp_path / "s") as store:
        assert store.count(S) == 4


def test_a_forged_record_in_a_clients_data_is_no_damage(tmp_path):
    """A payload carries a client's bytes: a literal may hold a whole record,
    magic, a high sequence number and a valid CRC.  Left beyond the tail once
    the log is reset and written again shorter, it must not pass for damage."""
    import struct
    import zlib

    forged_payload = b"x" * 40
    forged = struct.pack("<4sQII", b"LBW1", 999_999, len(forged_payload),
                         zlib.crc32(forged_payload, zlib.crc32(struct.pack("<QI", 999_999, len(forged_payload))))
                         ) + forged_payload
    log = WriteAheadLog(tmp_path / "wal", durability="nosync")
    log.append(1, encode_changes([("add", ([(b"Ia", b"Ib", b"L" + b"y" * 100 + forged, b"Ig")],))]))
    log.reset()  # a batch commit covered record 1
    log.append(2, encode_changes([("remove", (b"Ia", None, None, None))]))
    assert [seq for seq, _ in log.records()] == [2]
    assert log.damage(2) is None
    log.close()


def test_a_torn_last_record_is_no_damage(tmp_path):
    crash_with_logged_writes(tmp_path / "s")
    _damage_record(tmp_path / "s", 9)
    assert check(tmp_path / "s") == []
    with LmdbStore(tmp_path / "s") as store:
        assert store.count(S) == 9


def test_a_write_that_fails_after_changing_the_batch_leaves_nothing(tmp_path):
    with LmdbStore(tmp_path / "s", batch_writes=1000) as store:
        store.add([_quad(0)])

        def half_done(txn):
            txn.add([_quad(1)])
            raise RuntimeError("refused after the first change")

        with pytest.raises(RuntimeError):
            store.write(half_done)
        assert store.count(S) == 1  # the earlier, acknowledged write stays
        store.add([_quad(2)])
        assert store.count(S) == 2
    with LmdbStore(tmp_path / "s") as store:
        assert sorted(q[2] for q in store.quads(S)) == [iri("http://ex.org/o0"), iri("http://ex.org/o2")]


def test_batches_commit_and_the_log_starts_again(tmp_path):
    crash_with_logged_writes(tmp_path / "s", batch_writes=4)
    summary = check(tmp_path / "s").summary
    # two batches of 4 are committed; the last 2 writes are in the log alone,
    # which was written again from its start after each commit
    assert (summary["log_applied"], summary["log_pending"]) == (8, 2)
    assert os.path.getsize(tmp_path / "s" / "wal") < 4 * 200
    with LmdbStore(tmp_path / "s") as store:
        assert store.count(S) == 10


def test_a_full_map_grows_and_keeps_the_batch(tmp_path, small_workload):
    with LmdbStore(tmp_path / "s", map_size=1 << 16, batch_writes=1000) as store:
        for child in small_workload:
            store.ingest(child.ntriples, child.uri)
        assert len(store) == 20 * 200
    assert check(tmp_path / "s") == []
    with LmdbStore(tmp_path / "s") as store:
        assert len(store) == 20 * 200


def test_a_store_opens_once_per_process_and_check_reads_through_it(tmp_path):
    with LmdbStore(tmp_path / "s", batch_writes=1000) as store:
        store.add([_quad(0)])
        with pytest.raises(StoreError, match="already open in this process"):
            LmdbStore(tmp_path / "s", readonly=True)
        problems = check(tmp_path / "s")  # through the open store: its batch included
        assert problems == [] and problems.summary["quads"] == 1 and problems.summary["log_pending"] == 1
    assert check(tmp_path / "s").summary["quads"] == 1
