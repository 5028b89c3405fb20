"""What machine and software a run measured, recorded with every result."""
from __future__ import annotations

import os
import platform
import shutil
import subprocess
from importlib import metadata

import psutil

LIBRARIES = ("lakebench", "rdflib", "pyoxigraph", "lmdb", "psutil", "locust", "Cython")


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def lmdb_library_version() -> str | None:
    """Version of the C LMDB our store links, if the store is built."""
    try:
        from lakebench import _store  # type: ignore[attr-defined]
    except ImportError:
        return None
    return getattr(_store, "lmdb_version", lambda: None)()


def java_version() -> str | None:
    java = shutil.which("java")
    if not java:
        return None
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    first = (out.stderr or out.stdout).splitlines()
    return first[0].strip() if first else None


def describe() -> dict:
    """The environment block of results.json."""
    versions = {}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    uname = platform.uname()
    return {
        "cpu_model": cpu_model(),
        "cores_logical": psutil.cpu_count(logical=True),
        "cores_physical": psutil.cpu_count(logical=False),
        "memory_bytes": psutil.virtual_memory().total,
        "os": f"{uname.system} {uname.release}",
        "distribution": _os_release(),
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "libraries": versions,
        "lmdb_c": lmdb_library_version(),
        "java": java_version(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def _os_release() -> str | None:
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return None
