""""The seed report, reproduced": the 2018 Fedora/LAKEsuperior figures beside today's run.

The seed report is LAKEsuperior's 2018 performance benchmark report: 10,000
children of 200 triples PUT under one parent, on a laptop, FCREPO/ModeShape
4.7.5 against LAKEsuperior alpha 6 on LMDB.  Its figures are quoted here as
published (:data:`SEED`); today's come from the results, for the runs of
``fcrepo``, ``lakesuperior`` and lakebench's own store, and the ratio that
matters, LAKEsuperior over FCREPO, is computed for both.  The section is
shown only when a run holds both ``fcrepo`` and ``lakesuperior``.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass

from lakebench import figures
from lakebench.systems import lakesuperior
from lakebench.systems.fcrepo.install import DEFAULT_VERSION as FCREPO_DEFAULT_VERSION
from lakebench.report import fmt
from lakebench.report.data import ReportData, number
from lakebench.results import get_path

#: lakebench's own store, in the order the section prefers it: over HTTP
#: first (it pays what the two servers pay), durable first.
STORES = ("lmdb-http", "lmdb-http-nosync", "lmdb", "lmdb-nosync")


@dataclass(frozen=True)
class SeedFigure:
    """One line of the seed report's results: FCREPO, LAKEsuperior, as published."""

    label: str  # today's figure's name (lakebench.figures.VOCABULARY)
    path: str  # where today's figure is in a results entry
    unit: str  # "seconds", "ms" or "bytes": how the path's values read
    fcrepo: float | None
    lakesuperior: float | None
    fcrepo_text: str  # as the seed printed it
    lakesuperior_text: str
    stated: str = ""  # the seed's own percentage, when it printed one


#: The laptop results of the seed report ("Rather Snappy" laptop), as printed.
SEED = (
    SeedFigure(figures.RUNNING_TIME.name, "ingest_seconds", "seconds", 400.0, 804.0, "6'40\"", "13'24\""),
    SeedFigure(figures.TIME_PER_CHILD.name, "per_resource_ms.mean", "ms", 40.0, 80.0, '0.040"', '0.080"', "200%"),
    SeedFigure(figures.PARENT_STEADY.name, "parent.seconds", "seconds", 6.22, 2.214, '6.22"', '2.214"', "35%"),
    SeedFigure(figures.PEAK_RSS.name, "peak_rss_bytes", "bytes", 2.47e9, 650e6, "2.47 Gb", "~650 Mb"),
    SeedFigure(figures.DATABASE_SIZE.name, "disk_bytes", "bytes", 3.7e9, 523e6, "3.7 Gb", "523 Mb", "16%"),
    SeedFigure(figures.TRIPLES.name, "triples_total", "count", 3.4e6, None, "3.4M", "–"),
)

SEED_CHILDREN = 10_000
SEED_SETUP = (
    "a Dell Latitude 7490 laptop, 8 x Intel Core i7-8650U at 1.90 GHz, 16 GB of memory, an SSD; "
    "Arch Linux, glibc 2.26, Python 3.7.0, LMDB 0.9.22; LAKEsuperior's own benchmark script with its "
    "defaults: 10,000 children PUT one by one under the same parent, each a fresh random graph of 200 "
    "triples (50 with an external IRI as object, 50 with a repository IRI, 100 with a random "
    "64-character Unicode literal), only the time spent sending requests counted; the parent "
    "(~10,000 triples) retrieved and piped to /dev/null")


def applies(data: ReportData) -> bool:
    """Whether the section is shown: the run holds both ``fcrepo`` and ``lakesuperior``."""
    names = {e["name"] for e in data.systems}
    return {"fcrepo", "lakesuperior"} <= names


def _pick(data: ReportData, name: str) -> dict | None:
    """The successful entry of ``name`` to set beside the seed: 10,000 children if measured,
    else the largest size, at the seed's 64-character literals when measured."""
    entries = [e for e in data.ok if e["name"] == name]
    at_64 = [e for e in entries if e.get("literal_length", 64) == 64]
    entries = at_64 or entries
    if not entries:
        return None
    exact = [e for e in entries if e.get("children") == SEED_CHILDREN]
    return exact[0] if exact else max(entries, key=lambda e: e.get("children") or 0)


def _today(entry: dict | None, figure: SeedFigure) -> float | None:
    if entry is None:
        return None
    return number(get_path(entry, figure.path))


def _show(value: float | None, unit: str) -> str:
    if value is None:
        return fmt.DASH
    if unit == "seconds":
        return fmt.seconds(value)
    if unit == "ms":
        return fmt.millis(value)
    if unit == "bytes":
        return fmt.size(value)
    return fmt.count(int(value))


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def rows(data: ReportData) -> list[list[str]]:
    """The table of the two servers: each seed figure, then and now, with LAKEsuperior / FCREPO for both."""
    fc, ls = _pick(data, "fcrepo"), _pick(data, "lakesuperior")
    out = [["figure", "FCREPO 4.7.5 (2018)", "LAKEsuperior alpha 6 (2018)", "LAKEsuperior / FCREPO (2018)",
            f"fcrepo ({_children(fc)})", f"lakesuperior ({_children(ls)})", "lakesuperior / fcrepo (today)"]]
    for f in SEED:
        then = _ratio(f.lakesuperior, f.fcrepo)
        then_text = fmt.ratio(then) if then is not None else fmt.DASH
        if f.stated:
            then_text += f" (printed: {f.stated})"
        now_fc, now_ls = _today(fc, f), _today(ls, f)
        row = [f.label, f.fcrepo_text, f.lakesuperior_text, then_text,
               _show(now_fc, f.unit), _show(now_ls, f.unit), fmt.ratio(_ratio(now_ls, now_fc))]
        out.append([fmt.nobreak(cell) if i else cell for i, cell in enumerate(row)])
    return out


def store_rows(data: ReportData) -> list[list[str]] | None:
    """The table of lakebench's own store beside today's fcrepo (a table of its own: beside the two
    servers' then and now, nine columns were wider than a laptop's column); None without the store."""
    fc = _pick(data, "fcrepo")
    store = next((e for e in (_pick(data, n) for n in STORES) if e is not None), None)
    if store is None:
        return None
    name = fmt.escape(store["name"])
    out = [["figure", f"fcrepo ({_children(fc)})", f"{name} ({_children(store)})", f"{name} / fcrepo"]]
    for f in SEED:
        now_fc, now_store = _today(fc, f), _today(store, f)
        row = [f.label, _show(now_fc, f.unit), _show(now_store, f.unit), fmt.ratio(_ratio(now_store, now_fc))]
        out.append([fmt.nobreak(cell) if i else cell for i, cell in enumerate(row)])
    return out


def _children(entry: dict | None) -> str:
    if entry is None:
        return "failed"
    return f"today, {entry.get('children') or 0:,} children"


def differences(data: ReportData) -> list[str]:
    """What differs from the seed's set-up, said plainly, from the results where they record it."""
    env = data.document.get("environment") or {}
    options = _run_options(data.document.get("command") or "")
    fc, ls = _pick(data, "fcrepo"), _pick(data, "lakesuperior")
    out = []
    cores = env.get("cores_logical")
    machine = fmt.escape(env.get("cpu_model") or "an unrecorded CPU")
    memory = fmt.size(env.get("memory_bytes"))
    disk = fmt.disk(env.get("disk"))
    out.append(f"**Hardware**: today {machine}, {cores or '?'} logical cores shared by both servers, "
               f"the client and the monitor, {memory} of memory, "
               f"{'a disk: ' + disk if disk else 'a disk of unrecorded kind'}; the seed ran on "
               "a laptop with 8 logical cores, 16 GB and an SSD.")
    children = {e.get("children") for e in (fc, ls) if e is not None}
    if children and children != {SEED_CHILDREN}:
        sizes = ", ".join(f"{n:,}" for n in sorted(c for c in children if c))
        out.append(f"**Size**: today {sizes} children, the seed 10,000. The time per child and the parent's "
                   "retrieval grow with the number of children, so the absolute figures of a smaller run "
                   "are not the seed's; the ratios between the two servers are what compares.")
    workers = lakesuperior.DEFAULT_WORKERS
    out.append(f"**Workers**: LAKEsuperior ran with {workers} gunicorn sync worker"
               f"{'s' if workers != 1 else ''} (lakebench's default); the seed's memory figure was for "
               "4 (\"3 idle workers, 1 active\"), so its peak memory is not comparable one to one.")
    # The versions, the heap and the Python come from the results file (its recorded command): escaped.
    fcrepo_version = fmt.escape(options.get("fcrepo_version") or FCREPO_DEFAULT_VERSION)
    python = fmt.escape(env.get("python") or "?")
    java = env.get("java")
    out.append(f"**Versions**: LAKEsuperior {lakesuperior.VERSION}, its last release, against the seed's "
               f"alpha 6: {lakesuperior.VERSION} has the Cython + LMDB C API core that the seed measured as an "
               "\"experimental branch\" (0.075\" per child, 2.22\" for the parent, ~600 Mb, 523 Mb); it "
               f"ran on Python {python}, its generated C adapted to it and its dependencies pinned to old "
               f"releases. Fedora {fcrepo_version} in a Jetty runner on "
               f"{fmt.escape(java) if java else 'an unrecorded Java'}, heap limit "
               f"{fmt.escape(options.get('fcrepo_heap') or '2g')}; the seed ran 4.7.5 and states neither its container "
               "nor its heap.")
    out.append("**Client**: the seed's script named children by UUID and gave each 50 repository-IRI "
               "triples pointing at one resource (the last created); lakebench names them "
               "``c00000000``... and points at the parent and the 4 most recent children. LAKEsuperior "
               "receives these IRIs written absolute (it cannot resolve relative ones), Fedora relative: "
               f"the same triples. The seed piped one parent retrieval to /dev/null; lakebench reports "
               f"{figures.PARENT_STEADY.name}, {figures.steady_means(data.retrievals)}"
               + (f" (of {data.retrievals} in all)" if (data.retrievals or 0) > 1 else "")
               + ", warm. Peak memory here is the peak resident memory (peak RSS) of each "
               "server's process tree, sampled; the database size, the repository's directory after the "
               "server stopped. The seed says neither how it measured them nor whether its Gb and Mb are "
               "decimal (read here as decimal).")
    if ls is not None:
        out.append(f"**Durability**: LAKEsuperior is {fmt.literal(ls.get('durability'))} (each request one LMDB "
                   "write transaction, flushed to disk at commit), Fedora "
                   f"{fmt.literal((fc or {}).get('durability', '?'))}, as each ships.")
    return out


def _run_options(command: str) -> dict:
    """``--fcrepo-version`` and ``--fcrepo-heap`` as the recorded ``lakebench run`` command gave them.

    >>> _run_options("lakebench run --systems fcrepo --fcrepo-heap=4g --fcrepo-version 4.7.4")
    {'fcrepo_heap': '4g', 'fcrepo_version': '4.7.4'}
    """
    try:
        words = shlex.split(command)
    except ValueError:
        return {}
    out = {}
    for i, word in enumerate(words):
        for flag in ("--fcrepo-version", "--fcrepo-heap"):
            key = flag[2:].replace("-", "_")
            if word == flag and i + 1 < len(words):
                out[key] = words[i + 1]
            elif word.startswith(flag + "="):
                out[key] = word.split("=", 1)[1]
    return out


def summary(data: ReportData) -> str | None:
    """One sentence: the per-resource and retrieval ratios, then and now."""
    fc, ls = _pick(data, "fcrepo"), _pick(data, "lakesuperior")
    if fc is None or ls is None:
        return None
    parts = []
    for f in SEED[1:3]:
        then, now = _ratio(f.lakesuperior, f.fcrepo), _ratio(_today(ls, f), _today(fc, f))
        if then is not None and now is not None:
            parts.append(f"{f.label} {fmt.ratio(then)} then, {fmt.ratio(now)} now")
    if not parts:
        return None
    return "LAKEsuperior over FCREPO: " + "; ".join(parts) + "."


def section(data: ReportData) -> str:
    """The section, or "" when the run does not hold both servers."""
    if not applies(data):
        return ""
    out = [fmt.heading("The seed report, reproduced", "-")]
    out.append("The seed report compared FCREPO/ModeShape 4.7.5 with LAKEsuperior on LMDB, on "
               f"{SEED_SETUP}. Its laptop figures are quoted as published; today's are this run's, "
               "for the same two servers and lakebench's own store.\n")
    fc, ls = _pick(data, "fcrepo"), _pick(data, "lakesuperior")
    missing = [name for name, e in (("fcrepo", fc), ("lakesuperior", ls)) if e is None]
    if missing:
        out.append(f"Today's {' and '.join(missing)} did not complete, so "
                   f"{'its' if len(missing) == 1 else 'their'} side of the comparison is empty "
                   "(the error is under Results).\n")
    out.append(fmt.list_table(rows(data), "Then (the seed report) and now (this run)"))
    store = store_rows(data)
    if store is not None:
        out.append(fmt.list_table(store, "lakebench's own store beside fcrepo (this run)"))
    line = summary(data)
    if line:
        out.append(line + "\n")
    out.append("What differs from the seed's set-up:\n")
    out.extend(f"- {line}" for line in differences(data))
    out.append("")
    return "\n".join(out)
