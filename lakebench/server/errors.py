"""The one exception of the server: a request refused, with its HTTP status;
and the read of a request body, whose failures become one."""
from __future__ import annotations


class RepositoryError(Exception):
    """A request the repository refuses; ``status`` is the HTTP status to answer.

    ``allow`` is the Allow header of a 405; ``headers`` are any others the
    answer needs (a 410's link to its tombstone, a 416's Content-Range).
    """

    def __init__(self, status: int, message: str, allow: str | None = None,
                 headers: list[tuple[str, str]] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.allow = allow
        self.headers = headers or []


def insufficient_storage() -> RepositoryError:
    """The refusal of a write the disk has no room for (nothing of it was kept)."""
    return RepositoryError(507, "no space left on the device: the write was not kept")


def read_body(stream, size: int) -> bytes:
    """Up to ``size`` bytes of the request body; a broken or truncated body is a 400."""
    try:
        return stream.read(size)
    except Exception as exc:  # the server's own errors for bad chunking or a dropped client
        raise RepositoryError(400, f"cannot read the request body: {type(exc).__name__}: {exc}") from None
