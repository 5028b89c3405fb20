"""A report built outside the docs tree (``lakebench report --html``): its links to the definitions
resolve (it carries them), and only the pages lakebench wrote are built."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("standalone")
    subprocess.run([sys.executable, "-m", "lakebench.cli", "run", "--systems", "memory,lmdb-nosync",
                    "--tail-seconds", "0", "--children", "20",
                    "--out", str(root / "run")], check=True, capture_output=True)
    out = root / "out"
    out.mkdir()
    # a shared directory may hold other pages: sphinx must not build (and so run) them
    (out / "foreign.rst").write_text("Foreign\n=======\n\n.. raw:: html\n\n   <script>alert(1)</script>\n")
    done = subprocess.run([sys.executable, "-m", "lakebench.cli", "report", str(root / "run"), "--out", str(out),
                           "--html"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return out / "_build" / "html"


def test_every_link_of_the_page_resolves(site):
    page = (site / "index.html").read_text()
    targets = {t.split("#")[0] for t in re.findall(r'href="([^":]+\.html[^"]*)"', page)}
    assert {"results.html", "workload.html"} <= targets
    assert all((site / t).exists() for t in targets), sorted(t for t in targets if not (site / t).exists())
    assert "time per child (mean)" in (site / "results.html").read_text()


def test_a_page_that_came_with_the_directory_is_not_built(site):
    assert not (site / "foreign.html").exists()
    assert "alert(1)" not in "".join(p.read_text() for p in site.glob("*.html"))
