"""Binaries (LDP non-RDF sources): their bytes, in files beside the store.

A binary's bytes live in ``<store>/binaries/<name>``, a fresh name per
upload; the store only records the name (with the size, media type and
digests) once the file is complete.  An upload goes:

1. streamed from the request into a temporary file in the same directory,
   64 KiB at a time (memory stays flat whatever the size), hashing as it
   goes; over the limit is ``413``, a short body ``400``, a digest that
   does not match ``409``, and the temporary file is removed;
2. ``fsync`` of the file, ``rename`` to its final name, ``fsync`` of the
   directory (when ``durability`` is ``durable``), so the name and the bytes are on disk;
3. THEN one store write records it.

So a binary is never visible before its bytes are complete: a crash before
step 3 leaves at most an unreferenced file, never a record pointing at a
partial one, and an acknowledged binary has all its bytes.  A replaced or
deleted binary's file is removed after the write that stops referencing it
(a crash in between leaves an unreferenced file; temporary files are swept
when the server starts).
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from lakebench.durability import Durability
from lakebench.server.errors import RepositoryError, insufficient_storage, read_body
from lakebench.store import no_space
from lakebench.store.wal import fsync_path

CHUNK = 1 << 16
DEFAULT_MAX_BINARY = 64 << 30
_TEMPORARY = ".tmp-"

#: Digest algorithms (RFC 3230 names) and their hashlib names.
ALGORITHMS = {"sha-256": "sha256", "sha-512": "sha512", "md5": "md5", "sha": "sha1"}
#: Always computed, to describe every binary (premis:hasMessageDigest).
STORED_ALGORITHM = "sha-256"


@dataclass
class Upload:
    """A binary received from a client: its bytes in a file, with what is known of them."""

    path: Path
    size: int
    media_type: str
    filename: str | None
    digests: dict = field(default_factory=dict)  # algorithm -> hex
    name: str | None = None  # the final file name, once kept

    def discard(self) -> None:
        """Remove the file (an upload refused after it was received)."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass


class BinaryFiles:
    """The ``binaries/`` directory of one store."""

    def __init__(self, directory: str | os.PathLike, durability: Durability | str = Durability.DURABLE):
        self.directory = Path(directory)
        self.durability = Durability.parse(durability)

    def path_of(self, name: str) -> Path:
        return self.directory / name

    def receive(self, stream, length: int | None, limit: int, media_type: str, filename: str | None,
                expected: dict[str, bytes] | None = None) -> Upload:
        """Stream a request body into a temporary file; refuse it (nothing kept) when
        it is over ``limit``, shorter than ``length``, or its digests do not match."""
        if length is not None and length > limit:
            raise RepositoryError(413, f"binary of {length} bytes exceeds the limit of {limit}")
        expected = expected or {}
        hashes = {algorithm: hashlib.new(ALGORITHMS[algorithm])
                  for algorithm in {STORED_ALGORITHM, *expected}}
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"{_TEMPORARY}{uuid.uuid4().hex}"
        upload = Upload(path=path, size=0, media_type=media_type, filename=filename)
        try:
            with open(path, "wb") as out:
                remaining = limit + 1 if length is None else length
                while remaining > 0:
                    chunk = read_body(stream, min(CHUNK, remaining))
                    if not chunk:
                        break
                    out.write(chunk)
                    for h in hashes.values():
                        h.update(chunk)
                    upload.size += len(chunk)
                    remaining -= len(chunk)
                if upload.size > limit:
                    raise RepositoryError(413, f"binary exceeds the limit of {limit} bytes")
                if length is not None and upload.size != length:
                    raise RepositoryError(400, f"incomplete body: {upload.size} of {length} bytes")
                for algorithm, digest in expected.items():
                    if hashes[algorithm].digest() != digest:
                        raise RepositoryError(409, f"the {algorithm} digest of the body does not match "
                                                   "the Digest header")
                if self.durability.syncs:
                    out.flush()
                    os.fsync(out.fileno())
        except BaseException as exc:
            upload.discard()
            if isinstance(exc, OSError) and no_space(exc):
                raise insufficient_storage() from None
            raise
        upload.digests = {algorithm: h.hexdigest() for algorithm, h in hashes.items()}
        return upload

    def keep(self, upload: Upload) -> str:
        """Give a received upload its final name, durably; the name (idempotent)."""
        if upload.name is None:
            name = uuid.uuid4().hex
            self._name_durably(os.rename, upload.path, name)
            upload.path, upload.name = self.directory / name, name
        return upload.name

    def link(self, name: str) -> str:
        """A second name for the file ``name`` (a hard link: its bytes are not copied, and
        stay while either name does), durably; the new name."""
        new = uuid.uuid4().hex
        self._name_durably(os.link, self.directory / name, new)
        return new

    def _name_durably(self, call, source, name: str) -> None:
        """``call(source, <directory>/name)`` (a rename or a link), the directory synced when
        durable; a full disk is 507."""
        try:
            call(source, self.directory / name)
            if self.durability.syncs:
                fsync_path(self.directory)
        except OSError as exc:
            if no_space(exc):
                raise insufficient_storage() from None
            raise

    def discard(self, name: str) -> None:
        try:
            (self.directory / name).unlink()
        except FileNotFoundError:
            pass

    def sweep_temporaries(self) -> int:
        """Remove the temporary files of uploads a crash interrupted; how many.

        Only safe while no upload runs (the server calls it before it starts
        its workers)."""
        if not self.directory.is_dir():
            return 0
        swept = 0
        for path in self.directory.glob(_TEMPORARY + "*"):
            path.unlink(missing_ok=True)
            swept += 1
        return swept


def file_digest(path: str | os.PathLike, algorithm: str) -> str:
    """The hex digest of a stored file (for a Want-Digest the store did not record)."""
    h = hashlib.new(ALGORITHMS[algorithm])
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def parse_digest(header: str | None) -> dict[str, bytes]:
    """The digests of a ``Digest`` header (RFC 3230: ``sha-256=<base64>, md5=<base64>``).

    The Fedora API (2021-05-01), on a binary's POST (3.5.1) and PUT (3.6.2): a
    Digest that does not match the body MUST be refused with 409, and an
    unsupported algorithm SHOULD be refused with 400.  A value that is not the
    base64 of a digest of the algorithm's length (``md5=1234``, a hex digest)
    matches no body: 409, at once, before the body is read.  A header that is
    not ``algorithm=value`` at all is 400.

    >>> parse_digest("sha-256=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=")["sha-256"].hex()[:8]
    'e3b0c442'
    >>> parse_digest(None)
    {}
    >>> parse_digest("md5=1234")
    Traceback (most recent call last):
    ...
    lakebench.server.errors.RepositoryError: the md5 digest '1234' matches no body: it is not the base64 of 16 bytes
    """
    digests = {}
    if not header:
        return digests
    for item in header.split(","):
        algorithm, sep, value = item.strip().partition("=")
        algorithm = algorithm.strip().lower()
        if not sep or not algorithm:
            raise RepositoryError(400, f"malformed Digest header {header!r}")
        if algorithm not in ALGORITHMS:
            raise RepositoryError(400, f"unsupported digest algorithm {algorithm!r}; use one of "
                                       f"{', '.join(ALGORITHMS)}")
        size = hashlib.new(ALGORITHMS[algorithm]).digest_size
        try:
            digest = base64.b64decode(value.strip(), validate=True)
        except (binascii.Error, ValueError):
            digest = None
        if digest is None or len(digest) != size:
            raise RepositoryError(409, f"the {algorithm} digest {value.strip()[:100]!r} matches no body: "
                                       f"it is not the base64 of {size} bytes")
        digests[algorithm] = digest
    return digests


def wanted_digests(header: str | None) -> list[str]:
    """The supported algorithms a ``Want-Digest`` header asks for (q=0 excluded), best first.

    A header that names algorithms, none of them supported, is 400: the Fedora API
    (3.2.3) requires a GET of a binary to "correctly respond" to Want-Digest, and
    a digest it cannot give is no response to it.

    >>> wanted_digests("SHA-512;q=0.3, sha-256;q=1, unixsum, md5;q=0")
    ['sha-256', 'sha-512']
    >>> wanted_digests("md5;q=0"), wanted_digests(None)
    ([], [])
    >>> wanted_digests("crc32, unixsum")
    Traceback (most recent call last):
    ...
    lakebench.server.errors.RepositoryError: Want-Digest names no algorithm this server computes; ask for sha-256, sha-512, md5 or sha
    """
    wanted = []
    named = supported = False
    for item in (header or "").split(","):
        algorithm, _, params = item.partition(";")
        algorithm = algorithm.strip().lower()
        q = 1.0
        if params.strip().startswith("q="):
            try:
                q = float(params.strip()[2:])
            except ValueError:
                q = 0.0
        named = named or bool(algorithm)
        if algorithm in ALGORITHMS:
            supported = True
            if q > 0:
                wanted.append((q, algorithm))
    if named and not supported:
        raise RepositoryError(400, "Want-Digest names no algorithm this server computes; ask for "
                                   + ", ".join(list(ALGORITHMS)[:-1]) + " or " + list(ALGORITHMS)[-1])
    return [algorithm for _, algorithm in sorted(wanted, key=lambda w: -w[0])]


def digest_value(algorithm: str, hexdigest: str) -> str:
    """``algorithm=<base64>`` for a Digest header."""
    return f"{algorithm}={base64.b64encode(bytes.fromhex(hexdigest)).decode()}"
