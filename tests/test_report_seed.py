"""The report's "The seed report, reproduced" section, from a small synthetic results file."""
from __future__ import annotations

import json

import pytest

from lakebench import results
from lakebench.report import fmt, seed
from lakebench.report.data import ReportData


def _record(name: str, *, per_ms: float, parent_s: float, rss: int, disk: int, triples, durability: str,
            children: int = 300) -> dict:
    return {
        "system": name, "run": 0, "status": "ok", "error": None, "durability": durability,
        "transport": "http", "driver": "client", "children": children, "literal_length": 64,
        "per_resource_ms": {"mean": per_ms, "p50": per_ms, "p95": per_ms * 1.2, "max": per_ms * 2},
        "growth": {"first_10pct_ms": per_ms, "last_10pct_ms": per_ms, "ratio": 1.0},
        "ingest_seconds": per_ms * children / 1000, "ingest_wall_seconds": per_ms * children / 1000,
        "parent": {"seconds": parent_s, "first_seconds": parent_s, "all_seconds": [parent_s],
                   "containment_triples": children, "bytes": 1000, "cache": "warm"},
        "cpu_seconds": 1.0, "triples_total": triples, "disk_bytes": disk, "peak_rss_bytes": rss,
        "peak_rss_anon_bytes": rss // 2,
    }


def _document(names=("fcrepo", "lakesuperior", "lmdb-http"), command="lakebench run --systems "
              "fcrepo,lakesuperior,lmdb-http --reference fcrepo --children 300") -> dict:
    records = {
        "fcrepo": _record("fcrepo", per_ms=50.0, parent_s=0.25, rss=1_200_000_000, disk=60_000_000,
                          triples=None, durability="server-default"),
        "lakesuperior": _record("lakesuperior", per_ms=90.0, parent_s=0.05, rss=180_000_000, disk=40_000_000,
                                triples=64_321, durability="durable"),
        "lmdb-http": _record("lmdb-http", per_ms=4.0, parent_s=0.01, rss=60_000_000, disk=20_000_000,
                             triples=None, durability="durable"),
    }
    systems = [results.aggregate(n, [records[n]]) for n in names]
    results.compare_with_reference(systems, "fcrepo")
    return {
        "schema": results.SCHEMA_VERSION, "command": command,
        "environment": {"cpu_model": "Test CPU 3000", "cores_logical": 2, "memory_bytes": 8_000_000_000,
                        "python": "3.11.7", "java": 'openjdk version "17.0.2"'},
        "workload": {"children": 300, "triples_per_child": 200, "literal_length": 64, "seed": 0},
        "settings": {"repeat": 1, "retrievals": 3, "cache": "warm"},
        "reference": "fcrepo", "systems": systems,
    }


def _data(tmp_path, document) -> ReportData:
    (tmp_path / "results.json").write_text(json.dumps(document))
    return ReportData.load(tmp_path)


def test_seed_section_sets_today_beside_the_seed(tmp_path):
    data = _data(tmp_path, _document())
    text = seed.section(data)
    assert text.startswith("The seed report, reproduced\n---")
    # The seed's figures, as published, and their ratio.
    for printed in ('0.040"', '0.080"', '6.22"', '2.214"', "2.47 Gb", "~650 Mb", "3.7 Gb", "523 Mb",
                    "6'40\"", "13'24\"", "3.4M"):
        assert fmt.nobreak(printed) in text, printed
    assert fmt.nobreak("2.00x (printed: 200%)") in text
    assert fmt.nobreak("0.36x (printed: 35%)") in text
    # Today's figures come from the results, and so do their ratios.
    assert fmt.nobreak(fmt.millis(50.0)) in text and fmt.nobreak(fmt.millis(90.0)) in text
    assert fmt.nobreak("1.80x") in text  # 90 / 50 ms per child
    assert fmt.nobreak("0.20x") in text  # 0.05 / 0.25 s GET parent
    assert fmt.nobreak(fmt.size(180_000_000)) in text and fmt.nobreak("0.15x") in text  # peak memory
    assert fmt.nobreak("64,321") in text  # LAKEsuperior's triples
    assert "lmdb-http (today, 300 children)" in text and "lmdb-http / fcrepo" in text
    assert fmt.nobreak("0.08x") in text  # lmdb-http's 4 ms over fcrepo's 50 ms
    assert "time per child (mean) 2.00x then, 1.80x now; GET parent steady 0.36x then, 0.20x now" in text
    # What differs, said plainly.
    for words in ("**Hardware**: today Test CPU 3000, 2 logical cores", "**Size**: today 300 children",
                  "1 gunicorn sync worker", "LAKEsuperior 1.0.0a21", "Python 3.11.7", "Fedora 4.7.5",
                  "heap limit 2g", "**Durability**: LAKEsuperior is ``durable``"):
        assert words in text, words


def test_seed_section_reads_the_fedora_options_of_the_command(tmp_path):
    data = _data(tmp_path, _document(command="lakebench run --systems fcrepo,lakesuperior "
                                             "--fcrepo-version 4.7.4 --fcrepo-heap=4g"))
    text = seed.section(data)
    assert "Fedora 4.7.4" in text and "heap limit 4g" in text


def test_seed_section_only_with_both_servers(tmp_path):
    assert seed.section(_data(tmp_path, _document(names=("fcrepo", "lmdb-http")))) == ""
    text = seed.section(_data(tmp_path, _document(names=("fcrepo", "lakesuperior"))))
    assert "lmdb-http" not in text.split("What differs")[0]  # no store: two columns fewer


def test_seed_section_with_a_failed_lakesuperior(tmp_path):
    document = _document()
    document["systems"][1] = results.aggregate("lakesuperior", [
        {"system": "lakesuperior", "run": 0, "status": "failed", "error": "SystemFailure: boom",
         "durability": "durable", "transport": "http"}])
    text = seed.section(_data(tmp_path, document))
    assert "Today's lakesuperior did not complete" in text
    assert "lakesuperior (failed)" in text


def test_seed_section_in_the_page(tmp_path):
    pytest.importorskip("matplotlib")
    from lakebench import report

    src = tmp_path / "results"
    src.mkdir()
    (src / "results.json").write_text(json.dumps(_document()))
    page = report.build_report(src, tmp_path / "out", image_format="png").read_text()
    assert "\nThe seed report, reproduced\n---" in page
    assert page.index("\nResults\n---") < page.index("\nThe seed report, reproduced\n") < page.index("\nConclusions\n")
    docutils = pytest.importorskip("docutils.core")
    section = page[page.index("The seed report, reproduced"):page.index("\nCharts\n") if "\nCharts\n" in page
                   else page.index("\nConclusions\n")]
    html = docutils.publish_string(section, writer="html",
                                   settings_overrides={"report_level": 2, "halt_level": 2}).decode()
    assert "LAKEsuperior / FCREPO (2018)" in html
