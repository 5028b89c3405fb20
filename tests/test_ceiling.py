"""Tests for lakebench.ceiling: what the Locust driver alone can send (Locust runs in a subprocess)."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(importlib.util.find_spec("locust") is None, reason="needs locust (pip install locust)")
def test_client_ceiling_runs(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    done = subprocess.run([sys.executable, "-m", "lakebench.ceiling", "ceiling", "--seconds", "1", "--user", "fast"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["user"] == "FastHttpUser" and got["failures"] == 0
    assert got["requests_per_second"] > 100 and got["client_cpu_us_per_request"] > 0
