"""What a backend saw Kueue do with a scenario: the form every engine reports in."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path

from harness.results.outcome import Outcome


@dataclass
class Observation:
    """What Kueue did: outcomes after submission and after each step, plus evidence."""

    outcomes: dict[str, Outcome]
    steps: list[dict[str, Outcome]] = field(default_factory=list)
    details: str = ""
    artifacts: Path | None = None
    kueue: str = ""
    """The Kueue version that ran it ("" when the backend cannot know: an existing cluster)."""
    incidents: tuple[str, ...] = ()
    """Attempts discarded because the infrastructure failed under them, one line each; the
    outcomes are the last attempt's, on a fresh cluster."""
    phases: dict[str, float] = field(default_factory=dict)
    """Seconds per phase of the run (clear, shape, admit, submit, read, steps): where the
    time went, for the slowest-scenarios summary and the benchmarks."""
    cpu: dict[str, float] = field(default_factory=dict)
    """CPU seconds per component of the cluster (and the harness's own process) while it ran:
    wall time minus these is waiting, which more concurrent clusters can spend."""
    evidence: Callable[[Collection[str]], str] | None = field(default=None, repr=False)
    """Evidence about these workloads (scenario names): their conditions, events and Kueue's
    log lines, read on request while the cluster still holds them (until the backend's next
    run), so a run that agrees costs no reads."""
