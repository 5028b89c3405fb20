"""``lakebench compact``: the store rewritten without free pages, with dense ids; the quads are the same."""
from __future__ import annotations

import subprocess
import sys

import pytest

from lakebench.store import LmdbStore, StoreError, check
from lakebench.store.compact import compact
from lakebench.store.terms import iri, literal

from .conftest import crash_with_logged_writes

S, P, G = iri("http://ex.org/s"), iri("http://ex.org/p"), iri("http://ex.org/g")


def _replaced_again_and_again(path, times: int = 300) -> set:
    """A store whose 10 literals were replaced ``times`` times: its quads."""
    with LmdbStore(path) as store:
        for k in range(times):
            store.remove(S, P, None, G)
            store.add([(S, P, literal(f"value {k} of {j} " + "x" * 40), G) for j in range(10)])
        store.add([(iri("http://ex.org/t"), P, b"B_:b1", G)])  # a blank node goes across as it is
        return set(store.quads())


def test_compact_keeps_the_quads_and_gives_back_the_free_pages(tmp_path):
    """Unused terms go at each commit; what compact adds is a file without the
    free pages of deleted data, and dense ids."""
    path = tmp_path / "s"
    with LmdbStore(path) as store:
        for k in range(400):
            store.add([(iri(f"http://ex.org/r{k}"), P, literal(f"value {k} of {j} " + "x" * 200), G)
                       for j in range(10)])
        for k in range(390):
            store.remove(iri(f"http://ex.org/r{k}"))
        quads = set(store.quads())
    before = check(path)
    assert before == [] and before.summary["terms"] < 120    # removed at their commits
    done = compact(path)
    after = check(path)
    assert after == [] and after.summary["terms"] == done.terms_after == before.summary["terms"]
    assert done.bytes_after < done.bytes_before / 4
    with LmdbStore(path) as store:
        assert set(store.quads()) == quads
        with store.read() as txn:   # renumbered from 1
            assert max(txn.term_id(o) & 0x7FFFFFFF for _, _, o, _ in quads) <= done.terms_after
        store.add([(S, P, literal("written after"), G)])  # and it takes writes
    assert check(path) == []


def test_compact_replays_the_log_first(tmp_path):
    crash_with_logged_writes(tmp_path / "s")
    assert compact(tmp_path / "s").quads == 10
    with LmdbStore(tmp_path / "s") as store:
        assert store.count(S) == 10


def test_compact_is_refused_while_the_store_is_served(tmp_path):
    _replaced_again_and_again(tmp_path / "s", times=5)
    with LmdbStore(tmp_path / "s"):  # another writer (a server) holds the log
        out = subprocess.run([sys.executable, "-m", "lakebench.cli", "compact", str(tmp_path / "s")],
                             capture_output=True, text=True)
        assert out.returncode == 1 and "another process" in out.stderr and len(out.stderr.splitlines()) == 1
    assert check(tmp_path / "s") == []


def test_a_damaged_store_is_not_compacted(tmp_path):
    _replaced_again_and_again(tmp_path / "s", times=5)
    wal = tmp_path / "s" / "wal"
    with LmdbStore(tmp_path / "s", batch_writes=1000) as store:
        for i in range(5):
            store.add([(S, P, iri(f"http://ex.org/o{i}"), G)])
        # the store is closed below: its log is committed and emptied
    size = (tmp_path / "s" / "data.mdb").stat().st_size
    with open(tmp_path / "s" / "data.mdb", "r+b") as f:  # both meta pages unreadable
        f.write(b"\0" * 8192)
    with pytest.raises(StoreError):
        compact(tmp_path / "s")
    assert (tmp_path / "s" / "data.mdb").stat().st_size == size and wal.exists()


def test_the_command_says_what_it_did(tmp_path):
    _replaced_again_and_again(tmp_path / "s", times=50)
    out = subprocess.run([sys.executable, "-m", "lakebench.cli", "compact", str(tmp_path / "s")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "consistent" in out.stdout and "terms" in out.stdout and "->" in out.stdout


def test_a_crash_right_after_the_rename_leaves_the_new_store_whole(tmp_path):
    """The one step that changes the store, then nothing: the next open finds the
    compacted store and no log record it cannot place."""
    crash_with_logged_writes(tmp_path / "s")
    code = ("import os, sys\n"
            "from lakebench.store import compact\n"
            "real = os.replace\n"
            "def replace_then_die(*args):\n"
            "    real(*args)\n"
            "    os._exit(0)\n"
            "compact.os.replace = replace_then_die\n"
            "compact.compact(sys.argv[1])\n")
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "s")], check=True)
    assert check(tmp_path / "s") == []
    with LmdbStore(tmp_path / "s") as store:
        assert store.count(S) == 10
