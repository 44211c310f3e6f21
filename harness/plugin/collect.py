"""Scenario files become pytest items, one per file, whose id is the scenario name.

Without a backend an item checks the fit model against the file's `expect`; with
`--cluster=NAME` it runs the scenario on that backend and checks the outcome against both
`expect` and the fit model. A mismatch is reported as a readable diff, not a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.backends.base import Backend, Unsupported
from harness.errors import HarnessError
from harness.fit import FitResult
from harness.results.observation import Observation
from harness.results.report import (
    has_expectations,
    model_against_expect,
    observed_against_both,
    predict,
)
from harness.scenario.loader import load_scenario
from harness.scenario.model import Scenario
from harness.scenario.notices import emit

BACKEND_KEY = pytest.StashKey[Any]()

RERUN_PROPERTY = "kth-rerun"
"""An item's user property (junit <property>) per attempt discarded because the
infrastructure failed under it; the plugin's terminal summary lists them."""
PHASES_PROPERTY = "kth-phases"
"""A scenario's seconds per phase on a cluster (JSON: {"shape": 0.51, "steps": 8.75}),
relayed by xdist workers like every user property, for the slowest-scenarios summary."""
CPU_PROPERTY = "kth-cpu"
"""A scenario's CPU seconds per cluster component on a cluster (JSON), for the durations
record (--store-durations) and the summary: wall time minus it is waiting."""


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
        emit(scenario.warnings)
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
        # What runtest saw, kept for the HTML report (harness/plugin/html_report.py).
        self.predicted: FitResult | None = None
        self.observed: Observation | None = None

    def runtest(self) -> None:
        if self.problem or self.scenario is None:
            raise ScenarioMismatch(self.problem)
        scenario = self.scenario
        # The file says no answer holds there, or the version run makes its upgrade none.
        if inapplicable := scenario.undetermined_on() or scenario.no_upgrade():
            pytest.skip(inapplicable)
        predicted, no_model = predict(scenario)
        self.predicted = predicted
        backend: Backend | None = self.config.stash.get(BACKEND_KEY, None)
        if backend is None:
            if predicted is None and scenario.fault_features():
                pytest.skip(f"fit model: {no_model}")  # faults: not modelled yet (issue 13)
            if predicted is None:
                raise ScenarioMismatch(no_model)
            if not has_expectations(scenario):
                pytest.skip("no expectations to check without a cluster: run with --cluster=local")
            comparison = model_against_expect(scenario, predicted)
        else:
            try:
                observed = backend.run(scenario)
            except Unsupported as why:
                pytest.skip(f"{backend.name} backend: {why}{self._model_still_agrees(predicted)}")
            self.observed = observed
            self.user_properties += [(RERUN_PROPERTY, line) for line in observed.incidents]
            if observed.phases:
                self.user_properties.append((PHASES_PROPERTY, json.dumps(observed.phases)))
            if observed.cpu:
                self.user_properties.append((CPU_PROPERTY, json.dumps(observed.cpu)))
            comparison = observed_against_both(scenario, predicted, observed, no_model)
        if not comparison.agrees:
            raise ScenarioMismatch(comparison.render())

    def _model_still_agrees(self, predicted: FitResult | None) -> str:
        """Where the backend refuses the scenario, the fit model's prediction is still held
        to the file's expectations: a skip never hides a wrong expectation or a wrong model."""
        assert self.scenario is not None
        if predicted is None or not has_expectations(self.scenario):
            return ""
        comparison = model_against_expect(self.scenario, predicted)
        if not comparison.agrees:
            raise ScenarioMismatch(comparison.render())
        return " (the fit model agrees with the file's expectations)"

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
