"""States Kueue accepts that a hand-written file most likely did not mean: one-line warnings.

Kueue lets a workload ask for a topology level no flavor has (it waits, each flavor skipped),
and a node can hold more than its allocatable (a GPU marked unhealthy under running pods), so
the loader accepts both, as Kueue does. A snapshot of a live cluster holds such states for
real; a hand-written file more likely holds a typo, so it gets `FILE: key.path: problem`, the
shape of the Kueue-key typo warnings (harness.kueue.key_check).
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass, field
from typing import Any

from harness.scenario.keypath import KeyPath

SNAPSHOT_KEY = "x-snapshot"
"""What `harness snapshot` writes at the top of every file it makes (harness/live/snapshot.py)."""


class ScenarioWarning(UserWarning):
    """A scenario file holds a state Kueue accepts but a typo most likely made."""


@dataclass
class Notices:
    """The warnings of one file, in the order the loader met them."""

    lines: list[str] = field(default_factory=list)

    def add(self, at: KeyPath, problem: str) -> None:
        line = f"{at.file}: {at.path}: {problem}"
        if line not in self.lines:
            self.lines.append(line)


def for_file(data: Any, notices: Notices) -> tuple[str, ...]:
    """The warnings worth showing: none for a snapshot (its states are the cluster's)."""
    is_snapshot = isinstance(data, dict) and SNAPSHOT_KEY in data
    return () if is_snapshot else tuple(notices.lines)


def show_on_stderr(lines: tuple[str, ...], prog: str = "warning") -> None:
    """Each line once on stderr (the CLI commands); never changes an exit code."""
    for line in lines:
        print(f"{prog}: {line}", file=sys.stderr)


def emit(lines: tuple[str, ...]) -> None:
    """Each line as a ScenarioWarning (pytest lists them; the run goes on)."""
    for line in lines:
        warnings.warn(ScenarioWarning(line), stacklevel=2)
