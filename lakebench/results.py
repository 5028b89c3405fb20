"""The results schema: per-run records, their aggregation, files, summary table.

Both the printed table and the report read what this module writes; the
report never re-measures.  docs/results.rst documents the schema for
readers; :data:`FIELDS` is the same layout for the machine, and
:func:`load` checks every document it reads against it.

A results directory holds:

* ``results.json``: environment, workload, and one entry per system
  (means over repeated runs, their standard deviations, each run's record,
  and the monitor's series);
* ``latencies.csv``: ``system,children,literal_length,run,index,seconds``
  for every child created.
"""
from __future__ import annotations

import copy
import csv
import json
import math
import statistics
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

SCHEMA_VERSION = 1

#: Metrics compared with the reference row, as (path in a system entry, label).
COMPARED = {
    "ingest_seconds": "running time",
    "per_resource_ms.mean": "time per resource",
    "parent.seconds": "GET parent",
    "peak_rss_bytes": "peak memory",
    "disk_bytes": "database size",
}

#: The columns of latencies.csv, in order.  ``variant`` names the swept
#: parameters of the workload (``binary_size=1024``), empty when none is.
LATENCY_COLUMNS = ("system", "children", "literal_length", "variant", "run", "index", "seconds")
#: The columns of latencies.csv before workloads had variants (read as variant "").
_LATENCY_COLUMNS_1 = ("system", "children", "literal_length", "run", "index", "seconds")


# -- the layout of results.json, checked whenever it is read ---------------
#
# A document that is not what lakebench wrote (cut short, edited, from
# another program) must be refused with the first bad field named, not make
# `table` or `report` fail somewhere inside.  A field the layout does not
# name is ignored, so that a later lakebench may add some; every field it
# names must have its type where present.

class ResultsError(ValueError):
    """A results directory that cannot be read as docs/results.rst describes it (one line)."""


ALWAYS = "always"  # present in every object of its kind
IF_OK = "if ok"  # present in every object whose "status" is "ok": a failed run has no figures


@dataclass(frozen=True)
class Field:
    """The type of one field of results.json.

    ``kind`` is ``"str"``, ``"int"``, ``"number"`` (finite; an integer too), ``"bool"``, ``"any"``,
    a dict of fields (an object holding them; the key ``"*"`` types every key
    it does not name) or a one-item list (a list of that field).
    """

    kind: object
    null: bool = False  # may be null
    need: str | None = None  # ALWAYS, IF_OK, or None: optional
    choices: tuple = ()
    one_line: bool = False  # a string without control characters (a name the report puts in its sentences)


def _numbers(*names: str, null: bool = False) -> dict[str, Field]:
    return {name: Field("number", null=null) for name in names}


_PARENT = {
    "seconds": Field("number", need=ALWAYS),
    "first_seconds": Field("number"),
    "all_seconds": Field([Field("number")]),
    "containment_triples": Field("number", need=ALWAYS),
    "bytes": Field("number"),
    "cache": Field("str"),
    "variants_seconds": Field({"*": Field("number")}),
}

#: The parent and the disk measured during the ingest, at one size (``--checkpoints``).
_CHECKPOINT = {
    "children": Field("int", need=ALWAYS),
    "parent_seconds": Field("number", need=ALWAYS),
    "parent_first_seconds": Field("number"),
    "containment_triples": Field("int"),
    **_numbers("disk_bytes", "rss_bytes", null=True),
}

_SAMPLE = {
    "t": Field("number", need=ALWAYS),
    "phase": Field("str"),
    "children": Field("int"),
    **_numbers("cpu_percent", "rss_bytes", "rss_anon_bytes", "vms_bytes"),
    "disk_bytes": Field("number", null=True),
}

#: One kind of operation of a run (``"create"``, ``"get parent"``, ``"put binary"``, ...).
_OPERATION = {
    "count": Field("int", need=ALWAYS),
    "errors": Field("int"),
    "seconds": Field("number", need=ALWAYS),
    **_numbers("mean_ms", "p50_ms", "p95_ms", "p99_ms", "max_ms", "per_second", null=True),
}

#: The deep workload's hierarchy and its reads as it grew (lakebench.workloads.deep).
_DEEP = {
    "depth": Field("int"),
    "fan_out": Field("int"),
    "leaf": Field("str", choices=("binary", "rdf")),
    **_numbers("containers", "leaves", "batch", "leaf_reads", "leaf_reads_verified"),
    "middle": Field("str"),
    "series": Field([Field({**_numbers("resources", "containers", "leaves"),
                            **_numbers("list_top_ms", "list_middle_ms", "get_leaf_ms", null=True)})]),
}

#: What one run measured: a run's record, and (means over its runs) a system entry.
_FIGURES = {
    "workload": Field({"name": Field("str", need=ALWAYS), "primary": Field("str"),
                       "params": Field({"*": Field("any", null=True)})}),
    "variant": Field("str"),
    "operations": Field({"*": Field(_OPERATION)}),
    "first_error": Field("str"),
    "load": Field({"users": Field("int"), "spawn_rate": Field("number"), "requests": Field("int"),
                   "failures": Field("int"), "failure_kinds": Field({"*": Field("int")}),
                   "throughput_per_s": Field("number", null=True),
                   "over_time": Field([Field({"t": Field("number"), "requests": Field("int"),
                                              "failures": Field("int"),
                                              **_numbers("p50_ms", "p95_ms", null=True)})])}),
    "sent": Field({"*": Field("number")}),  # a mean when repeated runs differ
    "held": Field({"*": Field("number", null=True)}),
    "deep": Field(_DEEP),
    "mixed": Field({"weights": Field({"*": Field("int")}), "users": Field("int"),
                    **_numbers("duration_seconds", "throughput_per_s", null=True), "operations": Field("int"),
                    "per_task": Field({"*": Field("int")})}),
    "binaries": Field({"size_bytes": Field("int", need=ALWAYS), "count": Field("int", need=ALWAYS),
                       **_numbers("put_mb_per_s", "get_mb_per_s", null=True),
                       **{name: Field("int") for name in ("sampled", "verified", "mismatched")}}),
    # update and read (lakebench.workloads.update, .read): what was asked, done and checked.
    "updates": Field({"requested": Field("int"), "replaced_per_update": Field("int"),
                      **_numbers("applied", "verified", "stale")}),
    "reads": Field({"requested": Field("int"), "cold_requested": Field("int"), "cold": Field("bool"),
                    **_numbers("ok", "checked", "cold_done", "cold_ok")}),
    "queries": Field({"*": Field({"rows": Field("int", need=ALWAYS), "answer": Field("int", null=True),
                                  "digest": Field("str", need=ALWAYS), "expected": Field("int", null=True)})}),
    "status": Field("str", need=ALWAYS, choices=("ok", "failed", "skipped")),
    "error": Field("str", null=True),
    "log": Field("str", null=True),
    "skip_reason": Field("str"),
    "durability": Field("str", null=True),
    "transport": Field("str", null=True),
    "system_options": Field({"*": Field("any")}),
    "driver": Field("str"),
    "users": Field("int"),
    "children": Field("int", need=IF_OK),
    "children_requested": Field("int"),
    "budget_exhausted": Field("bool"),
    "literal_length": Field("int", need=IF_OK),
    "ingest_seconds": Field("number", need=IF_OK),
    **_numbers("ingest_wall_seconds", "generate_seconds"),
    "generation": Field("str"),
    "per_resource_ms": Field({"mean": Field("number", need=ALWAYS), "p50": Field("number", null=True),
                              "p95": Field("number", need=ALWAYS), "max": Field("number", null=True)},
                             need=IF_OK),
    "growth": Field({**_numbers("first_10pct_ms", "last_10pct_ms", null=True),
                     "ratio": Field("number", null=True, need=ALWAYS)}, need=IF_OK),
    "parent": Field(_PARENT, need=IF_OK),
    "checkpoints": Field([Field(_CHECKPOINT)]),
    "checkpoint_seconds": Field("number"),
    **_numbers("peak_rss_bytes", "peak_rss_anon_bytes", "peak_vms_bytes", "cpu_seconds", "disk_bytes",
               "triples_total", null=True),
    "internals": Field({"batch_commits": Field({"count": Field("int"), **_numbers("seconds", "max_seconds"),
                                                "pages_written": Field("int", null=True)})}),
}

_RUN = {"system": Field("str", need=ALWAYS, one_line=True), "run": Field("int", need=ALWAYS), **_FIGURES}

_ENTRY = {
    "name": Field("str", need=ALWAYS, one_line=True),
    **_FIGURES,
    "repeat": Field("int"),
    "successful_runs": Field("int"),
    "std": Field({"*": Field("number")}),
    "vs_reference": Field({"*": Field("number")}),
    "runs": Field([Field(_RUN)]),
    "samples": Field([Field([Field(_SAMPLE)])]),
}

#: results.json, field by field (docs/results.rst says what each one means).
FIELDS = {
    "schema": Field("int", need=ALWAYS),
    "started": Field("str"),
    "finished": Field("str"),
    "command": Field("str"),
    "environment": Field({
        "cpu_model": Field("str"),
        "cores_logical": Field("int", null=True),
        "cores_physical": Field("int", null=True),
        "memory_bytes": Field("int"),
        "os": Field("str"),
        "distribution": Field("str", null=True),
        "python": Field("str"),
        "python_implementation": Field("str"),
        "libraries": Field({"*": Field("str", null=True)}),
        "lmdb_c": Field("str", null=True),
        "java": Field("str", null=True),
        "load_average": Field([Field("number")]),
        "lakebench_version": Field("str", null=True),
        "lakebench_commit": Field("str", null=True),
        "disk": Field({"device": Field("str", null=True), "filesystem": Field("str", null=True),
                       "rotational": Field("bool", null=True), "size_bytes": Field("int", null=True)}),
    }),
    "workload": Field({
        "children": Field("int"),
        "triples_per_child": Field("int"),
        "groups": Field({"*": Field("int")}),
        "literal_length": Field("int"),
        "seed": Field("int"),
        "parent": Field("str"),
        "alphabet_size": Field("int"),
        "name": Field("str"),
        "params": Field({"*": Field("any", null=True)}),
        "sweep": Field({"children": Field([Field("int")]), "literal_length": Field([Field("int")]),
                        "variant": Field([Field("str")])}),
    }),
    "settings": Field({
        "repeat": Field("int"),
        "retrievals": Field("int"),
        "tail_seconds": Field("number"),
        "sample_interval_seconds": Field("number"),
        "cache": Field("str"),
        "budget_seconds": Field("number", null=True),
        "checkpoints": Field([Field("int")]),
    }),
    "reference": Field("str", null=True, one_line=True),
    "systems": Field([Field(_ENTRY)], need=ALWAYS),
}


def validate(document) -> None:
    """Raise :class:`ResultsError` naming the first field of ``document`` that is not as :data:`FIELDS` says.

    >>> validate({"schema": 1, "systems": [{"name": "a", "status": "ok", "children": "12"}]})
    Traceback (most recent call last):
    ...
    lakebench.results.ResultsError: systems[0].children: expected an integer, got "12"

    A system's name and the reference are names, on one line: a newline in
    one could start a line of markup in the report written from the file.

    >>> validate({"schema": 1, "systems": [{"name": "a\\n.. raw:: html", "status": "failed"}]})
    Traceback (most recent call last):
    ...
    lakebench.results.ResultsError: systems[0].name: control characters are not allowed
    """
    if not isinstance(document, dict):
        raise ResultsError(f"expected an object at the top, got {_shown(document)}")
    version = document.get("schema")
    if isinstance(version, int) and not isinstance(version, bool) and version != SCHEMA_VERSION:
        raise ResultsError(f"schema: version {version}, but this lakebench reads version {SCHEMA_VERSION}")
    _check(document, Field(FIELDS), "")


def _check(value, field: Field, path: str) -> None:
    if value is None:
        if not field.null:
            raise ResultsError(f"{path}: expected {_expected(field)}, got null")
        return
    kind = field.kind
    if isinstance(kind, dict):
        if not isinstance(value, dict):
            raise ResultsError(f"{path or 'the top'}: expected an object, got {_shown(value)}")
        ok = value.get("status") == "ok"
        for key, sub in kind.items():
            where = f"{path}.{key}" if path else key
            if key == "*":
                continue
            if key in value:
                _check(value[key], sub, where)
            elif sub.need == ALWAYS or (sub.need == IF_OK and ok):
                raise ResultsError(f"{where}: missing" + (" (status is ok)" if sub.need == IF_OK else ""))
        if "*" in kind:
            for key, item in value.items():
                if key not in kind:
                    _check(item, kind["*"], f"{path}.{key}" if path else key)
        return
    if isinstance(kind, list):
        if not isinstance(value, list):
            raise ResultsError(f"{path}: expected a list, got {_shown(value)}")
        for index, item in enumerate(value):
            _check(item, kind[0], f"{path}[{index}]")
        return
    assert isinstance(kind, str)
    if kind == "any":  # a workload's parameter: whatever its option parses to
        return
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    fits = {"str": isinstance(value, str),
            "int": number and isinstance(value, int),
            "number": number and math.isfinite(value),
            "bool": isinstance(value, bool)}[kind]
    if not fits:
        raise ResultsError(f"{path}: expected {_expected(field)}, got {_shown(value)}")
    if field.one_line and any(unicodedata.category(c) == "Cc" for c in value):
        # \n, \r, \t, NUL, ESC...: a name is one line, shown as it is (report, terminal).
        raise ResultsError(f"{path}: control characters are not allowed")
    if field.choices and value not in field.choices:
        raise ResultsError(f"{path}: expected one of {', '.join(map(json.dumps, field.choices))}, "
                           f"got {_shown(value)}")


def _expected(field: Field) -> str:
    kind = field.kind
    if isinstance(kind, dict):
        return "an object"
    if isinstance(kind, list):
        return "a list"
    assert isinstance(kind, str)
    return {"str": "a string", "int": "an integer", "number": "a finite number", "bool": "true or false",
            "any": "a value"}[kind]


def _shown(value) -> str:
    """A value as an error message quotes it: JSON, cut short; containers by their kind."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile of already sorted values.

    >>> percentile([1.0, 2.0, 3.0, 4.0], 50)
    2.5
    """
    if not sorted_values:
        return math.nan
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def latency_summary(seconds: Sequence[float]) -> dict:
    """mean / p50 / p95 / max in milliseconds, and growth first vs last 10%.

    >>> s = latency_summary([0.001] * 10 + [0.002] * 10)
    >>> s["per_resource_ms"]["mean"], s["growth"]["ratio"]
    (1.5, 2.0)
    """
    ordered = sorted(seconds)
    tenth = max(1, len(seconds) // 10)
    first = statistics.fmean(seconds[:tenth]) * 1000 if seconds else math.nan
    last = statistics.fmean(seconds[-tenth:]) * 1000 if seconds else math.nan
    return {
        "per_resource_ms": {
            "mean": _round(statistics.fmean(seconds) * 1000) if seconds else None,
            "p50": _round(percentile(ordered, 50) * 1000),
            "p95": _round(percentile(ordered, 95) * 1000),
            "max": _round(ordered[-1] * 1000) if ordered else None,
        },
        "growth": {
            "first_10pct_ms": _round(first),
            "last_10pct_ms": _round(last),
            "ratio": _round(last / first) if first else None,
        },
    }


def operations_summary(times: dict[str, Sequence[float]], errors: dict[str, int] | None = None) -> dict:
    """Per operation kind: count, refused operations, total seconds, mean / p50 / p95 / p99 / max in
    milliseconds, and operations per second of the time spent in them.

    >>> s = operations_summary({"get": [0.001, 0.003]}, {"get": 1})["get"]
    >>> s["count"], s["errors"], s["mean_ms"], s["p50_ms"], s["per_second"]
    (2, 1, 2.0, 2.0, 500.0)
    """
    errors = errors or {}
    summary = {}
    for kind in dict.fromkeys([*times, *errors]):
        seconds = list(times.get(kind, ()))
        ordered = sorted(seconds)
        total = math.fsum(seconds)
        summary[kind] = {
            "count": len(seconds),
            "errors": errors.get(kind, 0),
            "seconds": round(total, 6),
            "mean_ms": _round(total / len(seconds) * 1000) if seconds else None,
            "p50_ms": _round(percentile(ordered, 50) * 1000),
            "p95_ms": _round(percentile(ordered, 95) * 1000),
            "p99_ms": _round(percentile(ordered, 99) * 1000),
            "max_ms": _round(ordered[-1] * 1000) if ordered else None,
            "per_second": _round(len(seconds) / total, 2) if total > 0 else None,
        }
    return summary


def _round(value: float | None, digits: int = 4) -> float | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return round(value, digits)


def get_path(record: dict, path: str):
    """``get_path(r, "parent.seconds")`` -> r["parent"]["seconds"] or None."""
    for key in path.split("."):
        if not isinstance(record, dict) or key not in record:
            return None
        record = record[key]
    return record


def _numeric_paths(record: dict, prefix: str = "") -> Iterable[str]:
    for key, value in record.items():
        if key in ("samples", "error"):
            continue
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            yield from _numeric_paths(value, path + ".")
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            yield path


def _set_path(record: dict, path: str, value) -> None:
    *parents, last = path.split(".")
    for key in parents:
        record = record.setdefault(key, {})
    record[last] = value


def aggregate(name: str, runs: list[dict]) -> dict:
    """One system entry from its runs: means of the successful runs, their std.

    Numbers that are the same in every run (children, triples) stay exact;
    the others become the mean, and ``std`` holds the sample standard
    deviation where there are at least two successful runs.
    """
    ok = [r for r in runs if r["status"] == "ok"]
    failed = [r for r in runs if r["status"] != "ok"]
    entry: dict = {
        "name": name,
        "status": "ok" if ok and not failed else "failed",
        "error": failed[0]["error"] if failed else None,
        "log": failed[0].get("log") if failed else None,  # OUT/logs/...: the failure in full
        "durability": runs[0].get("durability"),
        "transport": runs[0].get("transport"),
        "repeat": len(runs),
        "successful_runs": len(ok),
    }
    if ok:
        # A deep copy: the means replace figures nested in it, which must stay the first run's own.
        base = copy.deepcopy({k: v for k, v in ok[0].items() if k not in ("samples", "system", "run", "status",
                                                                          "error")})
        std: dict = {}
        for path in _numeric_paths(base):
            values = [get_path(r, path) for r in ok]
            values = [v for v in values if v is not None]
            if not values:
                continue
            if all(v == values[0] for v in values):
                continue  # identical in every run (counts): keep it exact
            if all(isinstance(v, int) for v in values):
                # A count that differs between runs (operations done in a duration, a budget's
                # children): the fewest any run reached stays a count; its spread goes to std.
                _set_path(base, path, min(values))
            else:
                _set_path(base, path, _round(statistics.fmean(values), 6))
            if len(values) > 1:
                std[path] = _round(statistics.stdev(values), 6)
        entry.update(base)
        reached = [r["children"] for r in ok if isinstance(r.get("children"), int)]
        if reached and len(set(reached)) > 1:
            # Runs stopped by the budget at different sizes: the entry holds
            # the size every run reached (its mean and std stay in std).
            entry["children"] = min(reached)
        if any(r.get("budget_exhausted") for r in ok):
            entry["budget_exhausted"] = True
        if any(r.get("checkpoints") for r in ok):
            entry["checkpoints"] = _mean_checkpoints(ok)
        if std:
            entry["std"] = std
    entry["runs"] = [{k: v for k, v in r.items() if k != "samples"} for r in runs]
    entry["samples"] = [r.get("samples", []) for r in runs]
    return entry


def _mean_checkpoints(runs: list[dict]) -> list[dict]:
    """Checkpoints of every run, at the sizes all runs reached: the mean of each figure."""
    by_size: dict[int, list[dict]] = {}
    for run in runs:
        for point in run.get("checkpoints") or []:
            by_size.setdefault(point["children"], []).append(point)
    merged = []
    for size in sorted(by_size):
        points = by_size[size]
        if len(points) != len(runs):
            continue  # a run stopped by the budget before this size
        point: dict = {"children": size}
        for key in points[0]:
            values = [p.get(key) for p in points]
            if key == "children" or all(v == values[0] for v in values):
                point[key] = values[0]  # counts equal in every run stay exact
            elif any(v is None for v in values):
                point[key] = None  # unknown in some run: no mean
            else:
                point[key] = _round(statistics.fmean(values), 6)
        merged.append(point)
    return merged


def skipped_entry(name: str, children: int, literal_length: int, reason: str, like: dict) -> dict:
    """The entry of a case not run because the budget ran out at a smaller size (see ``runner.budget_skip``).

    ``like`` is a run record of the same system, for its durability and transport.
    """
    return {
        "name": name,
        "status": "skipped",
        "error": None,
        "skip_reason": reason,
        "durability": like.get("durability"),
        "transport": like.get("transport"),
        "repeat": 0,
        "successful_runs": 0,
        "children_requested": children,
        "literal_length": literal_length,
        "runs": [],
        "samples": [],
    }


def compare_with_reference(systems: list[dict], reference: str | None) -> None:
    """Add ``vs_reference`` (percent of the reference's value) to each entry."""
    ref = next((s for s in systems if s["name"] == reference and s["status"] == "ok"), None)
    for entry in systems:
        entry["vs_reference"] = {}
        if ref is None or entry["status"] != "ok":
            continue
        for path in COMPARED:
            mine, theirs = get_path(entry, path), get_path(ref, path)
            if mine is not None and theirs:
                entry["vs_reference"][path] = round(100.0 * mine / theirs, 2)


def write(out: Path, document: dict, latencies: dict[tuple[str, int, int, str, int], Sequence[float]]) -> None:
    """Write ``results.json`` and ``latencies.csv`` into ``out``.

    ``latencies`` maps (system, children, literal_length, variant, run) to
    the seconds of each operation of the workload's primary kind (for
    ``flat``, each child), in the order they ran.
    """
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "results.json.tmp"
    tmp.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(out / "results.json")
    with open(out / "latencies.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(LATENCY_COLUMNS)
        for (system, children, literal_length, variant, run), values in latencies.items():
            for index, seconds in enumerate(values):
                writer.writerow([system, children, literal_length, variant, run, index, f"{seconds:.7f}"])


def load(out: Path) -> dict:
    """Read ``results.json`` of a results directory, checked against :data:`FIELDS`.

    Raises :class:`ResultsError`, whose message is one line naming the file
    and what is wrong in it, for anything but a document lakebench could
    have written.
    """
    out = Path(out)
    path = out / "results.json"
    if out.exists() and not out.is_dir():
        raise ResultsError(f"{out} is not a directory: give the results directory that holds results.json")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ResultsError(f"no results.json in {out}") from None
    except UnicodeDecodeError:
        raise ResultsError(f"{path} is not UTF-8 text") from None
    except OSError as exc:
        raise ResultsError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not text.strip():
        raise ResultsError(f"{path} is empty")
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path} is not valid JSON: {exc}") from None
    except RecursionError:
        raise ResultsError(f"{path} is not valid JSON: nested too deeply") from None
    try:
        validate(document)
    except ResultsError as exc:
        raise ResultsError(f"{path}: {exc}") from None
    return document


def load_latencies(out: Path) -> dict[tuple[str, int, int, str, int], list[float]]:
    """Read ``latencies.csv``: (system, children, literal_length, variant, run) -> seconds per operation, in order.

    A file of an earlier lakebench (no ``variant`` column) reads as variant "".

    Raises FileNotFoundError when there is none (a report can do without),
    and :class:`ResultsError` (one line: the file, the line, the column)
    when it is not as :func:`write` writes it.
    """
    path = Path(out) / "latencies.csv"
    series: dict[tuple[str, int, int, str, int], list[float]] = {}
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            if header is None:
                raise ResultsError(f"{path} is empty")
            columns = tuple(header)
            if columns not in (LATENCY_COLUMNS, _LATENCY_COLUMNS_1):
                raise ResultsError(f"{path} line 1: expected the header {','.join(LATENCY_COLUMNS)}")
            for row in reader:
                values = dict(zip(columns, _latency_row(row, columns, path, reader.line_num)))
                key = (values["system"], values["children"], values["literal_length"], values.get("variant", ""),
                       values["run"])
                series.setdefault(key, []).append(values["seconds"])
    except FileNotFoundError:
        raise
    except UnicodeDecodeError:
        raise ResultsError(f"{path} is not UTF-8 text") from None
    except csv.Error as exc:
        raise ResultsError(f"{path} line {reader.line_num}: {exc}") from None
    except OSError as exc:
        raise ResultsError(f"cannot read {path}: {exc.strerror or exc}") from None
    return series


def _latency_row(row: list[str], columns: tuple[str, ...], path: Path, line: int) -> tuple:
    if len(row) != len(columns):
        raise ResultsError(f"{path} line {line}: {len(row)} columns, expected {len(columns)}")
    values: list[object] = []
    for column, cell in zip(columns, row):
        if column in ("system", "variant"):
            values.append(cell)
            continue
        try:
            value = float(cell) if column == "seconds" else int(cell)
        except ValueError:
            value = None
        if value is None or not math.isfinite(value):
            raise ResultsError(f"{path} line {line}: {column}: expected "
                               f"{'a finite number' if column == 'seconds' else 'an integer'}, got {cell[:40]!r}")
        values.append(value)
    return tuple(values)


def case_children(entry: dict) -> int | None:
    """The case's children count: those asked for (a budget may have stopped the run short of them).

    >>> case_children({"children": 812, "children_requested": 1000}), case_children({"children": 50})
    (1000, 50)
    """
    return entry.get("children_requested", entry.get("children"))


def latency_key(entry: dict, run: int) -> tuple[str, int, int, str, int]:
    """The key of ``load_latencies`` for run ``run`` of a system entry (latencies.csv names the case)."""
    return entry["name"], case_children(entry), entry["literal_length"], entry.get("variant", ""), run


def case_label(entry: dict, systems: list[dict]) -> str:
    """The system's name, with the swept parameters when a sweep holds it more than once.

    >>> rows = [{"name": "a", "children": 10, "literal_length": 64},
    ...         {"name": "a", "children": 20, "literal_length": 64}]
    >>> case_label(rows[1], rows)
    'a (20 children)'
    """
    same = [s for s in systems if s["name"] == entry["name"]]
    parts = []
    if len({case_children(s) for s in same}) > 1:
        parts.append(f"{case_children(entry):,} children")
    if len({s.get("literal_length") for s in same}) > 1:
        parts.append(f"{entry['literal_length']:,}-char literals")
    if len({s.get("variant", "") for s in same}) > 1:
        parts.append(entry.get("variant", ""))
    return f"{entry['name']} ({', '.join(parts)})" if parts else entry["name"]
