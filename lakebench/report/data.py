"""What a report reads: one results directory, and optional pytest-benchmark files.

The report never re-measures: every figure, table cell and sentence comes
from ``results.json`` and ``latencies.csv`` as :mod:`lakebench.results`
wrote them (see docs/results.rst), read through :class:`ReportData`.

Any metric may be missing (``None``): a failed system has none, a remote
system may have no memory figures, an in-memory one no disk size.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from lakebench import results
from lakebench.results import get_path, stats

#: Colours of the systems, in the order they first appear (matplotlib's tab10).
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
           "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")


class ReportError(Exception):
    """A results directory or benchmark file that cannot be read (one line for the user)."""


@dataclass
class ReportData:
    results_dir: Path
    document: dict
    #: (system, children, literal_length, run) -> seconds of each create_child call, in order.
    latencies: dict[tuple[str, int, int, int], list[float]] = field(default_factory=dict)
    #: (path, pytest-benchmark document) for each ``--benchmarks`` file.
    benchmarks: list[tuple[Path, dict]] = field(default_factory=list)
    #: Where the page is written (links to the raw files are relative to it); None: not known.
    page_dir: Path | None = None

    @classmethod
    def load(cls, results_dir: Path, benchmark_files=()) -> "ReportData":
        results_dir = Path(results_dir)
        try:
            document = results.load(results_dir)
            try:
                latencies = results.load_latencies(results_dir)
            except FileNotFoundError:
                latencies = {}  # the table and most charts still work without it
        except results.ResultsError as exc:
            raise ReportError(str(exc)) from None
        benchmarks = [(Path(p), load_benchmarks(Path(p))) for p in benchmark_files]
        return cls(results_dir, document, latencies, benchmarks)

    @property
    def workload(self) -> str:
        """The workload's name (:mod:`lakebench.workloads`): ``flat`` in results older than workloads."""
        return get_path(self.document, "workload.name") or "flat"

    # -- the systems -------------------------------------------------------

    @property
    def systems(self) -> list[dict]:
        return self.document.get("systems", [])

    @property
    def ranked(self) -> list[dict]:
        """The entries case by case (in the order measured), within a case those measured fastest
        first (mean time of the workload's primary operation), then those not measured."""
        def key(entry: dict):
            case = (results.case_children(entry), entry.get("literal_length"), entry.get("variant", ""))
            mean = get_path(entry, "per_resource_ms.mean") if entry.get("status") == "ok" else None
            return cases.setdefault(case, len(cases)), mean is None, mean or 0.0

        cases: dict[tuple, int] = {}
        return sorted(self.systems, key=key)

    @property
    def ok(self) -> list[dict]:
        """Entries whose every run succeeded, ranked (:attr:`ranked`): the only ones compared."""
        return [s for s in self.ranked if s.get("status") == "ok"]

    @property
    def failed(self) -> list[dict]:
        return [s for s in self.systems if s.get("status") == "failed"]

    @property
    def skipped(self) -> list[dict]:
        """Cases not run: the budget ran out at a smaller size, or the system cannot take the
        workload (``skip_reason``)."""
        return [s for s in self.systems if s.get("status") == "skipped"]

    @property
    def reference(self) -> dict | None:
        name = self.document.get("reference")
        return next((s for s in self.ok if s["name"] == name), None)

    def reference_for(self, entry: dict) -> dict | None:
        """The reference's entry of ``entry``'s case (the same children, literals and swept variant,
        users included): what ``entry`` is compared with; None when the reference was not measured there."""
        name, case = self.document.get("reference"), results.case_of(entry)
        return next((s for s in self.ok if s["name"] == name and results.case_of(s) == case), None)

    def label(self, entry: dict) -> str:
        """The system's name, with the swept parameters when a sweep holds it more than once."""
        return results.case_label(entry, self.systems)

    def color(self, entry: dict) -> str:
        names = list(dict.fromkeys(s["name"] for s in self.systems))
        return PALETTE[names.index(entry["name"]) % len(PALETTE)]

    def latency_runs(self, entry: dict) -> list[list[float]]:
        """Per-child seconds of each run of ``entry`` that has them."""
        if entry.get("children") is None:  # a failed entry
            return []
        series = (self.latencies.get(results.latency_key(entry, run))
                  for run in range(int(entry.get("repeat") or 1)))
        return [s for s in series if s]

    def median_growth(self, entry: dict) -> tuple[float, float, float] | None:
        """Median ms per child of the first and last 10% of children, and their ratio.

        The results' ``growth`` compares means, which a few long pauses can
        move; the medians show the typical child.  All runs are pooled.
        """
        return stats.median_growth(self.latency_runs(entry))

    def sample_runs(self, entry: dict) -> list[list[dict]]:
        """The monitor's series of each run (possibly empty lists)."""
        return [run for run in entry.get("samples") or [] if run]

    def sweep(self) -> dict[str, list[dict]]:
        """Systems measured at several sizes: name -> ok entries by children."""
        by_name: dict[str, dict[int, dict]] = {}
        length = get_path(self.document, "workload.literal_length")
        for s in self.ok:  # sizes at the first literal length (a payload sweep is another axis)
            if s.get("children") is not None and s.get("literal_length", length) == length:
                by_name.setdefault(s["name"], {})[results.case_children(s)] = s
        return {name: [sizes[n] for n in sorted(sizes)] for name, sizes in by_name.items() if len(sizes) > 1}

    def scale(self) -> dict[str, list[dict]]:
        """Every system's ok entries at the first literal length, by case size: what the cliff chart draws."""
        length = get_path(self.document, "workload.literal_length")
        by_name: dict[str, list[dict]] = {}
        for s in self.ok:
            if s.get("children") is not None and s.get("literal_length", length) == length:
                by_name.setdefault(s["name"], []).append(s)
        return {name: sorted(entries, key=results.case_children) for name, entries in by_name.items()}

    @staticmethod
    def parent_curve(entries: list[dict]) -> list[tuple[int, float, float | None]]:
        """(children, steady seconds, first seconds) of the parent, from every checkpoint and final
        retrieval of ``entries`` (one system's cases), by children."""
        points = []
        for e in entries:
            for c in e.get("checkpoints") or []:
                points.append((c["children"], c["parent_seconds"], number(c.get("parent_first_seconds"))))
            points.append((e["children"], e["parent"]["seconds"], number(get_path(e, "parent.first_seconds"))))
        return sorted(points)

    # -- settings ----------------------------------------------------------

    @property
    def repeat(self) -> int:
        return int(get_path(self.document, "settings.repeat") or 1)

    @property
    def retrievals(self) -> int | None:
        """N, the parent's retrievals in all at the end of each run (:func:`lakebench.results.retrievals`)."""
        return results.retrievals(self.document)

    @property
    def children(self) -> int | None:
        return get_path(self.document, "workload.children")

    @property
    def budget_seconds(self) -> float | None:
        """``--budget``: the ingest time each system and case was allowed, or None."""
        return number(get_path(self.document, "settings.budget_seconds"))

    def latency_window(self) -> int:
        """Moving window of the latency chart: 5% of the children, 5 to 200."""
        longest = max((len(r) for e in self.systems for r in self.latency_runs(e)), default=0)
        return max(5, min(200, longest // 20))


def load_benchmarks(path: Path) -> dict:
    """Read a ``pytest --benchmark-json`` file."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReportError(f"no such benchmark file: {path}") from None
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise ReportError(f"{path} is not valid JSON: {exc}") from None
    except OSError as exc:  # a directory, no permission
        raise ReportError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not isinstance(document, dict) or not isinstance(document.get("benchmarks"), list):
        raise ReportError(f"{path} has no 'benchmarks' list: not a pytest-benchmark JSON file")
    return document


def std_of(entry: dict, path: str) -> float | None:
    """Sample standard deviation over the runs of metric ``path``, when repeated."""
    return (entry.get("std") or {}).get(path)


def number(value) -> float | None:
    """``value`` as a float, or None when absent or not finite."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None
