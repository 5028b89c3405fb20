"""The type stubs of the compiled core (lakebench/_*.pyi) match the compiled
modules: mypy's stubtest imports each module and compares every name,
signature and class with its stub."""
from __future__ import annotations

import os
import subprocess
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest

import lakebench

PACKAGE = Path(lakebench.__file__).parent
ALLOWLIST = Path(__file__).with_name("stubtest-allowlist.txt")


def compiled_modules() -> list[str]:
    """Every extension module built into the package (one per ext/lakebench/*.pyx)."""
    names = set()
    for path in PACKAGE.iterdir():
        suffix = max((s for s in EXTENSION_SUFFIXES if path.name.endswith(s)), key=len, default=None)
        if suffix:
            names.add(path.name[: -len(suffix)])
    return sorted(f"lakebench.{name}" for name in names)


def test_every_compiled_module_has_a_stub():
    modules = compiled_modules()
    assert "lakebench._store" in modules
    # stubtest passes a module without a stub silently, so the stub must exist
    missing = [m for m in modules if not (PACKAGE / f"{m.rsplit('.', 1)[1]}.pyi").exists()]
    assert missing == []


def test_stubs_match_the_compiled_modules():
    pytest.importorskip("mypy.stubtest")
    env = dict(os.environ, MYPYPATH=str(PACKAGE.parent))  # mypy finds the stubs of the package in place
    result = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "--concise", "--allowlist", str(ALLOWLIST), *compiled_modules()],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
