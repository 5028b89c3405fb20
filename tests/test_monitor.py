from __future__ import annotations

import os
import subprocess
import sys
import time

from lakebench.monitor import MIN_CPU_WINDOW, Monitor, directory_bytes, rss_anon_bytes, tree_cpu_seconds


def test_samples_a_busy_child_process(tmp_path):
    (tmp_path / "data.bin").write_bytes(os.urandom(256 * 1024))
    # A child that allocates ~60 MB of private memory and burns CPU for a while.
    # It spins until it has used 1 s of CPU, however loaded the machine is.
    code = ("import time\nb = bytearray(60 * 1024 * 1024)\n"
            "while time.process_time() < 1.0: pass\n")
    proc = subprocess.Popen([sys.executable, "-c", code])
    monitor = Monitor(proc.pid, tmp_path, interval=0.1)
    monitor.phase = "load"  # before the thread starts: its first sample is taken at once
    with monitor:
        proc.wait()
    assert len(monitor.samples) >= 5
    assert monitor.peak("rss_anon_bytes") > 50 * 1024 * 1024
    assert monitor.peak("rss_bytes") >= monitor.peak("rss_anon_bytes")
    assert monitor.peak("vms_bytes") >= monitor.peak("rss_bytes")
    assert max(s.get("cpu_percent", 0) for s in monitor.samples) > 10
    assert {s["phase"] for s in monitor.samples} == {"load"}
    assert all(s["disk_bytes"] >= 256 * 1024 for s in monitor.samples)
    times = [s["t"] for s in monitor.samples]
    assert times == sorted(times)


def test_includes_grandchildren():
    code = ("import subprocess, sys\n"
            "subprocess.run([sys.executable, '-c', 'b = bytearray(80 * 1024 * 1024); import time; time.sleep(1)'])\n")
    proc = subprocess.Popen([sys.executable, "-c", code])
    with Monitor(proc.pid, None, interval=0.1) as monitor:
        proc.wait()
    assert monitor.peak("rss_anon_bytes") > 70 * 1024 * 1024
    assert all(s["disk_bytes"] is None for s in monitor.samples)


def test_dead_process_gives_no_sample():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert Monitor(proc.pid).sample() is None


def test_directory_bytes(tmp_path):
    assert directory_bytes(tmp_path / "absent") is None
    assert directory_bytes(None) is None
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f").write_bytes(b"x" * 100_000)
    size = directory_bytes(tmp_path)
    assert 100_000 <= size < 200_000


def test_cpu_and_anon_of_self():
    start = tree_cpu_seconds(os.getpid())
    t = time.process_time()
    while time.process_time() - t < 0.2:
        pass
    assert tree_cpu_seconds(os.getpid()) - start >= 0.15
    assert rss_anon_bytes(os.getpid()) > 0


def test_a_phase_shorter_than_the_interval_gets_a_sample_of_its_end():
    """Entering a phase samples the one that ends, with the children made by then, while the thread runs."""
    monitor = Monitor(os.getpid(), interval=3600).start()  # one sample at start, then none of its own
    try:
        deadline = time.monotonic() + 30
        while not monitor.samples and time.monotonic() < deadline:
            time.sleep(0.01)
        monitor.enter_phase("ingest")
        monitor.children = 7
        monitor.enter_phase("close")
        monitor.enter_phase("close")  # the same phase again: nothing ends, nothing sampled
    finally:
        monitor.stop()
    assert [(s["phase"], s["children"]) for s in monitor.samples] == [("start", 0), ("start", 0), ("ingest", 7)]
    assert monitor.phase == "close"


def test_the_parents_read_is_sampled_closely_whatever_the_interval(tmp_path):
    """A parent read of a few seconds in an hour-long run sampled every ten: its memory peak is seen,
    and the data directory is not walked while it is timed (its size as the ingest left it)."""
    (tmp_path / "before").write_bytes(b"x" * 4096)
    monitor = Monitor(os.getpid(), tmp_path, interval=3600).start()
    try:
        monitor.enter_phase("ingest")
        monitor.enter_phase("retrieve")   # wakes the thread from its hour-long wait
        (tmp_path / "during").write_bytes(b"y" * 65536)
        time.sleep(1.0)
        monitor.enter_phase("tail")       # back to the run's interval
        time.sleep(0.3)
    finally:
        monitor.stop()
    phases = [s["phase"] for s in monitor.samples]
    assert phases.count("retrieve") >= 5   # every 0.05 s; a loaded machine may take fewer
    ingest_end = [s["disk_bytes"] for s in monitor.samples if s["phase"] == "ingest"][-1]
    assert ingest_end >= 4096 and {s["disk_bytes"] for s in monitor.samples if s["phase"] == "retrieve"} == {ingest_end}
    assert phases.count("tail") <= 1       # the close sample due as it began; then the hour-long interval


def test_no_phase_sample_before_the_thread_starts():
    monitor = Monitor(os.getpid(), interval=3600)
    monitor.enter_phase("ingest")
    assert monitor.samples == [] and monitor.phase == "ingest"


def test_no_cpu_share_over_a_window_too_short_to_measure():
    """A sample right after another (a phase's last) records memory and disk but no CPU share: over a
    few milliseconds psutil's clock ticks would read 0% or hundreds; the next sample measures the whole
    window since the last share."""
    monitor = Monitor(os.getpid())
    t0 = time.monotonic()
    first, second = monitor.sample(), monitor.sample()
    quick = time.monotonic() - t0 < MIN_CPU_WINDOW
    assert "cpu_percent" in first and second["rss_bytes"] > 0
    if quick:  # (on a machine too loaded to take two samples within the window, both measure)
        assert "cpu_percent" not in second
    time.sleep(MIN_CPU_WINDOW)
    assert "cpu_percent" in monitor.sample()
