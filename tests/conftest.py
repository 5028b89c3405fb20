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


#: Tests that share one expensive process, or that each start one of its kind, and so run in one
#: worker when the suite is spread over several (``make test``: pytest-xdist's ``--dist loadgroup``):
#: Fedora's JVM (the session's ``fedora_server``, and the tests that start their own: one JVM at a
#: time), LAKEsuperior (a module's shared server; the cache it is installed into once), Chromium (a
#: module's shared browser).  Marked by the marker, or by asking for the fixture.
SHARED_PROCESSES = {"fcrepo": "fedora_server", "lakesuperior": None, "browser": None}
#: Modules whose module-scoped fixture is cheap beside their tests, spread over the workers all the
#: same: the power-loss tests (minutes together) build their tracer once per module (a second).
SPREAD = {"tests/store/test_powerloss.py"}


def _group(item) -> str | None:
    """The worker group of ``item``: its shared process, else its module when it asks for a fixture
    made once per module or class (a run, a built report, a server: made once in one worker, as in
    one process, rather than again in each worker its tests reach), else none (any worker)."""
    for group, fixture in SHARED_PROCESSES.items():
        if item.get_closest_marker(group) or (fixture and fixture in getattr(item, "fixturenames", ())):
            return group
    module = item.nodeid.split("::", 1)[0]
    definitions = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    if module not in SPREAD and any(defs and defs[-1].scope in ("module", "class", "package") for defs in definitions.values()):
        return module
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    # Marked before xdist's own hook reads the marks (and writes the group into the test's id);
    # without xdist the mark is unknown, and unused.
    if config.pluginmanager.hasplugin("xdist"):
        for item in items:
            group = _group(item)
            if group:
                item.add_marker(pytest.mark.xdist_group(group))


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    # The default run deselects the micro-benchmarks and disables their
    # timing (addopts); selecting them with -m benchmark turns timing back on,
    # so `pytest -m benchmark` records what it runs.
    markexpr = config.getoption("markexpr", "") or ""
    if "benchmark" in markexpr and "not benchmark" not in markexpr and config.pluginmanager.hasplugin("benchmark"):
        config.option.benchmark_disable = False
