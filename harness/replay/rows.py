"""Stream files of rows: JSONL (one workload a line, in the scenario's `workloads[]` shape)
and CSV (one pod set a row; the rows of one workload share its name). Each row becomes
("line N", workload data) for the loader (harness.scenario.loader.with_stream), so a row is
validated exactly as a scenario's workload is and an error names the file and the line.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from harness.errors import InputError, did_you_mean

Row = tuple[str, Any]

CSV_WORKLOAD = ("name", "submitAt", "runFor", "queue", "priorityClass", "class")
"""Columns that describe the workload: equal (or empty) on every row of one workload."""
CSV_POD_SET = ("podSet", "count", "requests", "topologyMode", "topologyLevel", "sliceLevel",
               "sliceSize")  # fmt: skip
CSV_COLUMNS = CSV_WORKLOAD + CSV_POD_SET
CSV_REQUIRED = ("name", "count", "requests")
DEFAULT_POD_SET = "main"


def read_rows(path: Path) -> list[Row]:
    """The workloads of a .jsonl or .csv stream file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(str(path), "", f"cannot read: {err}") from None
    if path.suffix == ".jsonl":
        return _jsonl(str(path), text)
    if path.suffix == ".csv":
        return _csv(str(path), text)
    raise InputError(str(path), "", "a stream file is .jsonl, .csv, or a YAML scenario")


def _jsonl(file: str, text: str) -> list[Row]:
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append((f"line {number}", json.loads(line)))
        except json.JSONDecodeError as err:
            raise InputError(file, f"line {number}", f"not JSON: {err.msg}") from None
    if not rows:
        raise InputError(file, "", "no workloads (one JSON object a line)")
    return rows


def _csv(file: str, text: str) -> list[Row]:
    reader = csv.DictReader(text.splitlines())
    header = reader.fieldnames or []
    for column in header:
        if column not in CSV_COLUMNS:
            hint = did_you_mean(column, CSV_COLUMNS)
            raise InputError(
                file, "line 1", f"unknown column {column!r}" + (f": {hint}" if hint else "")
                + f" (allowed: {', '.join(CSV_COLUMNS)})"
            )  # fmt: skip
    for column in CSV_REQUIRED:
        if column not in header:
            raise InputError(file, "line 1", f"missing required column {column!r}")
    workloads: dict[str, tuple[str, dict[str, Any]]] = {}
    for number, row in enumerate(reader, 2):
        where = f"line {number}"
        if None in row:
            raise InputError(file, where, f"more fields than the {len(header)} columns")
        cells = {k: v.strip() for k, v in row.items() if v is not None and v.strip()}
        if not cells:
            continue
        name = cells.get("name", "")
        if not name:
            raise InputError(file, f"{where}.name", "must be a non-empty string")
        first = workloads.get(name)
        if first is None:
            first = workloads[name] = (where, _workload_cells(cells))
        else:
            _same_workload(file, where, first[1], cells)
        first[1]["podSets"].append(_pod_set_cells(file, where, cells))
    if not workloads:
        raise InputError(file, "", "no workloads (a header line, then one pod set a row)")
    return list(workloads.values())


def _workload_cells(cells: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {"name": cells["name"], "podSets": []}
    for key in ("submitAt", "runFor"):
        if key in cells:
            out[key] = _number(cells[key])
    for key in ("queue", "priorityClass", "class"):
        if key in cells:
            out[key] = cells[key]
    return out


def _same_workload(file: str, where: str, first: dict[str, Any], cells: dict[str, str]) -> None:
    """A later row of the same workload adds a pod set; its workload columns, where given,
    must say what the first row said."""
    again = _workload_cells(cells)
    for key in CSV_WORKLOAD[1:]:
        if key in again and again[key] != first.get(key):
            raise InputError(
                file, f"{where}.{key}",
                f"{cells[key]!r} differs from the first row of workload {cells['name']!r}",
            )  # fmt: skip


def _pod_set_cells(file: str, where: str, cells: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": cells.get("podSet", DEFAULT_POD_SET),
        "count": _number(cells.get("count", "")),
        "requests": _requests(file, f"{where}.requests", cells.get("requests", "")),
    }
    topology = {
        key: _number(cells[column]) if key == "sliceSize" else cells[column]
        for key, column in (("mode", "topologyMode"), ("level", "topologyLevel"),
                            ("sliceLevel", "sliceLevel"), ("sliceSize", "sliceSize"))
        if column in cells
    }  # fmt: skip
    if topology:
        out["topology"] = topology
    return out


def _requests(file: str, where: str, text: str) -> dict[str, str]:
    """`nvidia.com/gpu=8;cpu=32` -> {resource: quantity text} (the loader parses them)."""
    out: dict[str, str] = {}
    for part in text.split(";"):
        if not part.strip():
            continue
        name, sep, quantity = part.partition("=")
        if not sep or not name.strip() or not quantity.strip():
            raise InputError(
                file, where, f"{part.strip()!r} is not RESOURCE=QUANTITY (e.g. nvidia.com/gpu=8)"
            )
        out[name.strip()] = quantity.strip()
    if not out:
        raise InputError(
            file, where, "needs at least one RESOURCE=QUANTITY (e.g. nvidia.com/gpu=8)"
        )
    return out


def _number(text: str) -> int | float | str:
    """A cell as the number it spells, else the text (the loader then says what it wanted)."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text
