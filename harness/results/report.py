"""The comparison report: what pytest, `python -m harness check` and `python -m harness run`
print when the fit model, the file's `expect` or Kueue disagree. One report, built here.

Each difference is one line from harness/results/comparison.py; this module groups them per pair
(Kueue vs expect, Kueue vs the fit model, the fit model vs expect) under one heading.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import HarnessError
from harness.fit import FitResult, fit
from harness.results.comparison import (
    against_expectations,
    against_prediction,
    differing_workloads,
)
from harness.results.observation import Observation
from harness.results.outcome import Outcome
from harness.scenario.model import Scenario


def expectation_lines(
    scenario: Scenario, outcomes: Mapping[str, Outcome], steps: Sequence[Mapping[str, Outcome]]
) -> list[str]:
    """Differences from the file's `expect` and from each step's `expect`."""
    lines = against_expectations(scenario.expect or {}, outcomes)
    for index, step in enumerate(scenario.steps):
        if step.expect and index < len(steps):
            lines += [
                f"after step {index + 1} ({step.action}): {line}"
                for line in against_expectations(step.expect, steps[index])
            ]
    return lines


def prediction_lines(
    predicted: FitResult, outcomes: Mapping[str, Outcome], steps: Sequence[Mapping[str, Outcome]]
) -> list[str]:
    """Differences from the fit model's prediction, after submission and after each step."""
    lines = against_prediction(predicted.outcomes, outcomes)
    for index, (want, got) in enumerate(zip(predicted.steps, steps, strict=False)):
        lines += [f"after step {index + 1}: {line}" for line in against_prediction(want, got)]
    return lines


def predict(scenario: Scenario) -> tuple[FitResult | None, str]:
    """The fit model's prediction, or None and why it cannot predict this scenario."""
    try:
        return fit(scenario), ""
    except HarnessError as err:
        return None, str(err)


def rerun_note(incidents: Sequence[str]) -> str:
    """What a report says of attempts discarded because the infrastructure failed."""
    if not incidents:
        return ""
    return (
        f"rerun on a fresh cluster: the infrastructure failed under {len(incidents)} earlier "
        "attempt(s), discarded: " + "; ".join(incidents)
    )


def has_expectations(scenario: Scenario) -> bool:
    return bool(scenario.expect) or any(step.expect for step in scenario.steps)


@dataclass(frozen=True)
class Comparison:
    """One scenario's differences; `render()` is the report, empty when everything agrees.

    `on_kueue`: a backend ran the scenario (Kueue is compared with expect and the fit model);
    otherwise only the fit model was compared with the file. `no_model` says why the fit model
    could not predict (it is then not compared, and that alone is no disagreement)."""

    scenario: Scenario
    vs_expect: list[str]
    vs_model: list[str] = field(default_factory=list)
    on_kueue: bool = False
    no_model: str = ""
    details: str = ""
    artifacts: Path | None = None
    incidents: tuple[str, ...] = ()

    @property
    def agrees(self) -> bool:
        return not self.vs_expect and not self.vs_model

    def render(self) -> str:
        """The report pytest prints for a failing scenario ("" when all agree)."""
        if self.agrees:
            return ""
        name, path = self.scenario.name, self.scenario.path
        if not self.on_kueue:
            head = f"scenario {name}: the fit model disagrees with the file's expect ({path})"
            return "\n".join([head, *_indented(self.vs_expect)])
        sections = [f"scenario {name} ({path}): Kueue, expect and the fit model disagree"]
        if self.vs_expect:
            sections += ["Kueue vs the file's expect:", *_indented(self.vs_expect)]
        if self.vs_model:
            sections += ["Kueue vs the fit model:", *_indented(self.vs_model)]
        if self.no_model:
            sections.append(f"(no fit model prediction: {self.no_model})")
        if self.details:
            sections.append(self.details)
        if self.artifacts is not None:
            sections.append(f"artifacts: {self.artifacts}")
        if self.incidents:
            sections.append(rerun_note(self.incidents))
        return "\n".join(sections)

    def summary(self) -> str:
        """One line for a scenario that agrees."""
        what = (
            "Kueue, expect and the fit model agree"
            if self.on_kueue
            else "the fit model agrees with the file's expect"
        )
        if self.no_model:
            what = f"Kueue agrees with the file's expect (no fit model prediction: {self.no_model})"
        line = f"{self.scenario.path}: scenario {self.scenario.name}: {what}"
        return f"{line}\n{rerun_note(self.incidents)}" if self.incidents else line


def model_against_expect(scenario: Scenario, predicted: FitResult) -> Comparison:
    """The fit model's prediction against the file's expectations (no cluster)."""
    return Comparison(scenario, expectation_lines(scenario, predicted.outcomes, predicted.steps))


def observed_against_both(
    scenario: Scenario, predicted: FitResult | None, observed: Observation, no_model: str = ""
) -> Comparison:
    """What Kueue did (on a backend) against the file's expectations and the fit model;
    `predicted` is None when the fit model could not predict, `no_model` saying why. When
    they disagree, the backend's evidence about the workloads that differ or wait is read."""
    vs_expect = expectation_lines(scenario, observed.outcomes, observed.steps)
    vs_model = (
        [] if predicted is None else prediction_lines(predicted, observed.outcomes, observed.steps)
    )
    details = observed.details
    if (vs_expect or vs_model) and observed.evidence is not None:
        found = observed.evidence(_suspects(scenario, predicted, observed))
        details = "\n".join(part for part in (details, found) if part)
    return Comparison(
        scenario,
        vs_expect,
        vs_model,
        on_kueue=True,
        no_model=no_model,
        details=details,
        artifacts=observed.artifacts,
        incidents=observed.incidents,
    )


def _suspects(scenario: Scenario, predicted: FitResult | None, observed: Observation) -> set[str]:
    """Workloads worth evidence: those still waiting, and those that differ, in any state."""
    states = [observed.outcomes, *observed.steps]
    names = {n for state in states for n, o in state.items() if not o.admitted and not o.rejected}
    expects = [scenario.expect or {}, *(step.expect or {} for step in scenario.steps)]
    wanted = [] if predicted is None else [predicted.outcomes, *predicted.steps]
    for index, got in enumerate(states):
        expect = expects[index] if index < len(expects) else {}
        want = wanted[index] if index < len(wanted) else None
        names |= differing_workloads(expect, want, got)
    return names


def _indented(lines: list[str]) -> list[str]:
    return [f"  {line}" for line in lines]
