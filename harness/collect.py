"""Scenario files under suites/ become pytest items, one per file, whose id is the scenario name.

Without a backend an item checks the fit model against the file's `expect`; with
`--cluster=NAME` it runs the scenario on that backend and checks the outcome against both
`expect` and the fit model. A mismatch is reported as a readable diff, not a traceback.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from harness.backends import Backend, Observation, Unsupported
from harness.errors import HarnessError
from harness.fit import FitResult, fit
from harness.loader import load_scenario
from harness.outcome import Outcome
from harness.scenario import Expectation, Scenario
from harness.verdict import against_expectations, against_prediction

BACKEND_KEY = pytest.StashKey[Any]()


class ScenarioMismatch(Exception):
    """Kueue, the file's expectations and the fit model do not all agree."""


class ScenarioFile(pytest.File):
    def collect(self) -> Iterator[ScenarioItem]:
        yield ScenarioItem.from_parent(self, name=self.path.stem)


class ScenarioItem(pytest.Item):
    def runtest(self) -> None:
        scenario = _load(self.path)
        if scenario.name != self.path.stem:
            raise ScenarioMismatch(
                f"{self.path}: name: {scenario.name!r} must equal the file name {self.path.stem!r}"
            )
        predicted = _predict(scenario)
        backend: Backend | None = self.config.stash.get(BACKEND_KEY, None)
        if backend is None:
            self._check_oracle_only(scenario, predicted)
            return
        try:
            observed = backend.run(scenario)
        except Unsupported as why:
            pytest.skip(f"{backend.name} backend: {why}")
        report = _report(scenario, predicted, observed)
        if report:
            raise ScenarioMismatch(report)

    def _check_oracle_only(self, scenario: Scenario, predicted: FitResult) -> None:
        if scenario.expect is None and not any(s.expect for s in scenario.steps):
            pytest.skip("no expectations to check without a cluster: run with --cluster=local")
        lines = _expectation_lines(scenario, predicted.outcomes, predicted.steps)
        if lines:
            raise ScenarioMismatch(
                f"scenario {scenario.name}: the fit model disagrees with the file's expect "
                f"({scenario.path})\n" + "\n".join(f"  {line}" for line in lines)
            )

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, ScenarioMismatch | HarnessError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"scenario {self.name}"


def _load(path: Path) -> Scenario:
    try:
        return load_scenario(path)
    except HarnessError as err:
        raise ScenarioMismatch(str(err)) from None


def _predict(scenario: Scenario) -> FitResult:
    try:
        return fit(scenario)
    except HarnessError as err:
        raise ScenarioMismatch(str(err)) from None


def _expectation_lines(
    scenario: Scenario, outcomes: Mapping[str, Outcome], steps: list[dict[str, Outcome]]
) -> list[str]:
    lines = against_expectations(scenario.expect or {}, outcomes)
    for index, step in enumerate(scenario.steps):
        if step.expect and index < len(steps):
            expect: Mapping[str, Expectation] = step.expect
            lines += [
                f"after step {index + 1} ({step.action}): {line}"
                for line in against_expectations(expect, steps[index])
            ]
    return lines


def _report(scenario: Scenario, predicted: FitResult, observed: Observation) -> str:
    sections = []
    expect_lines = _expectation_lines(scenario, observed.outcomes, observed.steps)
    if expect_lines:
        sections.append("Kueue vs the file's expect:\n" + "\n".join(f"  {x}" for x in expect_lines))
    oracle_lines = against_prediction(predicted.outcomes, observed.outcomes)
    for index, (want, got) in enumerate(zip(predicted.steps, observed.steps, strict=False)):
        oracle_lines += [f"after step {index + 1}: {x}" for x in against_prediction(want, got)]
    if oracle_lines:
        sections.append("Kueue vs the fit model:\n" + "\n".join(f"  {x}" for x in oracle_lines))
    if not sections:
        return ""
    head = f"scenario {scenario.name} ({scenario.path}): Kueue, expect and the fit model disagree"
    tail = [observed.details] if observed.details else []
    if observed.artifacts is not None:
        tail.append(f"artifacts: {observed.artifacts}")
    return "\n".join([head, *sections, *tail])
