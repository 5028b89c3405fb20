"""``lakebench compare BASE NEW``: a run's results as ratios of another's.

For each system and case (children, literal length, the workload's swept
``variant``) present in both runs, and each compared metric, the ratio
NEW/BASE.  Besides the metrics of :data:`METRICS`, the mean time of each
operation kind both runs recorded (``operations``) is compared, except the
workload's primary kind and ``get parent``, which the time per child (or per
primary operation) and the parent GET already are.  Each metric is named as
everywhere else (:data:`lakebench.figures.VOCABULARY`).  Every metric here is better
lower, so a ratio above 1 is a slowdown (or more memory, more disk).  A
metric is *worse* when its ratio exceeds the threshold and the difference
exceeds the noise: twice the combined standard deviation of the two sides
when they have repeats (``--repeat``), none otherwise.  A case that ran in
BASE and failed in NEW is worse too.  The exit status is 1 when anything is
worse, so the command can gate a CI job.

>>> doc = {"systems": [{"name": "a", "status": "ok", "children": 10, "literal_length": 64,
...                     "per_resource_ms": {"mean": 2.0, "p95": 3.0}}]}
>>> [(c.metric, c.ratio, c.worse) for c in compare(doc, doc, threshold=1.1)]
[('time per child (mean)', 1.0, False), ('time per child (p95)', 1.0, False)]
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from lakebench import figures, results, table


DEFAULT_THRESHOLD = 1.10
#: A difference within this many combined standard deviations is noise.
NOISE_SIGMAS = 2.0

#: (path in a system entry, name, how a value and its std print); all better lower.  The two of
#: ``per_resource_ms`` are named for the workload's primary kind (:func:`metrics`).
METRICS: tuple[tuple[str, str, Callable[[float, float | None], str]], ...] = (
    (figures.TIME_PER_CHILD.path, figures.TIME_PER_CHILD.name, figures.millis),
    (figures.TIME_PER_CHILD_P95.path, figures.TIME_PER_CHILD_P95.name, figures.millis),
    (figures.PARENT_FIRST.path, figures.PARENT_FIRST.name, figures.duration),
    (figures.PARENT_STEADY.path, figures.PARENT_STEADY.name, figures.duration),
    (figures.PEAK_RSS.path, figures.PEAK_RSS.name, figures.size),
    (figures.DATABASE_SIZE.path, figures.DATABASE_SIZE.name, figures.size),
)
#: The statistic of each ``per_resource_ms`` metric, in its name (``time per put binary (p95)``).
PER_RESOURCE = {figures.TIME_PER_CHILD.path: "mean", figures.TIME_PER_CHILD_P95.path: "p95"}


@dataclass(frozen=True)
class Change:
    """One metric of one case, BASE against NEW."""

    case: str
    metric: str
    base: str
    new: str
    ratio: float | None
    noise: float | None  # the noise as a fraction of BASE, when both sides have repeats
    worse: bool
    better: bool = False  # the mirror of worse: below 1/threshold, beyond the noise

    @property
    def verdict(self) -> str:
        """"WORSE", "better" or "" (within the threshold or the noise)."""
        return "WORSE" if self.worse else "better" if self.better else ""


def _case(entry: dict) -> tuple:
    # The case asked for: a budget may stop two runs of it at different sizes.
    return entry.get("name"), results.case_children(entry), entry.get("literal_length"), entry.get("variant", "")


def _label(entry: dict) -> str:
    variant = f", {entry['variant']}" if entry.get("variant") else ""
    return (f"{entry.get('name')} ({results.case_children(entry):,} children, "
            f"literal {entry.get('literal_length')}{variant})")


def primary_kind(entry: dict) -> str | None:
    """The operation kind of the entry's ``per_resource_ms``: its workload's primary kind."""
    from lakebench import workloads

    recorded = results.get_path(entry, "workload.primary")  # an instance may change it (mixed)
    if recorded:
        return recorded
    try:
        return workloads.load(results.get_path(entry, "workload.name") or workloads.DEFAULT).primary
    except (KeyError, ImportError, AttributeError):  # a workload this lakebench does not know
        mean = results.get_path(entry, "per_resource_ms.mean")
        return next((kind for kind, op in (entry.get("operations") or {}).items() if op.get("mean_ms") == mean),
                    None)


def metrics(old: dict, new: dict) -> list[tuple[str, str, Callable[[float, float | None], str]]]:
    """What is compared between two entries of a case: :data:`METRICS` (the time per operation named
    for the primary kind), then the mean time of each other operation kind both hold."""
    primary = primary_kind(old)
    covered = {"get parent", primary}
    theirs = new.get("operations") or {}
    kinds = [k for k in old.get("operations") or {} if k in theirs and k not in covered]
    named = [(path, figures.time_per(primary, PER_RESOURCE[path]) if path in PER_RESOURCE else name, show)
             for path, name, show in METRICS]
    return [*named, *((f"operations.{k}.mean_ms", figures.time_per(k), figures.millis) for k in kinds)]


def _std(entry: dict, path: str) -> float | None:
    if entry.get("repeat", 1) < 2:
        return None
    return (entry.get("std") or {}).get(path, 0.0)  # absent: identical in every run


def compare(base: dict, new: dict, threshold: float = DEFAULT_THRESHOLD) -> list[Change]:
    """The changes from ``base`` to ``new`` (two results documents), case by case."""
    changes: list[Change] = []
    new_cases = {_case(e): e for e in new["systems"]}
    for old in base["systems"]:
        entry = new_cases.get(_case(old))
        if entry is None:
            continue
        label = _label(old)
        if old.get("status") == "ok" and entry.get("status") != "ok":
            now = "NOT RUN (budget)" if entry.get("status") == "skipped" else "FAILED"
            changes.append(Change(label, "status", "ok", now, None, None, True))
            continue
        if old.get("status") != "ok" or entry.get("status") != "ok":
            continue
        for path, metric, show in metrics(old, entry):
            before, after = results.get_path(old, path), results.get_path(entry, path)
            if before is None or after is None:
                continue
            ratio = after / before if before else (1.0 if after == before else math.inf)
            stds = (_std(old, path), _std(entry, path))
            noise = math.hypot(*stds) if None not in stds else None
            beyond_noise = noise is None or abs(after - before) > NOISE_SIGMAS * noise
            worse = ratio > threshold and beyond_noise
            better = ratio < 1 / threshold and beyond_noise
            changes.append(Change(label, metric, show(before, stds[0]), show(after, stds[1]), ratio,
                                  noise / before if noise is not None and before else None, worse, better))
    return changes


def unmatched(base: dict, new: dict) -> tuple[list[str], list[str]]:
    """Labels of the cases only BASE ran, and of those only NEW ran."""
    base_cases = {_case(e): e for e in base["systems"]}
    new_cases = {_case(e): e for e in new["systems"]}
    return ([_label(e) for k, e in base_cases.items() if k not in new_cases],
            [_label(e) for k, e in new_cases.items() if k not in base_cases])


def table_rows(changes: list[Change]) -> list[list[str]]:
    rows = [["case", "metric", "BASE", "NEW", "NEW/BASE", ""]]
    for c in changes:
        rows.append([c.case, c.metric, c.base, c.new, figures.ratio(c.ratio), c.verdict])
    return rows


def verdict(changes: list[Change], threshold: float) -> str:
    """The answer in one line: how many metrics are worse, how many better, beyond the noise."""
    worse = [c for c in changes if c.worse]
    better = [c for c in changes if c.better]
    text = (f"{len(worse)} of {len(changes)} metric(s) worse than {threshold:.2f}x beyond the noise"
            if worse else f"nothing worse than {threshold:.2f}x beyond the noise ({len(changes)} metrics)")
    return text + (f"; {len(better)} better than {1 / threshold:.2f}x" if better else "")


def same_run(base: dict, new: dict) -> bool:
    """Whether two results documents are one run (the same start and command): a comparison of a
    run with itself shows no change, whatever the code did."""
    return (base.get("started"), base.get("command")) == (new.get("started"), new.get("command"))


def add_parser(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "compare", help="ratios of a run's results to another's; exit 1 when one is worse",
        description="Compare two results directories written by 'lakebench run': for each system "
        "and case in both (children, literal length, the workload's swept variant), the ratio "
        "NEW/BASE of the time per child (mean, p95; of the primary operation for other workloads), "
        "GET parent first and steady, peak RSS, database size and the mean time of each other operation "
        "kind both recorded (all better lower). "
        "A metric is worse when its ratio exceeds --threshold and the difference exceeds twice the combined standard "
        "deviation of the two runs (when both have --repeat > 1); a case that failed in NEW only "
        "is worse; one below 1/--threshold beyond the noise is better. The verdict comes first. "
        "Exit 0 when nothing is worse, 1 otherwise, 2 on bad input.")
    parser.add_argument("base", type=Path, metavar="BASE", help="results directory of the reference run")
    parser.add_argument("new", type=Path, metavar="NEW", help="results directory of the run to judge")
    parser.add_argument("--threshold", type=threshold_ratio, default=DEFAULT_THRESHOLD, metavar="R",
                        help=f"largest acceptable ratio NEW/BASE, at least 1 (default: {DEFAULT_THRESHOLD})")
    parser.set_defaults(func=main)
    return parser


def threshold_ratio(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (math.isfinite(value) and value >= 1):
        raise argparse.ArgumentTypeError(f"must be a finite ratio of at least 1, got {text}")
    return value


def main(args) -> int:
    documents = []
    for directory in (args.base, args.new):
        try:
            documents.append(results.load(directory))
        except results.ResultsError as exc:  # one line naming the file and the first bad field
            print(f"lakebench compare: error: {exc}", file=sys.stderr)
            return 2
    base, new = documents
    changes = compare(base, new, args.threshold)
    only_base, only_new = unmatched(base, new)
    if not changes:
        print("lakebench compare: error: the two runs have no system and case in common", file=sys.stderr)
        return 2
    if same_run(base, new):
        print(f"lakebench compare: warning: BASE and NEW are the same run (started {base.get('started')}): "
              "nothing can differ", file=sys.stderr)
    print(f"{verdict(changes, args.threshold)}: NEW {table.printable(str(args.new))} against "
          f"BASE {table.printable(str(args.base))}")
    print(table.render(table_rows(changes)))
    for label in only_base:
        print(f"only in BASE: {table.printable(label)}")
    for label in only_new:
        print(f"only in NEW: {table.printable(label)}")
    return 1 if any(c.worse for c in changes) else 0
