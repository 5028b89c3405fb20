"""``lakebench compact``: the store rewritten with only what its quads use.

Unused terms are removed at each commit (``_termgc``), but LMDB never gives
a file's pages back to the file system, so a store that once held much more
keeps its size, and term ids are never reused (a process may keep an id
while its term exists; literals' ids are 31-bit sequence numbers).
Compacting copies the live quads into a new store beside the old one, which
numbers the terms they use afresh and leaves LMDB's free pages behind,
verifies the copy (:func:`lakebench.store.check`, and the same number of
quads), and puts it in place of ``data.mdb`` with one atomic rename.  The
old store is opened for writing throughout, so its write-ahead log is
replayed first and no server can open it meanwhile (the log's lock); a
crash at any point leaves the old store or the new one, whole.
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from lakebench.store import LmdbStore, StoreError, check
from lakebench.store.wal import fsync_path

#: Quads copied per write transaction of the new store.
CHUNK = 50_000
#: The new store's directory, inside the old one while it is built.
WORK_DIR = ".compacting"


@dataclass(frozen=True)
class Compacted:
    quads: int
    terms_before: int
    terms_after: int
    bytes_before: int
    bytes_after: int


def compact(path: str | os.PathLike, progress=None) -> Compacted:
    """Rewrite the store at ``path`` (see the module's docstring); ``progress(quads)``
    is called after each chunk.  StoreError if the copy does not check out
    (the old store is then left as it was)."""
    path = Path(path)
    before = check(path)
    if before:
        raise StoreError(f"{path}: the store has problems ({before[0]}); run lakebench check")
    work = path / WORK_DIR
    with LmdbStore(path) as source:  # its log replayed; its lock held until the end
        shutil.rmtree(work, ignore_errors=True)  # what an interrupted compaction left
        copied = 0
        with LmdbStore(work, durability="nosync", log=False) as target, source.read() as txn:
            chunk = []
            for quad in txn.quads(None, None, None, None):
                chunk.append(quad)
                if len(chunk) == CHUNK:
                    copied += target.add(chunk)
                    chunk = []
                    if progress is not None:
                        progress(copied)
            copied += target.add(chunk)
        after = check(work)
        quads = len(source)
        if after or copied != quads:
            shutil.rmtree(work, ignore_errors=True)
            raise StoreError(f"{path}: the compacted copy does not check out "
                             f"({after[0] if after else f'{copied} quads of {quads}'}); nothing was changed")
        fsync_path(work / "data.mdb")
        # The log emptied first: the copy's meta knows no log record, so a crash
        # after the rename must find none to replay.
        source.checkpoint()
        os.replace(work / "data.mdb", path / "data.mdb")  # the one step that changes the store
        fsync_path(path)
        # LMDB's lock file describes the old file's readers: a new one is made at the next open.
        (path / "lock.mdb").unlink(missing_ok=True)
        shutil.rmtree(work, ignore_errors=True)
    return Compacted(quads=quads, terms_before=before.summary["terms"], terms_after=after.summary["terms"],
                     bytes_before=before.summary["bytes"], bytes_after=(path / "data.mdb").stat().st_size)
