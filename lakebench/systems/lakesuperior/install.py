"""LAKEsuperior 1.0.0a21 installed once into a virtualenv of its own in the cache.

Its last release is an sdist of C that Cython 0.29.6 generated, which does
not build on Python 3.11 as shipped, and whose dependencies must be held at
old versions; so it is kept out of lakebench's own environment.
:func:`fetch` downloads the sdist with ``pip download`` into the cache
(``~/.cache/lakebench``, like Fedora's files), checks its SHA-256 against
:data:`SDIST_SHA256`, creates a virtualenv beside it, installs the pinned
runtime of ``requirements.txt`` (beside this module), adapts the C to Python
3.11 (:mod:`lakebench.systems.lakesuperior.py311`) and builds it.  A second
fetch finds the finished installation and does nothing.
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from lakebench import process
from lakebench.systems.external import cache_dir as _cache_dir
from lakebench.systems.external import file_digest, want_progress
from lakebench.systems.lakesuperior import py311

VERSION = "1.0.0a21"
#: SHA-256 of ``lakesuperior-1.0.0a21.tar.gz`` as PyPI serves it; a download
#: that does not match is discarded.
SDIST_SHA256 = "eaf1dc4f4abe669457bd83753cc85c49f7348117a27ba712e385ba7ba1f18e81"
SDIST_NAME = f"lakesuperior-{VERSION}.tar.gz"
#: The pinned runtime, installed into LAKEsuperior's virtualenv.
REQUIREMENTS = Path(__file__).with_name("requirements.txt")
#: The Python line the adaptation and the pins are made for.
PYTHON = (3, 11)
#: In the virtualenv once it is finished: what it was built from (:func:`installed`).
READY_MARKER = ".lakebench-ready.json"


class LakesuperiorError(RuntimeError):
    """LAKEsuperior could not be fetched, started, found or stopped; the message says why."""


@dataclass(frozen=True)
class Installation:
    """A verified, built LAKEsuperior in a virtualenv of its own."""

    version: str
    root: Path  # <cache>/lakesuperior-<version>
    sdist: Path

    @property
    def venv(self) -> Path:
        return self.root / "venv"

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def gunicorn(self) -> Path:
        return self.venv / "bin" / "gunicorn"

    @property
    def lsup_admin(self) -> Path:
        return self.venv / "bin" / "lsup-admin"


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file."""
    return file_digest(path, "sha256")


def _fingerprint() -> dict:
    """What a finished installation was built from: any change rebuilds it."""
    return {
        "version": VERSION,
        "sdist_sha256": SDIST_SHA256,
        "requirements_sha256": sha256_of(REQUIREMENTS),
        "adaptation_sha256": sha256_of(Path(py311.__file__)),
    }


def _say(show: bool, message: str) -> None:
    if show:
        print(f"lakebench lakesuperior: {message}", file=sys.stderr, flush=True)


def clean_env(**extra: str) -> dict:
    """The environment for LAKEsuperior's tools: nothing of lakebench's Python leaks in."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PYTHONNOUSERSITE"] = "1"
    env.update(extra)
    return env


def _run(cmd: list, what: str, log: Path, **kwargs) -> None:
    """Run a build step; its output goes to ``log``; a failure quotes the log's end."""
    with open(log, "ab") as out:
        out.write(("\n$ " + " ".join(map(str, cmd)) + "\n").encode())
        out.flush()
        done = subprocess.run([str(c) for c in cmd], stdout=out, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, **kwargs)
    if done.returncode != 0:
        raise LakesuperiorError(f"{what} failed (exit code {done.returncode}); {log} ends with:\n"
                                f"{process.log_tail(log)}")


def _check_python(python: str) -> None:
    out = subprocess.run([python, "-c", "import sys; print(sys.version_info[0], sys.version_info[1])"],
                         capture_output=True, text=True)
    try:
        found = tuple(int(x) for x in out.stdout.split())
    except ValueError:
        found = ()
    if found != PYTHON:
        raise LakesuperiorError(
            f"LAKEsuperior {VERSION} is installed with Python {PYTHON[0]}.{PYTHON[1]} (its C is adapted "
            f"to it and its dependencies pinned for it); {python} is Python "
            f"{'.'.join(map(str, found)) or '?'}")


def install_root(cache_dir: str | Path | None = None) -> Path:
    cache = _cache_dir(cache_dir)
    return cache / f"lakesuperior-{VERSION}"


def installed(cache_dir: str | Path | None = None) -> Installation | None:
    """The finished installation in the cache, or None (nothing is downloaded)."""
    cache = _cache_dir(cache_dir)
    inst = Installation(VERSION, install_root(cache), cache / SDIST_NAME)
    try:
        marker = json.loads((inst.venv / READY_MARKER).read_text())
    except (OSError, ValueError):
        return None
    if marker != _fingerprint() or not inst.python.exists() or not inst.gunicorn.exists():
        return None
    return inst


def fetch(cache_dir: str | Path | None = None, *, progress: bool | None = None,
          python: str | None = None) -> Installation:
    """Download, verify, adapt and build LAKEsuperior into its own virtualenv (once).

    ``python`` is the interpreter the virtualenv is made from (default: the
    one running lakebench; it must be Python 3.11).  Returns at once when a
    finished installation of the same sdist, pins and adaptation is in the
    cache.  Concurrent fetches wait for each other (a lock file).
    """
    cache = _cache_dir(cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    found = installed(cache)
    if found is not None:
        return found
    show = want_progress(progress)
    with open(cache / f"lakesuperior-{VERSION}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = installed(cache)  # another process may have finished meanwhile
        if found is not None:
            return found
        return _build(cache, python or sys.executable, show)


def _build(cache: Path, python: str, show: bool) -> Installation:
    t0 = time.monotonic()
    _check_python(python)
    root = install_root(cache)
    inst = Installation(VERSION, root, cache / SDIST_NAME)
    shutil.rmtree(inst.venv, ignore_errors=True)  # a half-built one is never reused
    root.mkdir(parents=True, exist_ok=True)
    log = root / "install.log"
    log.write_text(f"# lakebench: installing LAKEsuperior {VERSION}\n")
    env = clean_env()
    _say(show, f"creating a virtualenv for LAKEsuperior {VERSION} in {inst.venv}")
    _run([python, "-m", "venv", inst.venv], "creating the virtualenv", log, env=env)
    _say(show, "installing its pinned dependencies")
    _run([inst.python, "-m", "pip", "install", "--no-input", "-r", REQUIREMENTS],
         "installing LAKEsuperior's dependencies", log, env=env)
    _fetch_sdist(inst, log, env, show)
    with tempfile.TemporaryDirectory(prefix="build-", dir=root) as tmp:
        with tarfile.open(inst.sdist) as tar:
            if hasattr(tarfile, "data_filter"):  # refuse links and paths out of the tree
                tar.extractall(tmp, filter="data")
            else:
                tar.extractall(tmp)
        source = Path(tmp) / f"lakesuperior-{VERSION}"
        try:
            py311.patch_tree(source)
        except py311.PatchError as exc:
            raise LakesuperiorError(str(exc)) from None
        _say(show, "building its C extensions (adapted to Python 3.11; about a minute)")
        _run([inst.python, "-m", "pip", "install", "--no-input", "--no-deps", "--no-build-isolation",
              "--no-cache-dir", source], "building LAKEsuperior", log,
             env=clean_env(CFLAGS=py311.STRICT_CFLAGS))
    modules = ", ".join("lakesuperior." + m for m in (
        "model.base", "model.callbacks", "model.rdf.graph", "model.rdf.term", "model.rdf.triple",
        "model.structures.hash", "model.structures.keyset", "store.base_lmdb_store",
        "store.ldp_rs.lmdb_triplestore"))
    _run([inst.python, "-c", f"import {modules}"], "importing LAKEsuperior's compiled modules", log,
         env=env, cwd=root)
    (inst.venv / READY_MARKER).write_text(json.dumps(_fingerprint(), indent=2) + "\n")
    _say(show, f"LAKEsuperior {VERSION} ready in {time.monotonic() - t0:.0f} s")
    return inst


def _fetch_sdist(inst: Installation, log: Path, env: dict, show: bool) -> None:
    """The sdist into the cache, verified; a verified cached copy is used as is."""
    if inst.sdist.exists():
        if sha256_of(inst.sdist) == SDIST_SHA256:
            return
        print(f"lakebench: cached {inst.sdist} fails its checksum; downloading it again", file=sys.stderr)
        inst.sdist.unlink()
    _say(show, f"downloading the sdist of lakesuperior=={VERSION}")
    with tempfile.TemporaryDirectory(prefix="download-", dir=inst.root) as tmp:
        _run([inst.python, "-m", "pip", "download", "--no-input", "--no-deps", "--no-binary", ":all:",
              f"lakesuperior=={VERSION}", "-d", tmp], "downloading the LAKEsuperior sdist", log, env=env)
        got = Path(tmp) / SDIST_NAME
        if not got.exists():
            raise LakesuperiorError(f"pip download did not produce {SDIST_NAME}; see {log}")
        digest = sha256_of(got)
        if digest != SDIST_SHA256:
            raise LakesuperiorError(f"checksum mismatch for {SDIST_NAME}: expected SHA-256 {SDIST_SHA256}, "
                                    f"got {digest}; file discarded")
        os.replace(got, inst.sdist)
