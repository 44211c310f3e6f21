"""Where a scenario runs for real: the small interface every backend offers, and the lookup.

A backend takes a validated Scenario and reports what Kueue did with each workload, in the
same Outcome form the fit model predicts. `sim` runs Kueue's scheduler in process; `local`,
`kind` and `existing` run Jobs on a real API server with real Kueue.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from harness.errors import HarnessError
from harness.outcome import Outcome
from harness.scenario import Scenario


class BackendError(HarnessError):
    """A backend could not run a scenario (not a mismatch: an infrastructure failure)."""


class Unsupported(HarnessError):
    """The backend cannot show what this scenario asks (the reason says what and why)."""


@dataclass
class Observation:
    """What Kueue did: outcomes after submission and after each step, plus evidence."""

    outcomes: dict[str, Outcome]
    steps: list[dict[str, Outcome]] = field(default_factory=list)
    details: str = ""
    artifacts: Path | None = None


class Backend(Protocol):
    name: str

    def run(self, scenario: Scenario) -> Observation:
        """Run the scenario; raise Unsupported for what this backend cannot show."""
        ...

    def close(self) -> None:
        """Release everything the backend started (idempotent)."""
        ...


BACKENDS: dict[str, str] = {
    "sim": "harness.sim_backend:SimBackend",
    "local": "harness.runner.backend:ClusterBackend",
    "kind": "harness.runner.backend:ClusterBackend",
    "existing": "harness.runner.backend:ClusterBackend",
}
"""Backend name -> "module:Class"; imported on first use so unused ones cost nothing."""


def create_backend(name: str, **options: Any) -> Backend:
    if name not in BACKENDS:
        raise BackendError(f"unknown backend {name!r}; known: {', '.join(sorted(BACKENDS))}")
    module, _, attr = BACKENDS[name].partition(":")
    try:
        cls = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as err:
        raise BackendError(f"backend {name!r} is not available: {err}") from None
    backend: Backend = cls(name=name, **options)
    return backend
