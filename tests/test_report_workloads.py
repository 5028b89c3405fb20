"""lakebench report for every workload: a page each, their tables and charts, the comparison page.

The flat run is real (``lakebench run --systems memory,lmdb --children 30
--tail-seconds 0``), and so is one of ``deep`` (in-process, cheap).  The
other workloads' results are made here from the flat run's document, with
the record fields each workload adds AS docs/results.rst DOCUMENTS THEM
(``binaries``, ``deep``, ``updates``, ``reads``, ``mixed``, ``queries``,
with their ``operations``, ``sent`` and ``held``): those being built
alongside this report, and those that need a server (``binaries`` and
``mixed`` run over HTTP only), whose real runs take longer.
"""
from __future__ import annotations

import argparse
import copy
import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from lakebench import report, results, workloads  # noqa: E402
from lakebench.report import charts, comparison, sections  # noqa: E402
from lakebench.report.data import ReportData  # noqa: E402
from lakebench.runner import RunConfig, run  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def flat_dir(tmp_path_factory) -> Path:
    """A real run of the seed's workload: memory and lmdb, 30 children."""
    out = tmp_path_factory.mktemp("flat")
    config = RunConfig(systems=["memory", "lmdb"], children=30, seed=3, out=out, tail_seconds=0,
                       interval=0.1, progress=False,
                       command="lakebench run --systems memory,lmdb --children 30 --tail-seconds 0")
    run(config, log=lambda *_: None)
    return out


def _op(mean_ms: float, count: int = 10, errors: int = 0) -> dict:
    """One kind of ``operations`` as results.operations_summary writes it."""
    return {"count": count, "errors": errors, "seconds": round(mean_ms * count / 1000, 6), "mean_ms": mean_ms,
            "p50_ms": mean_ms * 0.9, "p95_ms": mean_ms * 1.8, "p99_ms": mean_ms * 2.5, "max_ms": mean_ms * 3,
            "per_second": round(1000 / mean_ms, 2)}


def _make(src: Path, dst: Path, name: str, params: dict, cases: list[str], fill) -> Path:
    """A results directory of workload ``name`` made from the real flat run in ``src``.

    ``fill(entry, variant, k)`` sets the workload's fields of each system entry (the k-th system);
    the layout is the one documented in docs/results.rst.
    """
    document = results.load(src)
    flat_entries = [e for e in document["systems"] if e["status"] == "ok"]
    entries = []
    for variant in cases:
        for k, flat in enumerate(flat_entries):
            e = copy.deepcopy(flat)
            e["workload"] = {"name": name, "params": params}
            e["runs"] = []
            if variant:
                e["variant"] = variant
            e["operations"] = {}
            fill(e, variant, k)
            e["operations"]["get parent"] = flat["operations"]["get parent"]
            primary = e["operations"][_primary(name, e["operations"])]
            e["per_resource_ms"] = {"mean": primary["mean_ms"], "p50": primary["p50_ms"],
                                    "p95": primary["p95_ms"], "max": primary["max_ms"]}
            entries.append(e)
        skipped = results.skipped_entry("oxigraph", 30, 64, f"not applicable: oxigraph has no {name} operations", {})
        entries.append({**skipped, **({"variant": variant} if variant else {})})  # one per case, as the runner
    document["systems"] = entries
    document["workload"].update({"name": name, "params": params})
    if len(cases) > 1:
        document["workload"]["sweep"] = {"children": [30], "literal_length": [64], "variant": cases}
    document["command"] = f"lakebench run --systems memory,lmdb,oxigraph --workload {name}"
    dst.mkdir(parents=True, exist_ok=True)
    shutil.copy(src / "latencies.csv", dst / "latencies.csv")
    (dst / "results.json").write_text(json.dumps(document), encoding="utf-8")
    results.load(dst)  # what the report reads passes the layout's checks
    return dst


def _primary(name: str, operations: dict) -> str:
    """The workload's primary kind once it is registered (its ``per_resource_ms``), else the first."""
    try:
        primary = workloads.load(name).primary
    except KeyError:
        primary = None
    return primary if primary in operations else next(iter(operations))


SIZES = (1024, 65536, 1048576)


def _binaries(e, variant, k):
    size = int(variant.split("=")[1])
    put, get = 0.4 + size / 2e6 * (1 + k), 0.2 + size / 5e6 * (1 + k)
    e["operations"] = {"put binary": _op(put), "get binary": _op(get)}
    e["binaries"] = {"size_bytes": size, "count": 10, "sampled": 10, "put_mb_per_s": round(size / put / 1000, 3),
                     "get_mb_per_s": round(size / get / 1000, 3), "verified": 10 - (k and size == SIZES[-1]),
                     "mismatched": int(bool(k and size == SIZES[-1]))}
    e["sent"] = {"binaries": 10, "bytes": 10 * size}
    e["held"] = {"binaries": 10, "bytes": 10 * size}


def _deep(e, variant, k):
    kinds = ("create container", "create leaf", "list top", "list middle", "get leaf")
    e["operations"] = {kind: _op(0.5 + i + k) for i, kind in enumerate(kinds)}
    e["deep"] = {"depth": 3, "fan_out": 4, "leaf": "rdf", "containers": 21, "leaves": 128, "batch": 10,
                 "leaf_reads": 4, "leaf_reads_verified": 4, "middle": "parent/d0/d0", "series": [
                     {"resources": r, "containers": r // 2, "leaves": r - r // 2,
                      "list_top_ms": 0.2 * (1 + k) + r / 500, "list_middle_ms": 0.1 + r / 2000,
                      "get_leaf_ms": 0.05 * (1 + k)} for r in (10, 40, 160, 640)]}
    e["sent"] = {"containers": 21, "leaves": 128}
    e["held"] = {"containers": 21, "leaves": 128 - k}  # lmdb "drops" one: the table must say so


def _mixed(e, variant, k):
    kinds = ("create child", "patch child", "get child", "get parent")
    e["operations"] = {kind: _op(1.0 + 2 * i + k, count=50 + 10 * i) for i, kind in enumerate(kinds)}
    e["mixed"] = {"weights": {"create child": 1, "patch child": 2, "get child": 6, "get parent": 1},
                  "users": 4, "duration_seconds": 5.0, "operations": 260, "throughput_per_s": 52.0}
    e["sent"] = {"children": 50}
    e["held"] = {"children": 50}


def _update(e, variant, k):
    e["operations"] = {"update": _op(1.2 + k), "create": _op(0.8)}
    e["updates"] = {"requested": 20, "applied": 20, "verified": 20 - k, "stale": k}
    e["sent"] = {"updates": 20}
    e["held"] = {"updates": 20}


def _query(e, variant, k):
    e["operations"] = {"query count children": _op(2.0 + k, count=3)}
    e["queries"] = {"count children": {"rows": 1, "answer": 30, "digest": "d41d8cd98f00b204e9800998ecf8427e",
                                       "expected": 30}}
    e["sent"] = {"children": 30}
    e["held"] = {"children": 30}


@pytest.fixture(scope="module")
def workload_dirs(flat_dir, tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("workloads")
    return {
        "flat": flat_dir,
        "binaries": _make(flat_dir, root / "binaries", "binaries", {"binary_count": 10},
                          [f"binary_size={s}" for s in SIZES], _binaries),
        "deep": _make(flat_dir, root / "deep", "deep", {"depth": 3, "fan_out": 4}, [""], _deep),
        # A parameter may be None: --duration when --operations is given.
        "mixed": _make(flat_dir, root / "mixed", "mixed", {"users": 4, "duration": None}, [""], _mixed),
        "update": _make(flat_dir, root / "update", "update", {"updates": 20}, [""], _update),
        "query": _make(flat_dir, root / "query", "query", {}, [""], _query),
    }


#: The workloads whose pages the site test draws (charts take time); the others' pages are checked without.
DRAWN = ("flat", "binaries", "deep", "mixed")


@pytest.fixture(scope="module")
def site(workload_dirs, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    report.build_site([workload_dirs[name] for name in DRAWN], out, image_format="png",
                      report_command="lakebench report ...", compare_with=[workload_dirs["deep"]])
    return out


@pytest.fixture
def no_charts(monkeypatch):
    """Pages without their figures: for the tests of the text, quicker."""
    monkeypatch.setattr(charts, "CHARTS", [])


def _page(directory: Path) -> str:
    """The page of a workload other than flat, without figures."""
    data = ReportData.load(directory)
    return sections.workload_page(data, [], f"Report: {data.workload} workload")


def _image(path: Path) -> None:
    assert path.is_file(), path
    assert path.read_bytes().startswith(PNG_MAGIC) and path.stat().st_size > 2000


def _table(text: str, title: str) -> str:
    return text.split(f".. list-table:: {title}\n")[1].split("\n\n\n")[0].split(".. ")[0]


def test_index_links_a_page_per_workload(site):
    index = (site / "index.rst").read_text("utf-8")
    assert ".. toctree::" in index
    for name in DRAWN:
        assert f"   {name}/index" in index
        page = (site / name / "index.rst").read_text("utf-8")
        assert page.splitlines()[3] == f"Performance report: {name} workload"  # the title says it
    assert "``flat``: the seed" in index


def test_every_page_has_operations_sent_held_and_parent(site, workload_dirs):
    for name, kinds in (("flat", ["create"]), ("binaries", ["put binary", "get binary"]),
                        ("deep", ["list top", "list middle", "get leaf"]),
                        ("mixed", ["create child", "patch child", "get child"]), ("update", ["update"]),
                        ("query", ["query count children"])):
        text = (site / name / "index.rst").read_text("utf-8") if name in DRAWN else _page(workload_dirs[name])
        operations = _table(text, "Operations")
        for kind in kinds:
            assert f"     - {kind}\n" in operations, (name, kind)
        assert "     - get parent\n" not in operations  # GET parent first and steady: in the Parent table
        for column in ("count", "mean", "p50", "p95", "p99", "1/mean", "errors"):
            assert f"     - {column}\n" in operations
        assert ".. list-table:: Sent and held" in text
        parent = _table(text, "Parent retrieval")
        assert "GET parent first" in parent and "GET parent steady" in parent and "durability" in parent


def test_flat_page_keeps_its_content(site, flat_dir, tmp_path, no_charts):
    text = (site / "flat" / "index.rst").read_text("utf-8")
    for heading in ("Summary", "Results", "Charts", "Conclusions", "How it was measured"):
        assert f"\n{heading}\n---" in text
    assert "\nData set\n~~~" in text
    for chart in ("latency", "resources", "disk", "parent"):
        _image(site / "flat" / f"{chart}.png")
    # one directory: the page as before, in OUT itself, titled as before
    single = report.build_report(flat_dir, tmp_path, image_format="png").read_text("utf-8")
    assert single.splitlines()[3] == "Performance report"
    assert "\nOperations\n---" in single and "\nSent and held\n---" in single


def test_workload_charts_are_files(site):
    for name, chart in (("binaries", "binaries"), ("deep", "deep"), ("mixed", "mixed")):
        _image(site / name / f"{chart}.png")
        text = (site / name / "index.rst").read_text("utf-8")
        assert f".. figure:: {chart}.png" in text
        assert not (site / name / "latency.png").exists()  # the seed's charts stay on its page
        _image(site / name / "parent.png")  # every workload ends with the parent read
    assert "binary read back differed" in (site / "binaries" / "index.rst").read_text("utf-8")
    for name in ("binaries", "deep", "mixed"):  # each chart on its own workload's page only
        assert not (site / "flat" / f"{name}.png").exists()


def test_differences_and_skips_are_said_plainly(site, workload_dirs):
    deep = (site / "deep" / "index.rst").read_text("utf-8")
    row = _table(deep, "Sent and held").split("   * - lmdb\n     - durable\n     - leaves\n")[1].split("   * -")[0]
    assert "     - 128\n     - 127\n     - **DIFFERS**: 1 fewer held" in row
    assert ".. admonition:: What was sent is not what is held" in deep
    assert "**Check**: lmdb holds 127 leaves of the 128 sent" in deep
    for name in ("binaries", "deep", "mixed", "update", "query"):
        text = (site / name / "index.rst").read_text("utf-8") if name in DRAWN else _page(workload_dirs[name])
        assert "not run (not applicable: oxigraph has no" in text
    binaries = _page(workload_dirs["binaries"])
    assert "**oxigraph not run** (3 cases): not applicable: oxigraph has no binaries operations." in binaries
    update = _table(_page(workload_dirs["update"]), "Updates")
    assert "     - **19** (of 20)\n     - **1**\n" in update  # one update not verified: stale
    assert "**Check**: lmdb's updates: stale 1." in _page(workload_dirs["update"])
    primary = _primary("binaries", {"put binary": 1, "get binary": 1})
    assert f"**time per {primary} (mean), binary\\_size=1024**: memory" in _page(workload_dirs["binaries"])
    binaries = _table((site / "binaries" / "index.rst").read_text("utf-8"), "Binaries")
    assert "   * - lmdb (binary\\_size=65536)\n     - 64\u00a0KiB\n" in binaries
    assert "     - PUT MB/s\n" in binaries
    assert "     - **9** (of 10)\n     - **1**\n" in binaries  # lmdb's 1 MiB: one read back differed


def test_a_site_removes_only_the_pages_it_listed(workload_dirs, tmp_path, no_charts):
    """Building a site again drops its pages of workloads no longer given, and nothing else:
    a one-directory report written beside them (make docs writes docs/performance/NAME) stays."""
    out = tmp_path / "site"
    report.build_site([workload_dirs["flat"], workload_dirs["deep"]], out, image_format="png")
    report.build_report(workload_dirs["mixed"], out / "kept", image_format="png")
    assert (out / "deep" / "index.rst").is_file() and (out / "kept" / "index.rst").is_file()
    report.build_site([workload_dirs["flat"]], out, image_format="png")
    assert not (out / "deep").exists()  # listed by the last index, no longer given
    assert (out / "kept" / "index.rst").is_file()


def test_comparison_of_a_run_with_itself(workload_dirs, tmp_path, no_charts):
    for name in ("flat", "binaries", "deep"):
        out = tmp_path / name
        page = report.build_report(workload_dirs[name], out, image_format="png",
                                   compare_with=workload_dirs[name]).read_text("utf-8")
        assert "   comparison" not in page and ".. toctree::\n   :maxdepth: 1\n\n   compare" in page
        text = (out / "compare.rst").read_text("utf-8")
        table = _table(text, "NEW against BASE")
        ratios = [line for line in table.splitlines() if line.endswith("x")]
        assert ratios and all(line.endswith("- 1.00x") for line in ratios), ratios
        assert "**WORSE**" not in text and "Verdict: nothing worse" in text
    binaries = (tmp_path / "binaries" / "compare.rst").read_text("utf-8")
    assert "lmdb (30 children, literal 64, binary\\_size=65536)" in binaries  # one case per size
    primary = _primary("binaries", {"put binary": 1, "get binary": 1})
    other = ({"put binary", "get binary"} - {primary}).pop()
    assert f"     - time per {other} (mean)\n" in binaries
    assert binaries.count(f"     - time per {primary} (mean)\n") == 6  # once per case: as the time per operation


def test_comparison_says_worse(workload_dirs, tmp_path, no_charts):
    document = results.load(workload_dirs["flat"])
    for e in document["systems"]:
        e["per_resource_ms"]["mean"] *= 3
    new = tmp_path / "new"
    new.mkdir()
    shutil.copy(workload_dirs["flat"] / "latencies.csv", new)
    (new / "results.json").write_text(json.dumps(document), encoding="utf-8")
    report.build_report(new, tmp_path / "out", compare_with=workload_dirs["flat"], image_format="png")
    text = (tmp_path / "out" / "compare.rst").read_text("utf-8")
    assert text.count("**WORSE**") == 2 and "Verdict: worse" in text and "- 3.00x" in text
    # a report without --compare removes the comparison page it had written
    report.build_report(new, tmp_path / "out", image_format="png")
    assert not (tmp_path / "out" / "compare.rst").exists()


def _args(**kw):
    defaults = dict(out=None, html=False, benchmarks=[], image_format="png",
                    title=report.DEFAULT_TITLE, more_results=[], compare_with=[], threshold=1.1)
    return argparse.Namespace(**{**defaults, **kw})


def test_cli(workload_dirs, tmp_path, capsys, no_charts):
    parser = argparse.ArgumentParser(prog="lakebench")
    report.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["report", "a", "b", "--compare", "c", "--threshold", "1.2"])
    assert args.results_dir == Path("a") and args.more_results == [Path("b")]
    assert args.compare_with == [Path("c")] and args.threshold == 1.2
    # several directories, BASE with the one of its workload
    code = report.main(_args(results_dir=workload_dirs["flat"], more_results=[workload_dirs["deep"]],
                             compare_with=[workload_dirs["deep"]], out=tmp_path / "out"))
    assert code == 0, capsys.readouterr().err
    assert (tmp_path / "out" / "deep" / "compare.rst").is_file()
    assert not (tmp_path / "out" / "flat" / "compare.rst").exists()
    # a BASE of another workload: one line, exit 2
    code = report.main(_args(results_dir=workload_dirs["flat"], compare_with=[workload_dirs["deep"]],
                             out=tmp_path / "one"))
    assert code == 2
    assert capsys.readouterr().err.strip().endswith("a run of the deep workload, not of flat")
    code = report.main(_args(results_dir=workload_dirs["flat"], more_results=[workload_dirs["deep"]],
                             compare_with=[workload_dirs["mixed"]], out=tmp_path / "two"))
    assert code == 2 and "a run of the mixed workload, and none of the results" in capsys.readouterr().err


def test_sphinx_builds_the_pages(site, tmp_path):
    """Every page is valid reStructuredText in the toctree: the docs build with -W."""
    pytest.importorskip("sphinx")
    pytest.importorskip("furo")
    docs = tmp_path / "docs"
    shutil.copytree(Path(__file__).resolve().parent.parent / "docs", docs,
                    ignore=shutil.ignore_patterns("_build", "performance"))
    shutil.copytree(site, docs / "performance")
    done = report.build_html(docs, tmp_path / "html")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "html" / "performance" / "binaries" / "index.html").is_file()
    assert (tmp_path / "html" / "performance" / "deep" / f"{comparison.PAGE}.html").is_file()


def test_a_workload_page_with_nothing_run(workload_dirs, tmp_path, no_charts):
    document = results.load(workload_dirs["mixed"])
    failed = results.aggregate("lmdb", [{"system": "lmdb", "run": 0, "status": "failed", "error": "OSError: gone",
                                         "durability": "durable", "transport": "in-process", "samples": []}])
    document["systems"] = [failed, *(e for e in document["systems"] if e["status"] == "skipped")]
    (tmp_path / "results.json").write_text(json.dumps(document), encoding="utf-8")
    text = report.build_report(tmp_path, tmp_path / "out").read_text("utf-8")
    assert "No system completed its runs" in text and "**lmdb failed**: ``OSError: gone``" in text
    assert ".. list-table:: Operations" not in text and "not run (not applicable" in text


def test_a_real_deep_run(tmp_path):
    """The deep workload has landed: a real run of it (in-process, a tiny tree) makes its page."""
    out = tmp_path / "deep"
    run(RunConfig(systems=["lmdb", "memory"], workload="deep", workload_params={"depth": 2, "fan_out": 3, "batch": 4},
                  seed=3, out=out, tail_seconds=0, interval=0.1, progress=False), log=lambda *_: None)
    text = report.build_report(out, tmp_path / "page", image_format="png").read_text("utf-8")
    assert text.splitlines()[3] == "Performance report: deep workload"
    _image(tmp_path / "page" / "deep.png")
    for kind in ("create container", "create leaf", "list top", "list middle", "get leaf"):
        assert f"     - {kind}\n" in _table(text, "Operations")
    held = _table(text, "Sent and held")
    assert held.count("     - same\n") == 6 and "DIFFERS" not in held  # containers, leaves, leaf reads; two systems
    assert ".. list-table:: Hierarchy" in text
