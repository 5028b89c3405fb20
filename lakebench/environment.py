"""What machine and software a run measured, recorded with every result."""
from __future__ import annotations

import os
import platform
import shutil
import subprocess
from importlib import metadata
from pathlib import Path

import psutil

# Cython builds the store at install time and is not needed to run it: not listed.
LIBRARIES = ("lakebench", "rdflib", "pyoxigraph", "lmdb", "psutil", "locust", "gunicorn", "gevent")


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


def lakebench_commit() -> str | None:
    """The git commit of the lakebench checkout this runs from (``+dirty`` when changed), or None
    (installed from a wheel, no git)."""
    root = Path(__file__).resolve().parent.parent
    if not (root / ".git").exists():
        return None
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=20)
        status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if head.returncode != 0:
        return None
    return head.stdout.strip() + ("+dirty" if status.stdout.strip() else "")


def disk_of(path: Path) -> dict:
    """The file system and device under ``path``: where every on-disk figure was written.

    >>> sorted(disk_of(Path("/")))
    ['device', 'filesystem', 'rotational', 'size_bytes']
    """
    best = ("", "", "")
    try:
        target = str(Path(path).resolve())
        with open("/proc/mounts") as f:
            for line in f:
                device, mount, fstype = line.split()[:3]
                if (target == mount or target.startswith(mount.rstrip("/") + "/")) and len(mount) >= len(best[1]):
                    best = (device, mount, fstype)
    except OSError:
        pass
    device, mount, fstype = best
    rotational = None
    name = Path(device).name
    for candidate in (name, name.rstrip("0123456789"), name.rsplit("p", 1)[0]):
        flag = Path("/sys/block") / candidate / "queue" / "rotational"
        if candidate and flag.is_file():
            rotational = flag.read_text().strip() == "1"
            break
    return {"device": device or None, "filesystem": fstype or None, "rotational": rotational,
            "size_bytes": shutil.disk_usage(mount).total if mount else None}


def describe(data_dir: Path | None = None) -> dict:
    """The environment block of results.json; ``data_dir``: where the systems' data was written."""
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
        "lakebench_version": versions.get("lakebench"),
        "lakebench_commit": lakebench_commit(),
        "disk": disk_of(data_dir if data_dir is not None else Path.cwd()),
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
