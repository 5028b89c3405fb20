"""Disks a power cut could leave, rebuilt from an I/O trace (``iotrace.c``).

The model is the kernel's page cache over a disk that keeps what was
flushed: at a crash, every byte a file had when it was last fsynced (or
written through an O_SYNC/O_DSYNC descriptor) is on disk; every page
written since is, independently, in any one of the versions it has had
since (the flushed one included: writeback may or may not have reached
it, in any order); a file's size is its flushed size or its current one.
Writes through a shared writable map are in the trace as writes of the
pages that changed, taken before each other traced call, flush, msync or
unmap (``iotrace.c``): a map's page is in the trace no later than the
next call, in the version it had then (versions in between are not seen),
and an msync of a range flushes the pages in it.
This is what dm-log-writes replays at the block level, one layer up: it
does not model a file system that loses flushed data or the entries of
files it created (ext4 commits a new file's entry with the first fsync in
it).  A hard link's new entry is kept only once the directory (".") has
been fsynced after it: the store makes a new file whole in a directory of
its own and links it into place (lakebench.store.preflight.create_whole).
"""
from __future__ import annotations

import random
import struct
from dataclasses import dataclass, field
from pathlib import Path

PAGE = 4096
_HEAD = struct.Struct("<QQ")


@dataclass
class Event:
    kind: str      # "W" write, "D" synchronous write, "S" flush, "R" range flushed, "T" truncate, "L" hard link
    name: str      # file name within the traced directory ("." the directory itself)
    offset: int
    data: bytes = b""
    length: int = 0  # of the range an "R" flushed


def read_trace(path: str | Path) -> list[Event]:
    raw = Path(path).read_bytes()
    events, pos = [], 0
    while pos < len(raw):
        kind = chr(raw[pos])
        n = raw[pos + 1]
        name = raw[pos + 2:pos + 2 + n].decode()
        pos += 2 + n
        offset, length = _HEAD.unpack_from(raw, pos)
        pos += _HEAD.size
        data = raw[pos:pos + length] if kind in "WDL" else b""
        pos += len(data)
        events.append(Event(kind, name, offset, data, length if kind == "R" else 0))
    return events


@dataclass
class _File:
    cache: bytearray = field(default_factory=bytearray)   # what readers see (the page cache)
    disk: bytearray = field(default_factory=bytearray)    # what is on stable storage
    versions: dict[int, list[bytes]] = field(default_factory=dict)  # page -> versions since flushed

    def write(self, offset: int, data: bytes, synchronous: bool) -> None:
        end = offset + len(data)
        if end > len(self.cache):
            self.cache.extend(bytes(end - len(self.cache)))
        self.cache[offset:end] = data
        for page in range(offset // PAGE, (end - 1) // PAGE + 1):
            snapshot = bytes(self.cache[page * PAGE:(page + 1) * PAGE])
            if synchronous:
                self._flush_page(page, snapshot)
            else:
                self.versions.setdefault(page, []).append(snapshot)

    def _flush_page(self, page: int, snapshot: bytes) -> None:
        start = page * PAGE
        if start + len(snapshot) > len(self.disk):
            self.disk.extend(bytes(start + len(snapshot) - len(self.disk)))
        self.disk[start:start + len(snapshot)] = snapshot
        self.versions.pop(page, None)

    def flush(self) -> None:
        self.disk = bytearray(self.cache)
        self.versions.clear()

    def flush_range(self, offset: int, length: int) -> None:
        """msync(MS_SYNC) of a range: its pages as they are now; the file's size is not made durable."""
        for page in [page for page in self.versions if offset <= page * PAGE < offset + length]:
            self._flush_page(page, bytes(self.cache[page * PAGE:(page + 1) * PAGE]))

    def truncate(self, size: int) -> None:
        if size < len(self.cache):
            del self.cache[size:]
        else:
            self.cache.extend(bytes(size - len(self.cache)))
        for page in [page for page in self.versions if page * PAGE >= size]:
            del self.versions[page]

    def after_power_loss(self, rng: random.Random) -> bytes:
        size = rng.choice([len(self.disk), len(self.cache)])
        image = bytearray(self.disk[:size])
        image.extend(bytes(size - len(image)))
        for page, versions in self.versions.items():
            start = page * PAGE
            if start >= size:
                continue
            flushed = bytes(self.disk[start:start + PAGE]).ljust(PAGE, b"\0")
            chosen = rng.choice([flushed, *versions])
            image[start:min(start + PAGE, size)] = chosen[:size - start]
        return bytes(image)


class Disk:
    """Replays a trace event by event; :meth:`power_loss` gives one possible disk."""

    def __init__(self):
        self.files: dict[str, _File] = {}
        self.unflushed_links: set[str] = set()  # entries a power cut would drop

    def apply(self, event: Event) -> None:
        if event.name == ".":  # the directory: its fsync keeps the links made in it
            if event.kind == "S":
                self.unflushed_links.clear()
            return
        if event.kind == "L":  # the same file under a second name
            self.files[event.name] = self.files.setdefault(event.data.decode(), _File())
            self.unflushed_links.add(event.name)
            return
        f = self.files.setdefault(event.name, _File())
        if event.kind in "WD":
            f.write(event.offset, event.data, synchronous=event.kind == "D")
        elif event.kind == "S":
            f.flush()
        elif event.kind == "R":
            f.flush_range(event.offset, event.length)
        elif event.kind == "T":
            f.truncate(event.offset)

    def cached(self, name: str) -> bytes:
        """A file as the running process saw it (its page cache)."""
        f = self.files.get(name)
        return bytes(f.cache) if f else b""

    def power_loss(self, rng: random.Random, skip=()) -> dict[str, bytes]:
        return {name: f.after_power_loss(rng) for name, f in self.files.items()
                if name not in skip and name not in self.unflushed_links}
