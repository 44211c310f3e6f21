"""The HTML report: a rack-and-GPU map of every scenario (issue 15).

`report_page` is the pytest run's report (harness/plugin/html_report.py gathers it);
`oracle_page` is `python -m harness oracle FILE --format html`; `outcomes_page` draws any
outcomes on a scenario's cluster (a snapshot and what Kueue's scheduler did with it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from harness.fit import FitResult
from harness.html.page import page
from harness.html.results import scenario_result
from harness.html.section import ScenarioResult, scenario_section
from harness.html.summary import RunInfo, summary
from harness.results.observation import Observation
from harness.results.outcome import Outcome
from harness.scenario.model import Scenario

__all__ = ["RunInfo", "ScenarioResult", "oracle_page", "outcomes_page", "report_page"]


def report_page(results: Sequence[ScenarioResult], run: RunInfo) -> str:
    sections = [scenario_section(result, f"s{i}") for i, result in enumerate(results)]
    return page("Kueue TAS harness: scenario report", summary(results, run), sections)


def oracle_page(scenario: Scenario, predicted: FitResult) -> str:
    """The fit model's placement of one scenario (beside the file's `expect` where they
    differ)."""
    result = scenario_result(scenario, predicted)
    return page(f"{scenario.name}: the fit model's placement", "", [scenario_section(result, "s0")])


def outcomes_page(
    scenario: Scenario,
    outcomes: Mapping[str, Outcome],
    steps: Sequence[Mapping[str, Outcome]] = (),
    label: str = "",
    *,
    first_title: str = "",
    notes: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """What a backend did (`label` names it, e.g. "sim"), drawn on the scenario's cluster,
    e.g. for `harness simulate --format html` on a snapshot of a live cluster. `first_title`
    names the first state; `notes`, per workload, lines shown under it in the last state."""
    observed = Observation(dict(outcomes), [dict(s) for s in steps])
    result = replace(
        scenario_result(scenario, None, observed, backend=label),
        first_title=first_title,
        notes={name: tuple(lines) for name, lines in (notes or {}).items()},
    )
    return page(f"{scenario.name}: placement", "", [scenario_section(result, "s0")])
