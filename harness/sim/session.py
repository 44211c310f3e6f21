"""One scenario's Kueue kept running in kueue-sim between requests (harness/sim/go/session.go):
a stream replay gives it one event at a time and reads back only the outcomes that changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.sim.process import SimProcess


class SimSession:
    """The opening answer (the world's Line) is `opening`; `ask` sends one step (contract
    form) and returns its answer: {"changed": {...}, "unstable": [...], "error": ...}."""

    def __init__(self, process: SimProcess, scenario: Mapping[str, Any]) -> None:
        self.process = process
        self.opening = process.run({**scenario, "session": True})
        self._open = not self.opening.get("error")

    def ask(self, step: Mapping[str, Any]) -> dict[str, Any]:
        if not self._open:
            raise RuntimeError("a kueue-sim session that did not open takes no steps")
        answer = self.process.run({"step": step})
        if answer.get("outcome", "") is None:  # the process died: SimProcess's crash answer
            self._open = False
        return answer

    def close(self) -> None:
        """End the session (the process stays for the next scenario)."""
        if self._open:
            self._open = False
            self.process.run({"end": True})
