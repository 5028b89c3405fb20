from __future__ import annotations

import os
import subprocess

import pytest

from lakebench.prefetch import HEADER, ChildFeed, start_producer, stop_producer
from lakebench.dataset import DataSet


def test_children_from_a_producer_process_are_the_workloads():
    w = DataSet(children=40, literal_length=100, seed=6)
    proc, fd = start_producer(w)
    feed = ChildFeed(w, fd)
    for index in range(w.children):
        child = feed.next()
        expected = w.child(index)
        assert (child.index, child.uri) == (index, expected.uri)
        assert child.ntriples == expected.ntriples
        assert child.turtle == expected.turtle
    assert feed.close() > 0  # the producer's own generation time
    stop_producer(proc)
    assert proc.returncode == 0


def test_a_producer_that_stops_early_is_an_error():
    w = DataSet(children=5)
    read_fd, write_fd = os.pipe()
    os.write(write_fd, HEADER.pack(0, 10, 10, 0.0) + b"short")
    os.close(write_fd)
    feed = ChildFeed(w, read_fd)
    with pytest.raises(RuntimeError, match="stopped"):
        feed.next()


def test_a_child_out_of_order_is_an_error():
    w = DataSet(children=5)
    read_fd, write_fd = os.pipe()
    os.write(write_fd, HEADER.pack(1, 0, 0, 0.0))
    os.close(write_fd)
    with pytest.raises(RuntimeError, match="child 0 was due"):
        ChildFeed(w, read_fd).next()


def test_the_producer_ends_when_the_consumer_is_gone():
    proc, fd = start_producer(DataSet(children=100_000))
    feed = ChildFeed(DataSet(children=100_000), fd)
    feed.next()
    del feed  # a failed run: the reading end is closed, nobody reads any more
    try:
        assert proc.wait(timeout=30) == 0
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
