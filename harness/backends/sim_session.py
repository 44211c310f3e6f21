"""A scenario's world kept running on kueue-sim, stepped one event at a time
(harness/sim/session.py), its answers as Outcomes: the stream replay's link to the sim
(harness/replay/onsim.py), which drives the clock."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.backends.base import BackendError
from harness.errors import Nondeterministic
from harness.results.outcome import Outcome
from harness.scenario.model import Scenario, Step
from harness.sim.contract import step_to_dict
from harness.sim.session import SimSession

if TYPE_CHECKING:
    from types import TracebackType


class SimStepper:
    """`with backend.session(world) as s: s.step(step)`: the outcomes the step changed."""

    def __init__(self, session: SimSession, scenario: Scenario) -> None:
        from harness.backends.sim import pending_throughout, sim_outcomes

        self._outcomes = sim_outcomes
        self._decided = pending_throughout
        self.session = session
        self.path = scenario.path
        if error := session.opening.get("error"):
            raise BackendError(f"{self.path}: kueue-sim: {error}")
        self._check(session.opening.get("unstable"))

    def step(self, step: Step) -> dict[str, Outcome]:
        answer = self.session.ask(step_to_dict(step))
        if error := answer.get("error"):
            raise BackendError(f"{self.path}: kueue-sim: {error}")
        self._check(answer.get("unstable"))
        return self._outcomes(answer.get("changed"))

    def _check(self, unstable: list[str] | None) -> None:
        """A workload whose admission alternates is a timeline Kueue does not settle on; one
        pending throughout whose message alternates is not (pending_throughout: the
        timeline holds no messages)."""
        unstable = [note for note in unstable or [] if not self._decided(note)]
        if unstable:
            raise Nondeterministic(
                f"{self.path}: Kueue never settles (rules §8): {'; '.join(unstable)}"
            )

    def __enter__(self) -> SimStepper:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        err: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.session.close()
