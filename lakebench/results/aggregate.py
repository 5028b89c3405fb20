"""One system entry from its runs (means and standard deviations), and the comparison with the reference."""
from __future__ import annotations

import copy
from typing import Iterable

from lakebench import figures
from lakebench.results import stats
from lakebench.results.schema import COMPARED, get_path


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

    >>> entry = aggregate("a", [{"status": "ok", "children": 10, "ingest_seconds": s} for s in (1.0, 3.0)])
    >>> entry["children"], entry["ingest_seconds"], entry["std"]
    (10, 2.0, {'ingest_seconds': 1.414214})
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
                _set_path(base, path, stats.rounded(stats.mean(values), 6))
            if len(values) > 1:
                std[path] = stats.rounded(stats.stdev(values), 6)
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
        share = get_path(entry, "load.generator_cpu_share")
        if share is not None:  # said of the mean share, as of each run's
            entry["load"]["generator_saturated"] = share >= figures.GENERATOR_SATURATION
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
                point[key] = stats.rounded(stats.mean(values), 6)
        merged.append(point)
    return merged


#: How the reason of a case not run for lack of disk begins (``skip_reason``).
NOT_ENOUGH_DISK = "not enough disk"
#: How the reason of a case not run after the budget ran out at a smaller size begins.
BUDGET_RAN_OUT = "the budget ran out"


def skipped_entry(name: str, children: int, literal_length: int, reason: str, like: dict) -> dict:
    """The entry of a case not run: the budget ran out at a smaller size (``runner.budget_skip``), or it
    would not fit on the disk (``runner.disk_skip``).

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

