"""The reference frames the answer (issue 29, item 1): with ``--reference``, the summary states
each system against it first, in the ranking table's own terms; "x fastest" comes second."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from lakebench import figures


def _run(out, *extra):
    subprocess.run([sys.executable, "-m", "lakebench.cli", "run", "--systems", "memory,lmdb-nosync",
                    "--tail-seconds", "0",
                    "--children", "30", "--out", str(out), *extra], check=True, capture_output=True)
    subprocess.run([sys.executable, "-m", "lakebench.cli", "report", str(out), "--out", str(out / "report")],
                   check=True, capture_output=True)
    document = json.loads((out / "results.json").read_text())
    page = (out / "report" / "index.rst").read_text()
    return document, page[page.index("Summary\n-------"):]


@pytest.fixture(scope="module")
def framed(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("ref") / "run", "--reference", "memory")


def test_the_summary_answers_against_the_reference_first(framed):
    document, summary = framed
    entries = {e["name"]: e for e in document["systems"]}
    mine, theirs = entries["lmdb-nosync"], entries["memory"]
    time_text = figures.against(mine["per_resource_ms"]["mean"], theirs["per_resource_ms"]["mean"])
    parent_text = figures.against(mine["parent"]["seconds"], theirs["parent"]["seconds"])
    first = summary.index("**Against the reference, memory**")
    assert first < summary.index("Ranked by") < summary.index(".. list-table:: Ranking")
    line = next(l for l in summary.splitlines() if l.startswith("- **lmdb-nosync**"))
    assert time_text.replace(" ", "\u00a0") in line and parent_text.replace(" ", "\u00a0") in line
    # the table says the same, in a column of its own before "x fastest"
    table = summary[summary.index(".. list-table:: Ranking"):]
    assert table.index("- vs memory") < table.index("- x fastest")
    assert time_text.replace(" ", "\u00a0") in table and "- reference" in table


def test_without_a_reference_the_implied_one_frames_it(tmp_path):
    """No --reference: the first system listed is the reference (fcrepo when measured), and says so."""
    document, summary = _run(tmp_path / "run")
    assert document["reference"] == "memory"
    assert summary.index("**Against the reference, memory**") < summary.index(".. list-table:: Ranking")
    assert "the first system listed" in summary


def test_each_case_is_compared_with_the_reference_of_the_same_case(tmp_path):
    """A sweep (children here, users alike) compares each case with the reference's run of that case:
    the reference's own rows are 100%, and the parent chart's "of ref." uses the same case's parent."""
    from lakebench.report import pages
    from lakebench.report.data import ReportData

    out = tmp_path / "sweep"
    subprocess.run([sys.executable, "-m", "lakebench.cli", "run", "--systems", "memory,lmdb-nosync",
                    "--tail-seconds", "0",
                    "--children", "20,400", "--reference", "lmdb-nosync", "--out", str(out), "--quiet"],
                   check=True, capture_output=True)
    data = ReportData.load(out)
    for e in data.ok:
        ref = data.reference_for(e)
        assert ref["name"] == "lmdb-nosync" and ref["children"] == e["children"]
    rows = pages.reference_rows(data)
    # disk/ref (bytes per triple) differs between the cases: each case's reference row must be 100%
    reference_rows = [r for r in rows[1:] if r[0].startswith("lmdb-nosync")]
    assert len(reference_rows) == 2 and all(r[-1] == "100%" for r in reference_rows), reference_rows
