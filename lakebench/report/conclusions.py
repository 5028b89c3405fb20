"""Conclusions and caveats, stated only from the numbers of the results.

Every sentence names the figure it rests on.  Differences are qualified by
the spread the results measured (``std`` over repeated runs), or, for a
single run, flagged when too small to trust on a shared machine.
"""
from __future__ import annotations

from collections import Counter

from lakebench import results
from lakebench import figures
from lakebench.report import fmt
from lakebench.report.data import ReportData, number, std_of
from lakebench.results import get_path
from lakebench.results.scaling import label as sweep_label, users, users_sweeps, users_text

#: A single run's difference smaller than this is not called a difference.
SINGLE_RUN_NOISE = 0.10
#: Growth ratios within this of 1 count as flat.
FLAT = 0.10


def _compared(data: ReportData) -> list[dict]:
    """The successful entries compared with each other: with a sweep, one case, the
    largest size at the data set's own literal length, and of a users sweep each
    system's case of highest throughput."""
    ok = _one_size(data)
    swept = {id(e): sweep.best for sweep in users_sweeps(ok) for e in sweep.entries}
    return [e for e in ok if swept.get(id(e), e) is e]


def _users_compared(data: ReportData) -> str | None:
    """Which case of each system's users sweep the conclusions compare (its highest throughput)."""
    sweeps = users_sweeps(_one_size(data))
    if not sweeps:
        return None
    cases = "; ".join(f"{fmt.escape(sweep_label(sweep))} at {users_text(users(sweep.best))}" for sweep in sweeps)
    return (f"**Users sweep**: each system is compared below at its highest {figures.THROUGHPUT.name} "
            f"({cases}); the summary names where adding users stopped adding it ({figures.KNEE.name}).")


def _at_own_length(data: ReportData) -> list[dict]:
    """The successful entries at the data set's own literal length (a payload sweep is another axis)."""
    ok = data.ok
    if len({e.get("literal_length") for e in ok}) < 2:
        return ok
    length = get_path(data.document, "workload.literal_length")
    return [e for e in ok if e.get("literal_length") == length]


def _one_size(data: ReportData) -> list[dict]:
    """The successful entries compared: of a sweep of sizes, those of one size (:func:`_compared_size`) at
    the data set's own literal length; those that finished, when more than one did (a case whose budget
    ran out stopped at a size of its own)."""
    ok = _at_own_length(data)
    if len({results.case_children(e) for e in ok}) > 1:
        size = _compared_size(ok)
        ok = [e for e in ok if results.case_children(e) == size]
    finished = [e for e in ok if not e.get("budget_exhausted")]
    return finished if len(finished) > 1 else ok  # those that stopped short: in the budget's line


def _compared_size(ok: list[dict]) -> int:
    """The size at which a sweep's systems are compared: the largest that more than one system
    finished (a case whose budget ran out stopped at a size of its own, and its running time,
    memory and disk are of another container); the largest measured when none is shared."""
    finished = Counter(results.case_children(e) for e in ok if not e.get("budget_exhausted"))
    shared = [n for n, systems in finished.items() if n is not None and systems > 1]
    return max(shared) if shared else max(n for n in (results.case_children(e) for e in ok) if n is not None)


def _size_compared(data: ReportData) -> str | None:
    """Which size of a sweep of sizes the lines below compare, when it is not the largest."""
    ok = _at_own_length(data)
    sizes = {results.case_children(e) for e in ok} - {None}
    if len(sizes) < 2:
        return None
    size = _compared_size(ok)
    if size == max(sizes):
        return None
    if data.budget_seconds is None:
        return (f"**Compared at {size:,} children**: the largest size that more than one system measured; "
                "each system's scaling is in its own line, below.")
    return (f"**Compared at {size:,} children**: the largest size that more than one system finished within "
            "the budget, among the systems that finished it; a system that stopped short of a size is in the "
            "line on the budget, and each system's scaling in its own line, below.")


def _same_size(entries: list[dict]) -> bool:
    return len({e.get("children") for e in entries}) == 1


def _label(data: ReportData, entry: dict) -> str:
    """The entry's label as page text: the name comes from the results file, escaped."""
    return fmt.escape(data.label(entry))


def _sweep(data: ReportData) -> list[str]:
    lines = []
    for name, entries in data.sweep().items():
        small, large = entries[0], entries[-1]
        grew = large["children"] / small["children"]
        parts = []
        for path, what in ((figures.PARENT_STEADY.path, figures.PARENT_STEADY.name),
                           (figures.TIME_PER_CHILD.path, figures.TIME_PER_CHILD.name)):
            a, b = _value(small, path), _value(large, path)
            if a and b:
                parts.append(f"{what} {b / a:.2f}x")
        if parts:
            lines.append(f"**Scaling, {fmt.escape(name)}**: from {small['children']:,} to "
                         f"{large['children']:,} children ({grew:.1f}x), {', '.join(parts)}.")
    return lines


def _value(entry: dict, path: str) -> float | None:
    return number(get_path(entry, path))


def _noise(a: dict, b: dict, path: str, repeat: int) -> str:
    """A note when b's value differs from a's by no more than the measured noise."""
    va, vb = _value(a, path), _value(b, path)
    if va is None or vb is None or va == 0:
        return ""
    if repeat > 1:
        sa, sb = std_of(a, path), std_of(b, path)
        if sa is not None and sb is not None and abs(vb - va) <= sa + sb:
            return ", within the run-to-run spread"
        return ""
    if abs(vb / va - 1) < SINGLE_RUN_NOISE:
        return f", a difference under {SINGLE_RUN_NOISE:.0%} that one run cannot settle"
    return ""


def _ranked(data: ReportData, path: str, fmt_value, what: str, lead: str, times: str = "as long") -> str | None:
    """'<lead>: A <what>: value; B value, 1.23x <times> ...', lowest first."""
    entries = sorted((e for e in _compared(data) if _value(e, path) is not None), key=lambda e: _value(e, path))
    if not entries:
        return None
    best = entries[0]
    if len(entries) == 1:  # nothing to rank it against: no "fastest"
        return f"**{lead}**: {_label(data, best)}: {fmt_value(best)}."
    text = f"**{lead}**: {_label(data, best)} {what}: {fmt_value(best)}"
    others = []
    for e in entries[1:]:
        factor = _value(e, path) / _value(best, path) if _value(best, path) else None
        factor_text = f", {figures.ratio(factor)} {times}" if factor is not None else ""
        others.append(f"{_label(data, e)} {fmt_value(e)}{factor_text}{_noise(best, e, path, data.repeat)}")
    if others:
        text += "; " + "; ".join(others)
    return text + "."


def conclusions(data: ReportData) -> list[str]:
    """Bullet points (reStructuredText inline markup) drawn from the results."""
    ok = _compared(data)
    out: list[str] = []
    if not ok:
        out.append("No system completed its runs, so there is nothing to compare.")
    else:
        children = ok[0].get("children") or data.children
        of = f" {children:,} children" if children and _same_size(ok) else " its children"
        out.append(_size_compared(data))
        out.append(_users_compared(data))
        out.append(_ranked(
            data, "ingest_seconds",
            lambda e: f"{fmt.seconds(e['ingest_seconds'])} "
                      f"({figures.TIME_PER_CHILD.name} {fmt.millis(get_path(e, 'per_resource_ms.mean'))}, "
                      f"{figures.TIME_PER_CHILD_P95.name} {fmt.millis(get_path(e, 'per_resource_ms.p95'))})",
            f"created{of} fastest", "Ingest"))
        out.extend(_growth(data))
        out.extend(_outliers(data))
        contained = {get_path(e, "parent.containment_triples") for e in ok} - {None}
        triples = f" with its {next(iter(contained)):,} containment triples" if len(contained) == 1 else ""
        out.append(_ranked(
            data, "parent.seconds",
            lambda e: fmt.seconds(get_path(e, "parent.seconds")),
            f"retrieved the parent{triples} fastest ({figures.PARENT_STEADY.name})", "Parent retrieval"))
        out.append(_ranked(
            data, "peak_rss_bytes",
            lambda e: f"{fmt.size(e.get('peak_rss_bytes'))}"
                      + (f" (private {fmt.size(e['peak_rss_anon_bytes'])})"
                         if number(e.get("peak_rss_anon_bytes")) is not None else ""),
            "peaked lowest in resident memory", "Memory", "as much"))
        out.append(_ranked(
            data, "cpu_seconds", lambda e: fmt.seconds(e.get("cpu_seconds")),
            "used the least CPU time", "CPU", "as much"))
        out.append(_disk(data))
        out.append(_triples(data))
        out.extend(_sweep(data))
    out.extend(_budget(data))
    for e in data.failed:
        runs = f" ({e.get('successful_runs', 0)} of {e.get('repeat', '?')} runs succeeded)"\
            if e.get("successful_runs") else ""
        out.append(f"**{_label(data, e)} failed**{runs}: {fmt.literal(e.get('error') or 'unknown error')}; "
                   "it is left out of every comparison.")
    return [line for line in out if line]


def _budget(data: ReportData) -> list[str]:
    """Which systems ran out of the budget, where: the size a system can reach in that time."""
    budget = data.budget_seconds
    if budget is None:
        return []
    stopped = [f"{_label(data, e)} stopped at {e['children']:,} children" for e in data.ok if e.get("budget_exhausted")]
    if not stopped:
        return [f"**Budget**: every system finished every case within {fmt.seconds(budget)} of ingest."]
    text = f"**Budget** ({fmt.seconds(budget)} of ingest per system and case): {'; '.join(stopped)}"
    after_budget = [e for e in data.skipped if (e.get("skip_reason") or "").startswith(results.BUDGET_RAN_OUT)]
    if after_budget:
        cases = len(after_budget)
        text += f"; {cases} larger {'case was' if cases == 1 else 'cases were'} not run after that"
    return [text + ". The figures of a case that stopped are of the size it reached, not the size asked for."]


def _growth(data: ReportData) -> list[str]:
    """One line per system: growth of the time per child, judged by the results' growth figure.

    That figure is the mean's (:data:`lakebench.figures.GROWTH`, ``growth.ratio``: the mean time per
    child of the last 10% over that of the first 10%), so every word of the judgment (flat, grew,
    fell, costs more as children accumulate) is the mean's.  The medians of the same tenths
    (:func:`lakebench.results.stats.median_growth`) are given beside it and only say, when the mean
    grew, whether the typical child grew with it: a line never says the time stayed flat, or fell,
    and then that each child costs more.
    """
    lines = []
    for e in _compared(data):
        r = _value(e, "growth.ratio")
        if r is None:
            continue
        first, last = _value(e, "growth.first_10pct_ms"), _value(e, "growth.last_10pct_ms")
        spread = std_of(e, "growth.ratio")
        if abs(r - 1) <= FLAT:
            verb = f"stayed flat ({fmt.ratio(r, spread)})"
        elif r > 1:
            verb = f"grew {fmt.ratio(r, spread)}"
        else:
            verb = f"fell to {fmt.ratio(r, spread)}"
        text = (f"**Growth, {_label(data, e)}**: its per-child time {verb} from the first to the last 10% "
                f"of children ({fmt.millis(first)} → {fmt.millis(last)} on average")
        typical = data.median_growth(e)
        if typical:
            a, b, m = typical
            text += f"; median {fmt.ratio(m)}, {fmt.millis(a)} → {fmt.millis(b)})"
            if r > 1 + FLAT:  # the mean grew: did the typical child?
                text += (": each child costs more as children accumulate" if m > 1 + FLAT
                         else ": the mean grew through a few long pauses, the typical child did not")
        else:
            text += ")"
        lines.append(text + ".")
    return lines


def _outliers(data: ReportData) -> list[str]:
    lines = []
    for e in _compared(data):
        worst, p95 = _value(e, "per_resource_ms.max"), _value(e, "per_resource_ms.p95")
        if worst and p95 and worst > 10 * p95:
            lines.append(f"{_label(data, e)}'s slowest child took {fmt.millis(worst)} against a p95 of "
                         f"{fmt.millis(p95)}")
    if not lines:
        return []
    return ["**Pauses**: " + "; ".join(lines) + ": isolated stalls (collection, flush or "
            "compaction), not a steady cost."]


def _disk(data: ReportData) -> str | None:
    on_disk = [e for e in _compared(data) if _value(e, "disk_bytes")]
    none = [fmt.escape(e["name"]) for e in _compared(data) if not _value(e, "disk_bytes")]
    if not on_disk:
        return None

    def described(e):
        triples = _value(e, "triples_total")
        return fmt.size(e["disk_bytes"]) + (f", {e['disk_bytes'] / triples:,.0f} bytes per triple" if triples else "")

    if len(on_disk) > 1:
        text = _ranked(data, "disk_bytes", described, "is the smallest on disk", "Disk", "as large")
    else:
        text = f"**Disk**: only {fmt.escape(on_disk[0]['name'])} stores on disk: {described(on_disk[0])}."
    if none:
        text = text[:-1] + f" ({', '.join(none)} {'keeps' if len(none) == 1 else 'keep'} nothing on disk)."
    for e in on_disk:
        loaded = _disk_after_ingest(data, e)
        if loaded and e["disk_bytes"] > 1.2 * loaded:
            text += (f" {fmt.escape(e['name'])}'s data directory held {fmt.size(loaded)} at the end of the ingest and "
                     f"{fmt.size(e['disk_bytes'])} once closed ({e['disk_bytes'] / loaded:.2f}x): it kept "
                     "writing after the load (flush, compaction).")
    return text


def _disk_after_ingest(data: ReportData, entry: dict) -> float | None:
    """Disk bytes of the last sample taken during the ingest, first run."""
    runs = data.sample_runs(entry)
    if not runs:
        return None
    during = [number(s.get("disk_bytes")) for s in runs[0] if s.get("phase") == "ingest"]
    during = [d for d in during if d]
    return during[-1] if during else None


def _triples(data: ReportData) -> str | None:
    compared = _compared(data)
    if not _same_size(compared):
        return None  # stopped at different sizes: their counts differ by that
    totals = {e["name"]: e.get("triples_total") for e in compared if e.get("triples_total") is not None}
    if len(set(totals.values())) > 1:
        listed = ", ".join(f"{fmt.escape(name)} {count:,}" for name, count in totals.items())
        return (f"**Check**: the systems hold different numbers of triples at the end ({listed}): "
                "they do not store the same thing, which colours every comparison above.")
    return None


def caveats(data: ReportData) -> list[str]:
    env = data.document.get("environment") or {}
    settings = data.document.get("settings") or {}
    out = []
    cores = env.get("cores_logical")
    load = env.get("load_average")
    machine = f"One machine with {cores} logical cores" if cores else "One machine"
    text = (f"{machine} ran every system, the monitor and whatever else was running; the figures "
            "are this machine's, not the systems' in general.")
    if load and cores:
        text += f" Load average at the end: {', '.join(f'{x:.2f}' for x in load)} (1, 5, 15 min)"
        text += (", above the core count: more work was ready to run than there were cores, so "
                 "expect noise."
                 if load[0] > cores else ".")
    out.append(text)
    if settings.get("cache") == "warm":
        out.append("Warm cache: nothing was dropped between or during runs, so on-disk systems read "
                   "from the operating system's page cache and disk speed barely enters these numbers.")
    repeat = data.repeat
    if repeat > 1:
        out.append(f"Figures are means ± sample standard deviation over {repeat} interleaved runs "
                   "per system (A B A B ...), so slow drift of the machine spreads over every system.")
    else:
        out.append("A single run per system: no run-to-run spread was measured. Repeat "
                   "(``--repeat 3``) before trusting differences of a few percent.")
    durabilities = {e["name"]: e.get("durability") for e in data.systems if e.get("durability")}
    if len(set(durabilities.values())) > 1:
        listed = fmt.escape(", ".join(f"{n} {d}" for n, d in durabilities.items()))
        out.append(f"Durability differs ({listed}): ``volatile`` keeps nothing after exit, "
                   "``nosync`` hands commits to the operating system without fsync, ``durable`` "
                   "fsyncs. Stronger guarantees cost time.")
    transports = {e["name"]: e.get("transport") for e in data.systems if e.get("transport")}
    if len(set(transports.values())) > 1:
        listed = fmt.escape(", ".join(f"{n} {t}" for n, t in transports.items()))
        out.append(f"Transport differs ({listed}): in-process systems pay no HTTP or "
                   "serialization cost.")
    children = max((e.get("children") or 0 for e in _compared(data)), default=0) or data.children
    if children and children < 10_000 and data.workload == "flat":
        out.append(f"Growth is measured over {children:,} children; the classic Fedora/LAKEsuperior "
                   "report used 10,000, and a trend may bend beyond the range measured.")
    return out
