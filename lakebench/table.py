"""The tables ``lakebench run`` and ``lakebench table`` print.

They fit the terminal: each column has a rank, and columns are added in
rank order while the table stays within the width (``COLUMNS`` when set,
else the terminal's, else 100); ``--wide`` shows them all.  Rows are ranked
by the workload's headline figure (the mean time of one operation of its
primary kind: for ``flat``, the time per child (mean)) within each case.
What does not fit a cell (a failure, a skip, where a budget stopped the
ingest, a divisor that differs) becomes a note under the table, and so does
what the parent's figures are, with the number of retrievals.  Every figure
is named and written by :mod:`lakebench.figures`, as in the report.
"""
from __future__ import annotations

import shutil
import unicodedata
from dataclasses import dataclass
from typing import Callable

from lakebench import figures
from lakebench.figures import time_per
from lakebench.results import case_children, case_label, retrievals
from lakebench.results.scaling import label as sweep_label
from lakebench.results.scaling import knee_words, other_variant, users_sweeps, users_text

DEFAULT_WIDTH = 100
GAP = "  "


@dataclass(frozen=True)
class Column:
    header: str
    cell: Callable[[dict], str]
    rank: int  # 0: always shown; higher ranks give way first when the terminal is narrow


def _std(entry: dict, path: str) -> float | None:
    return entry.get("std", {}).get(path)


def _vs(path: str) -> Callable[[dict], str]:
    return lambda e: figures.relative(e.get("vs_reference", {}).get(path))


def _parent_columns(rank: int) -> list[Column]:
    """GET parent first and steady: steady (the headline parent figure) at ``rank``, first after it;
    the paged walk's two figures after those."""
    return [Column(figures.PARENT_FIRST.name, lambda e: figures.duration(e["parent"].get("first_seconds")), rank + 1),
            Column(figures.PARENT_STEADY.name, lambda e: figures.duration(e["parent"]["seconds"]), rank),
            Column(figures.PAGE_FIRST.name, lambda e: _paged(e, "first_seconds"), rank + 3),
            Column(figures.PAGED_WALK.name, lambda e: _paged(e, "walk_seconds"), rank + 3)]


def _paged(entry: dict, key: str) -> str:
    """A figure of the paged walk: '–' without one, 'not paged' where the system sent the whole parent."""
    paged = entry["parent"].get("paged")
    if not paged:
        return "–"
    return figures.duration(paged[key]) if paged["paged"] else "not paged"


def flat_columns(document: dict) -> list[Column]:
    """The seed's figures: time per child, parent GET, memory, disk, each also relative to the reference."""
    per_child = document.get("workload", {}).get("triples_per_child", 0)
    ref = document.get("reference") or "ref"

    def bpt(e: dict) -> str:
        value, basis = figures.bytes_per_triple(e, per_child)
        return "–" if value is None else f"{value:.0f}" + ("*" if basis == "sent" else "")

    return load_columns(document) + [
        Column(figures.TIME_PER_CHILD.name, lambda e: figures.millis(e["per_resource_ms"]["mean"],
                                                                     _std(e, "per_resource_ms.mean")), 0),
        Column(f"time/{ref}", _vs("per_resource_ms.mean"), 1),
        *_parent_columns(1),
        Column(figures.PEAK_RSS.name, lambda e: figures.size(e.get("peak_rss_bytes")), 2),
        Column(figures.DATABASE_SIZE.name, lambda e: figures.size(e.get("disk_bytes")), 2),
        Column(figures.TIME_PER_CHILD_P95.name, lambda e: figures.millis(e["per_resource_ms"]["p95"]), 3),
        Column(figures.TIME_PER_CHILD_P999.name, lambda e: figures.millis(e["per_resource_ms"].get("p999")), 3),
        Column(figures.TIME_PER_CHILD_MAX.name, lambda e: figures.millis(e["per_resource_ms"].get("max")), 3),
        Column(figures.LOG_FLUSH_MAX.name, lambda e: figures.duration(figures.log_flush_max(e)), 3),
        Column(figures.PEAK_PRIVATE.name, lambda e: figures.size(e.get("peak_rss_anon_bytes")), 3),
        Column("B/triple", bpt, 3),
        Column(figures.RUNNING_TIME.name, lambda e: figures.duration(e["ingest_seconds"],
                                                                     _std(e, "ingest_seconds")), 4),
        Column(figures.GROWTH.name, lambda e: figures.ratio(e["growth"]["ratio"]), 4),
        Column(f"GET/{ref}", _vs("parent.seconds"), 5),
        Column(f"RSS/{ref}", _vs("peak_rss_bytes"), 5),
        Column(f"disk/{ref}", _vs("disk_bytes"), 5),
        Column(figures.CONTAINS.name, lambda e: figures.count(e["parent"]["containment_triples"]), 6),
        Column(figures.TRIPLES.name, lambda e: figures.count(e.get("triples_total")), 6),
    ]


def load_columns(document: dict) -> list[Column]:
    """A Locust run is a load test: its users, throughput and refusals come first, then its latency and
    how busy the load generator was."""
    if not any(e.get("load") for e in document["systems"]):
        return []

    def load(e: dict) -> dict:
        return e.get("load") or {}

    return [
        Column("users", lambda e: figures.count(load(e).get("users")), 1),
        Column(figures.THROUGHPUT.name, lambda e: figures.rate(load(e).get("throughput_per_s")), 1),
        Column("failures", lambda e: figures.count(load(e).get("failures")), 1),
        Column(figures.LATENCY_P95.name, lambda e: figures.millis((load(e).get("latency_ms") or {}).get("p95")), 1),
        Column(figures.GENERATOR_CPU.name, lambda e: share(load(e).get("generator_cpu_share")), 2),
    ]


def share(value: float | None) -> str:
    """A share of a core (or of anything) in percent.

    >>> share(0.963), share(1.5), share(None)
    ('96%', '150%', '–')
    """
    return figures.DASH if value is None else f"{value:.0%}"


def load_lines(entry: dict, indent: str = "") -> list[str]:
    """A Locust case in a line, as the run prints it after each case, and the generator's saturation."""
    load = entry.get("load")
    if not load:
        return []
    shape = f", parents {load['parents']}" if load.get("parents") else ""
    system_cpu = load.get("system_cpu_seconds")
    lines = [f"{indent}{users_text(load.get('users'))}{shape}: {figures.THROUGHPUT.name} "
             f"{figures.rate(load.get('throughput_per_s'))}, {figures.LATENCY_P95.name} "
             f"{figures.millis((load.get('latency_ms') or {}).get('p95'))}, {load.get('failures', 0):,} failed; "
             f"CPU: system {figures.duration(system_cpu) if system_cpu is not None else figures.DASH}, "
             f"{figures.GENERATOR_CPU.name} {share(load.get('generator_cpu_share'))} of a core"]
    saturated = saturation_note(load)
    if saturated:
        lines.append(f"{indent}{saturated}")
    return lines


def saturation_note(load: dict) -> str | None:
    """What a case whose load generator was saturated (``generator_saturated``) must say, or None."""
    if not load.get("generator_saturated"):
        return None
    processes = load.get("generator_processes") or 1
    return (f"the load generator was saturated ({share(load.get('generator_cpu_share'))} of a core per Locust "
            f"process, {processes} process{'es' if processes != 1 else ''}): the flat line here is the "
            "generator's, not the system's; give Locust more processes (locust --processes N with the "
            "locustfiles, or a master and workers on other hosts: docs/locust.rst)")


def sweep_notes(document: dict) -> list[str]:
    """Each users sweep in a line: its throughput by users, its highest, its knee and the latency there."""
    lines = []
    sweeps = users_sweeps(document["systems"])
    for sweep in sweeps:
        by_users = ", ".join(f"{users}: {figures.rate(value)}" for users, value in sweep.points)
        best = sweep.best["load"]
        line = (f"{sweep_label(sweep)}: {figures.THROUGHPUT.name} by users {by_users}; highest "
                f"{figures.rate(best['throughput_per_s'])} at {users_text(best['users'])}; ")
        line += knee_words(sweep, figures.millis)
        lines.append(line)
    if sweeps:
        lines.append("users sweep: the table shows each system at its highest throughput; "
                     f"{figures.KNEE.name}: {figures.KNEE.means}.")
    return lines


def workload_columns(document: dict, primary: str) -> list[Column]:
    """Any other workload: each kind of operation's mean time (its primary first), p95 and one over the
    mean; sent against held."""
    kinds: dict[str, None] = {primary: None}
    for entry in document["systems"]:
        kinds.update(dict.fromkeys(entry.get("operations") or {}))
    kinds.pop("get parent", None)  # shown as GET parent first and steady
    columns = []
    for n, kind in enumerate(kinds):
        def mean(e, kind=kind):
            return figures.millis((e.get("operations") or {}).get(kind, {}).get("mean_ms"))

        def p95(e, kind=kind):
            return figures.millis((e.get("operations") or {}).get(kind, {}).get("p95_ms"))

        def per_second(e, kind=kind):
            return figures.rate((e.get("operations") or {}).get(kind, {}).get("per_second"))

        columns += [Column(time_per(kind), mean, 0 if kind == primary else 2),
                    Column(time_per(kind, "p95"), p95, 3 + n),
                    Column(f"{kind} {figures.ONE_OVER_MEAN.name}", per_second, 4 + n)]
    columns = load_columns(document) + columns
    columns += [
        Column("held / sent", held_against_sent, 1),
        *_parent_columns(2),
        Column(figures.PEAK_RSS.name, lambda e: figures.size(e.get("peak_rss_bytes")), 4),
        Column(figures.DATABASE_SIZE.name, lambda e: figures.size(e.get("disk_bytes")), 4),
    ]
    return columns


def held_against_sent(entry: dict) -> str:
    """``ok`` when the system holds all it was sent, else what is missing.

    >>> held_against_sent({"sent": {"children": 20}, "held": {"children": 20}})
    'ok'
    >>> held_against_sent({"sent": {"children": 20, "updates": 5}, "held": {"children": 18, "updates": None}})
    'children 18/20'
    """
    sent, held = entry.get("sent") or {}, entry.get("held") or {}
    short = [f"{key} {held[key]:,}/{value:,}" for key, value in sent.items()
             if held.get(key) is not None and held[key] != value]
    return "; ".join(short) if short else ("ok" if sent else "–")


def _ranked(entries: list[dict]) -> list[dict]:
    """Within each case (in the order measured), measured systems fastest first, then those not measured.
    A users sweep's cases are one case here: each system is shown at its highest throughput (:func:`shown`)."""
    cases: dict[tuple, list[dict]] = {}
    for e in entries:
        cases.setdefault((case_children(e), e.get("literal_length"), other_variant(e.get("variant", ""))),
                         []).append(e)
    ordered = []
    for group in cases.values():
        measured = [e for e in group if e["status"] == "ok" and e["per_resource_ms"]["mean"] is not None]
        ordered += sorted(measured, key=lambda e: e["per_resource_ms"]["mean"])
        ordered += [e for e in group if e not in measured]  # not run, failed, or every operation refused
    return ordered


def shown(document: dict) -> list[dict]:
    """The entries the table shows: in a users sweep, each system at its highest throughput alone."""
    hidden = {id(e) for sweep in users_sweeps(document["systems"]) for e in sweep.entries if e is not sweep.best}
    return [e for e in document["systems"] if id(e) not in hidden]


def terminal_width() -> int:
    """``COLUMNS`` when set, else the terminal's width, else 100."""
    return shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns


def rows(document: dict, wide: bool = False, width: int | None = None) -> list[list[str]]:
    """The table's rows, header first: every column with ``wide``, else those that fit ``width``."""
    name = document.get("workload", {}).get("name", "flat")
    entries = _ranked(shown(document))
    if name == "flat":
        columns = flat_columns(document)
    else:
        primary = next((e["workload"].get("primary") for e in entries if e.get("workload")), None)
        columns = workload_columns(document, primary or _first_kind(entries))
    lead = [Column("system", lambda e: case_label(e, document["systems"]), 0),
            Column("durability", lambda e: e.get("durability") or "–", 0)]
    cells = {id(c): [c.header] + [c.cell(e) if e["status"] == "ok" or c in lead else _status(e, c)
                                  for e in entries]
             for c in lead + columns}
    chosen = lead + columns
    if not wide:
        limit = terminal_width() if width is None else width
        chosen = list(lead)
        for column in sorted(columns, key=lambda c: c.rank):
            trial = chosen + [column]
            if column.rank == 0 or _width(trial, cells) <= limit:
                chosen = trial
        chosen = [c for c in lead + columns if c in chosen]  # back in reading order
    return [[cells[id(c)][i] for c in chosen] for i in range(len(entries) + 1)]


def _first_kind(entries: list[dict]) -> str:
    for e in entries:
        for kind in e.get("operations") or {}:
            return kind
    return "create"


def _workload_notes(document: dict, measured: list[dict]) -> list[str]:
    """The lines the run's workload says of its own figures (lakebench.workloads.base.Workload.notes);
    none for a workload this lakebench does not know (a results file of another version)."""
    from lakebench import workloads

    try:
        workload = workloads.load(document.get("workload", {}).get("name", workloads.DEFAULT))
    except KeyError:
        return []
    return workload.notes(measured, lambda e: case_label(e, document["systems"]))


def _status(entry: dict, column: Column) -> str:
    """A row not measured says so in its headline column (why: in the notes)."""
    if column.rank != 0:
        return ""
    return "not run" if entry["status"] == "skipped" else "FAILED"


def _width(columns: list[Column], cells: dict) -> int:
    return sum(max(len(v) for v in cells[id(c)]) for c in columns) + len(GAP) * (len(columns) - 1)


def printable(text) -> str:
    """``text`` as a terminal may show it: on one line, every control character
    (an escape sequence in a results file could rewrite the screen) replaced.

    >>> printable("a\\nb\\x1b[2Jc\\x9b")
    'a b\ufffd[2Jc\ufffd'
    """
    return "".join("\ufffd" if unicodedata.category(c) == "Cc" else c for c in " ".join(str(text).split()))


def render(table: list[list[str]]) -> str:
    """Plain text with aligned columns, a rule under the header (every cell printable)."""
    table = [[printable(cell) for cell in row] for row in table]
    widths = [max(len(r[i]) for r in table if i < len(r)) for i in range(len(table[0]))]
    lines = []
    for n, row in enumerate(table):
        lines.append(GAP.join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
        if n == 0:
            lines.append(GAP.join("-" * w for w in widths))
    return "\n".join(lines)


def notes(document: dict) -> list[str]:
    """What the cells could not hold: failures, skips, budget stops, refused operations, divisors; what
    the parent's figures are (with the retrievals made) and the throughput."""
    lines = []
    systems = document["systems"]
    per_child = document.get("workload", {}).get("triples_per_child", 0)
    sent_divisor = False
    for e in systems:
        label = case_label(e, systems)
        if e["status"] == "failed":
            lines.append(f"{label}: FAILED: {e.get('error') or '?'}"
                         + (f" (log: {e['log']})" if e.get("log") else ""))
        elif e["status"] == "skipped":
            lines.append(f"{label}: not run: {e.get('skip_reason') or 'skipped'}")
        else:
            if e.get("budget_exhausted"):
                lines.append(f"{label}: stopped at {e['children']:,} children after "
                             f"{figures.duration(e['ingest_seconds'])} (budget spent)")
            refused = {k: op["errors"] for k, op in (e.get("operations") or {}).items() if op.get("errors")}
            if refused:
                lines.append(f"{label}: refused " + ", ".join(f"{n:,} {k}" for k, n in refused.items())
                             + (f"; first: {e['first_error']}" if e.get("first_error") else ""))
            value, basis = figures.bytes_per_triple(e, per_child)
            sent_divisor = sent_divisor or (value is not None and basis == "sent")
    if sent_divisor and document.get("workload", {}).get("name", "flat") == "flat":  # the only B/triple column
        lines.append("B/triple*: the server does not count its triples; divided by the triples sent")
    measured = [e for e in systems if e["status"] == "ok"]
    lines += _workload_notes(document, measured)
    if measured:  # the columns of every table: what they are
        lines.append(figures.parent_note(retrievals(document)))
    for e in measured:
        saturated = saturation_note(e.get("load") or {})
        if saturated:
            lines.append(f"{case_label(e, systems)}: {saturated}")
    lines += sweep_notes(document)
    if any(e.get("load") for e in measured):
        lines.append(f"{figures.THROUGHPUT.name}: {figures.THROUGHPUT.means}.")
    return lines


#: Above this share of a system's ingest wall time, building the children is
#: the harness's own cost worth a line in the run's output.
GENERATION_SHARE = 0.20


def generation_lines(document: dict) -> list[str]:
    """One line per system entry whose children took over 20% of its ingest wall time to build.

    >>> doc = {"systems": [{"name": "a", "status": "ok", "generate_seconds": 3.0, "ingest_wall_seconds": 10.0},
    ...                    {"name": "b", "status": "ok", "generate_seconds": 1.0, "ingest_wall_seconds": 10.0}]}
    >>> generation_lines(doc)
    ['generation: 3.0 s of 10.0 s wall (a)']
    """
    lines = []
    for entry in document["systems"]:
        generated, wall = entry.get("generate_seconds"), entry.get("ingest_wall_seconds")
        if entry["status"] == "ok" and generated and wall and generated > GENERATION_SHARE * wall:
            lines.append(f"generation: {generated:.1f} s of {wall:.1f} s wall ({case_label(entry, document['systems'])})")
    return lines


def text(document: dict, wide: bool = False, width: int | None = None) -> str:
    """The table and its notes, as printed."""
    return "\n".join([render(rows(document, wide, width)), *map(printable, notes(document))])
