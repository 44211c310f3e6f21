"""Kueue's own log as evidence that it reacted to a step: the lines written since a mark.

Some of Kueue's decisions leave no trace on any object: its TAS node controller finding a
node healthy for a workload writes nothing, and with `TASFailedNodeReplacementFailFast` off a
failed second pass leaves the Workload as it was. Kueue logs both at the verbosity the
embedded cluster runs it with (`--zap-log-level=2`):

- `Reconcile Node` (V(2), `pkg/controller/tas/node_controller.go: Reconcile`), with the
  node's name in the `name` key (`pkg/util/roletracker/logger.go: withRequestContext`);
- `Workload re-queued for second pass` (V(2), `pkg/scheduler/scheduler.go: requeueAndUpdate`),
  with the workload's name and namespace in the `workload` key;
- `Scheduling cycle starts`, `Attempting to schedule workload` and `Workload re-queued` (V(2),
  `pkg/scheduler/scheduler.go: schedule`, `requeueAndUpdate`), and `Workload create event` (V(2),
  `pkg/controller/core/workload_controller.go: Create`), the same in v0.17 to v0.19.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

RECONCILE_NODE = "Reconcile Node"
SECOND_PASS_REQUEUED = "Workload re-queued for second pass"
CYCLE_STARTS = "Scheduling cycle starts"
ATTEMPTED = "Attempting to schedule workload"
REQUEUED = "Workload re-queued"
CREATED = "Workload create event"
LOOP_CYCLES = 50
"""Scheduling cycles after which a workload Kueue keeps without a status counts as kept so:
Kueue evaluates a new head in the cycle after it arrives and writes its status then."""


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
        for raw in read_from(self.path, self.offset).splitlines():
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


def read_from(path: Path | None, offset: int) -> bytes:
    """What the log holds past `offset` (nothing when there is no log, or it cannot be read)."""
    if path is None:
        return b""
    try:
        with path.open("rb") as f:
            f.seek(offset)
            return f.read()
    except OSError:
        return b""


def _name(ref: Any) -> str:
    return str(ref.get("name", "")) if isinstance(ref, dict) else ""


class UnwrittenLoop:
    """Whether Kueue's log shows it keeps a workload without any status until something outside
    it changes: requeued LOOP_CYCLES times and never written (an admission the API server
    refuses, a group requeued at once to the flavor it just failed on), or never attempted
    while LOOP_CYCLES scheduling cycles ran since it arrived (behind such a head). Such a loop
    runs ~100 cycles a second and writes ~1,000 lines, so the log is read on from where the
    last call stopped, and only lines naming the workload are parsed."""

    def __init__(self, log: KueueLog, namespace: str, name: str, cycles: int = LOOP_CYCLES):
        self.path, self.offset, self.limit = log.path, log.offset, cycles
        self.keys = (f'"name":"{name}"'.encode(), f'"namespace":"{namespace}"'.encode())
        self.name, self.namespace = name, namespace
        self.cycles = self.attempted = self.requeued = 0

    def __call__(self) -> bool:
        self._read_on()
        if self.requeued >= self.limit:
            return True
        return self.attempted == 0 and self.cycles >= self.limit

    def _read_on(self) -> None:
        data = read_from(self.path, self.offset)
        whole = data.rfind(b"\n") + 1  # a line still being written is read next time
        self.offset += whole
        for raw in data[:whole].splitlines():
            cycle = CYCLE_STARTS.encode() in raw
            if not cycle and not all(k in raw for k in self.keys):
                continue
            try:
                entry = json.loads(raw)
            except ValueError:
                continue
            msg = entry.get("msg") if isinstance(entry, dict) else None
            if msg == CYCLE_STARTS:
                self.cycles += 1
            elif not self._names_it(entry):
                continue
            elif msg == CREATED:
                self.cycles = 0  # counted from its arrival in Kueue's queues
            elif msg == ATTEMPTED:
                self.attempted += 1
            elif msg == REQUEUED:
                self.requeued += 1

    def _names_it(self, entry: dict[str, Any]) -> bool:
        ref = entry.get("workload")
        return (
            _name(ref) == self.name
            and isinstance(ref, dict)
            and ref.get("namespace") == (self.namespace)
        )
