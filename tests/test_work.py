"""What a write costs each system beyond storing its triples (lakebench.work): declared by every
system, probed where a client can see it, recorded with every run and shown in the report."""
from __future__ import annotations

import pytest

from lakebench import results, work
from lakebench.systems import SYSTEMS, load


@pytest.mark.parametrize("name", sorted(SYSTEMS))
def test_every_declared_value_is_one_the_vocabulary_defines(name):
    cls = load(name)
    for key, value in cls.WORK.items():
        assert key in work.ITEMS, (name, key)
        assert value in work.ITEMS[key][1], (name, key, value)


def test_a_probe_wins_over_a_declaration_and_says_so():
    got = work.record({"versions": work.NONE, "events": work.PER_CHANGE}, probed={"versions": work.ON_REQUEST})
    assert got["versions"] == {"value": work.ON_REQUEST, "how": work.PROBED}
    assert got["events"] == {"value": work.PER_CHANGE, "how": work.DECLARED}
    assert got["access"] == {"value": work.UNKNOWN, "how": work.DECLARED}


def test_memento_links_are_read_as_versions_and_their_absence_leaves_the_declaration():
    memento = ('<http://www.w3.org/ns/ldp#RDFSource>; rel="type", '
               '<http://mementoweb.org/ns#OriginalResource>; rel="type", <http://h/a/fcr:versions>; rel="timemap"')
    assert work.versions_probed(memento, work.PER_CHANGE) == work.PER_CHANGE
    assert work.versions_probed(memento, work.NONE) == work.ON_REQUEST
    assert work.versions_probed(memento.replace('rel="timemap"', 'rel="other"'), work.NONE) is None
    assert work.versions_probed(None, work.ON_REQUEST) is None


def test_each_run_records_it_and_the_report_shows_it(tmp_path):
    pytest.importorskip("matplotlib")
    from lakebench import report
    from lakebench.cli import main

    out = tmp_path / "out"
    assert main(["run", "--systems", "lmdb-nosync,lmdb-http-nosync",
                 "--tail-seconds", "0", "--children", "5", "--out", str(out),
                 "--quiet"]) == 0
    document = results.load(out)
    by_name = {e["name"]: e for e in document["systems"]}
    assert by_name["lmdb-nosync"]["work"]["tombstones"] == {"value": "none", "how": "declared"}
    # lakebench serve's resources are versioned (Memento links): probed, on request
    assert by_name["lmdb-http-nosync"]["work"]["versions"] == {"value": "on request", "how": "probed"}
    assert by_name["lmdb-http-nosync"]["work"]["tombstones"]["value"] == "kept"
    page = report.build_report(out, tmp_path / "report").read_text("utf-8")
    table = page.split(".. list-table:: What a write does", 1)[1].split("\n\n", 2)[1]
    assert "lmdb-http-nosync" in table and "kept" in table and "versions kept" in page
