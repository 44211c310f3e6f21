"""Log tails for failure reports, in one place: the last lines of a log, and the lines of a
log that mention given names. Every crash, failed build and failed wait quotes its log
through here, so they all read alike."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

TAIL_LINES = 30
"""Enough for a Go panic's first frames or a bad flag's usage message, short enough to read."""


def last_lines(text: str, n: int = TAIL_LINES) -> str:
    """The last n lines of a text."""
    return "\n".join(text.splitlines()[-n:]) if n > 0 else ""


TAIL_BLOCK = 64 * 1024
"""Bytes read at a time from a log's end."""


def tail(path: Path, n: int = TAIL_LINES) -> str:
    """The last n lines of a text file ("" when it cannot be read, e.g. not written yet).
    Read from the end, block by block: a runner waiting on gated pods asks for the last 500
    lines of Kueue's log at each look, and reading the whole log (15 MB by the end of a
    make e2e worker) cost 40 ms a look."""
    if n <= 0:
        return ""
    try:
        with path.open("rb") as log:
            start = log.seek(0, os.SEEK_END)
            data = b""
            # More than n newlines: the first line read may be cut, the last n are whole.
            while start > 0 and data.count(b"\n") <= n:
                step = min(TAIL_BLOCK, start)
                start -= step
                log.seek(start)
                data = log.read(step) + data
    except OSError:
        return ""
    return last_lines(data.decode(errors="replace"), n)


def quoted_tail(path: Path, n: int = TAIL_LINES) -> str:
    """`last lines of PATH:` and the tail, for the end of an error message."""
    return f"last lines of {path}:\n{tail(path, n)}"


def lines_about(text: str, names: Iterable[str]) -> str:
    """The lines mentioning one of the names (e.g. a scenario's Workloads), else all of it."""
    wanted = [n for n in names if n]
    hits = [line for line in text.splitlines() if any(n in line for n in wanted)]
    return "\n".join(hits) if hits else text


NOISE = ("Skip Workload",)
"""Messages Kueue v0.19.2 logs about every Workload without saying anything of it: MultiKueue's
workload reconciler, with no MultiKueue admission check, logs `Skip Workload` at V(2) for each
(pkg/controller/admissionchecks/multikueue/workload.go:214)."""
_NOISY_SOURCE = "multikueue"
_PLUMBING = frozenset(
    ("ts", "level", "msg", "caller", "logger", "controller", "controllerGroup", "controllerKind",
     "reconcileID", "namespace", "name", "Workload", "stacktrace", "replica-role",
     "apiVersion")
)  # fmt: skip
"""controller-runtime's fields on every reconcile line (and Kueue's `replica-role`, the same
on each); the workload is said once, as `workload=NAMESPACE/NAME`."""


def log_lines_about(text: str, names: Iterable[str], limit: int = 25) -> list[str]:
    """The last `limit` lines of a log that mention one of the names, without the noise; a
    JSON line (Kueue's zap log) as `time level message key=value...`, others as written."""
    wanted = [n for n in names if n]
    out = []
    for line in text.splitlines():
        if not any(n in line for n in wanted):
            continue
        entry = _json(line)
        if entry is None:
            out.append(line)
        elif not _noise(entry):
            out.append(format_entry(entry))
    return out[-limit:] if limit > 0 else []


def _json(line: str) -> dict[str, Any] | None:
    if not line.startswith("{"):
        return None
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    return entry if isinstance(entry, dict) else None


def _noise(entry: Mapping[str, Any]) -> bool:
    source = f"{entry.get('logger', '')} {entry.get('controller', '')}"
    return entry.get("msg") in NOISE or _NOISY_SOURCE in source


def format_entry(entry: Mapping[str, Any]) -> str:
    """`07:33:22.123 info  message workload=ns/name key=value` (zap's `Level(-2)` as V2)."""
    ts = str(entry.get("ts", ""))
    clock = ts[11:23] if len(ts) >= 23 and ts[10] == "T" else ts
    level = str(entry.get("level", ""))
    if level.startswith("Level(-"):
        level = "V" + level[len("Level(-") :].rstrip(")")
    fields = []
    if "workload" not in entry and isinstance(entry.get("Workload"), Mapping):
        fields.append(f"workload={_value(entry['Workload'])}")
    elif "workload" not in entry and entry.get("namespace") and entry.get("name"):
        fields.append(f"workload={entry['namespace']}/{entry['name']}")  # a reconcile line
    fields += [f"{k}={_value(v)}" for k, v in entry.items() if k not in _PLUMBING]
    return " ".join([clock, f"{level:<5}", str(entry.get("msg", "")), *fields])


def _value(value: Any) -> str:
    """An object reference as NAMESPACE/NAME (or NAME), anything else as compact JSON."""
    if isinstance(value, Mapping) and set(value) <= {"name", "namespace"} and "name" in value:
        return "/".join(str(value[k]) for k in ("namespace", "name") if value.get(k))
    if isinstance(value, str):
        return value[:300]
    return json.dumps(value, separators=(",", ":"))[:300]
