"""A results file is shared between people: nothing in it may become markup, nor a path, in the report.

``lakebench report DIR --html`` turns ``results.json`` into reStructuredText
and then HTML.  A system's name, the reference, a workload's name, an
environment string... is text from whoever wrote the file: it must show as
that text, never start a directive (``.. raw:: html``), a list, a link, a
substitution, nor mathtext in a chart; and the report writes no file through a
symbolic link it finds in ``--out`` (by default inside the results directory).
The results files here are synthetic (tests/test_report_seed.py's), with hostile strings.
"""
from __future__ import annotations

import argparse
import copy
import json
import re
import unicodedata
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from lakebench import report, results  # noqa: E402
from lakebench.report import charts, fmt  # noqa: E402
from lakebench.report.data import ReportData  # noqa: E402
from tests.test_report_seed import _document, _record  # noqa: E402

RAW_HTML = "\n.. raw:: html\n\n   <script>alert(1)</script>"
#: Names with markup and no control character: valid names, shown as they are.
HOSTILE = ("evil<script>alert(1)</script>*x*", "`x`_", "|sub|", "$x^2$", ".. include:: /etc/passwd",
           "javascript:alert(1)", "- [1]_ __ x__ ::", r"$\undefined$ back\slash")
SCRIPT = re.compile(r"<script[^>]*>[^<]*alert", re.IGNORECASE)


def _hostile_document() -> dict:
    """A results document (as tests/test_report_seed.py makes them) whose every string is hostile."""
    document = _document(names=("lmdb-http",))
    template = document["systems"][0]
    systems = []
    for i, name in enumerate(HOSTILE):
        entry = results.aggregate(name, [{**_record(name, per_ms=4.0 + i, parent_s=0.01 * (i + 1), rss=60_000_000,
                                                     disk=20_000_000, triples=None, durability="durable"),
                                          "operations": {"<script>alert(2)</script> *op*": {
                                              "count": 10, "errors": 1, "seconds": 0.05, "mean_ms": 5.0}},
                                          "first_error": "refused <script>alert(3)</script>",
                                          "sent": {"|k|": 10}, "held": {"|k|": 9}}])
        systems.append(entry)
    systems[1]["durability"] = "durable<script>alert(4)</script>_"
    systems[2]["transport"] = "`http`_"
    failed = copy.deepcopy(template)
    failed.update(name="failed `x`_ <script>alert(5)</script>", status="failed",
                  error="Error: \n.. raw:: html\n\n   <script>alert(6)</script>")
    systems.append(failed)
    results.compare_with_reference(systems, HOSTILE[0])
    document.update(systems=systems, reference=HOSTILE[0], started="<script>alert(7)</script> *now*",
                    finished="|then|", command="lakebench run" + RAW_HTML)
    document["environment"].update(cpu_model="- <script>alert(8)</script> `cpu`_", python="3.11 |py|",
                                   java="java:x", os=".. include:: /etc/passwd", distribution="*d*")
    document["workload"]["parent"] = "p``<script>alert(9)</script>"
    results.validate(document)  # hostile, but a valid document: no control characters in names
    return document


def _write(directory: Path, document: dict) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "results.json").write_text(json.dumps(document), encoding="utf-8")
    return directory


def _args(**kw):
    defaults = dict(out=None, html=False, benchmarks=[], image_format="svg", title=report.DEFAULT_TITLE,
                    more_results=[], compare_with=[], threshold=1.1)
    return argparse.Namespace(**{**defaults, **kw})


# -- (a) names and the reference are one line ----------------------------------------------------

@pytest.mark.parametrize("bad", [RAW_HTML, "a\rb", "a\tb", "a\x00b", "a\x1b[31mb"])
def test_validate_refuses_control_characters_in_a_name(bad):
    document = _document(names=("fcrepo", "lmdb-http"))
    document["systems"][1]["name"] = "lmdb" + bad
    with pytest.raises(results.ResultsError) as caught:
        results.validate(document)
    assert str(caught.value) == "systems[1].name: control characters are not allowed"


def test_validate_refuses_control_characters_in_the_reference():
    document = _document()
    document["reference"] = "fcrepo" + RAW_HTML
    with pytest.raises(results.ResultsError) as caught:
        results.validate(document)
    assert str(caught.value) == "reference: control characters are not allowed"
    document["reference"] = "fcrepo (the old one) <b>"  # markup is not refused: the report escapes it
    results.validate(document)


def test_report_refuses_such_a_file_in_one_line(tmp_path, capsys):
    document = _document()
    document["systems"][0]["name"] += RAW_HTML
    src = _write(tmp_path / "results", document)
    out = tmp_path / "out"
    assert report.main(_args(results_dir=src, out=out)) == 2
    err = capsys.readouterr().err
    assert err == (f"lakebench report: error: {src / 'results.json'}: systems[0].name: "
                   "control characters are not allowed\n")
    assert not out.exists()


# -- (b) markup from the file is text in the page ------------------------------------------------

def _html_pages(root: Path) -> dict[Path, str]:
    pages = {p: p.read_text(encoding="utf-8") for p in (root / "_build" / "html").rglob("*.html")}
    assert pages
    return pages


def _assert_shown_as_text(html: str) -> None:
    assert not SCRIPT.search(html), SCRIPT.search(html)[0]  # no script of the file's: the page's own only
    assert 'href="javascript:' not in html
    assert "root:x:0:0" not in html  # no '.. include:: /etc/passwd' run


def test_hostile_names_are_text_in_the_html_page(tmp_path, capsys):
    pytest.importorskip("sphinx")
    pytest.importorskip("furo")
    src = _write(tmp_path / "results", _hostile_document())
    code = report.main(_args(results_dir=src, html=True))
    captured = capsys.readouterr()
    assert code == 0, captured.err  # sphinx-build -W: not one warning either
    html = _html_pages(src / "report")[src / "report" / "_build" / "html" / "index.html"]
    _assert_shown_as_text(html)
    # The names as their text, escaped for HTML, in the summary sentence and the tables.
    assert "Systems evil&lt;script&gt;alert(1)&lt;/script&gt;*x*, `x`_, |sub|, $x^2$, .. include:: /etc/passwd"\
        in html
    assert "The reference, 100% in every percentage, is evil&lt;script&gt;alert(1)&lt;/script&gt;*x*." in html
    assert html.count("&lt;script&gt;alert(2)&lt;/script&gt; *op*") >= 2  # a kind: table and conclusions
    assert "durable&lt;script&gt;alert(4)&lt;/script&gt;_" in html
    assert "- &lt;script&gt;alert(8)&lt;/script&gt; `cpu`_" in html
    for emphasised in ("x", "op", "now", "d"):  # *x* is no emphasis
        assert f"<em>{emphasised}</em>" not in html


def test_a_hostile_name_is_escaped_in_the_inline_charts(tmp_path, capsys):
    """The charts are SVG inlined in the page (their hover titles show only so): a name reaches them as
    the text of a title, escaped, and in no comment (matplotlib writes each text of a chart in one)."""
    pytest.importorskip("sphinx")
    pytest.importorskip("furo")
    src = _write(tmp_path / "results", _hostile_document())
    code = report.main(_args(results_dir=src, html=True))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    html = (src / "report" / "_build" / "html" / "index.html").read_text("utf-8")
    svgs = re.findall(r'<svg id="[a-z_]+-svg".*?</svg>', html, flags=re.DOTALL)
    assert len(svgs) >= 2  # the headline chart and the parent's, which name every system
    for svg in svgs:
        assert not re.search(r"<script", svg, flags=re.IGNORECASE), re.search(r".{80}<script.{80}", svg, re.I | re.S)
        assert "<!--" not in svg
    titles = re.findall(r"<title>(.*?)</title>", "".join(svgs), flags=re.DOTALL)
    assert any(t.startswith("evil&lt;script&gt;alert(1)&lt;/script&gt;*x*") for t in titles), titles[:5]
    _assert_shown_as_text(html)


def test_a_hostile_workload_name_is_text_and_no_path(tmp_path, capsys):
    """A site of two results directories: the workload's name makes a title, a sentence, a directory."""
    pytest.importorskip("sphinx")
    pytest.importorskip("furo")
    flat = _write(tmp_path / "flat", _hostile_document())
    other = _hostile_document()
    other["workload"].update(name="../../escaped <script>alert(10)</script> *w*", params={"`k`_": "|v|"})
    other_dir = _write(tmp_path / "other", other)
    site = tmp_path / "site"
    code = report.main(_args(results_dir=flat, more_results=[other_dir], out=site, html=True))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert not (tmp_path / "escaped").exists() and not list(tmp_path.parent.glob("escaped*"))
    assert (site / "escaped-script-alert-10-script-w" / "index.rst").is_file()  # its page, inside --out
    pages = _html_pages(site)
    assert len(pages) >= 3  # the index and the two pages
    for html in pages.values():
        _assert_shown_as_text(html)
    page = pages[site / "_build" / "html" / "escaped-script-alert-10-script-w" / "index.html"]
    assert "Performance report: ../../escaped &lt;script&gt;alert(10)&lt;/script&gt; *w* workload" in page


def test_chart_labels_are_not_mathtext(tmp_path):
    """A name with '$' draws as written: as mathtext, '$\\undefined$' failed the whole report."""
    data = ReportData.load(_write(tmp_path / "results", _hostile_document()))
    drawn = charts.render(data, tmp_path, "png")
    assert {c.name for c, _, _ in drawn} >= {"headline", "parent"}  # both label their rows with the names


# The places of a page where escaped text lands: docutils must read it back as exactly that text.
# (HOSTILE's first four were escaped as they should be before: the HTML tests above hold them.)
SAMPLES = (*HOSTILE[4:], RAW_HTML, "- x", "1. x", "(iv) x", "#. x", "+-----+", "=== ===", "....", "!!!!",
           "\\\\", "x::", ":a: b", "a@b.com", "http://x.y/z", "__ http://x", ".. _x: http://y", "**", "`", ">>> x",
           "| x", "\u2022 x", "漢字 and 漢字", "a\x00b\x1b[1m", "x\u2028y", "trailing\\", "~~~~")


def _shown(text: str) -> str:
    """What the page shows of ``text``: one line, its whitespace runs one space, control characters replaced."""
    text = re.sub(r"[^\S\u00a0]+", " ", text).strip()
    return "".join("\ufffd" if unicodedata.category(c) == "Cc" else c for c in text)


@pytest.mark.parametrize("text", SAMPLES)
def test_escaped_text_reads_back_as_itself(text):
    docutils = pytest.importorskip("docutils.core")
    from docutils import nodes

    def parse(source: str):
        document = docutils.publish_doctree(source, settings_overrides={
            "report_level": 5, "halt_level": 5, "file_insertion_enabled": False, "raw_enabled": False,
            "doctitle_xform": False})
        warnings = [m.astext() for m in document.findall(nodes.system_message) if m["level"] >= 2]
        assert not warnings, (source, warnings)
        return document

    shown = _shown(text)
    escaped = fmt.escape(text)
    assert "\n" not in escaped
    sentence = parse(f"Systems {escaped} measured.\n")
    assert [type(n) for n in sentence.children] == [nodes.paragraph]
    assert all(isinstance(n, nodes.Text) for n in sentence.children[0].children)
    assert sentence.astext() == f"Systems {shown} measured."
    item = parse(f"- {escaped}\n- next\n")  # the start of a list item, as a table cell's
    assert [type(n) for n in item.children] == [nodes.bullet_list]
    assert [i.astext() for i in item.findall(nodes.list_item)] == [shown, "next"]
    cell = parse(fmt.list_table([["system", "x"], [escaped, "1"]]))
    assert [e.astext() for e in cell.findall(nodes.entry)] == ["system", "x", shown, "1"]
    strong = parse(f"**{escaped} failed**: x\n")
    assert [s.astext() for s in strong.findall(nodes.strong)] == [f"{shown} failed"]
    titled = parse("Top\n===\n\n" + fmt.heading(text, "-") + "\ntext\n\n" + fmt.heading(text, "=", overline=True))
    assert [t.astext() for t in titled.findall(nodes.title)] == ["Top", shown, shown]


# -- (c) no file written through a link ------------------------------------------------------------

@pytest.mark.parametrize("name", ["index.rst", "results.json", "conf.py"])
def test_a_link_in_out_is_refused_and_never_followed(tmp_path, capsys, name):
    pytest.importorskip("sphinx")
    src = _write(tmp_path / "results", _document())
    out = tmp_path / "out"
    out.mkdir()
    target = tmp_path / "elsewhere" / "target"
    target.parent.mkdir()
    (out / name).symlink_to(target)  # dangling: writing through it would create the target
    assert report.main(_args(results_dir=src, out=out, html=True)) == 2
    err = capsys.readouterr().err
    assert err == (f"lakebench report: error: {out / name} is a symbolic link, and lakebench report writes "
                   "through none: remove it or give another --out\n")
    assert not target.exists() and (out / name).is_symlink()


def test_a_linked_out_or_build_directory_is_refused(tmp_path, capsys):
    pytest.importorskip("sphinx")
    src = _write(tmp_path / "results", _document())
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (src / "report").symlink_to(elsewhere)  # the default --out, in a results directory received
    assert report.main(_args(results_dir=src)) == 2
    assert "report is a symbolic link" in capsys.readouterr().err
    assert not list(elsewhere.iterdir())
    (src / "report").unlink()
    (src / "report").mkdir()
    (src / "report" / "_build").symlink_to(elsewhere)  # sphinx-build would write its pages there
    assert report.main(_args(results_dir=src, html=True)) == 2
    assert "_build is a symbolic link" in capsys.readouterr().err
    assert not list(elsewhere.iterdir())


def test_a_conf_py_that_came_with_the_results_is_not_run(tmp_path, capsys):
    """sphinx-build runs the conf.py of the docs tree it finds above --out: never the results'."""
    pytest.importorskip("sphinx")
    src = _write(tmp_path / "results", _document())
    ran = tmp_path / "conf.py ran"
    (src / "conf.py").write_text(f"open({str(ran)!r}, 'w').close()\n", encoding="utf-8")
    assert report.main(_args(results_dir=src, html=True)) == 2
    assert "conf.py is inside the results directory" in capsys.readouterr().err
    assert not ran.exists()


def test_the_terminal_shows_no_control_character_from_a_results_file():
    """An error text (not a name: those are refused) holding an escape sequence
    and a newline is printed on one line, the escape replaced."""
    from lakebench.table import printable

    assert printable("boom\x1b]0;owned\x07\nfake line") == "boom\ufffd]0;owned\ufffd fake line"
    assert printable("lmdb (ref.)") == "lmdb (ref.)"


def test_a_failed_systems_error_is_printed_on_one_line_without_escapes():
    from lakebench import table

    document = {"schema": 1, "workload": {"name": "flat"},
                "systems": [{"name": "lmdb", "status": "failed", "error": "boom\x1b[2J\nlmdb: all fine"}]}
    text = table.text(document)  # what `lakebench table` prints
    assert "\x1b" not in text
    assert [line for line in text.splitlines() if "FAILED:" in line] == ["lmdb: FAILED: boom\ufffd[2J lmdb: all fine"]
