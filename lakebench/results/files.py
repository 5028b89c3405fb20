"""The files of a results directory: ``results.json`` (checked when read) and ``latencies.csv``."""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Sequence

from lakebench.results.schema import _LATENCY_COLUMNS_1, LATENCY_COLUMNS, ResultsError, validate


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

