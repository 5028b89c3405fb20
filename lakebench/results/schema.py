"""The layout of results.json (checked whenever it is read), and how to read an entry: a field by its path, its case.

docs/results.rst documents the schema for readers; :data:`FIELDS` is the
same layout for the machine, and :func:`validate` checks a document against it.
"""
from __future__ import annotations

import json
import math
import unicodedata
from dataclasses import dataclass

from lakebench import figures
from lakebench.work import ITEMS as WORK_ITEMS

SCHEMA_VERSION = 1

#: Metrics compared with the reference row, as (path in a system entry, name: :data:`lakebench.figures.VOCABULARY`).
COMPARED = {term.path: term.name for term in (figures.RUNNING_TIME, figures.TIME_PER_CHILD, figures.PARENT_STEADY,
                                              figures.PEAK_RSS, figures.DATABASE_SIZE)}

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
    "paged": Field({   # the parent walked in pages (LDP Paging 1.0; --page-size)
        "page_size": Field("int", need=ALWAYS),
        "paged": Field("bool", need=ALWAYS),   # False: the system answered with the whole parent
        "pages": Field("int", need=ALWAYS),
        "containment_triples": Field("int", need=ALWAYS),   # on all the pages together
        "first_seconds": Field("number", need=ALWAYS),  # the 303 and the first page
        "walk_seconds": Field("number", need=ALWAYS),        # every page's request, the first included
    }),
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
                   "parents": Field("str", choices=("shared", "per-user")),
                   "failures": Field("int"), "failure_kinds": Field({"*": Field("int")}),
                   "wall_seconds": Field("number"),
                   "throughput_per_s": Field("number", null=True),
                   "latency_ms": Field(_numbers("p50", "p95", "p99", "max", null=True)),
                   **_numbers("cpu_window_seconds", "generator_cpu_seconds"),
                   **_numbers("system_cpu_seconds", "generator_cpu_share", null=True),
                   "generator_processes": Field("int"), "generator_saturated": Field("bool"),
                   "over_time": Field([Field({"t": Field("number"), "bucket_seconds": Field("number"),
                                              "requests": Field("int"), "failures": Field("int"),
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
    # versions (lakebench.workloads.versions): versions taken, listed, read back and checked.
    "versions": Field({**{name: Field("int") for name in (
        "versioned", "per_resource", "changed_per_version", "requested", "created", "listings", "listed_short", "held",
        "sampled", "verified", "mismatched")}, **_numbers("list_first_ms", "list_last_ms", null=True)}),
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
    # the software measured and its version, as the system reports it (lakebench.systems.base.System.version_text)
    "version": Field("str", null=True, one_line=True),
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
    "work": Field({key: Field({"value": Field("str"), "how": Field("str")}) for key in WORK_ITEMS}),
    "per_resource_ms": Field({"mean": Field("number", need=ALWAYS), "p50": Field("number", null=True),
                              "p95": Field("number", need=ALWAYS), "p99": Field("number", null=True),
                              "p999": Field("number", null=True), "max": Field("number", null=True)},
                             need=IF_OK),
    "growth": Field({**_numbers("first_10pct_ms", "last_10pct_ms", null=True),
                     "ratio": Field("number", null=True, need=ALWAYS)}, need=IF_OK),
    "parent": Field(_PARENT, need=IF_OK),
    "checkpoints": Field([Field(_CHECKPOINT)]),
    "checkpoint_seconds": Field("number"),
    **_numbers("peak_rss_bytes", "peak_rss_anon_bytes", "peak_vms_bytes", "cpu_seconds", "disk_bytes",
               "triples_total", null=True),
    "internals": Field({"batch_commits": Field({"count": Field("int"), **_numbers("seconds", "max_seconds"),
                                                "pages_written": Field("int", null=True),
                                                **_numbers("flush_seconds", "flush_max_seconds",
                                                           null=True)}),
                         # the writes' time filing due term ids into t2i (part of their own)
                         "term_filing": Field(_numbers("seconds", "max_seconds")),
                         # the write-ahead log's flushes: a durable write waits for one (LmdbStore.log_flushes)
                         "log_flushes": Field({"flushes": Field("int"), "failures": Field("int"), "writes": Field("int"),
                                               **_numbers("seconds", "max_seconds"),
                                               "over_ms": Field({"*": Field("int")})}),
                         # the store's own tables in its process's heap at the end, bytes by table
                         "heap_bytes": Field({"*": Field("int")})}),
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
                        "variant": Field([Field("str")]), "users": Field([Field("int")])}),
    }),
    "settings": Field({
        "repeat": Field("int"),
        "retrievals": Field("int"),
        "page_size": Field("int"),
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
    lakebench.results.schema.ResultsError: systems[0].children: expected an integer, got "12"

    A system's name and the reference are names, on one line: a newline in
    one could start a line of markup in the report written from the file.

    >>> validate({"schema": 1, "systems": [{"name": "a\\n.. raw:: html", "status": "failed"}]})
    Traceback (most recent call last):
    ...
    lakebench.results.schema.ResultsError: systems[0].name: control characters are not allowed
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



def get_path(record: dict, path: str):
    """``get_path(r, "parent.seconds")`` -> r["parent"]["seconds"] or None."""
    for key in path.split("."):
        if not isinstance(record, dict) or key not in record:
            return None
        record = record[key]
    return record



def retrievals(document: dict) -> int | None:
    """N, the parent's retrievals in all at the end of each run: ``settings.retrievals``; in results
    without it, as many as every successful entry recorded, when they agree; else None.

    >>> retrievals({"settings": {"retrievals": 4}}), retrievals({"systems": [
    ...     {"status": "ok", "parent": {"all_seconds": [0.2, 0.1]}}, {"status": "failed"}]})
    (4, 2)
    """
    n = get_path(document, "settings.retrievals")
    if isinstance(n, int) and not isinstance(n, bool):
        return n
    counts = {len(get_path(e, "parent.all_seconds") or ()) for e in document.get("systems") or ()
              if isinstance(e, dict) and e.get("status") == "ok"} - {0}
    return counts.pop() if len(counts) == 1 else None


def case_children(entry: dict) -> int | None:
    """The case's children count: those asked for (a budget may have stopped the run short of them).

    >>> case_children({"children": 812, "children_requested": 1000}), case_children({"children": 50})
    (1000, 50)
    """
    return entry.get("children_requested", entry.get("children"))


def held_triples(entry: dict) -> int | None:
    """Of the triples sent, those an in-process system holds, counted by the system itself: its
    ``triples_total`` less the parent's containment triples (None where it is recorded already, not
    counted, or counted by a server that also holds triples of its own: types, dates).  So the table
    of what was sent and held and the table of memory and disk show one count.

    >>> held_triples({"transport": "in-process", "sent": {"triples": 400}, "held": {"children": 2},
    ...               "triples_total": 402, "parent": {"containment_triples": 2}})
    400
    """
    held = entry.get("held")
    if (entry.get("transport") != "in-process" or entry.get("triples_total") is None or not isinstance(held, dict)
            or "triples" not in (entry.get("sent") or {}) or "triples" in held):
        return None
    return entry["triples_total"] - (get_path(entry, "parent.containment_triples") or 0)


def case_of(entry: dict) -> tuple[int | None, int | None, str]:
    """What names an entry's case among a run's: children asked for, literal length, swept variant.

    >>> case_of({"children": 50, "literal_length": 64, "variant": "users=8"})
    (50, 64, 'users=8')
    """
    return case_children(entry), entry.get("literal_length"), entry.get("variant", "")


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
