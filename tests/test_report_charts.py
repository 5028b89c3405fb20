"""The report's charts as issue 17 asked: one time axis, a style per system, legends outside the data,
hover titles in the SVGs, text legible on a phone, the headline chart and the Locust load chart.

The chart functions are called directly on real results (ReportData.load) and the Figure objects read
back; only the SVG titles need a file.
"""
from __future__ import annotations

import copy
import doctest
import importlib.util
import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from lakebench import figures  # noqa: E402
from lakebench import results  # noqa: E402
from lakebench.report import charts  # noqa: E402
from lakebench.report.charts import chart_style  # noqa: E402
from lakebench.report.data import ReportData  # noqa: E402
from lakebench.runner import RunConfig, run  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def flat_dir(tmp_path_factory) -> Path:
    """A real run of three systems of three durabilities: memory (volatile), lmdb-nosync, lmdb (durable)."""
    out = tmp_path_factory.mktemp("flat")
    config = RunConfig(systems=["memory", "lmdb-nosync", "lmdb"], children=40, seed=3, out=out,
                       tail_seconds=0.3, interval=0.1, progress=False)
    run(config, log=lambda *_: None)
    return out


@pytest.fixture(scope="module")
def data(flat_dir) -> ReportData:
    return ReportData.load(flat_dir)


def _draw(name: str, data: ReportData):
    """The chart ``name`` drawn as the report draws it (its settings), or None."""
    chart = next(c for c in charts.CHARTS if c.name == name)
    with charts.style():
        return chart.draw(data)


def _dash(line):
    """The on-off pattern of a line's dashes, in line widths (None: solid), whatever its offset."""
    _, pattern = line._unscaled_dash_pattern
    return None if pattern is None else tuple(float(v) for v in pattern)


def _pattern(name: str):
    return None if name == "-" else tuple(float(v) for v in chart_style.PATTERNS[name])


def _lines(fig):
    return [line for ax in fig.axes for line in ax.get_lines()]


def test_style_helpers_doctests():
    assert doctest.testmod(chart_style).failed == 0


def test_time_panels_share_one_time_axis(data):
    fig, caption = _draw("resources", data)
    axes = fig.axes
    assert len(axes) >= 3  # memory, private memory, CPU (and disk: lmdb keeps files)
    limits = {ax.get_xlim() for ax in axes}
    assert len(limits) == 1, limits  # one time axis for every panel
    assert all(axes[0].get_shared_x_axes().joined(axes[0], ax) for ax in axes[1:])
    # ... and for every system: all of them on every panel, within the same limits
    last = max(s["t"] for e in data.systems for run_ in data.sample_runs(e) for s in run_)
    left, right = limits.pop()
    assert left == 0 and right >= last
    for ax in axes:
        colours = {line.get_color() for line in ax.get_lines()}
        assert {data.color(e) for e in data.systems} <= colours
    assert "one time axis" in caption


def test_each_system_has_its_colour_dash_and_marker(data):
    styles = {e["name"]: chart_style.system_style(data, e) for e in data.systems}
    assert len({(s["color"], str(s["ls"])) for s in styles.values()}) == len(styles)
    assert len({s["marker"] for s in styles.values()}) == len(styles)
    names = {"durable": "-", "nosync": "--", "volatile": ":"}
    dashes = {e["name"]: names[e["durability"]] for e in data.systems}
    assert dashes == {"memory": ":", "lmdb-nosync": "--", "lmdb": "-"}
    for chart in ("latency", "resources", "disk", "headline"):
        fig, caption = _draw(chart, data)
        for e in data.systems:
            if chart == "disk" and e["name"] == "memory":
                continue  # keeps nothing on disk
            drawn = {_dash(line) for line in _lines(fig) if line.get_color() == data.color(e)
                     and line.get_linestyle() != "None"}
            assert _pattern(dashes[e["name"]]) in drawn, (chart, e["name"], drawn)
        assert "dashed nosync" in caption  # the captions say what a dash means


def test_legends_are_outside_the_data(data):
    drawn = 0
    for chart in charts.CHARTS:
        made = _draw(chart.name, data) if chart.applies(data.workload) else None
        if made is None:
            continue
        drawn += 1
        fig = made[0]
        assert all(ax.get_legend() is None for ax in fig.axes), chart.name
        if chart.name in ("latency", "resources", "disk"):
            assert fig.legends and fig.legends[0]._outside_loc  # placed outside, by constrained layout
    assert drawn >= 5


def test_text_is_legible_on_a_phone(data):
    """At most FIG_WIDTH wide, no text under FONT_PT: >= 10 px when the chart fills a 340 px column."""
    from matplotlib.text import Text

    assert chart_style.FONT_PT * 340 / (chart_style.FIG_WIDTH * 72) >= 10
    for chart in charts.CHARTS:
        made = _draw(chart.name, data) if chart.applies(data.workload) else None
        if made is None:
            continue
        fig = made[0]
        assert fig.get_figwidth() <= chart_style.FIG_WIDTH
        fig.canvas.draw()  # tick labels exist once drawn
        small = [(t.get_text(), t.get_fontsize()) for t in fig.findobj(Text)
                 if t.get_visible() and t.get_text().strip() and t.get_fontsize() < chart_style.FONT_PT]
        assert not small, (chart.name, small)


def test_svg_marks_carry_titles(data, tmp_path):
    wanted = [c for c in charts.CHARTS if c.name in ("resources", "headline", "parent", "latency")]
    made = charts.render(data, tmp_path, "svg", charts=wanted)
    assert {c.name for c, _, _ in made} == {c.name for c in wanted}
    for chart, path, _ in made:
        root = ET.parse(path).getroot()
        titles = [t.text for t in root.iter(f"{SVG}title") if t.text]
        for e in data.ok:
            assert any(t.startswith(f"{e['name']}") for t in titles), (chart.name, e["name"], titles)
    headline = ET.parse(tmp_path / "headline.svg").getroot()
    titles = [t.text for t in headline.iter(f"{SVG}title") if t.text]
    assert any("median" in t and ("ms" in t or "µs" in t) for t in titles), titles
    # the title is the first child of the element it describes: the mark itself
    marks = [group for group in headline.iter(f"{SVG}g") if group.get("id", "").startswith("headline-lbtip")]
    assert marks
    for group in marks:
        assert group[0].tag == f"{SVG}title"


def test_svgs_are_ready_to_be_inlined_in_one_page(data, tmp_path):
    """No prolog, DOCTYPE nor comment; every id, and every reference to one, the chart's own."""
    wanted = [c for c in charts.CHARTS if c.name in ("latency", "headline", "resources")]
    ids = {}
    for chart, path, _ in charts.render(data, tmp_path, "svg", charts=wanted):
        text = path.read_text("utf-8")
        assert text.startswith(f'<svg id="{chart.name}-svg" role="img" aria-label="{chart.title}"')
        assert "<?xml" not in text and "<!DOCTYPE" not in text and "<!--" not in text
        ET.fromstring(text)  # still an SVG file of its own
        ids[chart.name] = re.findall(r'\bid="([^"]+)"', text)
        assert len(ids[chart.name]) > 20 and all(i.startswith(f"{chart.name}-") for i in ids[chart.name])
        references = re.findall(r'href="#([^"]+)"', text) + re.findall(r"url\(#([^)]+)\)", text)
        assert references and set(references) <= set(ids[chart.name])
        # matplotlib's style sheet ("*{...}") styles its own chart, not the page around it
        assert re.search(r"<style[^>]*>\s*#" + chart.name + r"-svg \*\{", text)
    assert not set(ids["latency"]) & set(ids["headline"])


def _edited(flat_dir: Path, tmp_path: Path, edit) -> ReportData:
    """The real run's results, changed by ``edit(document)``."""
    document = results.load(flat_dir)
    edit(document)
    shutil.copy(flat_dir / "latencies.csv", tmp_path / "latencies.csv")
    (tmp_path / "results.json").write_text(json.dumps(document), encoding="utf-8")
    return ReportData.load(tmp_path)


def _parent_seconds(seconds: dict[str, float]):
    def edit(document):
        for e in document["systems"]:
            e["parent"]["seconds"] = seconds[e["name"]]
    return edit


def test_the_parent_chart_draws_no_bar_on_a_log_axis(flat_dir, tmp_path):
    from matplotlib.container import BarContainer

    # Within 50x of each other: bars, on a linear axis from zero, as long as the values are.
    close = _edited(flat_dir, tmp_path, _parent_seconds({"memory": 0.003, "lmdb-nosync": 0.001, "lmdb": 0.002}))
    fig, caption = _draw("parent", close)
    ax = fig.axes[0]
    bars = [c for c in ax.containers if isinstance(c, BarContainer)]
    assert ax.get_xscale() == "linear" and ax.get_xlim()[0] == 0 and len(bars) == 3
    widths = sorted(bar.patches[0].get_width() for bar in bars)
    assert widths == pytest.approx([1.0, 2.0, 3.0])
    assert "the bar is" in caption
    # 1,339x apart (issue 29: 1.74 ms and 2.33 s): a log axis, and a mark per system at its value, no bar.
    far = _edited(flat_dir, tmp_path, _parent_seconds({"memory": 2.33, "lmdb-nosync": 0.00174, "lmdb": 0.0019}))
    fig, caption = _draw("parent", far)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    assert not [c for c in ax.containers if isinstance(c, BarContainer)] and not ax.patches
    for e in far.ok:
        value = e["parent"]["seconds"] * 1000
        marks = [line for line in ax.get_lines() if line.get_color() == far.color(e)]
        assert [list(line.get_xdata()) for line in marks] == [[pytest.approx(value)]], e["name"]
    written = " ".join(t.get_text() for t in ax.texts)  # each value written beside its mark
    assert all(figures.duration(e["parent"]["seconds"]) in written for e in far.ok)
    assert "log scale" in caption and "the bar is" not in caption


def test_a_dashed_line_is_drawn_over_a_solid_one(data):
    """lmdb-nosync (dashed) and lmdb (solid) lie close together in every chart: drawn first, a solid line
    would hide the dashed one where they meet; the dashed (and memory's dotted) go on top."""
    for chart in ("latency", "resources", "disk"):
        fig, _ = _draw(chart, data)
        stacked: dict[str, list[float]] = {}
        for line in _lines(fig):
            if line.get_linestyle() in ("None", "none", ""):
                continue  # markers alone
            for e in data.systems:
                if line.get_color() == data.color(e):
                    stacked.setdefault(e["name"], []).append(line.get_zorder())
        assert min(stacked["lmdb-nosync"]) > max(stacked["lmdb"]), (chart, stacked)
        if "memory" in stacked:  # it keeps nothing on disk
            assert min(stacked["memory"]) > max(stacked["lmdb-nosync"]), (chart, stacked)


def _slower(name: str, factor: float):
    def edit(document):
        for e in document["systems"]:
            if e["name"] == name:
                for run_ in e["samples"]:
                    for sample in run_:
                        sample["t"] = sample["t"] * factor
    return edit


def test_a_slow_system_gets_time_axes_of_its_own(flat_dir, data, tmp_path):
    """One run 40x longer than another: on one axis of seconds the fast runs would fill its first 2.5%."""
    slow = _edited(flat_dir, tmp_path, _slower("memory", 40))
    fig, caption = _draw("resources", slow)
    assert {ax.get_xlim() for ax in fig.axes} == {(0, 100)}
    memory_ax = fig.axes[0]  # resident memory: sampled from each run's start to its end
    for e in slow.systems:  # every run spans the whole axis, the fast ones too
        drawn = [x for line in memory_ax.get_lines() if line.get_color() == slow.color(e)
                 and line.get_linestyle() not in ("None", "none") for x in line.get_xdata()]
        assert max(drawn) == pytest.approx(100) and max(drawn) - min(drawn) > 50, e["name"]
    assert "its own run" in caption and "one time axis" not in caption
    assert "% of its run" in fig.axes[-1].get_xlabel()
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert all("run " in text for text in legend)  # the seconds the axis no longer shows
    # Runs of comparable lengths keep one axis of seconds (test_time_panels_share_one_time_axis).
    fig, caption = _draw("resources", data)
    assert fig.axes[0].get_xlim() != (0, 100) and "one time axis" in caption


def test_a_slow_ingest_gets_its_own_time_axis_in_the_load_chart(flat_dir, tmp_path):
    from lakebench.locust.record import load_record

    def requests(n: int, seconds: float) -> list[dict]:
        return [{"ok": True, "seconds": seconds, "start": i * seconds, "end": (i + 1) * seconds} for i in range(n)]

    def edit(document):
        for e, seconds in zip(document["systems"], (0.001, 0.05, 0.002)):  # 50x apart
            e["load"] = load_record(requests(200, seconds), users=1)

    loaded = _edited(flat_dir, tmp_path, edit)
    fig, caption = _draw("load", loaded)
    rate_ax = fig.axes[0]
    assert rate_ax.get_xlim() == (0, 100)
    for e in loaded.ok:
        drawn = [x for line in rate_ax.get_lines() if line.get_color() == loaded.color(e)
                 and line.get_marker() not in ("x", "None") and line.get_linestyle() != ":" for x in line.get_xdata()]
        assert min(drawn) < 10 and max(drawn) > 90, e["name"]
    assert "its own length" in caption and "% of the ingest" in fig.axes[-1].get_xlabel()


def test_headline_ranks_the_systems_fastest_first(data):
    fig, caption = _draw("headline", data)
    ax = fig.axes[0]
    labels = [t.get_text().split("\n") for t in ax.get_yticklabels()]
    assert {label[1] for label in labels} == {"volatile", "nosync", "durable"}  # durability marked
    means = {e["name"]: e["per_resource_ms"]["mean"] for e in data.ok}  # as the summary's table ranks them
    ranked = [name for name, _ in sorted(means.items(), key=lambda kv: kv[1])]
    top_down = [label[0] for _, label in sorted(zip(ax.get_yticks(), labels), reverse=True)]
    assert top_down == ranked
    written = {t.get_text() for t in ax.texts}
    assert all(any(char.isdigit() for char in t) for t in written) and len(written) >= 1
    assert ax.get_xscale() == "log"
    assert "fastest" in caption


def _op(mean_ms: float, count: int = 10) -> dict:
    """One kind of ``operations`` as results.operations_summary writes it."""
    return {"count": count, "errors": 0, "seconds": round(mean_ms * count / 1000, 6), "mean_ms": mean_ms,
            "p50_ms": mean_ms * 0.9, "p95_ms": mean_ms * 1.8, "p99_ms": mean_ms * 2.5, "max_ms": mean_ms * 3,
            "per_second": round(1000 / mean_ms, 2)}


def test_headline_for_a_workload_without_latencies(flat_dir, tmp_path):
    """A non-flat results directory without per-operation latencies: from the primary kind's percentiles."""
    document = results.load(flat_dir)
    for e in document["systems"]:
        e["workload"] = {"name": "mixed", "primary": "create child", "params": {}}
        e["operations"] = {"create child": _op(2.0), "get parent": _op(1.0, count=1)}
    document["systems"][0]["operations"]["create child"] = _op(0.5 / 0.9)  # p50 0.5 ms
    for e in document["systems"]:  # the primary kind's figures, as the runner records them
        op = e["operations"]["create child"]
        e["per_resource_ms"] = {"mean": op["mean_ms"], "p50": op["p50_ms"], "p95": op["p95_ms"], "max": op["max_ms"]}
    document["workload"]["name"] = "mixed"
    (tmp_path / "results.json").write_text(json.dumps(document), encoding="utf-8")  # no latencies.csv
    mixed = ReportData.load(tmp_path)
    assert mixed.workload == "mixed" and not mixed.latencies
    fig, caption = _draw("headline", mixed)
    ax = fig.axes[0]
    top = max(zip(ax.get_yticks(), ax.get_yticklabels()), key=lambda pair: pair[0])[1]
    assert top.get_text().startswith(document["systems"][0]["name"])  # the fastest on top
    assert "556 µs" in {t.get_text() for t in ax.texts}  # the mean, as the summary's table writes it
    assert "create child" in ax.get_xlabel()
    assert "95th percentile" in caption
    nothing = copy.deepcopy(document)
    for e in nothing["systems"]:
        e["status"] = "failed"
    (tmp_path / "results.json").write_text(json.dumps(nothing), encoding="utf-8")
    assert _draw("headline", ReportData.load(tmp_path)) is None


def test_no_load_chart_without_locust(data):
    assert _draw("load", data) is None


@pytest.fixture(scope="module")
def locust_dir(tmp_path_factory) -> Path:
    if importlib.util.find_spec("locust") is None:  # not imported here: Locust monkey-patches its importer
        pytest.skip("locust is not installed")
    out = tmp_path_factory.mktemp("locust")
    config = RunConfig(systems=["lmdb-http-nosync"], children=1500, seed=3, out=out, tail_seconds=0,
                       interval=0.2, progress=False, driver="locust", users=4)
    run(config, log=lambda *_: None)
    return out


def test_load_chart_of_a_locust_run(locust_dir, tmp_path):
    data = ReportData.load(locust_dir)
    entry = data.ok[0]
    assert entry["load"]["over_time"]
    fig, caption = _draw("load", data)
    rate_ax, time_ax = fig.axes
    assert rate_ax.get_xlim() == time_ax.get_xlim() and rate_ax.get_shared_x_axes().joined(rate_ax, time_ax)
    requests = [p["requests"] / p["bucket_seconds"] for p in entry["load"]["over_time"]]  # per second
    assert any(list(line.get_ydata()) == requests for line in rate_ax.get_lines())
    p95 = [p["p95_ms"] for p in entry["load"]["over_time"]]
    assert any(list(line.get_ydata()) == p95 for line in time_ax.get_lines())
    assert "Locust" in caption
    made = charts.render(data, tmp_path, "svg", charts=[c for c in charts.CHARTS if c.name == "load"])
    text = made[0][1].read_text("utf-8")
    assert "<title>lmdb-http-nosync: 1,500 requests" in text
    shutil.rmtree(tmp_path, ignore_errors=True)
