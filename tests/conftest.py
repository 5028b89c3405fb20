"""Shared fixtures."""
from __future__ import annotations

import os
import subprocess

import pytest

from lakebench.dataset import DataSet


@pytest.fixture(scope="session")
def fedora_server(tmp_path_factory):
    """``fedora_server(version)``: a real Fedora of that version, running, shared by the session's tests
    that need one (each under parents of its own): a JVM start is 13 to 16 s of the suite's time.  Started
    at its first request, and again at the next one after a test stopped it; stopped at the end."""
    from lakebench.systems import fcrepo

    servers = {}

    def running(version: str = fcrepo.DEFAULT_VERSION):
        server = servers.get(version)
        if server is None or not server.is_running():
            data = tmp_path_factory.mktemp(f"fcrepo-{version}")
            server = servers[version] = fcrepo.start(version, data_dir=data, heap="1g")
        return server

    yield running
    for server in servers.values():
        server.stop()


@pytest.fixture
def small_workload() -> DataSet:
    return DataSet(children=20, seed=7)


#: The size of the small disk a test fills.
SMALL_DISK_BYTES = 48 << 20


def mounted_tmpfs(tmp_path, size: int):
    """A tmpfs of ``size`` bytes at ``tmp_path/fs`` (a generator for a fixture:
    it yields the mount, then unmounts it); skips the test without root."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs to fill needs root")
    mount = tmp_path / "fs"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.fixture
def small_disk(tmp_path):
    """A tmpfs of SMALL_DISK_BYTES at ``tmp_path/fs``, unmounted afterwards."""
    yield from mounted_tmpfs(tmp_path, SMALL_DISK_BYTES)


def fill_disk(mount, leave: int):
    """A file taking all the free space of ``mount`` but ``leave`` bytes."""
    stat = os.statvfs(mount)
    size = stat.f_bavail * stat.f_frsize - leave
    filler = mount / "filler"
    with open(filler, "wb") as f:
        os.posix_fallocate(f.fileno(), 0, max(size, 1))
    return filler


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    # The default run deselects the micro-benchmarks and disables their
    # timing (addopts); selecting them with -m benchmark turns timing back on,
    # so `pytest -m benchmark` records what it runs.
    markexpr = config.getoption("markexpr", "") or ""
    if "benchmark" in markexpr and "not benchmark" not in markexpr and config.pluginmanager.hasplugin("benchmark"):
        config.option.benchmark_disable = False
