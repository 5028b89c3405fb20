"""lakebench report: pages, figures, failed systems, sweeps, benchmarks, the Sphinx build."""
from __future__ import annotations

import argparse
import copy
import doctest
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from lakebench import figures, report, results, table  # noqa: E402
from lakebench.report import charts, fmt, pages  # noqa: E402
from lakebench.report.data import ReportData  # noqa: E402
from lakebench.runner import RunConfig, run  # noqa: E402

DOCS = Path(__file__).resolve().parent.parent / "docs"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def results_dir(tmp_path_factory) -> Path:
    """A real, small results directory: memory and oxigraph, 20 children."""
    out = tmp_path_factory.mktemp("results")
    config = RunConfig(systems=["memory", "oxigraph"], children=20, seed=3, out=out, reference="oxigraph",
                       tail_seconds=0.2, interval=0.1, progress=False,
                       command="lakebench run --systems memory,oxigraph --children 20")
    run(config, log=lambda *_: None)
    return out


def _copy_results(src: Path, dst: Path, edit=None) -> Path:
    """A copy of a results directory, its document changed by ``edit``."""
    dst.mkdir(parents=True, exist_ok=True)
    shutil.copy(src / "latencies.csv", dst / "latencies.csv")
    document = results.load(src)
    if edit:
        edit(document)
    (dst / "results.json").write_text(json.dumps(document), encoding="utf-8")
    return dst


def _failed_entry(name="broken", error="RuntimeError: boom *not emphasis* `x` ``y``"):
    return results.aggregate(name, [{"system": name, "run": 0, "status": "failed", "error": error,
                                     "durability": "durable", "transport": "http", "samples": []}])


def _assert_image(path: Path) -> None:
    assert path.is_file(), path
    data = path.read_bytes()
    assert len(data) > 2000, f"{path} is nearly empty"
    if path.suffix == ".png":
        assert data.startswith(PNG_MAGIC)
    else:
        assert b"<svg" in data[:2000]


@pytest.fixture(scope="module")
def built(results_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    index = report.build_report(results_dir, out, image_format="png")
    return out, index.read_text(encoding="utf-8")


def test_page_holds_the_table_rows(built, results_dir):
    _, text = built
    document = results.load(results_dir)
    time_rows, space_rows = pages.results_rows(ReportData.load(results_dir))
    by_mean = sorted(results.load(results_dir)["systems"], key=lambda s: s["per_resource_ms"]["mean"])
    expected = [s["name"] + (" (ref.)" if s["name"] == "oxigraph" else "") for s in by_mean]
    assert [row[0] for row in time_rows[1:]] == expected  # ranked: fastest first
    for row in time_rows + space_rows:
        for cell in row:
            for line in cell.split("\n"):
                assert line in text, line
    by_name = {s["name"]: s for s in document["systems"]}
    oxigraph = by_name["oxigraph"]
    assert fmt.nobreak(fmt.seconds(oxigraph["ingest_seconds"])) in text
    assert fmt.nobreak(fmt.millis(oxigraph["per_resource_ms"]["mean"])) in text
    assert fmt.nobreak(fmt.size(oxigraph["disk_bytes"])) in text
    assert "100%" in text
    assert "4,020" in text  # triples: 20 x 200 + 20 containment triples


def test_page_sections_and_command(built):
    _, text = built
    for heading in ("Summary", "Results", "Charts", "Conclusions", "How it was measured"):
        assert f"\n{heading}\n---" in text
    for heading in ("How these results were made", "Environment", "Data set"):  # inside "How it was measured"
        assert f"\n{heading}\n~~~" in text
    # The answer first, how it was obtained after it.
    order = [text.index(f"\n{h}\n---") for h in ("Summary", "Results", "Conclusions", "How it was measured")]
    assert order == sorted(order)
    assert ":download:`results.json <" in text
    assert "$ lakebench run --systems memory,oxigraph --children 20" in text
    assert ":doc:`/workload`" in text
    assert "Cache: warm" in text
    assert "in-process" in text and "nosync" in text and "volatile" in text
    assert "Micro-benchmarks" not in text  # none given


def test_figures_exist_and_are_images(built):
    out, text = built
    for name in ("latency", "resources", "disk", "parent"):
        _assert_image(out / f"{name}.png")
        assert f".. figure:: {name}.png" in text
    assert not (out / "sweep.png").exists()  # one size per system: no sweep chart
    assert not (out / "cliff.png").exists()  # nor any curve: no checkpoints, no budget


def test_svg_figures(results_dir, tmp_path):
    report.build_report(results_dir, tmp_path, image_format="svg")
    for name in ("latency", "resources", "disk", "parent"):
        _assert_image(tmp_path / f"{name}.svg")


def test_conclusions_from_the_numbers(built, results_dir):
    _, text = built
    conclusions = text.split("\nConclusions\n")[1]
    document = results.load(results_dir)
    fastest = min(document["systems"], key=lambda s: s["ingest_seconds"])
    assert f"**Ingest**: {fastest['name']} created 20 children fastest" in conclusions
    assert "**Growth, oxigraph**: its per-child time" in conclusions
    assert "Warm cache" in conclusions
    assert "A single run per system" in conclusions
    assert "only oxigraph stores on disk" in conclusions


def test_failed_system_still_renders(results_dir, tmp_path):
    def add_failure(document):
        document["systems"].append(_failed_entry())
        results.compare_with_reference(document["systems"], document["reference"])

    src = _copy_results(results_dir, tmp_path / "results", add_failure)
    index = report.build_report(src, tmp_path / "out", image_format="png")
    text = index.read_text(encoding="utf-8")
    table = text.split(".. list-table:: Time\n")[1]
    row = table.split("   * - broken\n")[1].split("   * -")[0]
    assert "**failed**: ``RuntimeError`` (below)" in row
    assert r"- broken: :literal:`RuntimeError: boom *not emphasis* \`x\` \`\`y\`\``" in text
    assert "**broken failed**" in text  # in the conclusions
    assert "durable" in text and "http" in text
    _assert_image(tmp_path / "out" / "latency.png")


def test_nothing_succeeded_still_renders(tmp_path, results_dir):
    def only_failures(document):
        document["systems"] = [_failed_entry("a"), _failed_entry("b", "TimeoutError")]
        document["reference"] = "a"

    src = _copy_results(results_dir, tmp_path / "results", only_failures)
    (src / "latencies.csv").unlink()  # also works without per-child latencies
    text = report.build_report(src, tmp_path / "out").read_text(encoding="utf-8")
    assert "No system completed its runs" in text
    assert "``TimeoutError``" in text
    assert not list((tmp_path / "out").glob("*.svg"))


def test_sweep_is_plotted(results_dir, tmp_path):
    def as_sweep(document):
        bigger = []
        for entry in document["systems"]:
            e = copy.deepcopy(entry)
            e["children"] *= 10
            e["children_requested"] = e["children"]  # another case, not a run the budget stopped
            e["parent"]["seconds"] *= 8
            bigger.append(e)
        document["systems"] += bigger

    src = _copy_results(results_dir, tmp_path / "results", as_sweep)
    text = report.build_report(src, tmp_path / "out", image_format="png").read_text(encoding="utf-8")
    _assert_image(tmp_path / "out" / "sweep.png")
    assert "memory (200 children)" in text  # rows told apart by their size


def test_benchmarks_table(results_dir, tmp_path):
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps({"version": "5.1.0", "datetime": "2026-01-01T00:00:00", "benchmarks": [
        {"group": "parse", "name": "test_turtle", "stats": {"mean": 0.0021, "stddev": 0.0002,
                                                            "median": 0.002, "rounds": 120}},
        {"group": None, "name": "test_plain", "stats": {"mean": 3e-6, "stddev": 1e-7,
                                                        "median": 3e-6, "rounds": 5000}},
    ]}))
    text = report.build_report(results_dir, tmp_path / "out", benchmarks=[bench]).read_text("utf-8")
    section = text.split("\nMicro-benchmarks\n")[1]
    for cell in ("parse", "``test_turtle``", "2.10 ms", "200 µs", "120", "(none)", "3.00 µs", "5,000"):
        assert f"- {cell}\n" in section, cell


def test_a_chart_is_one_function(results_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(charts, "CHARTS", list(charts.CHARTS))

    @charts.chart("cpu_time", "CPU time")
    def cpu_time(data):
        fig = charts.new_figure(4, 3)
        fig.add_subplot().bar([e["name"] for e in data.ok], [e["cpu_seconds"] or 0 for e in data.ok])
        return fig, "CPU time of each system."

    text = report.build_report(results_dir, tmp_path, image_format="png").read_text("utf-8")
    _assert_image(tmp_path / "cpu_time.png")
    assert ".. figure:: cpu_time.png" in text and "CPU time of each system." in text


def test_helpers():
    assert doctest.testmod(fmt).failed == 0
    centres, med, p95 = charts.moving_stats([[0.002] * 50, [0.004] * 40], window=5)
    assert centres[0] == 0 and centres[-1] == 49
    assert list(med[-5:]) == [0.002] * 5  # only the first run reaches that far
    assert all(m <= p for m, p in zip(med, p95))
    samples = [{"t": 0, "phase": "setup"}, {"t": 1, "phase": "ingest"}, {"t": 2, "phase": "ingest"},
               {"t": 3, "phase": "tail"}]
    assert charts.phase_spans(samples) == [("setup", 0, 1), ("ingest", 1, 3), ("tail", 3, 3)]


def _args(**kw):
    defaults = dict(out=None, html=False, benchmarks=[], image_format="svg",
                    title=report.DEFAULT_TITLE)
    return argparse.Namespace(**{**defaults, **kw})


def test_cli_errors_are_one_line(tmp_path, capsys, results_dir):
    assert report.main(_args(results_dir=tmp_path / "nowhere", out=tmp_path / "out")) == 2
    assert capsys.readouterr().err.strip() == f"lakebench report: error: no results.json in {tmp_path / 'nowhere'}"
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert report.main(_args(results_dir=results_dir, out=tmp_path / "out", benchmarks=[bad])) == 2
    assert "not a pytest-benchmark JSON file" in capsys.readouterr().err
    (tmp_path / "file").write_text("x")
    assert report.main(_args(results_dir=results_dir, out=tmp_path / "file")) == 2
    assert "not a directory" in capsys.readouterr().err


def test_a_report_goes_beside_its_results_and_builds_alone(tmp_path, capsys, results_dir, monkeypatch):
    """No --out: RUN/report; --html outside the docs builds the report as a site of its own."""
    pytest.importorskip("sphinx")
    run = tmp_path / "run"
    shutil.copytree(results_dir, run)
    monkeypatch.chdir(tmp_path)  # a relative RESULTS_DIR, as typed
    assert report.main(_args(results_dir=Path("run"), html=True)) == 0
    out = capsys.readouterr().out
    assert (run / "report" / "index.rst").is_file() and (run / "report" / "conf.py").is_file()
    html = run / "report" / "_build" / "html" / "index.html"
    assert html.is_file() and str(html.resolve()) in out
    text = html.read_text(encoding="utf-8")
    assert 'id="summary"' in text and 'id="how-it-was-measured"' in text
    assert (run / "report" / "results.json").is_file()  # the raw files beside the page, linked


def test_a_report_never_silently_replaces_another(tmp_path, capsys, results_dir):
    other = tmp_path / "other"
    shutil.copytree(results_dir, other)
    out = tmp_path / "out"
    assert report.main(_args(results_dir=results_dir, out=out)) == 0
    assert "replacing" not in capsys.readouterr().err
    assert report.main(_args(results_dir=results_dir, out=out)) == 0  # the same run again: no word
    assert "replacing" not in capsys.readouterr().err
    assert report.main(_args(results_dir=other, out=out)) == 0
    assert f"replacing the report in {out} (it was {results_dir.resolve()}'s)" in capsys.readouterr().err
    handwritten = tmp_path / "mine"
    handwritten.mkdir()
    (handwritten / "index.rst").write_text("My own page\n===========\n")
    assert report.main(_args(results_dir=results_dir, out=handwritten)) == 2
    assert "was not written by lakebench report" in capsys.readouterr().err
    assert (handwritten / "index.rst").read_text().startswith("My own page")


def test_add_parser():
    parser = argparse.ArgumentParser(prog="lakebench")
    report.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["report", "res", "--benchmarks", "a.json", "--benchmarks", "b.json",
                              "--html", "--format", "png"])
    assert args.func is report.main
    assert args.results_dir == Path("res") and args.out is None  # RESULTS_DIR/report
    assert args.benchmarks == [Path("a.json"), Path("b.json")] and args.html and args.image_format == "png"


def test_sphinx_builds_the_docs_with_the_report(results_dir, tmp_path, capsys):
    pytest.importorskip("sphinx")
    pytest.importorskip("furo")
    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs, ignore=shutil.ignore_patterns("_build", "performance"))
    # Before any report: the site builds, with -W.
    before = subprocess.run([sys.executable, "-m", "sphinx", "-W", "-q", "-b", "html", str(docs),
                             str(tmp_path / "html")], capture_output=True, text=True)
    assert before.returncode == 0, before.stderr
    # The report, then the same build through 'lakebench report --html'.
    code = report.main(_args(results_dir=results_dir, out=docs / "performance", html=True))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    page = docs / "_build" / "html" / "performance" / "index.html"
    assert str(page) in captured.out
    html = page.read_text(encoding="utf-8")
    assert "Performance report" in html and "oxigraph" in html
    # The charts are inlined, so that their marks' hover titles show (an <img> shows none).
    inline = html.split('<svg id="latency-svg"', 1)[1].split("</svg>", 1)[0]
    assert "<title>oxigraph: moving median" in inline and "<img" not in html.split('id="charts"', 1)[1]
    assert 'href="performance/index.html"' in (docs / "_build" / "html" / "performance.html").read_text("utf-8")


# -- the cliff chart and the budget table (issue 13) ------------------------------------

@pytest.fixture(scope="module")
def budget_dir(tmp_path_factory) -> Path:
    """A real sweep under a tiny budget: 5 children finish, 20,000 stop early, 30,000 are not run."""
    out = tmp_path_factory.mktemp("budget")
    config = RunConfig(systems=["lmdb-nosync", "memory"], children=[5, 20_000, 30_000], seed=3, out=out,
                       tail_seconds=0, interval=0.1, progress=False, budget_seconds=0.2,
                       checkpoints=[2, 3, 20, 50, 100])
    run(config, log=lambda *_: None)
    return out


@pytest.mark.alone  # budget_dir: a run under a budget of wall time
@pytest.mark.parametrize("image_format", ["png", "svg"])
def test_cliff_chart_from_a_real_run_under_a_budget(budget_dir, tmp_path, image_format):
    text = report.build_report(budget_dir, tmp_path, image_format=image_format).read_text("utf-8")
    _assert_image(tmp_path / f"cliff.{image_format}")
    # A PNG is a figure; an SVG is inlined in the HTML page (an image in other outputs).
    assert (f".. figure:: cliff.{image_format}" if image_format == "png" else ":file: cliff.svg") in text
    assert "A cross marks where a system spent its ingest budget of 200 ms" in text


@pytest.mark.alone  # budget_dir
def test_cliff_chart_from_the_results_alone(budget_dir, tmp_path):
    """A kept run may hold results.json without latencies.csv: the cliff chart then draws each case's
    mean and p99.9 at the children it reached, and says so."""
    kept = tmp_path / "kept"
    kept.mkdir()
    shutil.copy(budget_dir / "results.json", kept / "results.json")
    text = report.build_report(kept, tmp_path / "page", image_format="png").read_text("utf-8")
    _assert_image(tmp_path / "page" / "cliff.png")
    caption = text.split(".. figure:: cliff.png")[1].split("\n\n")[1]
    assert "for lmdb-nosync, memory (no per-child times in the results)" in caption
    assert "moving median" not in caption  # nothing is drawn from per-child times
    assert "A cross marks where a system spent its ingest budget of 200 ms" in caption


@pytest.mark.alone  # budget_dir
def test_children_reached_within_the_budget_table(budget_dir, tmp_path):
    text = report.build_report(budget_dir, tmp_path, image_format="png").read_text("utf-8")
    section = text.split("\nChildren reached within the budget\n---")[1].split("\nCharts\n")[0]
    document = results.load(budget_dir)
    for entry in document["systems"]:
        if entry["status"] == "ok" and entry["budget_exhausted"]:
            assert f"     - {entry['children']:,}\n     - " in section
    assert section.count("budget spent, stopped") == 2
    assert section.count("finished within the budget") == 2
    assert section.count("not run: the budget ran out at ") == 2
    assert "**Budget** (200 ms of ingest per system and case): " in text  # the conclusions say it too
    assert "2 larger cases were not run after that" in text
    # the page's first line names each system once and every size of the sweep
    assert "Systems lmdb-nosync, memory measured on 5, 20,000 and 30,000 children (a case per size)" in text
    # each case's tail and private memory beside its mean, in the one name each figure has
    table = section.split(".. list-table::")[1]
    for term in (figures.TIME_PER_CHILD, figures.TIME_PER_CHILD_P999, figures.TIME_PER_CHILD_MAX,
                 figures.PEAK_PRIVATE):
        assert f"     - {term.name}\n" in table, term.name
    for entry in document["systems"]:
        if entry["status"] == "ok":
            assert f"     - {fmt.nobreak(figures.millis(entry['per_resource_ms']['p999']))}\n" in table
    time_table = text.split(".. list-table:: Time\n")[1].split(".. list-table::")[0]
    assert time_table.count("stopped\u00a0at") == 2


def test_log_moving_stats():
    xs, med, p95 = charts.log_moving_stats([[0.002] * 1000, [0.004] * 500], points=50)
    assert xs[0] == 1 and xs[-1] == 1000 and list(xs) == sorted(set(xs))
    assert med[-1] == 0.002  # only the first run reaches that far
    assert all(m <= p for m, p in zip(med, p95))


def test_the_slowest_children_have_a_table_of_their_own(built, results_dir):
    """p95, p99.9 and max of the time per child, each system that completed, as the results hold them."""
    _, text = built
    rows = pages.tail_rows(ReportData.load(results_dir))
    assert rows[0][2:] == [figures.TIME_PER_CHILD_P95.name, figures.TIME_PER_CHILD_P999.name,
                           figures.TIME_PER_CHILD_MAX.name, figures.LOG_FLUSH_MAX.name]
    ok = [s for s in results.load(results_dir)["systems"] if s["status"] == "ok"]
    assert len(rows) == 1 + len(ok)
    for s in ok:
        (row,) = [r for r in rows[1:] if r[0].startswith(s["name"])]
        assert row[3:5] == [fmt.nobreak(fmt.millis(s["per_resource_ms"][key])) for key in ("p999", "max")]
        assert row[5] == fmt.DASH  # neither keeps a write-ahead log it reports
        assert s["per_resource_ms"]["p95"] <= s["per_resource_ms"]["p999"] <= s["per_resource_ms"]["max"]
    assert "The slowest children" in text


def test_the_slowest_log_flush_stands_beside_the_slowest_child_where_a_store_reports_it(results_dir, tmp_path):
    def edit(document):
        entry = document["systems"][0]
        entry["internals"] = {"log_flushes": {"flushes": 21, "failures": 0, "writes": 21, "seconds": 0.5,
                                              "max_seconds": 0.3034, "over_ms": {"5": 3, "20": 2, "50": 1}}}

    copy = _copy_results(results_dir, tmp_path / "flushed", edit)
    data = ReportData.load(copy)
    named = results.load(copy)["systems"][0]["name"]
    rows = {r[0].split(" ")[0]: r for r in pages.tail_rows(data)[1:]}
    assert rows[named][5] == fmt.nobreak("303 ms")
    assert all(row[5] == fmt.DASH for name, row in rows.items() if name != named)
    wide = table.rows(results.load(copy), wide=True)
    column = wide[0].index(figures.LOG_FLUSH_MAX.name)
    assert {row[0].split(" ")[0]: row[column] for row in wide[1:]}[named] == "303 ms"
