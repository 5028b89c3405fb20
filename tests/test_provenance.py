"""Provenance on the page and in results.json (issue 29, item 7): each system's version, the
commit lakebench ran from, the disk the systems wrote to."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from lakebench import environment


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("provenance") / "run"
    subprocess.run([sys.executable, "-m", "lakebench.cli", "run", "--systems", "memory,lmdb,oxigraph",
                    "--tail-seconds", "0",
                    "--children", "20", "--out", str(out)], check=True, capture_output=True)
    subprocess.run([sys.executable, "-m", "lakebench.cli", "report", str(out), "--out", str(out / "report")],
                   check=True, capture_output=True)
    return json.loads((out / "results.json").read_text()), (out / "report" / "index.rst").read_text()


def test_every_system_records_what_it_is(run):
    document, _ = run
    versions = {e["name"]: e["version"] for e in document["systems"]}
    import pyoxigraph
    import rdflib

    from lakebench._store import FORMAT_VERSION

    assert versions["oxigraph"] == f"pyoxigraph {pyoxigraph.__version__}"
    assert versions["memory"].startswith(f"rdflib {rdflib.__version__}")
    assert versions["lmdb"].startswith(f"lakebench store format {FORMAT_VERSION}, LMDB ")
    assert all(run["version"] == versions[e["name"]] for e in document["systems"] for run in e["runs"])


def test_the_page_names_versions_commit_and_disk(run):
    document, page = run
    for entry in document["systems"]:
        assert entry["version"] in page.replace("\\", "")
    commit = document["environment"]["lakebench_commit"]
    if commit:  # run from a git checkout, as the tests are
        assert f"commit ``{commit.removesuffix('+dirty')}``" in page
    disk = document["environment"]["disk"]
    assert f"{disk['filesystem']} on {disk['device']}" in page
    assert "unrecorded kind" not in page


def test_the_recorded_disk_is_the_one_of_the_data(tmp_path):
    disk = environment.disk_of(tmp_path)
    assert disk["filesystem"] and disk["device"]
