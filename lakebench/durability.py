"""Durability: when a system acknowledges a write, in one word used everywhere.

The same word is a system's class attribute, the ``--durability`` option of
``lakebench serve``, the store's and the server's constructor argument, the
``durability`` field of a results record and the report's legend.  It is a
``str`` enum, so a results file holds the plain word.

>>> Durability("nosync").syncs
False
>>> Durability.parse("durabel")
Traceback (most recent call last):
ValueError: durability must be one of durable, nosync (got 'durabel')
"""
from __future__ import annotations

from enum import StrEnum


class Durability(StrEnum):
    #: A write is acknowledged once it is recoverable from stable storage (fsync).
    DURABLE = "durable"
    #: A write is acknowledged once the operating system has it: a process
    #: crash loses nothing, a power cut may lose the last writes.
    NOSYNC = "nosync"
    #: Nothing reaches disk.
    VOLATILE = "volatile"
    #: A server lakebench runs with its own defaults (Fedora: its storage's flushing).
    SERVER_DEFAULT = "server-default"
    #: A server lakebench does not run.
    UNKNOWN = "unknown"

    @property
    def syncs(self) -> bool:
        """Whether lakebench's own store flushes each write to stable storage."""
        return self is Durability.DURABLE

    @property
    def meaning(self) -> str:
        """What the word promises, as the report's legend states it."""
        return MEANING[self]

    @classmethod
    def parse(cls, value: str | Durability, allowed: tuple[Durability, ...] = ()) -> Durability:
        """``value`` as one of ``allowed`` (default: the two modes of lakebench's store), or a
        ValueError that names them."""
        allowed = allowed or STORE_MODES
        if value in allowed:
            return cls(value)
        raise ValueError(f"durability must be one of {', '.join(allowed)} (got {str(value)!r})")


#: The modes lakebench's own store (and ``lakebench serve``) offers.
STORE_MODES = (Durability.DURABLE, Durability.NOSYNC)

MEANING = {
    Durability.DURABLE: "a write is acknowledged once it is on stable storage (fsync)",
    Durability.NOSYNC: "writes reach the operating system, not the disk, when acknowledged: "
                       "a power cut may lose them",
    Durability.VOLATILE: "nothing reaches disk",
    Durability.SERVER_DEFAULT: "whatever the server does by default (Fedora: its storage's own flushing)",
    Durability.UNKNOWN: "a server lakebench does not run: not known",
}
