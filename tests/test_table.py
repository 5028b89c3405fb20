"""The terminal table: fits the width asked for, ranks rows, writes figures as the report does."""
from __future__ import annotations

import pytest

from lakebench import figures, table
from lakebench.runner import RunConfig, run


@pytest.fixture(scope="module")
def document(tmp_path_factory):
    out = tmp_path_factory.mktemp("table")
    config = RunConfig(systems=["memory", "lmdb-nosync", "oxigraph"], children=20, out=out, tail_seconds=0,
                       interval=0.1, progress=False, reference="memory")
    return run(config, log=lambda *_: None)


@pytest.mark.parametrize("width", [60, 80, 100, 140])
def test_the_table_fits_the_width_and_keeps_the_headline(document, width):
    printed = table.render(table.rows(document, width=width))
    assert max(len(line) for line in printed.splitlines()) <= max(width, _least(document))
    header = printed.splitlines()[0]
    assert header.startswith("system") and "durability" in header and "per child" in header


def _least(document) -> int:
    """The width of the columns always shown (system, durability, time per child (mean))."""
    rows = table.rows(document, width=1)
    return len(table.render(rows).splitlines()[1])


def test_wide_shows_every_column_and_the_default_fits_100(document, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    narrow, wide = table.rows(document), table.rows(document, wide=True)
    assert len(wide[0]) > len(narrow[0])
    assert max(len(line) for line in table.render(narrow).splitlines()) <= 100
    assert {"B/triple", "time/memory", "disk/memory", "triples"} <= set(wide[0])


def test_rows_are_ranked_fastest_first(document):
    names = [row[0] for row in table.rows(document, wide=True)[1:]]
    by_name = {e["name"]: e["per_resource_ms"]["mean"] for e in document["systems"]}
    assert names == sorted(by_name, key=by_name.get)


def test_the_table_writes_the_figures_the_report_writes(document):
    from lakebench.report import fmt

    rows = table.rows(document, wide=True)
    column = rows[0].index("time per child (mean)")
    for row in rows[1:]:
        entry = next(e for e in document["systems"] if e["name"] == row[0])
        assert row[column] == fmt.millis(entry["per_resource_ms"]["mean"]) == figures.millis(
            entry["per_resource_ms"]["mean"])
