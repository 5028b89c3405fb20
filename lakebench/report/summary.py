"""The first screen of every report page: the answer, before how it was obtained.

``Summary`` (anchor ``#summary``): the systems ranked, case by case (a
swept size or variant: one table each), by the workload's headline figure
(the mean time of one operation of its primary kind: for ``flat``, the time
per child (mean)), each with its multiple of the fastest, its durability
class, GET parent first (right after the writes) and steady, and a one-line
verdict; then the headline chart, which ranks by the same figure.
Everything about how the figures were obtained is the page's ``How it was
measured`` section (``#how-it-was-measured``), further down.
"""
from __future__ import annotations

from pathlib import Path

from lakebench import figures, results
from lakebench.compare import primary_kind
from lakebench.durability import MEANING
from lakebench.report import fmt, scaling
from lakebench.report.data import ReportData, number
from lakebench.results import get_path


def _cases(data: ReportData) -> dict[str, list[dict]]:
    """Entries by case (children asked for, literal length, swept variant), in the order measured, each
    named for what tells it from the others ("" for a single case).  An entry that records no case (a
    failure before any figure) goes with the first."""
    cases: dict[tuple, list[dict]] = {}
    unknown = []
    for e in data.systems:
        if results.case_children(e) is None:
            unknown.append(e)
        else:
            cases.setdefault(results.case_of(e), []).append(e)
    if not cases:
        return {"": unknown}
    cases[next(iter(cases))] += unknown

    def name(key: tuple) -> str:
        parts = []
        if len({k[0] for k in cases}) > 1:
            parts.append(f"{key[0]:,} children")
        if len({k[1] for k in cases}) > 1:
            parts.append(f"{key[1]:,}-char literals")
        if len({k[2] for k in cases}) > 1:
            parts.append(key[2])
        return ", ".join(parts)

    return {name(key): entries for key, entries in cases.items()}


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
    if load:  # a load test: its throughput and its refusals before anything
        words.append(f"{load.get('users', '?')} users, {figures.THROUGHPUT.name} "
                     f"{fmt.nobreak(figures.rate(number(load.get('throughput_per_s'))))}, "
                     f"{load.get('failures', 0):,} failed")
    if mean is not None and fastest:  # None: alone in its case, nothing to rank it against
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


def rows(data: ReportData, case: list[dict]) -> list[list[str]]:
    """The ranked table of one case, header first: one row per system.  A system alone in its case
    ranks against nothing: no multiple, no "fastest"."""
    ok = sorted(_measured(case), key=lambda e: e["per_resource_ms"]["mean"])
    reference = _reference_in(data, ok)
    header = ["system", "durability", figures.time_per(_primary(data))]
    if reference is not None:  # the question the user asked comes before the ranking's
        header.append(f"vs {fmt.escape(reference['name'])}")
    header += ["x fastest", figures.PARENT_FIRST.name, figures.PARENT_STEADY.name, "verdict"]
    out = [header]
    fastest = ok[0]["per_resource_ms"]["mean"] if len(ok) > 1 else None
    for e in ok:  # the order is the rank
        mean = e["per_resource_ms"]["mean"]
        row = [fmt.escape(data.label(e)), fmt.escape(e.get("durability") or fmt.DASH),
               fmt.nobreak(fmt.millis(mean, (e.get("std") or {}).get("per_resource_ms.mean")))]
        if reference is not None:
            row.append("reference" if e is reference
                       else fmt.nobreak(figures.against(mean, reference["per_resource_ms"]["mean"])))
        row += [figures.multiple(mean / fastest) if fastest else fmt.DASH,
                fmt.nobreak(fmt.seconds(number(get_path(e, "parent.first_seconds")))),
                fmt.nobreak(fmt.seconds(number(get_path(e, "parent.seconds")))),
                verdict(e, fastest)]
        out.append(row)
    for e in case:
        if e not in ok:
            out.append([fmt.escape(data.label(e)), fmt.escape(e.get("durability") or fmt.DASH)]
                       + [fmt.DASH] * (len(header) - 3) + [verdict(e, fastest)])
    return out


def _measured(case: list[dict]) -> list[dict]:
    """The entries of a case that ran and have the headline figure to rank by."""
    return [e for e in case if e.get("status") == "ok" and number(get_path(e, "per_resource_ms.mean")) is not None]


def _reference_in(data: ReportData, entries: list[dict]) -> dict | None:
    """The entry of the reference (``--reference``) among a case's measured ones, or None."""
    name = data.document.get("reference")
    return next((e for e in entries if e["name"] == name), None) if name else None


def against_reference(data: ReportData, cases: dict[str, list[dict]]) -> str:
    """The answer to the question ``--reference`` asks, first: each system's time and parent read
    against the reference's, case by case; "" when no reference was named."""
    name = data.document.get("reference")
    if not name:
        return ""
    time_name = figures.time_per(_primary(data))
    lines = []
    for key, case in cases.items():
        ok = _measured(case)
        reference = _reference_in(data, ok)
        where = f" ({fmt.escape(key)})" if key and len(cases) > 1 else ""
        if reference is None:
            lines.append(f"- {fmt.escape(name)}{where}: no figures to compare with (not measured, or failed)")
            continue
        ref_mean, ref_parent = reference["per_resource_ms"]["mean"], number(get_path(reference, "parent.seconds"))
        for e in ok:
            if e is reference:
                continue
            mean, parent = e["per_resource_ms"]["mean"], number(get_path(e, "parent.seconds"))
            lines.append(
                # the case is said once: after the system's name, not in it as well
                f"- **{fmt.escape(e['name'] if where else data.label(e))}**{where}, "
                f"{fmt.escape(e.get('durability') or 'durability unknown')}: "
                f"{fmt.nobreak(figures.against(mean, ref_mean))} per {fmt.escape(time_name.removeprefix('time per ').split(' (')[0])} "
                f"({fmt.nobreak(fmt.millis(mean))} against {fmt.nobreak(fmt.millis(ref_mean))}); "
                f"{figures.PARENT_STEADY.name} {fmt.nobreak(figures.against(parent, ref_parent))} "
                f"({fmt.nobreak(fmt.seconds(parent))} against {fmt.nobreak(fmt.seconds(ref_parent))})")
    if not lines:
        return ""
    return (f"**Against the reference, {fmt.escape(name)}** ({fmt.escape(time_name)}, and "
            f"{figures.PARENT_STEADY.name}; lower is better. The reference is the system ``--reference`` "
            "names; by default fcrepo when it is measured, else the first system listed):\n\n"
            + "\n".join(lines) + "\n")


def _primary(data: ReportData) -> str | None:
    """The workload's primary operation kind, as its entries record it."""
    return next((primary_kind(e) for e in data.ok if primary_kind(e)), None)


def section(data: ReportData, charts: list[tuple[object, Path, str]]) -> str:
    """The ``Summary`` section: a ranked table per case, the figures' definitions, the durability classes
    present, the headline chart."""
    entries = _cases(data)
    cases = {key: rows(data, case) for key, case in entries.items()}
    out = [fmt.heading("Summary", "-")]
    if all(len(table) == 1 for table in cases.values()):
        out.append("No system was measured.\n")
        return "\n".join(out)
    # A users sweep answers first: each system's highest throughput and knee, before the
    # comparison of every case with the reference's.
    out.append(scaling.summary(data))
    framed = against_reference(data, entries)
    if framed:
        out.append(framed)
    name = figures.time_per(_primary(data))
    out.append(f"Ranked by **{fmt.escape(name)}**, fastest first"
               + (", case by case" if len(cases) > 1 else "") + f"; **x fastest** is that time over the "
               "fastest system's of the case (none for a system alone in it). "
               + figures.parent_note(data.retrievals, lambda term: f"**{term}**")
               + " Details, the other figures and how they were obtained follow below.\n")
    for key, table in cases.items():
        if len(table) > 1:
            title = "Ranking, fastest first" + (f": {key}" if len(cases) > 1 and key else "")
            out.append(fmt.list_table(table, fmt.escape(title), stub_columns=1))
    present = dict.fromkeys(e.get("durability") for e in data.systems if e.get("durability"))
    out.append("**Durability**: " + "; ".join(f"{fmt.literal(d)}: {fmt.escape(MEANING.get(d, d))}" for d in present)
               + ". Compare like with like: a durable system pays for an fsync that the others skip.\n")
    for chart, path, caption in charts:
        if getattr(chart, "name", None) == "headline":
            out.append(fmt.figure(path, chart.title, caption))
    return "\n".join(out)
