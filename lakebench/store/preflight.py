"""What runs before LMDB maps a store, and LMDB run where its crash costs nothing.

liblmdb trusts the files it maps.  A ``data.mdb`` cut short sends it past the
end of the file (SIGBUS); a damaged page sends it to an address outside the
map (SIGSEGV) or into a failed assertion (``abort()``); a lock file it could
not allocate on a full file system is a SIGBUS at its first touch.  So:

* :func:`verify_file` reads LMDB's two meta pages with plain file reads,
  before anything is mapped: both must be meta pages (magic ``0xBEEFC0DE``,
  data version 1), and the current one (the higher transaction id, as
  LMDB picks it) must describe a file that is there: its page size a power
  of two, its last page and its trees' roots inside the file (pages past
  the end of the file are allowed only where its free-page tree lists them
  as free: LMDB never reads those).  A failure is
  :class:`StoreDamaged`, one line.  It costs two reads of 152 bytes (and,
  for a file shorter than its last page, a walk of the free-page tree);
  the store runs it at every open (:class:`lakebench.store.LmdbStore`).
* :func:`preallocate_lock` gives ``lock.mdb`` its blocks before LMDB maps
  it (LMDB sizes it with ``ftruncate``, which allocates nothing): on a full
  file system the open is then an error (ENOSPC), not a SIGBUS.
* :func:`lakebench.store.verify.check_isolated` runs :func:`lakebench.store.check` (the full walk)
  in a child process (:func:`lakebench.process.call_in_child`), so that a
  crash inside liblmdb becomes a :class:`StoreDamaged` naming the signal,
  and :func:`open_isolated` does the same for a trial open (``lakebench
  serve`` at start-up).

The meta page layout (liblmdb's ``MDB_page`` header then ``MDB_meta``, in
``mdb.c``; native byte order, 64-bit ``size_t``), checked against stores
this project made:

==========  ==============================================================
offset      field
==========  ==============================================================
10          ``mp_flags`` (uint16): ``P_META`` (0x08) on a meta page
16          ``mm_magic`` (uint32), 0xBEEFC0DE
20          ``mm_version`` (uint32), 1
32          ``mm_mapsize`` (size_t)
40 / 88     ``mm_dbs[0]`` (the free-page tree) / ``mm_dbs[1]`` (the main
            tree), 48 bytes each: ``md_pad`` (uint32; in the free-page
            tree's, the page size), flags, depth (uint16 each), branch,
            leaf and overflow page counts, entries, root page (size_t each)
136         ``mm_last_pg`` (size_t): the last page in use
144         ``mm_txnid`` (size_t): the transaction that wrote this meta
==========  ==============================================================

The second meta page starts one page (the first one's page size) in.
"""
from __future__ import annotations

import array
import itertools
import os
import shutil
import struct
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from lakebench._store import LmdbError, StoreError

MAGIC = 0xBEEFC0DE
DATA_VERSION = 1
P_META = 0x08
#: ``P_INVALID``: the root of an empty tree.
NO_PAGE = (1 << 64) - 1
_HEADER = struct.Struct("=QHHHH")  # mp_pgno, mp_pad, mp_flags, mp_lower, mp_upper
_DB = "IHHQQQQQ"  # md_pad, md_flags, md_depth, branch, leaf, overflow pages, entries, md_root
_META = struct.Struct("=IIQQ" + _DB + _DB + "QQ")
META_BYTES = _HEADER.size + _META.size  # 152
#: LMDB's page sizes: a power of two from 512 bytes (its minimum) to 64 KiB.
PAGE_SIZES = range(9, 17)
#: liblmdb's error codes that mean the file is not what it should be: MDB_INVALID,
#: MDB_VERSION_MISMATCH, MDB_CORRUPTED, MDB_PAGE_NOTFOUND, MDB_INCOMPATIBLE (a
#: database's flags are not those the store always opens it with).
_DAMAGE_CODES = frozenset({-30793, -30794, -30796, -30797, -30784})


class StoreDamaged(StoreError):
    """The store's file is damaged; the message is one line, ``store damaged: <where>: <what>``."""


@dataclass(frozen=True)
class MetaPage:
    """What one of LMDB's two meta pages says."""

    number: int          # 0 or 1
    page_size: int
    map_size: int
    last_page: int       # the last page in use: the file holds at least last_page + 1 pages
    txnid: int
    free_root: int       # NO_PAGE when the tree is empty
    main_root: int
    depths: tuple[int, int]

    @property
    def used_bytes(self) -> int:
        return (self.last_page + 1) * self.page_size


def data_file(path) -> Path:
    """``data.mdb`` of the store directory ``path`` (or ``path`` if it is the file)."""
    path = Path(path)
    return path if path.name == "data.mdb" else path / "data.mdb"


def _damaged(file: Path, what: str) -> StoreDamaged:
    return StoreDamaged(f"store damaged: {file}: {what}")


def _read_meta(fd: int, file: Path, number: int, offset: int, size: int) -> MetaPage:
    raw = os.pread(fd, META_BYTES, offset)
    if len(raw) < META_BYTES:
        raise _damaged(file, f"{size:,} bytes, too short to hold meta page {number} (at byte {offset:,})")
    _, _, flags, _, _ = _HEADER.unpack_from(raw)
    (magic, version, _address, map_size,
     free_pad, _, free_depth, _, _, _, _, free_root,
     _, _, main_depth, _, _, _, _, main_root,
     last_page, txnid) = _META.unpack_from(raw, _HEADER.size)
    if magic != MAGIC or not flags & P_META:
        raise _damaged(file, f"page {number} is not an LMDB meta page (magic 0x{magic:08X}, flags 0x{flags:X})")
    if version != DATA_VERSION:
        raise _damaged(file, f"meta page {number} has data version {version}, not {DATA_VERSION}")
    return MetaPage(number, free_pad, map_size, last_page, txnid, free_root, main_root, (free_depth, main_depth))


def read_meta_pages(path) -> tuple[MetaPage, MetaPage]:
    """Both meta pages of the store at ``path``, read without mapping the file;
    :class:`StoreDamaged` if either is not a valid meta page (LMDB refuses
    to open the file then), or the file is empty."""
    file = data_file(path)
    fd = os.open(file, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            raise _damaged(file, "the file is empty (0 bytes): no meta page")
        first = _read_meta(fd, file, 0, 0, size)
        if first.page_size.bit_length() - 1 not in PAGE_SIZES or first.page_size & (first.page_size - 1):
            raise _damaged(file, f"meta page 0 gives a page size of {first.page_size:,} bytes")
        second = _read_meta(fd, file, 1, first.page_size, size)
    finally:
        os.close(fd)
    return first, second


def verify_file(path, *, empty_ok: bool = False) -> MetaPage | None:
    """Check the store at ``path`` against its meta pages before LMDB maps it:
    the current meta page (None for an empty file when ``empty_ok``, which
    LMDB initializes as a new store), or :class:`StoreDamaged`.

    The current meta page must fit the file: its page count (last page + 1)
    times its page size at most the file's size (or the pages past the end
    all free, read from the free-page tree), its trees' roots at or
    below its last page, its map size at least what it uses.  A file cut
    short fails here; damage inside the trees does not (see
    :func:`lakebench.store.verify.check_isolated`).
    """
    file = data_file(path)
    if file.stat().st_size == 0 and empty_ok:
        return None
    first, second = read_meta_pages(file)
    # The size after the meta pages: another process may be committing (serve
    # --workers N).  LMDB writes a commit's pages before its meta page, and a
    # file only grows, so a size read now covers the meta read before it; read
    # first, it could be older than the meta (a store seen "cut short" while a
    # writer was merely growing it, which happened under load).
    size = file.stat().st_size
    meta = second if second.txnid > first.txnid else first  # LMDB's choice: on a tie, page 0
    where = f"meta page {meta.number} (transaction {meta.txnid:,})"
    if meta.page_size != first.page_size:
        raise _damaged(file, f"{where} gives a page size of {meta.page_size:,} bytes, meta page 0 "
                             f"{first.page_size:,}")
    cut = size < meta.used_bytes and not _tail_is_free(file, meta, size)
    for _ in range(5):
        # A writer may have reused the pages of the free-page tree walked
        # (two commits later): a walk that fails stands only if its meta is
        # still the current one.
        if not cut:
            break
        first, second = read_meta_pages(file)
        size = file.stat().st_size
        latest = second if second.txnid > first.txnid else first
        if latest.txnid == meta.txnid:
            break
        meta = latest
        where = f"meta page {meta.number} (transaction {meta.txnid:,})"
        cut = size < meta.used_bytes and not _tail_is_free(file, meta, size)
    if cut:
        raise _damaged(file, f"cut short: {size:,} bytes, but {where} uses {meta.last_page + 1:,} pages "
                             f"of {meta.page_size:,} bytes ({meta.used_bytes:,} bytes)")
    for name, root in (("free-page", meta.free_root), ("main", meta.main_root)):
        if root != NO_PAGE and not 2 <= root <= meta.last_page:
            raise _damaged(file, f"{where} puts the root of the {name} tree at page {root:,}, "
                                 f"outside pages 2-{meta.last_page:,}")
    if meta.map_size < meta.used_bytes:
        raise _damaged(file, f"{where} gives a map of {meta.map_size:,} bytes, less than the "
                             f"{meta.used_bytes:,} bytes it uses")
    return meta


# The pages of the free-page tree (liblmdb's ``mdb.c``): after the 16-byte
# header, ``mp_lower`` ends an array of uint16 node offsets; a node is
# mn_lo, mn_hi, mn_flags, mn_ksize (uint16 each) then its key and data.  A
# branch node's child page is mn_lo | mn_hi << 16 | mn_flags << 32; a leaf
# node's data size is mn_lo | mn_hi << 16, its data the freed page numbers
# of one transaction (size_t each: the count, then the pages), or, with
# F_BIGDATA, the number of the overflow page that holds them.
P_BRANCH, P_LEAF, P_OVERFLOW = 0x01, 0x02, 0x04
F_BIGDATA = 0x01
_NODE = struct.Struct("=HHHH")


def _tail_is_free(file: Path, meta: MetaPage, size: int) -> bool:
    """Whether every page of ``meta`` past the end of the file is free, so
    that LMDB never reads it: a file is that short when the last pages a
    transaction took were freed before its commit, and so never written
    (seen after two large removals).  False when a tree's root, or the
    free-page tree itself, lies past the end, or is not one (then the file
    is cut short).  Reads at most the file's size, keeps at most the
    missing pages (damage must cost no more than the file)."""
    in_file = size // meta.page_size             # whole pages: a partial last page is missing too
    missing = range(in_file, meta.last_page + 1)
    if meta.free_root == NO_PAGE or meta.free_root >= in_file or meta.main_root >= in_file\
            or len(missing) > MAX_UNWRITTEN_PAGES:
        return False
    fd = os.open(file, os.O_RDONLY)
    try:
        return _lists_free(fd, meta, in_file, missing)
    except struct.error:   # a damaged page: an offset out of range
        return False
    finally:
        os.close(fd)


#: Pages past the end of a healthy file, at most: the pages a transaction
#: took and freed unwritten (3 seen); a file missing more is cut short.
MAX_UNWRITTEN_PAGES = 1 << 16


def _lists_free(fd: int, meta: MetaPage, in_file: int, missing: range) -> bool:
    """Walk the free-page tree (see _tail_is_free): whether it lists every page of ``missing``."""
    psize = meta.page_size
    budget = in_file * psize                      # bytes this walk may read
    found: set[int] = set()
    todo, seen = [meta.free_root], set()
    while todo:
        number = todo.pop()
        if number in seen or not 2 <= number < in_file or budget < psize:
            return False   # a loop, a page past the end, or more read than the file holds
        seen.add(number)
        budget -= psize
        page = os.pread(fd, psize, number * psize)
        pgno, _, flags, lower, _ = _HEADER.unpack_from(page)
        if pgno != number or flags not in (P_BRANCH, P_LEAF) or not _HEADER.size <= lower <= psize:
            return False
        offsets = set(struct.unpack_from(f"={(lower - _HEADER.size) // 2}H", page, _HEADER.size))
        for at in offsets:
            lo, hi, node_flags, key_size = _NODE.unpack_from(page, at)
            if flags == P_BRANCH:
                todo.append(lo | hi << 16 | node_flags << 32)
                continue
            data_at, data_size = at + _NODE.size + key_size, lo | hi << 16
            if node_flags & F_BIGDATA:
                (overflow,) = struct.unpack_from("=Q", page, data_at)
                pages = -(-(_HEADER.size + data_size) // psize)
                if overflow in seen or not 2 <= overflow or overflow + pages > in_file\
                        or budget < pages * psize:
                    return False
                seen.add(overflow)
                budget -= pages * psize
                head = os.pread(fd, _HEADER.size, overflow * psize)
                pgno, _, oflags, lo_pages, hi_pages = _HEADER.unpack_from(head)
                if pgno != overflow or oflags != P_OVERFLOW or lo_pages | hi_pages << 16 < pages:
                    return False
                chunks = _chunks(lambda at, n: os.pread(fd, n, overflow * psize + _HEADER.size + at), data_size)
            elif data_at + data_size <= psize:
                chunks = iter([page[data_at:data_at + data_size]])
            else:
                return False
            if not _free_ids(chunks, data_size, meta.last_page, missing, found):
                return False
    return len(found) == len(missing)


def _chunks(read, size: int, step: int = 1 << 20):
    """``size`` bytes as ``read(offset, n)`` gives them, a MiB at a time."""
    for at in range(0, size, step):
        yield read(at, min(step, size - at))


def _free_ids(chunks, size: int, last_page: int, missing: range, found: set) -> bool:
    """Add to ``found`` the pages of ``missing`` that one record of the
    free-page tree lists (size_t each: the count, then the pages); False
    when the count does not fit the record."""
    count = None
    for chunk in chunks:
        ids = array.array("Q", chunk[:len(chunk) // 8 * 8])
        if count is None:
            if not ids:
                return True
            count = ids[0]
            if count > size // 8 - 1 or count > last_page:
                return False
            ids = ids[1:]
        found.update(n for n in itertools.islice(ids, count) if n in missing)
        count -= min(count, len(ids))
        if count == 0:
            break
    return True


#: The core's reader slots (``Environment(max_readers=...)``, default 126).
DEFAULT_MAX_READERS = 126


def lock_bytes(max_readers: int = DEFAULT_MAX_READERS) -> int:
    """The size LMDB gives ``lock.mdb``: a 192-byte header (``MDB_txninfo`` with
    its first slot) and a 64-byte slot per further reader (8,192 for 126,
    measured)."""
    return 192 + 64 * (max_readers - 1)


def preallocate_lock(path, max_readers: int = DEFAULT_MAX_READERS) -> None:
    """Allocate the blocks of the store's ``lock.mdb`` (creating it) before LMDB
    maps it; StoreError (one line) if the file system has no room for them.

    LMDB sizes a new lock file with ``ftruncate``, which allocates nothing,
    then writes its header through the map: on a full file system that
    write is a SIGBUS (``lakebench serve --data NEW`` died with "Bus error",
    both durabilities).  Allocated first, the open fails cleanly instead.
    A file already larger keeps its size (LMDB then derives its reader
    slots from it); blocks already allocated cost nothing (about 20 µs for
    a new file, 3 µs for an allocated one, measured).
    """
    lock = Path(path) / "lock.mdb"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.posix_fallocate(fd, 0, max(os.fstat(fd).st_size, lock_bytes(max_readers)))
    except OSError as exc:
        raise StoreError(f"{lock}: cannot allocate the lock file: {exc.strerror}") from None
    finally:
        os.close(fd)


def before_open(path, *, create: bool, readonly: bool) -> None:
    """What :class:`lakebench.store.LmdbStore` runs before LMDB opens the store at
    ``path``: :func:`verify_file` (an empty file is a new store when
    creating), and for a writer :func:`preallocate_lock`."""
    path = Path(path)
    if (path / "data.mdb").exists():
        _verify_settled(path, empty_ok=create and not readonly)
    elif create and not readonly:
        create_whole(path)
    if not readonly:
        preallocate_lock(path)


#: Where a new store's file is made before it takes its name (:func:`create_whole`).
_NEW = ".new-store-"


def create_whole(path: Path) -> None:
    """Create a new store's ``data.mdb`` so that it appears whole or not at all.

    LMDB writes a new file's two meta pages unflushed and flushes them at the
    first commit: a power cut in between would leave a file of zeros that no
    later start can open.  So the file is made in a directory of its own,
    committed (flushed), and only then linked to its name, which fails if
    another process (``serve --workers N``) got there first; a cut before the
    link leaves no store, and the next start makes one.
    """
    from lakebench._store import Environment
    from lakebench.store.wal import fsync_path

    for stale in path.glob(_NEW + "*"):  # left by a cut; a minute is long for a creation
        if time.time() - stale.stat().st_mtime > 60:
            shutil.rmtree(stale, ignore_errors=True)
    work = Path(tempfile.mkdtemp(prefix=_NEW, dir=path))
    try:
        preallocate_lock(work)  # on a full disk, an error rather than a SIGBUS
        Environment(work, durability="durable").close()  # its opening commit is flushed
        try:
            os.link(work / "data.mdb", path / "data.mdb")
        except FileExistsError:
            return
        fsync_path(path)
    finally:
        shutil.rmtree(work, ignore_errors=True)


#: Below two 4 KiB meta pages a data.mdb may be a new store another process
#: is writing its first pages into (``serve --workers N`` open it at once).
NEW_FILE_BYTES = 8192


def _verify_settled(path: Path, *, empty_ok: bool, tries: int = 20, pause: float = 0.05) -> None:
    """:func:`verify_file`, looked at again for up to a second while the file is
    smaller than two meta pages: damage that outlasts that is damage."""
    for attempt in range(tries):
        try:
            verify_file(path, empty_ok=empty_ok)
            return
        except StoreDamaged:
            if attempt == tries - 1 or (path / "data.mdb").stat().st_size >= NEW_FILE_BYTES:
                raise
            time.sleep(pause)


def _free_bytes(path: Path) -> int | None:
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


#: Below this much free space, a SIGBUS is put down to the file system, not the file.
_NEARLY_FULL = 1 << 20


def _crash_message(file: Path, what: str, crash) -> str:
    free = _free_bytes(file.parent)
    if crash.signal == "SIGBUS" and free is not None and free < _NEARLY_FULL:
        # LMDB writes its lock file through a map (data.mdb too, with MDB_WRITEMAP):
        # a page the file system cannot back is a SIGBUS there as well.
        return (f"{file.parent}: {what} crashed in liblmdb (SIGBUS) with {free:,} bytes free on the "
                f"file system: no space left to back its memory map")
    why = {"SIGBUS": "a page past the end of the file", "SIGSEGV": "an address outside the map",
           "SIGABRT": "a failed assertion"}.get(crash.signal, "")
    detail = crash.detail or why
    return f"store damaged: {file}: {what} crashed in liblmdb ({crash.signal}{': ' + detail if detail else ''})"


def run_in_child(file: Path, what: str, func, *args):
    """``func(*args)`` in a child process: a signal death or an LMDB error that
    means damage is a one-line :class:`StoreDamaged`."""
    from lakebench.process import ChildCrashed, ChildFailed, call_in_child

    try:
        return call_in_child(_translated, file, what, func, *args)
    except StoreDamaged:
        raise
    except (StoreError, OSError) as exc:
        free = _free_bytes(file.parent)
        if free is None or free >= _NEARLY_FULL:
            raise
        # LMDB reports a short write on a full disk as EIO: say what it was.
        raise StoreError(f"{exc} ({free:,} bytes free on the file system of {file.parent})") from None
    except ChildCrashed as crash:
        message = _crash_message(file, what, crash)
        raise (StoreDamaged if message.startswith("store damaged") else StoreError)(message) from None
    except ChildFailed as failure:  # an exception of the child that did not survive pickling
        raise StoreError(f"{what} failed: {failure}") from None


def _translated(file: Path, what: str, func, *args):
    """Run in the child: LMDB's errors go back as plain StoreError (LmdbError
    does not survive pickling), those that mean damage as StoreDamaged, and
    any other exception but OSError as a one-line StoreError (garbage read
    from a damaged page can fail anywhere in Python)."""
    try:
        return func(*args)
    except LmdbError as exc:
        if exc.code in _DAMAGE_CODES:
            raise StoreDamaged(f"store damaged: {file}: {exc}") from None
        raise StoreError(str(exc)) from None
    except (StoreError, OSError):
        raise
    except Exception as exc:  # noqa: BLE001
        raise StoreError(f"{what} failed: {type(exc).__name__}: {exc}") from None


def open_isolated(path, opener, *args):
    """``opener(*args)`` (which opens the store at ``path``, does its work and
    closes it) in a child process after :func:`verify_file`: its result, or
    :class:`StoreDamaged` when the file fails the meta check or the open
    crashes liblmdb.  What ``lakebench serve`` runs before it starts its
    workers, so that a store LMDB cannot open is refused in one line."""
    file = data_file(path)
    if file.exists():
        verify_file(file, empty_ok=True)
    return run_in_child(file, "opening the store", opener, *args)
