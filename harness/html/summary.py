"""The report's head: passed and failed per suite folder, the backend, Kueue's version and
the durations."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from harness.html.section import ScenarioResult

STATUSES = ("passed", "failed", "error", "skipped")


@dataclass(frozen=True)
class RunInfo:
    backend: str
    kueue: str
    duration: float
    started: str


def summary(results: Sequence[ScenarioResult], run: RunInfo) -> str:
    folders: dict[str, dict[str, float]] = {}
    for result in results:
        row = folders.setdefault(result.folder, dict.fromkeys((*STATUSES, "seconds"), 0.0))
        row[result.status] = row.get(result.status, 0) + 1
        row["seconds"] += result.duration
    head = "".join(f"<th>{s}</th>" for s in (*STATUSES, "seconds"))
    rows = [
        f"<tr><td>{escape(folder or '.')}</td>"
        + "".join(f"<td>{int(row[s]) or ''}</td>" for s in STATUSES)
        + f"<td>{row['seconds']:.2f}</td></tr>"
        for folder, row in sorted(folders.items())
    ]
    totals = {s: sum(1 for r in results if r.status == s) for s in STATUSES}
    line = ", ".join(f"{n} {s}" for s, n in totals.items() if n)
    return (
        f"<p>{len(results)} scenarios: {escape(line)} · backend: <b>{escape(run.backend)}</b>"
        f" · Kueue {escape(run.kueue)} · {run.duration:.1f} s · started {escape(run.started)}"
        ' · <label><input type="checkbox" id="only-failed"> failed only</label></p>'
        f'<table class="sum"><tr><th>suite</th>{head}</tr>{"".join(rows)}</table>'
    )
