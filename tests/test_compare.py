"""``lakebench compare``: ratios of two real runs, the noise, the exit status."""
from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest

from lakebench import results
from lakebench.compare import compare


def _lakebench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lakebench.cli", *args], capture_output=True, text=True,
                          timeout=600)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A small real run, two repeats (so each metric has its noise)."""
    out = tmp_path_factory.mktemp("compare") / "base"
    done = _lakebench("run", "--systems", "lmdb-nosync,memory",
                      "--tail-seconds", "0", "--children", "40", "--repeat", "2",
                      "--retrievals", "3", "--out", str(out), "--quiet")
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def _altered(run_dir, tmp_path, change, name: str = "new") -> str:
    document = results.load(run_dir)
    change(document)
    out = tmp_path / name
    out.mkdir()
    (out / "results.json").write_text(json.dumps(document))
    return str(out)


def test_a_run_against_itself_is_all_ones_and_exits_0(run_dir):
    done = _lakebench("compare", str(run_dir), str(run_dir))
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line for line in done.stdout.splitlines() if "children" in line]
    assert len(rows) >= 11  # two systems, six metrics (an in-memory store has no disk)
    assert all(row.split()[-1] == "1.00x" for row in rows), done.stdout
    assert "nothing worse" in done.stdout


def test_a_slower_run_beyond_the_noise_exits_1(run_dir, tmp_path):
    def slower(document):
        entry = document["systems"][0]
        entry["per_resource_ms"]["mean"] *= 3
        entry.setdefault("std", {})["per_resource_ms.mean"] = entry["per_resource_ms"]["mean"] * 0.01

    done = _lakebench("compare", str(run_dir), _altered(run_dir, tmp_path, slower))
    assert done.returncode == 1, done.stdout + done.stderr
    worse = [line for line in done.stdout.splitlines() if line.endswith("WORSE")]
    assert len(worse) == 1 and "time per child (mean)" in worse[0] and "3.00x" in worse[0]


def test_a_difference_within_the_noise_is_not_worse(run_dir):
    base = results.load(run_dir)
    new = copy.deepcopy(base)
    for document, std in ((base, 1.0), (new, 1.0)):
        entry = document["systems"][0]
        entry["std"] = {"per_resource_ms.mean": std}
        entry["repeat"] = 2
        entry["per_resource_ms"]["mean"] = 1.0
    new["systems"][0]["per_resource_ms"]["mean"] = 1.5  # 1.5x, but within 2 sigma of both sides
    change = next(c for c in compare(base, new, threshold=1.1) if c.metric == "time per child (mean)"
                  and c.case.startswith(base["systems"][0]["name"]))
    assert change.ratio == pytest.approx(1.5)
    assert change.noise == pytest.approx(2 ** 0.5)
    assert not change.worse
    new["std"] = None
    new["systems"][0]["repeat"] = 1  # one side without repeats: no noise known, the threshold alone
    change = next(c for c in compare(base, new, threshold=1.1) if c.metric == "time per child (mean)"
                  and c.case.startswith(base["systems"][0]["name"]))
    assert change.worse


def test_a_case_that_fails_only_in_new_is_worse(run_dir, tmp_path):
    def failed(document):
        document["systems"][1]["status"] = "failed"
        document["systems"][1]["error"] = "injected"

    done = _lakebench("compare", str(run_dir), _altered(run_dir, tmp_path, failed))
    assert done.returncode == 1
    assert any("FAILED" in line and line.endswith("WORSE") for line in done.stdout.splitlines())


@pytest.mark.parametrize("args", [["--threshold", "0.5"], ["--threshold", "nan"], ["--threshold", "x"]])
def test_a_bad_threshold_is_one_line_and_exit_2(run_dir, args):
    done = _lakebench("compare", str(run_dir), str(run_dir), *args)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_a_missing_results_directory_is_one_line_and_exit_2(run_dir, tmp_path):
    done = _lakebench("compare", str(run_dir), str(tmp_path / "nowhere"))
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "nowhere" in done.stderr


def test_swept_variants_are_cases_of_their_own_with_their_operations():
    """A workload's swept parameter (``variant``) tells cases apart; its operations beyond the primary
    kind and the parent GET are compared too (record fields as docs/results.rst describes them)."""
    def entry(size, get_ms):
        return {"name": "a", "status": "ok", "children": 10, "literal_length": 64, "variant": f"binary_size={size}",
                "workload": {"name": "unknown-here", "params": {}},  # primary: the kind matching per_resource_ms
                "per_resource_ms": {"mean": 2.0, "p95": 3.0},
                "operations": {"put binary": {"count": 5, "seconds": 0.01, "mean_ms": 2.0},
                               "get binary": {"count": 5, "seconds": 0.005, "mean_ms": get_ms},
                               "get parent": {"count": 3, "seconds": 0.003, "mean_ms": 1.0}}}

    base = {"systems": [entry(1024, 1.0), entry(65536, 4.0)]}
    new = {"systems": [entry(1024, 1.0), entry(65536, 8.0)]}
    changes = compare(base, new)
    gets = [(c.case, c.ratio, c.worse) for c in changes if c.metric == "time per get binary (mean)"]
    assert gets == [("a (10 children, literal 64, binary_size=1024)", 1.0, False),
                    ("a (10 children, literal 64, binary_size=65536)", 2.0, True)]
    # The primary's mean once per case (as the time per operation), the parent's retrievals as first and steady only.
    assert [c.metric for c in changes].count("time per put binary (mean)") == 2
    assert not [c for c in changes if c.metric == "time per get parent (mean)"]


def test_the_verdict_comes_first_and_an_improvement_is_better(run_dir, tmp_path):
    def quiet(document):  # the base's time per child measured with little noise (a real 2-run spread
        entry = document["systems"][0]  # on this shared machine may hide even a 3x change)
        entry.setdefault("std", {})["per_resource_ms.mean"] = entry["per_resource_ms"]["mean"] * 0.01

    def faster(document):
        quiet(document)
        entry = document["systems"][0]
        entry["per_resource_ms"]["mean"] /= 3
        entry["std"]["per_resource_ms.mean"] = entry["per_resource_ms"]["mean"] * 0.01
        document["started"] = "2000-01-01T00:00:00+00:00"  # another run

    base = _altered(run_dir, tmp_path, quiet, "base")
    new = _altered(run_dir, tmp_path, faster)
    done = _lakebench("compare", base, new)
    assert done.returncode == 0, done.stdout + done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("nothing worse") and "1 better" in first and base in first and new in first
    better = [line for line in done.stdout.splitlines() if line.endswith("better")]
    assert len(better) == 1 and "time per child (mean)" in better[0] and "0.33x" in better[0]
    assert "same run" not in done.stderr


def test_a_run_compared_with_itself_is_said_to_be_one(run_dir):
    done = _lakebench("compare", str(run_dir), str(run_dir))
    assert "BASE and NEW are the same run" in done.stderr


def test_the_comparison_page_answers_first_and_is_named(run_dir, tmp_path):
    out = tmp_path / "report"
    done = _lakebench("report", str(run_dir), "--compare", str(run_dir), "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Comparison: {out / 'compare.rst'}" in done.stdout
    page = (out / "compare.rst").read_text()
    assert page.index(".. admonition:: Verdict") < page.index(".. list-table:: NEW against BASE")
    assert ".. warning:: BASE and NEW are the same run" in page
