"""The record of an ingest run: totals of its PUTs, the ``--lakebench-out`` file, the closing log lines,
and the ``load`` field of results.json (:func:`load_record`).

docs/locust.rst ("The JSON record") documents the keys.
"""
from __future__ import annotations

import json
import logging
import os
from collections import Counter
from pathlib import Path

from lakebench import figures
from lakebench.locust.ldp_requests import GET_NAMES
from lakebench.results import stats

log = logging.getLogger("lakebench.locust")


def summarize(records: list[dict]) -> dict:
    """Totals of a list of PUT records (completion order); percentiles as in results.json.

    >>> s = summarize([{"ok": True, "seconds": t, "start": 0.0, "end": t} for t in (0.1, 0.2, 0.3, 0.4)])
    >>> s["created"], s["p50_seconds"], s["max_seconds"]
    (4, 0.25, 0.4)
    """
    ok = [r for r in records if r["ok"]]
    lat = sorted(r["seconds"] for r in records)
    out = {"created": len(ok), "failed": len(records) - len(ok),
           # seconds the users spent building the children's Turtle (before their clocks)
           "generate_seconds": round(sum(r.get("generate_seconds", 0.0) for r in records), 6)}
    if records:
        out["ingest_seconds"] = round(max(r["end"] for r in records) - min(r["start"] for r in records), 6)
        out["mean_seconds"] = stats.mean(lat)
        out["p50_seconds"] = stats.percentile(lat, 50)
        out["p95_seconds"] = stats.percentile(lat, 95)
        out["max_seconds"] = lat[-1]
    return out


def over_time(records: list[dict], step: float | None = None) -> list[dict]:
    """Requests by the bucket of time they completed in, as Locust's own charts draw them by the
    second: ``t`` (seconds from the first request's start to the bucket's), ``bucket_seconds`` (its
    width: ``step``, else :func:`~lakebench.results.stats.bucket_seconds` of the records' span, so a short
    test has enough of them), ``requests``, ``failures``, and ``p50_ms``/``p95_ms`` of those that
    completed in it.

    >>> rows = over_time([{"ok": True, "seconds": 0.1, "start": 0.0, "end": 0.1},
    ...                   {"ok": False, "seconds": 0.3, "start": 0.9, "end": 1.2}], step=1.0)
    >>> [(r["t"], r["requests"], r["failures"], r["p50_ms"]) for r in rows]
    [(0.0, 1, 0, 100.0), (1.0, 1, 1, 300.0)]
    >>> len(over_time([{"ok": True, "seconds": 0.1, "start": 0.0, "end": 0.48}]))  # 20-ms buckets
    24
    """
    if not records:
        return []
    origin = min(r["start"] for r in records)
    if step is None:
        step = stats.bucket_seconds(max(r["end"] for r in records) - origin)
    steps: dict[int, list[dict]] = {}
    for r in records:
        steps.setdefault(int((r["end"] - origin) // step), []).append(r)
    rows = []
    for n in range(max(steps) + 1):
        done = steps.get(n, [])
        seconds = sorted(r["seconds"] for r in done)
        rows.append({"t": round(n * step, 6), "bucket_seconds": step, "requests": len(done),
                     "failures": sum(not r["ok"] for r in done),
                     "p50_ms": stats.percentile_ms(seconds, 50, 3), "p95_ms": stats.percentile_ms(seconds, 95, 3)})
    return rows


def load_record(records: list[dict], users: int, cpu: dict | None = None, parents: str | None = None) -> dict:
    """The ``load`` field of results.json of a load test, from its request records: the throughput is
    every request completed (answered or refused) over the wall time from the first one's start to the
    last one's end, all users together, as every table shows it; the latency percentiles are of the
    answered ones (as ``operations`` has them).

    ``cpu``: the CPU the system and the load generator spent over the load test (:func:`cpu_record`);
    ``parents``: the flat workload's shape, ``shared`` or ``per-user``.

    >>> load = load_record([{"ok": True, "seconds": 0.2, "start": 0.0, "end": 0.2},
    ...                     {"ok": False, "seconds": 0.1, "start": 0.1, "end": 0.25, "status": 503}], users=2)
    >>> load["requests"], load["failures"], load["failure_kinds"], load["throughput_per_s"], load["latency_ms"]["p95"]
    (2, 1, {'HTTP 503': 1}, 8.0, 200.0)
    """
    failed = [r for r in records if not r["ok"]]
    wall = max(r["end"] for r in records) - min(r["start"] for r in records) if records else 0.0
    return {
        "users": users,
        "spawn_rate": users,  # all users start at once
        **({"parents": parents} if parents else {}),
        "requests": len(records),
        "failures": len(failed),
        "failure_kinds": dict(Counter(r.get("error") or f"HTTP {r.get('status')}" for r in failed)),
        "wall_seconds": round(wall, 6),
        "throughput_per_s": stats.rate(len(records), wall, 3),
        "latency_ms": stats.latency_percentiles_ms([r["seconds"] for r in records if r["ok"]]),
        **(cpu or {}),
        "over_time": over_time(records),
    }


def cpu_record(system_cpu_seconds: float | None, generator_cpu_seconds: float, window_seconds: float,
               generator_processes: int = 1) -> dict:
    """What the system and the load generator spent over a load test's ``window_seconds``, and whether
    the generator was saturated: its CPU time reached :data:`~lakebench.figures.GENERATOR_SATURATION`
    of the window per Locust process, so that it, not the system, set the throughput.

    >>> cpu = cpu_record(1.5, 1.9, 2.0)
    >>> cpu["generator_cpu_share"], cpu["generator_saturated"]
    (0.95, True)
    >>> cpu_record(None, 0.5, 2.0)["generator_saturated"]
    False
    """
    share = stats.rate(generator_cpu_seconds, window_seconds * generator_processes, 3)
    return {
        "cpu_window_seconds": round(window_seconds, 6),
        "system_cpu_seconds": None if system_cpu_seconds is None else round(system_cpu_seconds, 3),
        "generator_cpu_seconds": round(generator_cpu_seconds, 3),
        "generator_processes": generator_processes,
        "generator_cpu_share": share,
        "generator_saturated": share is not None and share >= figures.GENERATOR_SATURATION,
    }


def write_record(result: dict, out: str | os.PathLike) -> None:
    """Write ``result`` to ``out`` as JSON (atomically), without the retrieved bodies."""
    doc = dict(result)
    doc["retrievals"] = {k: {f: v for f, v in r.items() if f != "body"} for k, r in doc["retrievals"].items()}
    path = Path(out)
    if path.parent != Path(""):
        path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    tmp.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def log_summary(result: dict) -> None:
    """The run in a few log lines: the PUTs' totals, then each retrieval."""
    r = result
    if "mean_seconds" in r:
        log.info("lakebench: %d children created, %d failed, in %.2f s (mean %.1f ms, p95 %.1f ms)",
                 r["created"], r["failed"], r["ingest_seconds"], r["mean_seconds"] * 1e3, r["p95_seconds"] * 1e3)
    for variant, got in r["retrievals"].items():
        log.info("lakebench: %s: HTTP %s, %.3f s, %d bytes, %s ldp:contains", GET_NAMES[variant],
                 got["status"], got["seconds"], got["bytes"], got.get("contains"))
