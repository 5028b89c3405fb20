"""The first screen of every report page: the answer, before how it was obtained.

``Summary`` (anchor ``#summary``): the systems ranked by the workload's
headline figure (mean time of its primary operation; per child for
``flat``), each with its multiple of the fastest, its durability class, the
parent read first (right after the writes) and steady, and a one-line
verdict; then the headline chart.  Everything about how the figures were
obtained is the page's ``How it was measured`` section
(``#how-it-was-measured``), further down.
"""
from __future__ import annotations

from pathlib import Path

from lakebench import figures
from lakebench.compare import primary_kind
from lakebench.report import fmt
from lakebench.report.data import ReportData, number
from lakebench.results import get_path

#: What each durability class promises, in the summary's legend.
DURABILITY = {
    "durable": "a write is acknowledged once it is on stable storage (fsync)",
    "nosync": "writes reach the operating system, not the disk, when acknowledged: a power cut may lose them",
    "volatile": "nothing reaches disk",
    "server-default": "whatever the server does by default (Fedora: its storage's own flushing)",
    "unknown": "a server lakebench does not run: not known",
}


def _cases(data: ReportData) -> dict[str, list[dict]]:
    """Entries by case (a swept size or variant), in the order measured."""
    cases: dict[str, list[dict]] = {}
    for e in data.systems:
        key = data.label(e).replace(e["name"], "", 1).strip(" ()")
        cases.setdefault(key, []).append(e)
    return cases


def verdict(entry: dict, fastest: float | None) -> str:
    """One line on a system: its place, and anything that qualifies its figures."""
    status = entry.get("status")
    if status == "skipped":
        return fmt.escape(f"not run: {entry.get('skip_reason') or 'skipped'}")
    if status != "ok":
        return f"**failed**: {fmt.literal((entry.get('error') or 'unknown error')[:80])}"
    mean = number(get_path(entry, "per_resource_ms.mean"))
    words = []
    load = entry.get("load")
    if load:  # a load test: its rate and its refusals before anything
        words.append(f"{load.get('users', '?')} users, {figures.rate(number(load.get('throughput_per_s')))} "
                     f"PUTs, {load.get('failures', 0):,} failed")
    if mean is not None and fastest:
        words.append("fastest" if mean == fastest else f"{figures.multiple(mean / fastest)} the fastest's time")
    if entry.get("budget_exhausted"):
        words.append(f"budget spent at {entry.get('children', 0):,} children")
    sent, held = entry.get("sent") or {}, entry.get("held") or {}
    short = [k for k, v in sent.items() if held.get(k) is not None and held[k] != v]
    if short:
        words.append("**holds less than it was sent** (" + ", ".join(fmt.escape(k) for k in short) + ")")
    refused = sum((op.get("errors") or 0) for op in (entry.get("operations") or {}).values())
    if refused:
        words.append(f"**{refused:,} operations refused**")
    durability = entry.get("durability")
    if durability in ("nosync", "volatile"):
        words.append(f"not durable ({durability})")
    elif durability and durability != "durable":  # a server's own default: not ours to say
        words.append(f"durability: {fmt.escape(durability)}")
    return "; ".join(words) or "–"


def rows(data: ReportData) -> list[list[str]]:
    """The ranked table, header first: one row per system and case."""
    header = ["system", "durability", "time per operation", "x fastest", "GET parent first",
              "GET parent steady", "verdict"]
    out = [header]
    for case in _cases(data).values():
        ok = sorted((e for e in case if e.get("status") == "ok"
                     and number(get_path(e, "per_resource_ms.mean")) is not None),
                    key=lambda e: e["per_resource_ms"]["mean"])
        fastest = ok[0]["per_resource_ms"]["mean"] if ok else None
        for e in ok:  # the order is the rank
            mean = e["per_resource_ms"]["mean"]
            out.append([fmt.escape(data.label(e)), fmt.escape(e.get("durability") or fmt.DASH),
                        fmt.nobreak(fmt.millis(mean, (e.get("std") or {}).get("per_resource_ms.mean"))),
                        figures.multiple(mean / fastest) if fastest else fmt.DASH,
                        fmt.nobreak(fmt.seconds(number(get_path(e, "parent.first_seconds")))),
                        fmt.nobreak(fmt.seconds(number(get_path(e, "parent.seconds")))),
                        verdict(e, fastest)])
        for e in case:
            if e not in ok:
                out.append([fmt.escape(data.label(e)), fmt.escape(e.get("durability") or fmt.DASH)] + [fmt.DASH] * 4
                           + [verdict(e, fastest)])
    return out


def _headline_kind(data: ReportData) -> str:
    kind = next((primary_kind(e) for e in data.ok if primary_kind(e)), None)
    return "child created" if kind in (None, "create") else kind


def section(data: ReportData, charts: list[tuple[object, Path, str]]) -> str:
    """The ``Summary`` section: ranked table, verdicts, the durability classes present, the headline chart."""
    kind = _headline_kind(data)
    table = rows(data)
    out = [fmt.heading("Summary", "-")]
    if len(table) == 1:
        out.append("No system was measured.\n")
        return "\n".join(out)
    out.append(f"Ranked by the mean time of one operation (**{fmt.escape(kind)}**), fastest first; "
               "**x fastest** is that time over the fastest system's. **GET parent first** is the read "
               "right after the writes, **steady** the median of the reads that follow. Details, the "
               "other figures and how they were obtained follow below.\n")
    out.append(fmt.list_table(table, "Ranking, fastest first", stub_columns=1))
    present = dict.fromkeys(e.get("durability") for e in data.systems if e.get("durability"))
    out.append("**Durability**: " + "; ".join(f"{fmt.literal(d)}: {fmt.escape(DURABILITY.get(d, d))}" for d in present)
               + ". Compare like with like: a durable system pays for an fsync that the others skip.\n")
    for chart, path, caption in charts:
        if getattr(chart, "name", None) == "headline":
            out.append(fmt.figure(path, chart.title, caption))
    return "\n".join(out)
