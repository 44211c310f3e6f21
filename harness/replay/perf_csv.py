"""`replay --format csv`: the per-class figures of Kueue's perf-test summary and each
ClusterQueue's usage (harness/replay/perf_summary.py) as one table, a row per workload class,
ClusterQueue class and ClusterQueue, for a spreadsheet or a comparison of runs."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from typing import Any

COLUMNS = (
    "world", "kind", "name", "count", "totalEvictions", "averageTimeToAdmissionMs",
    "averageTimeToFinishMs", "cpuUsed", "cpuAverageUsage", "nominalQuota", "firstEventTime",
    "lastEventTime", "usage",
)  # fmt: skip
"""The figures' names as in the JSON (`summary.kueuePerf`); a cell a kind has no figure for
is empty."""


def render_csv(results: Mapping[str, Mapping[str, Any]]) -> str:
    """One table for the replays in `results` (world name -> the replay's JSON form)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, COLUMNS, restval="", lineterminator="\n")
    writer.writeheader()
    for world, result in results.items():
        summary = result["summary"]
        perf = summary["kueuePerf"]
        for name, figures in perf["workloadClasses"].items():
            writer.writerow({"world": world, "kind": "workloadClass", "name": name, **figures})
        for name, figures in perf["clusterQueueClasses"].items():
            writer.writerow({"world": world, "kind": "clusterQueueClass", "name": name,
                             **_cells(figures)})  # fmt: skip
        for name, usage in summary["clusterQueueUsage"].items():
            writer.writerow({"world": world, "kind": "clusterQueue", "name": name,
                             "usage": _cell(usage)})  # fmt: skip
    return out.getvalue()


def _cells(figures: Mapping[str, Any]) -> dict[str, Any]:
    return {key: _cell(value) for key, value in figures.items()}


def _cell(value: Any) -> Any:
    """None (no figure: the queue was watched for no time) is an empty cell."""
    return "" if value is None else value
