"""lakebench.process.call_in_child: results and exceptions come back, a signal
that kills the child comes back as ChildCrashed."""
from __future__ import annotations

import ctypes
import os

import pytest

from lakebench.process import ChildCrashed, ChildFailed, call_in_child


class _Unpicklable(Exception):
    def __init__(self, code, what):  # pickling rebuilds it with one argument: fails
        super().__init__(f"{what} ({code})")


def _raise_unpicklable():
    raise _Unpicklable(7, "no luck")


def _abort():
    # what liblmdb's failed assertion does: a line on file descriptor 2, then abort()
    os.write(2, b"mdb.c:1234: Assertion 'IS_LEAF(mp)' failed in mdb_cursor_next()\n")
    os.abort()


def test_the_result_and_the_exception_come_back():
    assert call_in_child(divmod, 7, 2) == (3, 1)
    assert call_in_child(os.getpid) != os.getpid()
    with pytest.raises(ZeroDivisionError):
        call_in_child(divmod, 1, 0)
    with pytest.raises(ChildFailed, match="_Unpicklable: no luck"):
        call_in_child(_raise_unpicklable)


def test_a_signal_is_an_exception_with_the_last_line_of_stderr():
    with pytest.raises(ChildCrashed) as info:
        call_in_child(_abort)
    assert info.value.signal == "SIGABRT"
    assert info.value.detail == "mdb.c:1234: Assertion 'IS_LEAF(mp)' failed in mdb_cursor_next()"
    with pytest.raises(ChildCrashed) as info:
        call_in_child(ctypes.string_at, 0)  # a read of address 0
    assert info.value.signal == "SIGSEGV"
