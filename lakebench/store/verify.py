"""Verifying a store: :func:`check` (what ``lakebench check`` reports) and
:func:`check_isolated`, the same walk in a child process, where a crash of
liblmdb on a damaged file costs nothing (:mod:`.preflight`)."""
from __future__ import annotations

from pathlib import Path

from lakebench._store import Environment
from lakebench.store.lmdb_store import Problems, check_snapshot, opened
from lakebench.store.preflight import StoreDamaged, data_file, run_in_child, verify_file
from lakebench.store.commitsync import CommitIntent
from lakebench.store.wal import LogError, applied_sequence, decode_changes, in_sequence, read_logs


def _check_log(path: Path, env, result: Problems) -> None:
    """Every record of the logs beyond the store decodes, in sequence."""
    result.summary["log_pending"] = 0
    # A batch commit cut before its flush was confirmed: the next writable open goes
    # back to the snapshot before it and replays the log (lakebench.store.commitsync).
    result.summary["commit_cut"] = CommitIntent.pending_at(path) is not None
    logs = read_logs(path)
    if not logs:
        return
    try:
        with env.begin() as txn:
            applied = applied_sequence(txn)
        result.summary["log_applied"] = applied
        for log in logs:  # each by its own last record, as the store's open looks
            damage = log.damage_past(applied)
            if damage is not None:
                result.append(f"log: {damage}")
        expected = applied + 1
        for seq, payload in in_sequence(logs):
            if seq <= applied:
                continue
            if seq != expected:
                what = "the last in the store" if expected == applied + 1 else "the record before it"
                result.append(f"log: record {seq} follows {expected - 1}, {what}: records are missing")
            expected = seq + 1
            try:
                decode_changes(payload)
            except LogError as exc:
                result.append(f"log: record {seq}: {exc}")
            result.summary["log_pending"] += 1
    finally:
        for log in logs:
            log.close()


def check(path) -> Problems:
    """Verify the store at ``path``: the list of problems, empty when consistent.

    The result's ``summary`` holds counts (quads, triples, terms, graphs,
    subjects, entries of each index, (graph, subject) pairs of ``cs``, hash
    collisions) and ``log_pending``,
    the acknowledged writes still only in the write-ahead log (replayed at
    the next writable open; each must decode, in sequence).  The store is
    opened read-only; the check reads one snapshot.  A store open in this
    process is checked through it (what it reads, its batch included).
    A file that fails the meta-page check (:func:`.preflight.verify_file`) is
    one problem, and is not mapped; damage inside the trees can still crash
    liblmdb here, which :func:`check_isolated` (``lakebench check``)
    turns into an error.
    """
    path = Path(path)
    store = opened(path)
    if store is not None:
        result = store.check()
        result.summary["bytes"] = sum(f.stat().st_size for f in path.glob("*.mdb"))
        return result
    if not (path / "data.mdb").exists():
        result = Problems([f"{path}: no LMDB store here (no data.mdb)"])
        result.summary = {}
        return result
    try:
        verify_file(path)  # before mapping it (lakebench.store.preflight)
    except StoreDamaged as exc:
        result = Problems([str(exc)])
        result.summary = {}
        return result
    env = Environment(path, readonly=True, map_size=0)
    try:
        with env.begin() as txn:
            result = check_snapshot(lambda op: op(txn))
        _check_log(path, env, result)
        result.summary["bytes"] = sum(f.stat().st_size for f in path.glob("*.mdb"))
        return result
    finally:
        env.close()


def _walk(path: str):
    problems = check(path)
    return list(problems), problems.summary


def check_isolated(path) -> Problems:
    """:func:`check` of the store at ``path``, run in a child process after
    :func:`.preflight.verify_file`: the same problems and summary, or
    :class:`StoreDamaged` (one line) when the file fails the meta check or
    the walk crashes liblmdb or meets a page LMDB calls corrupted.  A store
    open in this process is checked through it, here (LMDB forbids using an
    environment across a fork)."""
    if opened(path) is not None:
        return check(path)
    file = data_file(path)
    verify_file(file)
    problems, summary = run_in_child(file, "the walk", _walk, str(path))
    result = Problems(problems)
    result.summary = summary
    return result
