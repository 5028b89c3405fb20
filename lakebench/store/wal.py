"""The store's write-ahead log: where a durable write becomes durable.

A write is acknowledged once its record is in this log and the log is
fdatasynced: one small sequential write and one flush, instead of the
hundreds of scattered B-tree pages an LMDB commit of one child dirties.
The index updates themselves wait in one open LMDB write transaction (the
batch) and reach disk together, under one durable LMDB commit, every few
hundred writes.  docs/store.rst explains the design and its proof.

The file ``wal`` sits beside ``data.mdb``.  It is a sequence of records::

    magic b"LBW1" | seq u64 | length u32 | crc32 u32 | payload (length bytes)

little-endian; the CRC covers ``seq``, ``length`` and the payload.
Sequence numbers increase by one from record to record.  After a batch is
committed, the LMDB meta sub-database holds the last sequence number it
contains (``wal_seq``), and the log is written again from offset 0: the
file is reused in place, so a record's fdatasync never has to change the
file's size (no file-system journal commit), except while the log grows
past its largest size so far.  Reading stops at the first record that is
torn (short, bad magic, bad CRC) or out of sequence: such a record was
never acknowledged, since acknowledgement waits for its flush.

A payload is the list of changes one write made, as the core's mutation
calls (:class:`LoggedTxn` records them); replaying them in order on the
state of the last commit rebuilds the batch exactly.

>>> import tempfile, os
>>> d = tempfile.mkdtemp()
>>> log = WriteAheadLog(os.path.join(d, "wal"), durability="nosync")
>>> log.append(1, encode_changes([("add", ([(b"Ia", b"Ib", b"Lc", b"Ig")],))]))
>>> log.append(2, encode_changes([("remove", (b"Ia", None, None, None))]))
>>> [(seq, decode_changes(payload)) for seq, payload in log.records()]
[(1, [('add', ([(b'Ia', b'Ib', b'Lc', b'Ig')],))]), (2, [('remove', (b'Ia', None, None, None))])]
>>> log.reset()     # a batch commit covered both: the next record goes to offset 0
>>> log.append(3, b"")
>>> [seq for seq, _ in log.records()]
[3]
>>> log.close()
"""
from __future__ import annotations

import fcntl
import os
import struct
import zlib
from pathlib import Path
from typing import Iterator

from lakebench._store import StoreError
from lakebench.durability import Durability

_HEADER = struct.Struct("<4sQII")
_MAGIC = b"LBW1"
_U32 = struct.Struct("<I")
_NONE = 0xFFFFFFFF  # the length of an absent term (a wildcard of remove)
#: Records larger than this are refused when read (a damaged length field).
MAX_RECORD = 1 << 31


class LogError(Exception):
    """The log cannot be used (held by another process, or damaged beyond its tail)."""


class WriteAheadLog:
    """Append, flush, read back and reset the log file at ``path``.

    The file is locked (``flock``) for as long as it is open: one process
    at a time owns a store's log, and with it the batch.  A read-only open
    takes a shared lock if it can; ``writer_alive`` says whether a writer
    holds the log (its records are then not the whole story: its batch is
    still being written).
    """

    def __init__(self, path: str | os.PathLike, *, durability: Durability | str = Durability.DURABLE,
                 readonly: bool = False):
        self.path = os.fspath(path)
        self.durability = Durability.parse(durability)
        created = not os.path.exists(self.path)
        self.writer_alive = False
        if readonly:
            self._fd = os.open(self.path, os.O_RDONLY)
            try:
                fcntl.flock(self._fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                self.writer_alive = True
        else:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(self._fd)
                raise LogError(f"{self.path}: the store is open for writing in another process") from None
            if created and self.durability.syncs:
                # A new file's name is durable only once its directory is flushed.
                fsync_path(os.path.dirname(self.path) or ".")
        self._offset = 0  # where the next record goes
        self.size = 0     # bytes of records written since the last reset
        # A second open file for sync_apart(): Linux reports a write-back error once
        # per open file, to the first flush that looks.
        self._apart = -1 if readonly else os.open(self.path, os.O_RDONLY)

    # -- writing -----------------------------------------------------------
    def append(self, seq: int, payload: bytes) -> None:
        """Write one record at the tail and, when durable, fdatasync it."""
        self.write(seq, payload)
        self.sync()

    def write(self, seq: int, payload: bytes) -> None:
        """Write one record at the tail, unflushed: :meth:`sync` makes it durable
        (with every record written before it)."""
        if len(payload) > MAX_RECORD:
            raise LogError(f"a write of {len(payload)} bytes is larger than a log record may be ({MAX_RECORD})")
        header = _HEADER.pack(_MAGIC, seq, len(payload), _crc(seq, payload))
        record = header + payload
        view, written = memoryview(record), 0
        while written < len(record):
            # A short write is retried: the retry says why it fell short (ENOSPC,
            # usually).  On failure the offset stays: the torn tail is overwritten.
            written += os.pwrite(self._fd, view[written:], self._offset + written)
        self._offset += len(record)
        self.size += len(record)

    def sync(self) -> None:
        """fdatasync the file, when durable: every record written before the call
        is on stable storage once it returns.  Safe to call from another thread
        than the writer's (the server flushes on a thread of its own)."""
        if self.durability.syncs:
            os.fdatasync(self._fd)

    def sync_apart(self) -> None:
        """:meth:`sync` through an open file of its own: a flush of :meth:`sync` running
        at the same time (on another thread) cannot take a write-back error from it."""
        if self.durability.syncs:
            os.fdatasync(self._apart)

    def reset(self) -> None:
        """Start again at offset 0: every record so far is in a committed batch."""
        self._offset = 0
        self.size = 0

    def truncate(self) -> None:
        """Empty the file (on a clean close, so the log costs no disk at rest)."""
        os.ftruncate(self._fd, 0)
        if self.durability.syncs:
            os.fsync(self._fd)
        self.reset()

    def cut_after(self, records: list[tuple[int, bytes]]) -> None:
        """Drop everything after ``records`` (those read at open), from the file
        itself, durably: a damaged record and whatever follows it."""
        os.ftruncate(self._fd, sum(_HEADER.size + len(payload) for _, payload in records))
        os.fsync(self._fd)

    def position_after(self, records: list[tuple[int, bytes]]) -> None:
        """Continue after ``records`` (those read at open), so none is overwritten."""
        self._offset = sum(_HEADER.size + len(payload) for _, payload in records)
        self.size = self._offset

    # -- reading -----------------------------------------------------------
    def records(self) -> Iterator[tuple[int, bytes]]:
        """The valid records from offset 0, in order, up to the first torn or stale one."""
        offset, expected = 0, None
        while True:
            header = os.pread(self._fd, _HEADER.size, offset)
            if len(header) < _HEADER.size:
                return
            magic, seq, length, crc = _HEADER.unpack(header)
            if magic != _MAGIC or length > MAX_RECORD or (expected is not None and seq != expected):
                return
            payload = os.pread(self._fd, length, offset + _HEADER.size)
            if len(payload) < length or _crc(seq, payload) != crc:
                return
            yield seq, payload
            offset += _HEADER.size + length
            expected = seq + 1

    def damage_past(self, applied: int) -> str | None:
        """:meth:`damage` after this file's own last readable record (or ``applied``, the
        store's, if later): in a store's older log file, its batch's records end there."""
        records = list(self.records())
        return self.damage(max(applied, records[-1][0]) if records else applied)

    def damage(self, last_good: int) -> str | None:
        """Why records after the readable ones would be lost, or None.

        Reading stops at the first record that is torn or out of sequence,
        which is right for a tail cut by a crash: that record was never
        acknowledged, and nothing follows it.  But if the record where it
        stops is whole and numbered next (``last_good`` + 1, ``last_good``
        being the last sequence number the store and the readable records
        hold) and fails only its CRC, and the record its length leads to is
        valid and numbered after it, the stop is damage in the middle of the
        log: the writes after it were acknowledged, and a replay that stopped
        there would drop them silently.

        Only that chain is followed, from the stop, by the records' own
        lengths and exact sequence numbers; the file is never searched for a
        record's magic, since a payload carries a client's bytes (a literal
        can hold a forged record), and old records left beyond the tail since
        the log was last reset are payloads as far as this is concerned.
        Damage to a record's 20-byte header (its length) is not told apart
        from a torn tail.
        """
        end = sum(_HEADER.size + len(payload) for _, payload in self.records())
        size = os.fstat(self._fd).st_size
        header = os.pread(self._fd, _HEADER.size, end)
        if len(header) < _HEADER.size:
            return None
        magic, seq, length, _ = _HEADER.unpack(header)
        after = end + _HEADER.size + length
        if magic != _MAGIC or seq != last_good + 1 or after > size:
            return None
        if self._valid_at(after, size) != last_good + 2:
            return None
        later = self._chain_from(after, size)
        return (f"the log's record at byte {end} (write {last_good + 1}) is damaged, and "
                f"{later} acknowledged write(s) after it ({last_good + 2} to {last_good + 1 + later}) "
                "would be lost by a replay that stops there")

    def _valid_at(self, offset: int, size: int) -> int | None:
        """The sequence number of a whole, valid record at ``offset``, or None."""
        header = os.pread(self._fd, _HEADER.size, offset)
        if len(header) < _HEADER.size:
            return None
        magic, seq, length, crc = _HEADER.unpack(header)
        if magic != _MAGIC or offset + _HEADER.size + length > size:
            return None
        payload = os.pread(self._fd, length, offset + _HEADER.size)
        return seq if len(payload) == length and _crc(seq, payload) == crc else None

    def _chain_from(self, offset: int, size: int) -> int:
        """How many valid records follow each other in sequence from ``offset``."""
        count, expected = 0, None
        while True:
            seq = self._valid_at(offset, size)
            if seq is None or (expected is not None and seq != expected):
                return count
            length = _HEADER.unpack(os.pread(self._fd, _HEADER.size, offset))[2]
            offset += _HEADER.size + length
            count, expected = count + 1, seq + 1

    def close(self) -> None:
        if self._apart >= 0:
            os.close(self._apart)
            self._apart = -1
        if self._fd >= 0:
            os.close(self._fd)  # also releases the flock
            self._fd = -1


def share_writers_lock(path: str | os.PathLike) -> int:
    """Take, for a writer without a log, the shared lock on the log file at
    ``path`` (created if absent) and return its descriptor; closing it frees the lock.

    Writers without a log commit to LMDB one write at a time, so several may
    share a store; a writer with a log holds LMDB's writer lock across its
    batch, so the two kinds must not meet: each kind's lock excludes the other.
    """
    fd = os.open(os.fspath(path), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise LogError(f"{os.fspath(path)}: the store is open with its write-ahead log in another process") from None
    return fd


def _crc(seq: int, payload: bytes) -> int:
    return zlib.crc32(payload, zlib.crc32(struct.pack("<QI", seq, len(payload))))


def fsync_path(path: str | os.PathLike) -> None:
    """fsync a file or a directory by its path (a directory: so that a file
    created or renamed in it stays there after a crash)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# ---------------------------------------------------------------- payloads
# One byte names each mutation of the core's Txn; its arguments follow.
_OPS = {
    "ingest_ntriples": b"N",  # data, graph, extra quads
    "add": b"A",              # quads
    "remove": b"R",           # s, p, o, c (each may be absent)
    "add_graph": b"G",        # term
    "remove_graph": b"g",     # term
    "set_namespace": b"S",    # prefix, namespace (UTF-8)
    "del_namespace": b"s",    # prefix (UTF-8)
}
_NAMES = {code: name for name, code in _OPS.items()}
#: The core's mutation calls, the only ones a log records.
MUTATIONS = frozenset(_OPS)


def encode_changes(changes: list[tuple[str, tuple]]) -> bytes:
    """``[(mutation name, args)]`` as one record payload."""
    out = bytearray()
    for name, args in changes:
        out += _OPS[name]
        if name == "ingest_ntriples":
            data, graph, extra = args
            _put(out, bytes(data))
            _put(out, graph)
            _put_quads(out, extra)
        elif name == "add":
            _put_quads(out, args[0])
        elif name == "remove":
            for t in args:
                _put(out, t)
        elif name in ("add_graph", "remove_graph"):
            _put(out, args[0])
        elif name == "set_namespace":
            _put(out, args[0].encode())
            _put(out, args[1].encode())
        else:  # del_namespace
            _put(out, args[0].encode())
    return bytes(out)


def decode_changes(payload: bytes) -> list[tuple[str, tuple]]:
    """The inverse of :func:`encode_changes`; LogError on a malformed payload."""
    reader = _Reader(payload)
    changes = []
    while not reader.done():
        name = _NAMES.get(reader.take(1))
        if name is None:
            raise LogError("unknown change in a log record")
        if name == "ingest_ntriples":
            args = (reader.term(), reader.term(), reader.quads())
        elif name == "add":
            args = (reader.quads(),)
        elif name == "remove":
            args = (reader.term(), reader.term(), reader.term(), reader.term())
        elif name in ("add_graph", "remove_graph"):
            args = (reader.term(),)
        elif name == "set_namespace":
            args = (reader.term().decode(), reader.term().decode())
        else:
            args = (reader.term().decode(),)
        changes.append((name, args))
    return changes


def _put(out: bytearray, term: bytes | None) -> None:
    if term is None:
        out += _U32.pack(_NONE)
    else:
        out += _U32.pack(len(term))
        out += term


def _put_quads(out: bytearray, quads) -> None:
    quads = list(quads)
    out += _U32.pack(len(quads))
    for quad in quads:
        for t in quad:
            _put(out, t)


class _Reader:
    def __init__(self, data: bytes):
        self.data = memoryview(data)
        self.pos = 0

    def done(self) -> bool:
        return self.pos >= len(self.data)

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise LogError("truncated log record")
        chunk = bytes(self.data[self.pos:self.pos + n])
        self.pos += n
        return chunk

    def term(self) -> bytes | None:
        (n,) = _U32.unpack(self.take(4))
        return None if n == _NONE else self.take(n)

    def quads(self) -> list[tuple]:
        (n,) = _U32.unpack(self.take(4))
        return [(self.term(), self.term(), self.term(), self.term()) for _ in range(n)]


_NOT_LOGGED = frozenset({"commit", "abort", "set_meta"})


class LoggedTxn:
    """A core write transaction that records its mutations for the log.

    Reads pass straight through to the core transaction; each mutation is
    applied, then noted in ``changes`` with its arguments as plain values
    (iterables are read once, here).  A mutation that raises is not noted:
    the core applied nothing, or aborted the whole transaction.
    """

    def __init__(self, txn):
        self._txn = txn
        self.changes: list[tuple[str, tuple]] = []

    def __getattr__(self, name):  # reads: count, quads, serialize, ...
        if name in _NOT_LOGGED:
            # Ending the batch or writing its bookkeeping is the store's job;
            # from a logged write it would slip past the log.
            raise StoreError(f"{name}() is not allowed inside a store write")
        return getattr(self._txn, name)

    def _apply(self, name: str, args: tuple):
        result = getattr(self._txn, name)(*args)
        self.changes.append((name, args))
        return result

    def ingest_ntriples(self, data, graph, extra=()):
        return self._apply("ingest_ntriples", (bytes(data), graph, [tuple(q) for q in extra]))

    def add(self, quads):
        return self._apply("add", ([tuple(q) for q in quads],))

    def remove(self, s=None, p=None, o=None, c=None):
        return self._apply("remove", (s, p, o, c))

    def add_graph(self, term):
        return self._apply("add_graph", (term,))

    def remove_graph(self, term):
        return self._apply("remove_graph", (term,))

    def set_namespace(self, prefix, namespace):
        return self._apply("set_namespace", (prefix, namespace))

    def del_namespace(self, prefix):
        return self._apply("del_namespace", (prefix,))


def replay(txn, payload: bytes) -> None:
    """Apply one record's changes to ``txn``, in order."""
    for name, args in decode_changes(payload):
        getattr(txn, name)(*args)


#: The log's file in a store's directory.
LOG_FILE = "wal"
#: The second log file of a durable store: its batches' records go to the two files in turn,
#: so that a batch's records outlive its commit until that commit is flushed
#: (lakebench.store.commitsync).
SECOND_LOG_FILE = "wal.2"
LOG_FILES = (LOG_FILE, SECOND_LOG_FILE)
#: The meta key holding the sequence number of the last log record in the store.
APPLIED_KEY = "wal_seq"
_SEQ = struct.Struct(">Q")


def set_applied_sequence(txn, seq: int) -> None:
    """Record in the store (``txn``, a write) that it holds every log record up to ``seq``."""
    txn.set_meta(APPLIED_KEY, _SEQ.pack(seq))


def applied_sequence(txn) -> int:
    """The sequence number of the last log record the store holds."""
    value = txn.get_meta(APPLIED_KEY)
    return _SEQ.unpack(value)[0] if value else 0


def in_sequence(logs) -> list[tuple[int, bytes]]:
    """The records of ``logs`` (a store's one or two), in sequence order: each file
    holds one run of consecutive records, a batch's (or an older one's, stale)."""
    runs = sorted((run for run in (list(log.records()) for log in logs) if run), key=lambda run: run[0][0])
    return [record for run in runs for record in run]


def read_logs(path) -> list[WriteAheadLog]:
    """The log files of the store at ``path`` that exist, opened read-only (close them)."""
    return [WriteAheadLog(Path(path) / name, readonly=True) for name in LOG_FILES if (Path(path) / name).exists()]


def writer_alive(path) -> bool:
    """Whether a process owns the log of the store at ``path`` (its writer, whose batch
    and last commits are not all on disk yet)."""
    logs = read_logs(path)
    try:
        return any(log.writer_alive for log in logs)
    finally:
        for log in logs:
            log.close()


def pending_log_records(path, env) -> int:
    """How many log records of the store at ``path`` are not in its LMDB file yet,
    0 also when a live process owns the log (its batch is not ours to see)."""
    logs = read_logs(path)
    try:
        if not logs or any(log.writer_alive for log in logs):
            return 0
        with env.begin() as txn:
            applied = applied_sequence(txn)
        return sum(1 for seq, _ in in_sequence(logs) if seq > applied)
    finally:
        for log in logs:
            log.close()
