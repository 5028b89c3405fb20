"""Sections every workload's page holds, and the page of the workloads other than ``flat``.

Every record has ``operations`` (per kind: count, errors, mean and
percentiles, operations per second), ``sent`` and ``held`` (what the
workload sent, what the system holds afterwards) and ``parent`` (the
container read at the end, first and steady); each workload adds a field of
its own (``binaries``, ``deep``, ``updates``, ``reads``, ``mixed``,
``queries``: docs/results.rst).  The seed's page (:mod:`~.pages`) adds
the first three sections to its own; the other workloads' pages are
:func:`workload_page`.
"""
from __future__ import annotations

from pathlib import Path

from lakebench.compare import primary_kind
from lakebench.report import fmt
from lakebench.report import summary as report_summary
from lakebench.report.conclusions import caveats
from lakebench.report.data import ReportData, number
from lakebench.results import get_path

#: The workload's own record field, by the key it has in a system entry, and its heading.
DETAILS = {"binaries": "Binaries", "deep": "Hierarchy", "updates": "Updates", "reads": "Reads",
           "mixed": "Mix", "queries": "Queries"}
#: Column headings of those fields, where the field's name with spaces would not do.
HEADINGS = {"size_bytes": "size", "put_mb_per_s": "PUT MB/s", "get_mb_per_s": "GET MB/s",
            "duration_seconds": "duration", "throughput_per_s": "operations/s", "fan_out": "fan-out"}
#: Fields of those records that count something gone wrong: any above zero is flagged.
BAD_COUNTS = ("mismatched", "stale", "errors")
#: (count done or verified, the count it is out of): fewer is flagged, with the whole.
VERIFIED_OF = (("verified", "sampled"), ("verified", "applied"), ("applied", "requested"),
               ("leaf_reads_verified", "leaf_reads"), ("ok", "requested"))


def _name(data: ReportData, e: dict) -> str:
    """The entry's label as page text: a name from the results file is escaped wherever it lands."""
    return fmt.escape(data.label(e))


# -- operations ------------------------------------------------------------

def operations_rows(data: ReportData) -> list[list[str]]:
    """One row per system (and case) and operation kind, header row first."""
    rows = [["system", "durability", "operation", "count", "mean", "p50", "p95", "p99", "ops/s", "errors"]]
    for e in data.ok:
        for kind, op in (e.get("operations") or {}).items():
            errors = op.get("errors") or 0
            rows.append([_name(data, e), _durability(e), fmt.escape(kind), fmt.count(op.get("count"))]
                        + [fmt.nobreak(fmt.millis(number(op.get(k)))) for k in ("mean_ms", "p50_ms", "p95_ms",
                                                                                 "p99_ms")]
                        + [_rate(op.get("per_second")), f"**{errors:,}**" if errors else "0"])
    return rows


def _durability(e: dict) -> str:
    return fmt.escape(e.get("durability") or fmt.DASH)


def _rate(value) -> str:
    value = number(value)
    return fmt.DASH if value is None else f"{value:,.0f}" if value >= 100 else f"{value:,.1f}"


def operations_section(data: ReportData) -> str:
    rows = operations_rows(data)
    if len(rows) == 1:
        return ""
    out = [fmt.heading("Operations", "-"),
           "Every operation the workload timed, by kind: how many, the mean and percentiles of one "
           "operation's time, operations per second of the time spent in them (one client: the inverse "
           "of the mean), and how many the system refused (**errors**, counted, not timed).\n",
           fmt.list_table(rows, "Operations", stub_columns=1)]
    refused = [e for e in data.ok if e.get("first_error")]
    for e in refused:
        out.append(f"- {_name(data, e)}'s first refusal: {fmt.literal(e['first_error'])}")
    if refused:
        out.append("")
    return "\n".join(out)


# -- what was sent, what is held -------------------------------------------

def sent_held_rows(data: ReportData) -> tuple[list[list[str]], list[str]]:
    """The table of counts sent and held (header row first), and one line per difference."""
    rows = [["system", "durability", "what", "sent", "held", "check"]]
    differences = []
    for e in data.ok:
        sent, held = e.get("sent") or {}, e.get("held") or {}
        for what in dict.fromkeys([*sent, *held]):
            s, h = sent.get(what), held.get(what)
            if h is None:
                check = "not counted"
            elif s is None:
                check = "held only"
            elif s == h:
                check = "same"
            else:
                check = f"**DIFFERS**: {abs(s - h):,} {'fewer' if h < s else 'more'} held"
                differences.append(f"{_name(data, e)} holds {h:,} {fmt.escape(what)} of the {s:,} sent")
            rows.append([_name(data, e), _durability(e), fmt.escape(what), fmt.count(s), fmt.count(h), check])
    return rows, differences


def sent_held_section(data: ReportData) -> str:
    rows, differences = sent_held_rows(data)
    if len(rows) == 1:
        return ""
    out = [fmt.heading("Sent and held", "-"),
           "What the workload sent to each system, and what the system holds once it is done, counted "
           "through the system itself: a system that drops or adds data shows here.\n",
           fmt.list_table(rows, "Sent and held", stub_columns=1)]
    if differences:
        out.append(".. admonition:: What was sent is not what is held\n   :class: error\n")
        out.extend(f"   - {line}" for line in differences)
        out.append("")
    return "\n".join(out)


# -- the parent ------------------------------------------------------------

def parent_rows(data: ReportData) -> list[list[str]]:
    variants = any((e.get("parent") or {}).get("variants_seconds") for e in data.ok)
    rows = [["system", "durability", "GET first", "GET steady", "retrievals", "contains", "size"]
            + (["Prefer variants"] if variants else [])]
    for e in data.ok:
        parent = e.get("parent") or {}
        shown = [] if not variants else [fmt.escape(", ".join(
            f"{name.replace('_', ' ')} {fmt.seconds(number(seconds))}"
            for name, seconds in (parent.get("variants_seconds") or {}).items()) or fmt.DASH)]
        rows.append([_name(data, e), _durability(e), fmt.nobreak(fmt.seconds(number(parent.get("first_seconds")))),
                     fmt.nobreak(fmt.seconds(number(parent.get("seconds")))),
                     fmt.count(len(parent["all_seconds"]) if parent.get("all_seconds") else None),
                     fmt.count(parent.get("containment_triples")),
                     fmt.nobreak(fmt.size(number(parent.get("bytes"))))] + shown)
    return rows


def parent_section(data: ReportData) -> str:
    rows = parent_rows(data)
    if len(rows) == 1:
        return ""
    return "\n".join([
        fmt.heading("Parent retrieval", "-"),
        "Every workload ends by reading the parent container with its containment triples: **first** is "
        "the read right after the workload, **steady** the median of the reads after it; **contains**: "
        "its containment triples, **size**: the bytes of the representation; with Locust, **Prefer "
        "variants**: the parent read once in each ``Prefer`` variant right after the ingest (full, "
        "containment omitted, minimal container).\n",
        fmt.list_table(rows, "Parent retrieval")])


# -- a Locust ingest, as a load test ---------------------------------------

def load_rows(data: ReportData) -> list[list[str]]:
    rows = [["system", "durability", "users", "spawn rate", "requests", "requests/s", "failures", "kinds"]]
    for e in data.ok:
        load = e.get("load")
        if not load:
            continue
        failures = load.get("failures") or 0
        kinds = ", ".join(f"{kind} ({n:,})" for kind, n in (load.get("failure_kinds") or {}).items())
        rows.append([_name(data, e), _durability(e), fmt.count(load.get("users")),
                     f"{number(load.get('spawn_rate')) or 0:g}/s", fmt.count(load.get("requests")),
                     _rate(load.get("throughput_per_s")), f"**{failures:,}**" if failures else "0",
                     fmt.escape(kinds) or fmt.DASH])
    return rows


def load_section(data: ReportData) -> str:
    """The ingest as a load test (``--driver locust``): nothing for lakebench's own client."""
    rows = load_rows(data)
    if len(rows) == 1:
        return ""
    return "\n".join([
        fmt.heading("Load test", "-"),
        "Locust's users PUT the children concurrently: **requests/s** is every PUT sent over the ingest's "
        "wall time, all users together; **failures** are PUTs the server refused or never answered, by "
        "kind (counted, not timed: a refused child is missing from what is held). The running time of "
        "such an ingest is its wall time, not a sum of overlapping requests.\n",
        fmt.list_table(rows, "Load test")])


# -- the workload's own figures --------------------------------------------

def _value(key: str, value) -> str:
    if value is None:
        return fmt.DASH
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return fmt.escape(", ".join(f"{k} {v}" for k, v in value.items()))
    if isinstance(value, str):
        return fmt.literal(value if len(value) <= 16 else value[:16] + "…")
    if key.endswith("_bytes"):
        if isinstance(value, int) and value and value % 1024 == 0:  # a binary size: 64 KiB, not 65.5 kB
            from lakebench.report.workload_charts import _size_label

            return fmt.nobreak(_size_label(value))
        return fmt.nobreak(fmt.size(value))
    if key.endswith("_seconds"):
        return fmt.nobreak(fmt.seconds(value))
    if key.endswith("_ms"):
        return fmt.nobreak(fmt.millis(value))
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) >= 10 else f"{value:.3g}"
    return f"{value:,}"


def details_rows(data: ReportData, key: str) -> list[list[str]]:
    """The table of the workload's field ``key``: a row per system, or per system and item when the
    field maps names to records (``queries``); lists (the ``deep`` series) are charted, not tabulated."""
    entries = [e for e in data.ok if isinstance(e.get(key), dict)]
    nested = entries and all(isinstance(v, dict) for e in entries for v in e[key].values())
    items = [(e, name, v) for e in entries for name, v in e[key].items()] if nested else \
        [(e, None, e[key]) for e in entries]
    columns = list(dict.fromkeys(k for _, _, v in items for k, x in v.items() if not isinstance(x, list)))
    rows = [["system", *(["name"] if nested else []),
             *(fmt.escape(HEADINGS.get(c, c.replace("_", " "))) for c in columns)]]  # a key of the file's
    for e, name, record in items:
        cells = []
        for c in columns:
            text = _value(c, record.get(c))
            if c in BAD_COUNTS and (number(record.get(c)) or 0) > 0:
                text = f"**{text}**"
            of = next((number(record.get(whole)) for part, whole in VERIFIED_OF
                       if part == c and number(record.get(whole)) is not None), None)
            if of is not None and (number(record.get(c)) or 0) < of:
                text = f"**{text}** (of {of:,.0f})"
            if c == "expected" and record.get(c) is not None and record.get(c) not in (record.get("digest"),
                                                                                        record.get("rows")):
                text = f"**{text}** (differs)"
            cells.append(text)
        rows.append([_name(data, e), *([fmt.escape(name)] if nested else []), *cells])
    return rows


def details_section(data: ReportData) -> str:
    out = []
    for key, heading in DETAILS.items():
        rows = details_rows(data, key)
        if len(rows) > 1 and len(rows[0]) > 1:
            out += [fmt.heading(heading, "-"),
                    f"The workload's own figures (``{key}`` in :doc:`/results`), as recorded.\n",
                    fmt.list_table(rows, heading)]
    return "\n".join(out)


# -- the page --------------------------------------------------------------

def _description(name: str) -> str | None:
    from lakebench import workloads

    return workloads.summaries().get(name)


def summary(data: ReportData) -> str:
    names = fmt.escape(", ".join(dict.fromkeys(e["name"] for e in data.systems)))
    what = _description(data.workload)
    what = f" ({fmt.escape(what)})" if what else ""
    return (f"Systems {names} ran the {fmt.literal(data.workload)} workload{what}; every run ends with the "
            "parent container read.\n")


def workload_section(data: ReportData, level: str = "-") -> str:
    w = data.document.get("workload") or {}
    out = [fmt.heading("Workload", level),
           f"The {fmt.literal(data.workload)} workload of :doc:`/workload`, on the data set of seed "
           f"{w.get('seed', '?')} "
           "(every system receives the same resources). Its parameters, and the data set's:\n"]
    rows = [["parameter", "value"]]
    for key, value in (w.get("params") or {}).items():
        rows.append([fmt.literal(key), fmt.escape(f"{value:,}" if isinstance(value, int) else str(value))])
    variants = get_path(w, "sweep.variant")
    if variants:
        rows.append(["cases", fmt.escape(", ".join(variants))])
    for key in ("children", "triples_per_child", "literal_length", "seed"):  # the data set's: the workload
        if w.get(key) is not None:                                           # may use some, or none
            rows.append([f"``{key}`` (data set)", fmt.escape(f"{w[key]:,}")])
    out.append(fmt.list_table(rows, "Workload parameters", widths="1 2"))
    return "\n".join(out)


def _times(ratio: float) -> str:
    """A multiple with the digits that matter: 1.83x, 15.2x, 150x."""
    return f"{ratio:.2f}x" if ratio < 10 else f"{ratio:.3g}x" if ratio < 100 else f"{ratio:,.0f}x"


def findings(data: ReportData) -> list[str]:
    """Sentences from the numbers: the primary operation's time per case, checks, refusals, skips."""
    out = []
    ok = data.ok
    if not ok:
        out.append("No system completed its runs, so there is nothing to compare.")
    by_case: dict[str, list[dict]] = {}
    for e in ok:
        if number(get_path(e, "per_resource_ms.mean")) is not None:
            by_case.setdefault(e.get("variant", ""), []).append(e)
    for variant, entries in by_case.items():
        entries.sort(key=lambda e: e["per_resource_ms"]["mean"])
        best = entries[0]["per_resource_ms"]["mean"]
        ranked = [f"{fmt.escape(e['name'])} {fmt.millis(e['per_resource_ms']['mean'])}"
                  + (f" ({_times(e['per_resource_ms']['mean'] / best)} as long)" if i and best else "")
                  for i, e in enumerate(entries)]
        kind = primary_kind(entries[0]) or "the workload's main operation"
        case = f", {fmt.escape(variant)}" if variant else ""
        out.append(f"**{fmt.escape(kind)}{case}**, mean time: {'; '.join(ranked)}.")
    _, differences = sent_held_rows(data)
    if differences:
        out.append("**Check**: " + "; ".join(differences) + ": what was sent is not what is held.")
    elif ok and any(e.get("held") for e in ok):
        out.append("**Check**: every count of what was sent that was counted back is held (above).")
    for e in ok:
        for key in DETAILS:
            record = e.get(key) if isinstance(e.get(key), dict) else {}
            bad = [f"{k} {record[k]:,}" for k in BAD_COUNTS if (number(record.get(k)) or 0) > 0]
            if bad:
                out.append(f"**Check**: {_name(data, e)}'s {key}: {', '.join(bad)}.")
    for e in ok:
        refused = sum((op.get("errors") or 0) for op in (e.get("operations") or {}).values())
        if refused:
            out.append(f"**Refused**: {_name(data, e)} refused {refused:,} operations; first: "
                       f"{fmt.literal(e.get('first_error') or '?')}.")
    skipped: dict[tuple[str, str], int] = {}  # a system not applicable is so in every case: one line
    for e in data.skipped:
        key = (e["name"], e.get("skip_reason") or "skipped")
        skipped[key] = skipped.get(key, 0) + 1
    for (name, reason), cases in skipped.items():
        times = f" ({cases} cases)" if cases > 1 else ""
        out.append(f"**{fmt.escape(name)} not run**{times}: {fmt.escape(reason)}.")
    for e in data.failed:
        out.append(f"**{_name(data, e)} failed**: {fmt.literal(e.get('error') or 'unknown error')}; "
                   "it is left out of every table.")
    return out


def workload_page(data: ReportData, figures: list[tuple[object, Path, str]], title: str,
                  report_command: str | None = None) -> str:
    """The page of a workload other than ``flat``, as reStructuredText."""
    from lakebench.report import pages

    conclusions = [fmt.heading("Conclusions", "-"), *(f"- {line}" for line in findings(data)), "",
                   ".. note::\n", "   These are partial, specific results, not a thorough assessment of the "
                   "systems:\n", *(f"   - {line}" for line in caveats(data)), ""]
    parts = [
        pages.GENERATED_NOTE,
        fmt.heading(title, "=", overline=True),
        summary(data),
        report_summary.section(data, figures),
        operations_section(data),
        sent_held_section(data),
        parent_section(data),
        details_section(data),
        pages.failed_section(data),
        pages.charts_section([f for f in figures if f[0].name != "headline"]),
        "\n".join(conclusions),
        pages.measured_section(data, report_command, workload_section(data, level="~")),
    ]
    return "\n".join(p for p in parts if p).rstrip() + "\n"
