"""A workload owns its story (issue 28): the field it adds to each record and that field's heading
(``Workload.RECORD``), and what the terminal says of it (``Workload.notes``); the report and the table
look them up by the workload's name.  The field's layout stays with the rest of results.json's in
lakebench.results.schema: each workload's field is there, and each field there that no other part of a
run writes belongs to exactly one workload."""
from __future__ import annotations

from lakebench import table, workloads
from lakebench.report import sections
from lakebench.results import schema

ENTRY = schema.FIELDS["systems"].kind[0].kind  # one system entry's fields


def _records() -> dict[str, tuple[str, str]]:
    return {name: workloads.load(name).RECORD for name in workloads.WORKLOADS if workloads.load(name).RECORD}


def test_each_workload_field_is_in_the_schema_and_owned_once():
    records = _records()
    keys = [key for key, _ in records.values()]
    assert len(keys) == len(set(keys)), records
    assert all(key in ENTRY for key in keys), [k for k in keys if k not in ENTRY]
    assert set(keys) == {"binaries", "deep", "updates", "reads", "mixed", "queries", "versions"}
    assert workloads.load("flat").RECORD is None  # the seed's figures are every workload's


def test_the_report_heads_a_page_with_its_own_workloads_field_only():
    assert sections.workload_record("binaries") == ("binaries", "Binaries")
    assert sections.workload_record("no-such-workload") is None


def test_the_terminal_notes_come_from_the_workload():
    entry = {"name": "a", "status": "ok", "binaries": {"size_bytes": 1024, "count": 2, "put_mb_per_s": 1.0,
                                                       "get_mb_per_s": 2.0, "sampled": 2, "verified": 2,
                                                       "mismatched": 0}}
    lines = table.notes({"workload": {"name": "binaries"}, "systems": [entry]})
    assert any(line.startswith("a: 2 binaries of 1,024 B") for line in lines), lines
    # The same entry under another workload's name: that workload says nothing of binaries.
    assert not any("binaries of" in line for line in table.notes({"workload": {"name": "flat"},
                                                                   "systems": [entry]}))
    cold = {"name": "b", "status": "ok", "reads": {"cold_requested": 5, "cold": False}}
    assert any("no cold reads" in line for line in table.notes({"workload": {"name": "read"}, "systems": [cold]}))
