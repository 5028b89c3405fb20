"""One figure, one name, one value (issue 29): the terminal table, every .rst page of the report, ``compare``
and results.json agree on the parent's first and steady reads and how many were made, on the time per
child, and on a Locust ingest's throughput.

The flat run is real (``lakebench run --systems memory,lmdb-nosync --children 300 --retrievals 4``, in
process: seconds).  The Locust-shaped results are made from it: their ``load`` is built from synthetic
request records (4 users, a 0.48 s ingest) by the function the Locust driver calls.
"""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from lakebench import compare, figures, report, results, table  # noqa: E402
from lakebench.report import charts  # noqa: E402
from lakebench.report.data import ReportData  # noqa: E402
from lakebench.runner import RunConfig, run  # noqa: E402

N = 4  # --retrievals: the parent read N times in all
FIRST, STEADY, RETRIEVALS = "GET parent first", "GET parent steady", "retrievals"
PER_CHILD = "time per child (mean)"
THROUGHPUT = "throughput"
#: What the same figures were also called (issue 29): shown nowhere any more.
OLD_NAMES = ("per resource", "time per operation", "time per create", "create mean", "ops/s", "PUT/s",
             "requests/s", "GET first", "GET steady", "first / steady")
USERS = 4


# -- reading what is shown ---------------------------------------------------

def _plain(cell: str) -> str:
    """A table cell as read: its lines (a line block's) joined by a space, non-breaking spaces plain."""
    lines = [line[2:] if line.startswith("| ") else line for line in cell.split("\n")]
    return " ".join(lines).replace("\u00a0", " ").strip()


def list_tables(text: str) -> list[tuple[str, list[list[str]]]]:
    """Every ``list-table`` of a page: (title, rows of cells, the header first)."""
    found = []
    for block in re.split(r"^\.\. list-table::", text, flags=re.M)[1:]:
        title, _, body = block.partition("\n")
        rows: list[list[str]] = []
        for line in body.splitlines():
            if line.startswith("   * - "):
                rows.append([line[7:]])
            elif line.startswith("     - "):
                rows[-1].append(line[7:])
            elif line.startswith("       ") and rows:
                rows[-1][-1] += "\n" + line[7:]
            elif line.strip() and not line.startswith("   :"):
                break
        found.append((title.strip(), [[_plain(cell) for cell in row] for row in rows]))
    return found


def column(rows: list[list[str]], name: str) -> dict[str, str] | None:
    """The cells of the column headed ``name``, by the row's system (``(ref.)`` dropped); None: no such column."""
    if name not in rows[0]:
        return None
    i = rows[0].index(name)
    return {row[0].replace(" (ref.)", ""): row[i] for row in rows[1:]}


def shown(page: str, name: str) -> dict[str, dict[str, str]]:
    """Every table of ``page`` with a column headed ``name``: title -> that column."""
    return {title: cells for title, rows in list_tables(page) if (cells := column(rows, name)) is not None}


def section(page: str, heading: str) -> str:
    """A section of the page (``-`` underlined heading) up to the next one."""
    starts = [(m.start(), m.group(1)) for m in re.finditer(r"^(.+)\n-{3,}$", page, flags=re.M)]
    for (start, title), (end, _) in zip(starts, starts[1:] + [(len(page), "")]):
        if title == heading:
            return page[start:end]
    raise AssertionError(f"no section {heading!r}")


def terminal(document: dict) -> tuple[list[list[str]], str]:
    """The terminal table, every column, and all it prints (the table and its notes)."""
    return table.rows(document, wide=True), table.text(document, wide=True)


def ok(document: dict) -> list[dict]:
    return [e for e in document["systems"] if e["status"] == "ok"]


def draw(data: ReportData, name: str):
    chart = next(c for c in charts.CHARTS if c.name == name)
    with charts.style():
        return chart.draw(data)


# -- the flat run --------------------------------------------------------------

@pytest.fixture(scope="module")
def flat_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("flat")
    run(RunConfig(systems=["memory", "lmdb-nosync"], children=300, retrievals=N, seed=3, out=out, tail_seconds=0,
                  interval=0.1, progress=False,
                  command=f"lakebench run --systems memory,lmdb-nosync --children 300 --retrievals {N}"),
        log=lambda *_: None)
    return out


@pytest.fixture(scope="module")
def flat(flat_dir, tmp_path_factory) -> tuple[dict, str]:
    """results.json as written, and the report's page of it (charts and captions included)."""
    page = report.build_report(flat_dir, tmp_path_factory.mktemp("page"), image_format="svg")
    return json.loads((flat_dir / "results.json").read_text("utf-8")), page.read_text("utf-8")


def test_the_parent_is_read_n_times_and_every_place_says_so(flat):
    document, page = flat
    assert document["settings"]["retrievals"] == N
    assert all(len(e["parent"]["all_seconds"]) == N for e in ok(document))
    _, printed = terminal(document)
    steady = f"the median of the {N - 1} retrievals that follow the first"
    for where, text in (("report", page), ("terminal", printed)):
        counts = [(int(m[1]), bool(m[2])) for m in re.finditer(r"(\d+) retrievals?( that follows?| after)?", text)]
        assert counts, f"the {where} never says how many retrievals were made"
        for number, following in counts:  # N in all; N - 1 after the first
            assert number == (N - 1 if following else N), (where, number, following)
        assert steady in text.replace("*", ""), where
    for heading in ("Summary", "Results", "Parent retrieval", "Charts", "How it was measured"):
        assert steady in section(page, heading).replace("*", ""), heading
    (parent,) = [rows for title, rows in list_tables(page) if title == "Parent retrieval"]
    assert set(column(parent, RETRIEVALS).values()) == {str(N)}


def test_the_paged_walk_has_one_name_and_one_value(flat_dir, tmp_path):
    """The walk's figures (here put into the results of two in-process systems, which have
    no pages) as the terminal and the report show them: the same values, or 'not paged'."""
    import shutil

    out = tmp_path / "walked"
    shutil.copytree(flat_dir, out)
    document = json.loads((out / "results.json").read_text("utf-8"))
    walked, whole = ok(document)
    walked["parent"]["paged"] = {"page_size": 100, "paged": True, "pages": 3, "containment_triples": 300,
                                 "first_seconds": 0.0123, "walk_seconds": 0.0456}
    whole["parent"]["paged"] = {"page_size": 100, "paged": False, "pages": 1, "containment_triples": 300,
                                "first_seconds": 0.2, "walk_seconds": 0.2}
    (out / "results.json").write_text(json.dumps(document), "utf-8")
    page = report.build_report(out, tmp_path / "page", image_format="svg").read_text("utf-8")
    rows, _ = terminal(document)
    (parent,) = [rows for title, rows in list_tables(page) if title == "Parent retrieval"]
    for term, key in ((figures.PAGE_FIRST, "first_seconds"), (figures.PAGED_WALK, "walk_seconds")):
        value = figures.duration(walked["parent"]["paged"][key])
        assert column(rows, term.name)[walked["name"]] == value == column(parent, term.name)[walked["name"]]
    assert column(rows, figures.PAGE_FIRST.name)[whole["name"]] == "not paged"
    assert column(parent, figures.PAGE_FIRST.name)[whole["name"]] == "not paged"
    assert column(parent, "pages")[walked["name"]] == "3 of 100 (300 children)"


def test_first_and_steady_have_one_name_and_one_value(flat):
    document, page = flat
    rows, _ = terminal(document)
    changes = compare.compare(document, document)
    for name, path in ((FIRST, "parent.first_seconds"), (STEADY, "parent.seconds")):
        tables = shown(page, name)
        assert {"Time", "Parent retrieval"} <= set(tables) and any(t.startswith("Ranking") for t in tables), name
        for e in ok(document):
            value = figures.duration(results.get_path(e, path))
            assert column(rows, name)[e["name"]] == value, ("terminal", name)
            for title, cells in tables.items():
                assert cells[e["name"]] == value, (title, name)
            assert [c.base for c in changes if c.metric == name and c.case.startswith(e["name"] + " ")] == [value]
    # The Operations table shows no parent figure of its own (a mean with the first, a p99 of 4 reads).
    (operations,) = [rows for title, rows in list_tables(page) if title == "Operations"]
    assert "get parent" not in {row[2] for row in operations[1:]}


def test_the_time_per_child_has_one_name_and_one_value(flat, flat_dir):
    document, page = flat
    rows, _ = terminal(document)
    tables = shown(page, PER_CHILD)
    assert "Time" in tables and any(t.startswith("Ranking") for t in tables)
    changes = compare.compare(document, document)
    for e in ok(document):
        value = figures.millis(e["per_resource_ms"]["mean"])
        assert column(rows, PER_CHILD)[e["name"]] == value
        for title, cells in tables.items():
            assert cells[e["name"]] == value, title
        assert [c.base for c in changes if c.metric == PER_CHILD and c.case.startswith(e["name"] + " ")] == [value]
    # The ranking and the chart under it: one statistic, named, one order, the same numbers.
    summary = section(page, "Summary")
    assert f"Ranked by {PER_CHILD}" in summary.replace("*", "")
    ranking = next(rows for title, rows in list_tables(summary) if title.startswith("Ranking"))
    data = ReportData.load(flat_dir)
    fig, caption = draw(data, "headline")
    ax = fig.axes[0]
    ticks = sorted(zip(ax.get_yticks(), (t.get_text().split("\n")[0] for t in ax.get_yticklabels())), reverse=True)
    assert [name for _, name in ticks] == [row[0] for row in ranking[1:]]
    assert PER_CHILD in caption
    written = {t.get_text() for t in ax.texts}
    assert all(figures.millis(e["per_resource_ms"]["mean"]) in written for e in ok(document))


@pytest.mark.parametrize("run_", ["flat", "locust"])
def test_no_figure_keeps_an_old_name(run_, request):
    document, page = request.getfixturevalue(run_)
    _, printed = terminal(document)
    for old in OLD_NAMES:
        assert old not in page, old
        assert old not in printed, old


def test_each_case_is_ranked_on_its_own(flat_dir, tmp_path):
    """Two cases, one of them run by one system only: that system is not "1.00x, fastest" there."""
    document = results.load(flat_dir)
    memory = next(e for e in document["systems"] if e["name"] == "memory")
    bigger = copy.deepcopy(memory)
    bigger["children"] = bigger["children_requested"] = 3000
    document["systems"].append(bigger)
    (tmp_path / "results.json").write_text(json.dumps(document), encoding="utf-8")
    page = report.build_report(tmp_path, tmp_path / "page", image_format="svg").read_text("utf-8")
    rankings = [rows for title, rows in list_tables(section(page, "Summary")) if title.startswith("Ranking")]
    assert [[row[0] for row in rows[1:]] for rows in rankings] == [
        [e["name"] + " (300 children)" if e["name"] == "memory" else e["name"]
         for e in sorted(ok(results.load(flat_dir)), key=lambda e: e["per_resource_ms"]["mean"])],
        ["memory (3,000 children)"]]
    alone = rankings[1][1]
    assert "1.00x" not in alone and "fastest" not in " ".join(alone)


# -- a Locust-shaped run -------------------------------------------------------

def _requests(n: int, seconds: float, users: int) -> list[dict]:
    """What Locust's users record: ``users`` at once, each PUT ``seconds`` long, back to back."""
    out = []
    for i in range(n):
        start = (i // users) * seconds
        out.append({"ok": True, "seconds": seconds, "start": start, "end": start + seconds})
    return out


@pytest.fixture(scope="module")
def locust_records() -> list[dict]:
    return _requests(300, 0.0064, USERS)  # 75 rounds of 6.4 ms: a 0.48 s ingest


@pytest.fixture(scope="module")
def locust_dir(flat_dir, locust_records, tmp_path_factory) -> Path:
    from lakebench.locust.record import load_record

    document = results.load(flat_dir)
    seconds = [r["seconds"] for r in locust_records]
    wall = max(r["end"] for r in locust_records) - min(r["start"] for r in locust_records)
    entries, latencies = [], {}
    for e, name in zip(ok(document), ("lmdb-http-nosync", "lmdb-http")):
        e = copy.deepcopy(e)
        e.update(name=name, transport="http", driver="locust", users=USERS, runs=[], samples=[],
                 ingest_seconds=round(wall, 6), ingest_wall_seconds=round(wall, 6),
                 load=load_record(locust_records, USERS))
        e.update(results.latency_summary(seconds))
        e["operations"]["create"] = results.operations_summary({"create": seconds})["create"]
        entries.append(e)
        latencies[results.latency_key(e, 0)] = seconds
    document["systems"] = entries
    results.compare_with_reference(entries, entries[0]["name"])
    document["reference"] = entries[0]["name"]
    out = tmp_path_factory.mktemp("locust")
    results.write(out, document, latencies)
    return out


@pytest.fixture(scope="module")
def locust(locust_dir, tmp_path_factory) -> tuple[dict, str]:
    page = report.build_report(locust_dir, tmp_path_factory.mktemp("page"), image_format="svg")
    return json.loads((locust_dir / "results.json").read_text("utf-8")), page.read_text("utf-8")


def test_the_throughput_has_one_name_and_one_value(locust, locust_records):
    document, page = locust
    wall = max(r["end"] for r in locust_records) - min(r["start"] for r in locust_records)
    expected = round(len(locust_records) / wall, 3)  # completed operations over the wall time
    rows, printed = terminal(document)
    tables = shown(page, THROUGHPUT)
    assert "Load test" in tables
    summary = section(page, "Summary")
    for e in ok(document):
        assert e["load"]["throughput_per_s"] == expected
        value = figures.rate(expected)
        assert column(rows, THROUGHPUT)[e["name"]] == value
        for title, cells in tables.items():
            assert cells[e["name"]] == value, title
        assert f"{THROUGHPUT} {value}" in summary.replace("\u00a0", " ")
    # The Operations table's per-second figure is one over the mean, named so: not a throughput.
    (operations,) = [rows for title, rows in list_tables(page) if title == "Operations"]
    assert THROUGHPUT not in operations[0]


def test_the_requests_chart_counts_in_buckets_that_fit_the_ingest(locust, locust_dir):
    document, page = locust
    data = ReportData.load(locust_dir)
    fig, caption = draw(data, "load")
    rate_ax = fig.axes[0]
    for e in ok(document):
        buckets = e["load"]["over_time"]
        assert len(buckets) >= 10  # a 0.48 s ingest is not one 1-s bucket
        (width,) = {b["bucket_seconds"] for b in buckets}
        assert f"buckets of {figures.duration(width)}" in caption
        assert f"buckets of {figures.duration(width)}" in section(page, "Charts")
        rates = [b["requests"] / width for b in buckets]  # requests/s, whatever the bucket
        assert any(list(line.get_ydata()) == pytest.approx(rates) for line in rate_ax.get_lines())
        assert sum(b["requests"] for b in buckets) == e["load"]["requests"]
        # ... and the throughput drawn over them, as every table states it
        assert any(set(line.get_ydata()) == {e["load"]["throughput_per_s"]} for line in rate_ax.get_lines())


def test_the_vocabulary_is_the_one_shown_and_documented():
    assert (FIRST, STEADY, RETRIEVALS, PER_CHILD, THROUGHPUT) == (
        figures.PARENT_FIRST.name, figures.PARENT_STEADY.name, figures.RETRIEVALS.name, figures.TIME_PER_CHILD.name,
        figures.THROUGHPUT.name)
    assert len({term.name for term in figures.VOCABULARY}) == len(figures.VOCABULARY)  # one name, one figure
    documented = (Path(__file__).resolve().parent.parent / "docs" / "results.rst").read_text("utf-8")
    for term in figures.VOCABULARY:
        assert f"\n{term.name} " in documented and f"``{term.path}``" in documented, term.name
