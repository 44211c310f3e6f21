"""Scenario files become pytest items, one per file, whose id is the scenario name.

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
    """One scenario file: one item, whose id is the scenario's `name` (the file's stem when
    the file does not load; the item then fails with the loader's one-line error)."""

    def collect(self) -> Iterator[ScenarioItem]:
        try:
            scenario = load_scenario(self.path)
        except HarnessError as err:
            yield ScenarioItem.from_parent(self, name=self.path.stem, problem=str(err))
            return
        yield ScenarioItem.from_parent(self, name=scenario.name, scenario=scenario)


class NotAScenario(pytest.File):
    """A YAML file named on the command line that is no scenario: a one-line collection error."""

    def __init__(self, *, reason: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.reason = reason

    def collect(self) -> Iterator[pytest.Item]:
        raise self.CollectError(f"{self.path}: {self.reason}")


class ScenarioItem(pytest.Item):
    def __init__(
        self, *, scenario: Scenario | None = None, problem: str = "", **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.scenario = scenario
        self.problem = problem

    def runtest(self) -> None:
        if self.problem or self.scenario is None:
            raise ScenarioMismatch(self.problem)
        scenario = self.scenario
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


def refuse_duplicate_names(items: list[pytest.Item]) -> None:
    """Scenario names are unique among the collected ones: the name is the test id that
    reports and `-k` use. Every later file with a taken name fails, naming the first."""
    first: dict[str, Path] = {}
    for item in items:
        if not isinstance(item, ScenarioItem) or item.scenario is None:
            continue
        name = item.scenario.name
        if name in first and first[name] != item.path:
            item.problem = (
                f"{item.path}: name: {name!r} is also the name of {first[name]} "
                "(scenario names are unique among the collected scenarios)"
            )
        first.setdefault(name, item.path)


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
