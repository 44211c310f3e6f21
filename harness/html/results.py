"""Gather what one scenario's report section shows: the file's `expect`, what a backend
observed, the fit model's prediction and its verdict on every workload left waiting."""

from __future__ import annotations

from dataclasses import replace

from harness.errors import HarnessError
from harness.fit import FitResult, fit
from harness.html.section import ScenarioResult
from harness.html.sources import Source, expected_source, fit_source, observed_source
from harness.results.observation import Observation
from harness.scenario.model import Scenario


def scenario_result(
    scenario: Scenario,
    predicted: FitResult | None,
    observed: Observation | None = None,
    *,
    backend: str = "",
    status: str = "",
    text: str = "",
    duration: float = 0.0,
    folder: str = "",
) -> ScenarioResult:
    """Sources in display order: expected, then Kueue on `backend`, then the fit model (the
    last shown alone when all agree)."""
    sources: list[Source] = []
    expected = expected_source(scenario)
    if expected is not None:
        sources.append(expected)
    if predicted is not None:
        sources.append(fit_source(predicted, fit_verdicts(scenario, predicted)))
    if observed is not None:
        sources.append(observed_source(f"Kueue ({backend})" if backend else "Kueue", observed))
    return ScenarioResult(scenario, tuple(sources), scenario.name, status, text, duration, folder)


def fit_verdicts(scenario: Scenario, predicted: FitResult) -> list[dict[str, str]]:
    """The fit model's last word on each workload not admitted, per state (after the
    submissions, after each step); states where all are admitted cost nothing."""
    states = [predicted.outcomes, *predicted.steps]
    verdicts: list[dict[str, str]] = []
    for index, state in enumerate(states):
        found: dict[str, str] = {}
        if any(not o.admitted for o in state.values()):
            _trace_into(replace(scenario, steps=scenario.steps[:index]), found)
        verdicts.append(found)
    return verdicts


def _trace_into(scenario: Scenario, found: dict[str, str]) -> None:
    def trace(label: str, tree: object, verdict: str) -> None:
        if tree is None:
            found[label] = verdict

    try:
        fit(scenario, trace=trace)
    except HarnessError:
        found.clear()
