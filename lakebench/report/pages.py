"""The seed's (``flat``) report page: reStructuredText in the shape of the classic Fedora report.

Sections, in order: the summary (systems ranked), Results (tables), the load
test, the budget, operations, sent and held, parent retrieval (the load test
and those three from :mod:`~.sections`), the seed report reproduced (when the
run holds fcrepo and lakesuperior: :mod:`~.seed`), Charts, Conclusions (with
caveats), How it was measured (command, environment, data set),
Micro-benchmarks (when given).  The page lives inside the Sphinx docs tree,
next to its figures, and links to the workload and results pages of the
documentation.
"""
from __future__ import annotations

from pathlib import Path

from lakebench.report import fmt, sections, seed
from lakebench.report import summary as report_summary
from lakebench.report.conclusions import caveats, conclusions
from lakebench.report.data import ReportData, number, std_of
from lakebench import figures as lakebench_figures
from lakebench import results
from lakebench import work
from lakebench.results import get_path


def page(data: ReportData, figures: list[tuple[object, Path, str]], title: str,
         report_command: str | None = None) -> str:
    """The whole report page as reStructuredText."""
    return sections.assemble(title, [
        _summary(data),
        report_summary.section(data, figures),
        results_section(data),
        sections.load_section(data),
        budget_section(data),
        sections.operations_section(data),
        sections.sent_held_section(data),
        sections.parent_section(data),
        seed.section(data),
        sections.charts_section(figures),
        conclusions_section(data),
        sections.measured_section(data, report_command, dataset_section(data, level="~")),
        benchmarks_section(data),
    ])


def _summary(data: ReportData) -> str:
    # Names and the reference come from the results file: escaped, as everywhere on the page.
    names = fmt.escape(", ".join(dict.fromkeys(e["name"] for e in data.systems)))
    sizes = sorted({n for n in (results.case_children(e) for e in data.systems) if n is not None})
    children = data.children
    if len(sizes) > 1:
        listed = ", ".join(f"{n:,}" for n in sizes[:-1]) + f" and {sizes[-1]:,}"
        what = f"{listed} children (a case per size) created under one parent container"
    else:
        what = f"{children:,} children created under one parent container" if children else "the workload"
    ref = data.document.get("reference")
    reference = f" The reference, 100% in every percentage, is {fmt.escape(ref)}." if ref else ""
    users = {e["load"]["users"] for e in data.ok if (e.get("load") or {}).get("users")}
    load = (f" A load test: Locust's {', '.join(map(str, sorted(users)))} users sent the PUTs at once."
            if users else "")
    n = data.retrievals
    retrieved = f"retrieved {n} time{'s' if n != 1 else ''}" if n else "retrieved"
    return f"Systems {names} measured on {what}, then the parent {retrieved}.{load}{reference}\n"


def dataset_section(data: ReportData, level: str = "-") -> str:
    w = data.document.get("workload") or {}
    groups = w.get("groups") or {}
    out = [fmt.heading("Data set", level)]
    children = w.get("children")
    triples = w.get("triples_per_child")
    text = (f"The synthetic data set of :doc:`/workload`: {fmt.count(children)} children created one by "
            f"one under a single parent container ({fmt.literal(w.get('parent', 'parent'))}), each a graph of "
            f"{fmt.count(triples)} triples")
    if groups:
        text += (f": {groups.get('external', '?')} with an external IRI as object, "
                 f"{groups.get('internal', '?')} with a repository IRI (the parent or a recent sibling), "
                 f"{groups.get('literal', '?')} with a random {w.get('literal_length', '?')}-character "
                 f"Unicode literal")
        if w.get("alphabet_size"):
            text += f" (alphabet of {w['alphabet_size']} code points)"
    text += (f". Seed {w.get('seed', '?')}: every system receives exactly the same graphs. Only the "
             "time spent storing a child is measured, not the time spent generating it.\n")
    out.append(text)
    rows = [["parameter", "value"]]
    for key, value in w.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k} {v}" for k, v in value.items())
        rows.append([fmt.literal(key), fmt.escape(f"{value:,}" if isinstance(value, int) else str(value))])
    out.append(fmt.list_table(rows, "Workload parameters", widths="1 2"))
    return "\n".join(out)


def _cell(entry: dict, path: str, formatter) -> str:
    return fmt.stacked(formatter(get_path(entry, path), std_of(entry, path)))


def _pct(entry: dict, path: str) -> str:
    return fmt.percent((entry.get("vs_reference") or {}).get(path))


def _row_name(data: ReportData, e: dict) -> str:
    """A results table's first cell: the entry's label, ``(ref.)`` after the reference's name, escaped."""
    name = e["name"] if e["name"] != data.document.get("reference") else f"{e['name']} (ref.)"
    return fmt.escape(data.label(e).replace(e["name"], name, 1))


def results_rows(data: ReportData) -> tuple[list[list[str]], list[list[str]]]:
    """The two result tables (time; memory and disk), header row first.

    The figures relative to the reference are a table of their own
    (:func:`reference_rows`): with them, these two were wider than a laptop's
    column (by 150 px for eight systems), hiding their last columns.
    """
    terms = lakebench_figures
    time_rows = [["system", "durability", terms.RUNNING_TIME.name, terms.TIME_PER_CHILD.name,
                  terms.TIME_PER_CHILD_P95.name, terms.GROWTH.name, terms.PARENT_FIRST.name,
                  terms.PARENT_STEADY.name, terms.CONTAINS.name]]
    space_rows = [["system", "durability", terms.PEAK_RSS.name, terms.PEAK_PRIVATE.name, "CPU time",
                   terms.DATABASE_SIZE.name, "B/triple", terms.TRIPLES.name]]
    for e in data.ranked:
        name = _row_name(data, e)
        durability = fmt.escape(e.get("durability") or fmt.DASH)
        if e.get("status") == "skipped":
            time_rows.append([name, durability, "not run (below)"] + [fmt.DASH] * 6)
            space_rows.append([name, durability, "not run"] + [fmt.DASH] * 5)
            continue
        if e.get("status") != "ok":
            # The error's kind in the row (a narrow cell); all of it below the table.
            error = (e.get("error") or "unknown error").split(": ", 1)[0]
            error = error if len(error) <= 40 else error[:37] + "..."
            failed = f"**failed**: {fmt.literal(error)} (below)"
            time_rows.append([name, durability, failed] + [fmt.DASH] * 6)
            space_rows.append([name, durability, "**failed**"] + [fmt.DASH] * 5)
            continue
        running = _cell(e, "ingest_seconds", fmt.seconds)
        if e.get("budget_exhausted"):
            running += f"\nstopped at {e['children']:,}"
        time_rows.append([name, durability] + [fmt.nobreak(cell) for cell in (
            running,
            _cell(e, "per_resource_ms.mean", fmt.millis),
            _cell(e, "per_resource_ms.p95", fmt.millis),
            _cell(e, "growth.ratio", fmt.ratio),
            _cell(e, "parent.first_seconds", fmt.seconds),
            _cell(e, "parent.seconds", fmt.seconds),
            fmt.count(get_path(e, "parent.containment_triples")),
        )])
        bpt, basis = _bytes_per_triple(e, data)
        space_rows.append([name, durability] + [fmt.nobreak(cell) for cell in (
            _cell(e, "peak_rss_bytes", fmt.size),
            _cell(e, "peak_rss_anon_bytes", fmt.size),
            _cell(e, "cpu_seconds", fmt.seconds),
            _cell(e, "disk_bytes", fmt.size),
            (f"{bpt:,.0f}" + ("*" if basis == "sent" else "")) if bpt is not None else fmt.DASH,
            fmt.count(e.get("triples_total")),
        )])
    return time_rows, space_rows


def work_rows(data: ReportData) -> list[list[str]]:
    """The table of what a write costs each system beyond storing its triples (header row first):
    its durability, then each item of :mod:`lakebench.work`, "(probed)" where a probe saw it."""
    rows = [["system", "durability"] + [heading for heading, _ in work.ITEMS.values()]]
    for e in data.ranked:
        if not isinstance(e.get("work"), dict):
            continue  # results from before the record had it
        cells = []
        for key in work.ITEMS:
            item = e["work"].get(key) or {}
            text = fmt.escape(str(item.get("value", work.UNKNOWN)))
            cells.append(text + (" (probed)" if item.get("how") == work.PROBED else ""))
        rows.append([_row_name(data, e), fmt.escape(e.get("durability") or fmt.DASH)] + cells)
    return rows


def work_legend() -> str:
    """What each value in :func:`work_rows` means."""
    lines = []
    for key, (heading, values) in work.ITEMS.items():
        lines.append(f"**{heading}**: " + "; ".join(f"*{value}*: {meaning}" for value, meaning in values.items()))
    return (" ".join(line + "." for line in lines) + " Declared: as lakebench runs the system (its configuration "
            "and options); probed: seen in its answers during the run; *unknown*: neither.")


def tail_rows(data: ReportData) -> list[list[str]]:
    """The table of the slowest children (header row first): the time per child's p95, p99.9 and max,
    where a pause of the system (a commit, a collection) shows, and beside them the slowest flush of
    the store's write-ahead log where it reports one (a durable write waits for the disk's flush);
    the systems that completed."""
    terms = lakebench_figures
    rows = [["system", "durability", terms.TIME_PER_CHILD_P95.name, terms.TIME_PER_CHILD_P999.name,
             terms.TIME_PER_CHILD_MAX.name, terms.LOG_FLUSH_MAX.name]]
    for e in data.ranked:
        if e.get("status") == "ok":
            rows.append([_row_name(data, e), fmt.escape(e.get("durability") or fmt.DASH)] + [
                fmt.nobreak(_cell(e, f"per_resource_ms.{key}", fmt.millis)) for key in ("p95", "p999", "max")]
                + [fmt.nobreak(fmt.stacked(fmt.seconds(terms.log_flush_max(e),
                                                       std_of(e, terms.LOG_FLUSH_MAX.path))))])
    return rows


def reference_rows(data: ReportData) -> list[list[str]]:
    """The table of the figures relative to the reference's (header row first): the time per child,
    GET parent steady, peak RSS and bytes per triple; just the header without a reference measured."""
    rows = [["system", "durability", "time/ref", "GET/ref", "RSS/ref", "disk/ref"]]
    if data.reference is None:
        return rows
    for e in data.ok:
        ref = data.reference_for(e)  # the reference of the same case
        ref_bpt = _bytes_per_triple(ref, data)[0] if ref else None
        bpt, _ = _bytes_per_triple(e, data)
        durability = fmt.escape(e.get("durability") or fmt.DASH)
        rows.append([_row_name(data, e), durability] + [fmt.nobreak(cell) for cell in (
            _pct(e, "per_resource_ms.mean"),
            _pct(e, "parent.seconds"),
            _pct(e, "peak_rss_bytes"),
            fmt.percent(100 * bpt / ref_bpt) if bpt is not None and ref_bpt else fmt.DASH,
        )])
    return rows


def _bytes_per_triple(entry: dict, data: ReportData) -> tuple[float | None, str]:
    """As the terminal table computes it (:func:`lakebench.figures.bytes_per_triple`)."""
    per_child = (data.document.get("workload") or {}).get("triples_per_child") or 0
    return lakebench_figures.bytes_per_triple(entry, per_child)


def results_section(data: ReportData) -> str:
    ref = data.document.get("reference")
    out = [fmt.heading("Results", "-")]
    intro = f"Percentages are of the reference, {fmt.escape(ref)} (ref.)." if ref else "No reference system."
    if data.repeat > 1:
        intro += (f" Values are means over {data.repeat} runs, with their sample standard "
                  "deviation (±) below; percentages compare the means.")
    out.append(intro + "\n")
    time_rows, space_rows = results_rows(data)
    out.append(fmt.list_table(time_rows, "Time"))
    done = work_rows(data)
    if len(done) > 1:
        out.append(fmt.list_table(done, "What a write does"))
        out.append(work_legend() + "\n")
    tail = tail_rows(data)
    if len(tail) > 1:
        out.append(fmt.list_table(tail, "The slowest children"))
    out.append(fmt.list_table(space_rows, "Memory and disk"))
    relative = reference_rows(data)
    if len(relative) > 1:
        out.append(fmt.list_table(relative, f"Relative to the reference, {fmt.escape(ref)}"))
    terms = lakebench_figures

    def defined(*defined_terms) -> str:
        return " ".join(f"**{t.name}**: {t.means}." for t in defined_terms)

    out.append(
        defined(terms.RUNNING_TIME, terms.TIME_PER_CHILD, terms.TIME_PER_CHILD_P95, terms.TIME_PER_CHILD_P999,
                terms.TIME_PER_CHILD_MAX, terms.LOG_FLUSH_MAX, terms.GROWTH) + " "
        + terms.parent_note(data.retrievals, lambda name: f"**{name}**") + " "
        + defined(terms.CONTAINS, terms.PEAK_RSS, terms.PEAK_PRIVATE) + " **CPU time**: user + system CPU "
        "during ingest and retrieval. " + defined(terms.DATABASE_SIZE)
        + " **B/triple**: that over **triples**, the triples held at the end (marked * when the server does not "
        "count them: over the triples sent). **time/ref**, **GET/ref**, **RSS/ref**, **disk/ref**: "
        f"{terms.TIME_PER_CHILD.name}, {terms.PARENT_STEADY.name}, {terms.PEAK_RSS.name} and B/triple relative "
        "to the reference's (a multiple past 2x). Field by field in :doc:`/results`.\n"
    )
    out.append(sections.failed_section(data))
    return "\n".join(out)


#: The figures of each case in the table of sizes reached, each with how it is written: the typical
#: child, its tail, its growth, the parent and private memory at the size the case reached.
CASE_FIGURES = ((lakebench_figures.TIME_PER_CHILD, fmt.millis), (lakebench_figures.TIME_PER_CHILD_P999, fmt.millis),
                (lakebench_figures.TIME_PER_CHILD_MAX, fmt.millis), (lakebench_figures.GROWTH, fmt.ratio),
                (lakebench_figures.PARENT_STEADY, fmt.seconds), (lakebench_figures.PEAK_PRIVATE, fmt.size))


def budget_rows(data: ReportData) -> list[list[str]]:
    """The table of children reached, case by case (header row first): each system's size asked and
    reached, its running time, the figures of :data:`CASE_FIGURES` at that size, and the outcome."""
    rows = [["system", "children asked", "children reached", lakebench_figures.RUNNING_TIME.name,
             *(term.name for term, _ in CASE_FIGURES), "outcome"]]
    blank = [fmt.DASH] * (len(CASE_FIGURES) + 2)
    finished = "finished within the budget" if data.budget_seconds is not None else "finished"
    order = {name: i for i, name in enumerate(dict.fromkeys(e["name"] for e in data.systems))}
    for e in sorted(data.systems, key=lambda e: (order[e["name"]], results.case_children(e) or 0)):
        asked = fmt.count(results.case_children(e))
        status = e.get("status")
        name = fmt.escape(e["name"])
        if status == "skipped":
            rows.append([name, asked, *blank, f"not run: {fmt.escape(e.get('skip_reason') or '')}"])
        elif status != "ok":
            rows.append([name, asked, *blank, "**failed**"])
        else:
            outcome = "budget spent, stopped" if e.get("budget_exhausted") else finished
            rows.append([name, asked, fmt.count(e.get("children")), fmt.nobreak(fmt.seconds(e["ingest_seconds"])),
                         *(fmt.nobreak(_cell(e, term.path, written)) for term, written in CASE_FIGURES), outcome])
    return rows


def budget_section(data: ReportData) -> str:
    """Children reached, system by system and case by case: with a budget (``--budget``) or a sweep of
    sizes; nothing otherwise."""
    budget = data.budget_seconds
    sizes = {results.case_children(e) for e in data.systems} - {None}
    if budget is None and len(sizes) < 2:
        return ""
    title = "Children reached within the budget" if budget is not None else "Children reached, case by case"
    terms = lakebench_figures
    intro = ("Each system's cases, smallest first, with the figures of the size each reached: "
             + "; ".join(f"**{t.name}**: {t.means}" for t, _ in CASE_FIGURES) + ".")
    if budget is not None:
        intro += (f" Each system and case could spend {fmt.seconds(budget)} of ingest time (the sum of the "
                  f"per-child times, as **{terms.RUNNING_TIME.name}** above; generation and checkpoints not "
                  "counted). A system that spent it stopped there, and its parent was retrieved at the size it "
                  "reached; a larger case of a system that had already run out was not run.")
    out = [fmt.heading(title, "-"), intro + "\n", fmt.list_table(budget_rows(data), title)]
    return "\n".join(out)


def benchmarks_section(data: ReportData) -> str:
    if not data.benchmarks:
        return ""
    out = [fmt.heading("Micro-benchmarks", "-"),
           "pytest-benchmark results: one row per benchmark, by group.\n"]
    for path, document in data.benchmarks:
        info = [f"from {fmt.literal(str(path))}"]
        if document.get("version"):
            info.append(f"pytest-benchmark {fmt.escape(document['version'])}")
        if document.get("datetime"):
            info.append(f"run {fmt.escape(document['datetime'])}")
        cpu = get_path(document, "machine_info.cpu.brand_raw")
        if cpu:
            info.append(f"on {fmt.escape(cpu)}")
        rows = [["group", "name", "mean", "stddev", "median", "rounds"]]
        benches = sorted(document["benchmarks"],
                         key=lambda b: (str(b.get("group") or ""), number(get_path(b, "stats.mean")) or 0))
        for b in benches:
            stats = b.get("stats") or {}
            rows.append([
                fmt.escape(str(b.get("group") or "(none)")),
                fmt.literal(b.get("name") or b.get("fullname") or "?"),
                fmt.seconds(number(stats.get("mean"))),
                fmt.seconds(number(stats.get("stddev"))),
                fmt.seconds(number(stats.get("median"))),
                fmt.count(stats.get("rounds")),
            ])
        out.append(", ".join(info) + ":\n")
        if len(rows) > 1:
            out.append(fmt.list_table(rows, stub_columns=0))
        else:
            out.append("(no benchmarks in this file)\n")
    return "\n".join(out)


def conclusions_section(data: ReportData) -> str:
    out = [fmt.heading("Conclusions", "-")]
    out.extend(f"- {line}" for line in conclusions(data))
    out.append("")
    out.append(".. note::\n")
    out.append("   These are partial, specific results, not a thorough assessment of the systems:\n")
    out.extend(f"   - {line}" for line in caveats(data))
    out.append("")
    return "\n".join(out)
