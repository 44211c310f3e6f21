"""Kueue's own log as evidence that it reacted to a step: the lines written since a mark.

Some of Kueue's decisions leave no trace on any object: its TAS node controller finding a
node healthy for a workload writes nothing, and with `TASFailedNodeReplacementFailFast` off a
failed second pass leaves the Workload as it was. Kueue logs both at the verbosity the
embedded cluster runs it with (`--zap-log-level=2`):

- `Reconcile Node` (V(2), `pkg/controller/tas/node_controller.go: Reconcile`), with the
  node's name in the `name` key (`pkg/util/roletracker/logger.go: withRequestContext`);
- `Workload re-queued for second pass` (V(2), `pkg/scheduler/scheduler.go: requeueAndUpdate`),
  with the workload's name and namespace in the `workload` key.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

RECONCILE_NODE = "Reconcile Node"
SECOND_PASS_REQUEUED = "Workload re-queued for second pass"


class KueueLog:
    """Reads the JSON lines Kueue wrote to `path` after the last `mark()`."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.offset = 0
        self.mark()

    @property
    def available(self) -> bool:
        return self.path is not None and self.path.exists()

    def mark(self) -> None:
        """From now on, only lines written after this call count."""
        try:
            self.offset = self.path.stat().st_size if self.path is not None else 0
        except OSError:
            self.offset = 0

    def entries(self) -> Iterator[dict[str, Any]]:
        """The JSON log entries written since the mark (other lines are skipped)."""
        if self.path is None:
            return
        try:
            with self.path.open("rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return
        for raw in data.splitlines():
            try:
                entry = json.loads(raw)
            except ValueError:
                continue
            if isinstance(entry, dict):
                yield entry

    def reconciled(self, node: str) -> bool:
        """Kueue's TAS node controller has reconciled `node` since the mark."""
        return any(e.get("msg") == RECONCILE_NODE and e.get("name") == node for e in self.entries())

    def last_time(self, msg: str) -> float | None:
        """When Kueue last logged `msg` since the mark (epoch seconds of its `ts`), if ever."""
        last: float | None = None
        for e in self.entries():
            if e.get("msg") == msg and isinstance(e.get("ts"), str):
                try:
                    last = datetime.fromisoformat(e["ts"]).timestamp()
                except ValueError:
                    continue
        return last

    def second_passes_failed(self, namespace: str, workload: str) -> int:
        """How often the scheduler put the workload back in its second-pass queue (a second
        pass that found no replacement, with fail-fast off) since the mark."""
        return sum(
            1
            for e in self.entries()
            if e.get("msg") == SECOND_PASS_REQUEUED
            and _name(e.get("workload")) == workload
            and (e.get("workload") or {}).get("namespace") == namespace
        )


def _name(ref: Any) -> str:
    return str(ref.get("name", "")) if isinstance(ref, dict) else ""
