"""A users sweep in the report: what the summary says of it, and the table of its cases.

:func:`summary` names, per system, the highest throughput it reached, its
knee (the users after which no step to the next count adds 10% throughput per doubling:
:func:`lakebench.results.stats.knee`) and its latency there, and any case whose
load generator was saturated; :func:`section` tabulates every Locust case
(throughput, latency percentiles, errors, the CPU of the system and of the
generator).  Both read :mod:`lakebench.results.scaling`, as the terminal table does.
"""
from __future__ import annotations

from lakebench import figures, table
from lakebench.report import fmt
from lakebench.report.data import ReportData, number
from lakebench.results import get_path
from lakebench.results.scaling import knee_words, label, other_variant, users, users_sweeps, users_text


def summary(data: ReportData) -> str:
    """The summary's paragraph on the users sweep; "" when the run has none."""
    sweeps = users_sweeps(data.systems)
    if not sweeps:
        return ""
    lines = []
    for sweep in sweeps:
        best = sweep.best
        line = (f"- **{fmt.escape(label(sweep))}**: highest {figures.THROUGHPUT.name} "
                f"{fmt.nobreak(figures.rate(best['load']['throughput_per_s']))} at {users_text(users(best))}; ")
        line += knee_words(sweep, lambda ms: fmt.nobreak(fmt.millis(number(ms))), lambda text: f"**{text}**")
        saturated = [users(e) for e in sweep.entries if get_path(e, "load.generator_saturated")]
        if saturated:
            line += (f"; **the load generator was saturated** at {', '.join(map(str, saturated))} users: the line "
                     "flattens there because of the generator, not of the system")
        lines.append(line)
    return (f"**Users sweep**: each system's **{figures.THROUGHPUT.name}** as its Locust users grow "
            f"(Throughput against users, below). The **{figures.KNEE.name}**: {figures.KNEE.means}.\n\n"
            + "\n".join(lines) + "\n")


def rows(data: ReportData) -> list[list[str]]:
    """One row per Locust case, header first: users, shape, throughput, latency, errors, CPU."""
    shapes = any(get_path(e, "load.parents") for e in data.ok)
    out = [["system", "users", *(["parents"] if shapes else []), "requests", figures.THROUGHPUT.name, "p50",
            "p95", "p99", "max", "failures", "system CPU", figures.GENERATOR_CPU.name]]
    knees = {id(s.knee_entry) for s in users_sweeps(data.systems) if s.knee_entry is not None}
    for e in data.ok:
        load = e.get("load")
        if not load:
            continue
        latency = load.get("latency_ms") or {}
        failures = load.get("failures") or 0
        kinds = ", ".join(f"{kind} ({n:,})" for kind, n in (load.get("failure_kinds") or {}).items())
        generator = table.share(number(load.get("generator_cpu_share")))
        if load.get("generator_saturated"):
            generator = f"**{generator}, saturated**"
        out.append([
            fmt.escape(_label_without_users(data, e)) + (f" ({figures.KNEE.name})" if id(e) in knees else ""),
            fmt.count(users(e)),
            *([fmt.escape(load.get("parents") or fmt.DASH)] if shapes else []),
            fmt.count(load.get("requests")),
            fmt.nobreak(figures.rate(number(load.get("throughput_per_s")))),
            *(fmt.nobreak(fmt.millis(number(latency.get(q)))) for q in ("p50", "p95", "p99", "max")),
            (f"**{failures:,}**: {fmt.escape(kinds)}" if failures else "0"),
            fmt.nobreak(fmt.seconds(number(load.get("system_cpu_seconds")))),
            generator,
        ])
    return out


def _label_without_users(data: ReportData, entry: dict) -> str:
    """The system's label without its users, which the table's own column gives (a narrower table).

    >>> class D:
    ...     def label(self, e): return "a (users=8)"
    >>> _label_without_users(D(), {"name": "a", "variant": "users=8"})
    'a'
    """
    label, variant = data.label(entry), entry.get("variant", "")
    if variant and not other_variant(variant) and label.endswith(f" ({variant})"):
        return label[:-len(variant) - 3]
    return label


def section(data: ReportData) -> str:
    """``Load test``: every Locust case in a row; "" for lakebench's own client."""
    table_rows = rows(data)
    if len(table_rows) == 1:
        return ""
    per_user = any(get_path(e, "load.parents") == "per-user" for e in data.ok)
    saturated = [e for e in data.ok if get_path(e, "load.generator_saturated")]
    out = [fmt.heading("Load test", "-"),
           "Locust's users sent the workload's requests concurrently (flat: the PUTs of the children; mixed: "
           f"its tasks). **{figures.THROUGHPUT.name}**: {figures.THROUGHPUT.means}; **p50**, **p95**, **p99**, "
           "**max**: the percentiles and the longest of the answered requests' response times; **failures**: "
           "requests the server refused or never answered, by kind (counted, not timed: a refused child is "
           "missing from what is held); **system CPU**: the CPU time the system's processes spent meanwhile; "
           f"**{figures.GENERATOR_CPU.name}**: {figures.GENERATOR_CPU.means}."
           + (" **parents**: ``shared``, every user PUTs into the one parent (the seed's shape: contention on "
              "one container), or ``per-user``, each user into a parent of its own; with per-user parents "
              "the parent read at the end (Parent retrieval) is the first user's, and what is held is counted "
              "in all of them." if per_user else "")
           + " The running time of such an ingest is its wall time, not a sum of overlapping requests.\n",
           fmt.list_table(table_rows, "Load test")]
    if saturated:
        out.append(".. admonition:: The load generator was the bottleneck\n   :class: warning\n")
        out.extend(f"   - {fmt.escape(data.label(e))}: {fmt.escape(table.saturation_note(e['load']) or '')}"
                   for e in saturated)
        out.append("")
    return "\n".join(out)
