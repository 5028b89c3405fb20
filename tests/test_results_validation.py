"""Issue 16, cases 6 and 7: `lakebench table` and `lakebench report` on damaged results.

Whatever is in the results directory, and wherever --out points, the answer
is exit code 2 and one line on stderr naming the file and the first bad
field: never a traceback.
"""
from __future__ import annotations

import copy
import json
import os
import shutil
from pathlib import Path

import pytest

from lakebench import results
from lakebench.cli import main
from lakebench.runner import RunConfig, run

DOCS = Path(__file__).resolve().parent.parent / "docs"


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:
    """A real results directory: memory and oxigraph, 6 children."""
    out = tmp_path_factory.mktemp("good")
    run(RunConfig(systems=["memory", "oxigraph"], children=6, out=out, tail_seconds=0, interval=0.1,
                  progress=False), log=lambda *_: None)
    return out


def _damaged(good: Path, dst: Path, *, text: str | None = None, edit=None, latencies: str | None = None) -> Path:
    """A copy of ``good`` whose results.json is ``text`` or the document changed by ``edit``."""
    dst.mkdir()
    shutil.copy(good / "latencies.csv", dst / "latencies.csv")
    if text is None:
        document = copy.deepcopy(results.load(good))
        if edit:
            edit(document)
        text = json.dumps(document)
    (dst / "results.json").write_text(text, encoding="utf-8")
    if latencies is not None:
        (dst / "latencies.csv").write_text(latencies, encoding="utf-8")
    return dst


def _entry(document: dict) -> dict:
    return document["systems"][0]


#: (name, damage, words the one line must hold): results.json as a user may find it.
DAMAGE = [
    ("empty", dict(text=""), "results.json is empty"),
    ("truncated", dict(text='{"schema": 1, "systems": [{"name": "mem'), "results.json is not valid JSON"),
    ("non-object", dict(text="[1, 2, 3]"), "expected an object at the top, got a list"),
    ("systems-not-list", dict(edit=lambda d: d.update(systems="memory")), 'systems: expected a list, got "memory"'),
    ("systems-null", dict(edit=lambda d: d.update(systems=None)), "systems: expected a list, got null"),
    ("entry-null", dict(edit=lambda d: d["systems"].__setitem__(0, None)), "systems[0]: expected an object, got null"),
    ("ingest-string", dict(edit=lambda d: _entry(d).update(ingest_seconds="fast")),
     'systems[0].ingest_seconds: expected a finite number, got "fast"'),
    ("ingest-null", dict(edit=lambda d: _entry(d).update(ingest_seconds=None)),
     "systems[0].ingest_seconds: expected a finite number, got null"),
    ("mean-null", dict(edit=lambda d: _entry(d)["per_resource_ms"].update(mean=None)),
     "systems[0].per_resource_ms.mean: expected a finite number, got null"),
    ("parent-string", dict(edit=lambda d: _entry(d).update(parent="x")), "systems[0].parent: expected an object"),
    ("children-string", dict(edit=lambda d: _entry(d).update(children="6")),
     'systems[0].children: expected an integer, got "6"'),
    ("name-number", dict(edit=lambda d: _entry(d).update(name=3)), "systems[0].name: expected a string, got 3"),
    ("status-null", dict(edit=lambda d: _entry(d).update(status=None)), "systems[0].status: expected a string"),
    ("workload-null", dict(edit=lambda d: d.update(workload=None)), "workload: expected an object, got null"),
    ("samples-string", dict(edit=lambda d: _entry(d).update(samples="x")), "systems[0].samples: expected a list"),
    ("growth-missing", dict(edit=lambda d: _entry(d).pop("growth")), "systems[0].growth: missing (status is ok)"),
    ("nan", dict(text='{"schema": 1, "systems": [], "settings": {"tail_seconds": NaN}}'),
     "settings.tail_seconds: expected a finite number, got NaN"),
    ("schema-2", dict(edit=lambda d: d.update(schema=2)), "schema: version 2, but this lakebench reads version 1"),
    ("budget-exhausted-string", dict(edit=lambda d: _entry(d).update(budget_exhausted="yes")),
     'systems[0].budget_exhausted: expected true or false, got "yes"'),
    ("checkpoint-children-missing", dict(edit=lambda d: _entry(d).update(checkpoints=[{"parent_seconds": 0.1}])),
     "systems[0].checkpoints[0].children: missing"),
    ("budget-seconds-string", dict(edit=lambda d: d["settings"].update(budget_seconds="20m")),
     'settings.budget_seconds: expected a finite number, got "20m"'),
    ("status-unknown", dict(edit=lambda d: _entry(d).update(status="maybe")),
     'systems[0].status: expected one of "ok", "failed", "skipped", got "maybe"'),
]


def _one_line(capsys, command: str) -> str:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith(f"lakebench {command}: error: ")
    return lines[0]


# -- case 6: lakebench table ---------------------------------------------------------

@pytest.mark.parametrize("name, damage, expected", DAMAGE, ids=[d[0] for d in DAMAGE])
def test_table_names_the_bad_field_in_one_line(good, tmp_path, capsys, name, damage, expected):
    damaged = _damaged(good, tmp_path / name, **damage)
    assert main(["table", str(damaged)]) == 2
    line = _one_line(capsys, "table")
    assert expected in line
    assert str(damaged / "results.json") in line


def test_table_on_a_file_instead_of_a_directory(good, capsys):
    assert main(["table", str(good / "results.json")]) == 2
    assert "is not a directory" in _one_line(capsys, "table")


def test_table_on_a_missing_directory(tmp_path, capsys):
    assert main(["table", str(tmp_path / "nowhere")]) == 2
    assert f"no results.json in {tmp_path / 'nowhere'}" in _one_line(capsys, "table")


def test_table_of_a_good_directory(good, capsys):
    assert main(["table", str(good)]) == 0
    assert "oxigraph" in capsys.readouterr().out


# -- case 7: lakebench report -------------------------------------------------------

@pytest.fixture
def report_out(tmp_path) -> Path:
    return tmp_path / "report-out"


#: The damage the issue saw make `report` print a traceback, and some more.
REPORT_DAMAGE = [d for d in DAMAGE if d[0] in ("truncated", "entry-null", "ingest-string", "ingest-null",
                                                "mean-null", "parent-string", "children-string", "name-number",
                                                "status-null", "samples-string")]


@pytest.mark.parametrize("name, damage, expected", REPORT_DAMAGE, ids=[d[0] for d in REPORT_DAMAGE])
def test_report_names_the_bad_field_in_one_line(good, tmp_path, report_out, capsys, name, damage, expected):
    pytest.importorskip("matplotlib")
    damaged = _damaged(good, tmp_path / name, **damage)
    assert main(["report", str(damaged), "--out", str(report_out)]) == 2
    assert expected in _one_line(capsys, "report")


@pytest.mark.parametrize("name, latencies, expected", [
    ("no-header", "hello world\n\x01 garbage,,,\n", "latencies.csv line 1: expected the header "
                                                     "system,children,literal_length,variant,run,index,seconds"),
    ("not-a-number", "system,children,literal_length,run,index,seconds\nmemory,x,64,0,0,abc\n",
     "latencies.csv line 2: children: expected an integer, got 'x'"),
    ("short-row", "system,children,literal_length,run,index,seconds\nmemory,6,64\n",
     "latencies.csv line 2: 3 columns, expected 6"),  # a file of an earlier lakebench (no variant column)
    ("short-row-now", "system,children,literal_length,variant,run,index,seconds\nmemory,6,64,,0\n",
     "latencies.csv line 2: 5 columns, expected 7"),
    ("nan-seconds", "system,children,literal_length,run,index,seconds\nmemory,6,64,0,0,nan\n",
     "latencies.csv line 2: seconds: expected a finite number, got 'nan'"),
    ("nul-bytes", "system,children,literal_length,run,index,seconds\n\x00\x00\n", "latencies.csv line 2: "),
    ("empty", "", "latencies.csv is empty"),
])
def test_report_on_garbage_latencies_is_one_line(good, tmp_path, report_out, capsys, name, latencies, expected):
    pytest.importorskip("matplotlib")
    damaged = _damaged(good, tmp_path / name, latencies=latencies)
    assert main(["report", str(damaged), "--out", str(report_out)]) == 2
    assert expected in _one_line(capsys, "report")


def test_report_on_a_file_instead_of_a_directory(good, report_out, capsys):
    assert main(["report", str(good / "results.json"), "--out", str(report_out)]) == 2
    assert "is not a directory" in _one_line(capsys, "report")


def test_report_out_naming_a_file(good, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory")
    assert main(["report", str(good), "--out", str(a_file)]) == 2
    assert f"cannot write the report to {a_file}: not a directory" in _one_line(capsys, "report")
    assert main(["report", str(good), "--out", str(a_file / "below")]) == 2
    assert "cannot write the report to" in _one_line(capsys, "report")


def test_report_out_in_an_unwritable_place(good, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    # Nothing can be created under /proc, not even by root.
    assert main(["report", str(good), "--out", "/proc/lakebench-no-such-dir/out"]) == 2
    assert "cannot write the report to /proc/lakebench-no-such-dir/out" in _one_line(capsys, "report")
    if os.geteuid() != 0:  # root writes anywhere else
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        assert main(["report", str(good), "--out", str(locked / "out")]) == 2
        assert "Permission denied" in _one_line(capsys, "report")


# -- the schema's one owner -----------------------------------------------------------

def test_what_lakebench_writes_is_valid(good):
    results.validate(results.load(good))  # load checks too; said twice for the reader


def test_docs_name_every_field_of_the_layout():
    """docs/results.rst (for readers) and results.FIELDS (for load) describe the same fields."""
    text = (DOCS / "results.rst").read_text(encoding="utf-8")
    entry = results.FIELDS["systems"].kind[0].kind
    named = [key for key in [*results.FIELDS, *entry] if key != "*"]
    missing = [key for key in named if f"``{key}``" not in text]
    assert not missing, f"docs/results.rst does not describe {missing}"
    # And every field the entry table documents is in the layout.
    table = text.split("================================  =====", 2)[1]
    documented = {word for line in table.splitlines() if line.startswith("        ``")
                  for word in line.split("  ")[0].replace("``", "").replace(",", " ").split()}
    assert documented <= set(entry), f"not in results.FIELDS: {documented - set(entry)}"
