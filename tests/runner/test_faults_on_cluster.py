"""Fault scenarios on real Kueue (the embedded cluster): every file under suites/faults, the
steps done as a failing node or kubelet would (harness/runner/faults.py), and one planted wrong
expectation that must fail with a readable difference.

Marked `cluster` (enable with --cluster-tests or --cluster=local): `make test` runs them.
Expectations come from the scenario files, never from a previous run. Only the file's
expectations are compared here: the fit model's prediction of faults is tested against the
same files elsewhere, and real Kueue is the truth both answer to.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.results.report import expectation_lines
from harness.runner.backend import ClusterBackend
from harness.scenario.loader import load_scenario
from harness.scenario.model import Expectation

pytestmark = pytest.mark.cluster
REPO = Path(__file__).resolve().parents[2]
FAULTS = sorted((REPO / "suites" / "faults").glob("*.yaml"))


@pytest.mark.parametrize("path", FAULTS, ids=[p.stem for p in FAULTS])
def test_fault_scenario_holds_on_real_kueue(
    path: Path, runner: ClusterBackend, suite_runs_as_items: Callable[[str], bool]
) -> None:
    if suite_runs_as_items("faults"):
        pytest.skip("suites/faults runs on this cluster as scenario items in this session")
    scenario = load_scenario(path)
    observed = runner.run(scenario)
    lines = expectation_lines(scenario, observed.outcomes, observed.steps)
    assert not lines, "\n".join([*lines, observed.details, f"artifacts: {observed.artifacts}"])


def test_wrong_replacement_node_fails_with_the_nodes_named(runner: ClusterBackend) -> None:
    """A planted wrong `replaced` (b1-r2-n1 instead of Kueue's b1-r2-n2) after a node
    deletion must fail, and the report must name both: the step really is compared."""
    scenario = load_scenario(
        REPO / "suites" / "faults" / "faults-hotswap-delete-node-replaced-in-block.yaml"
    )
    (step,) = scenario.steps
    assert step.expect is not None
    right = step.expect["ranks"]
    wrong: Expectation = dataclasses.replace(
        right, placement=None, replaced={"main": {"b1-r1-n1": ("b1-r2-n1",)}}
    )
    planted = dataclasses.replace(
        scenario, steps=(dataclasses.replace(step, expect={"ranks": wrong}),)
    )
    observed = runner.run(planted)
    lines = expectation_lines(planted, observed.outcomes, observed.steps)
    assert lines, "a wrong replacement node was accepted"
    text = "\n".join(lines)
    assert "b1-r2-n1" in text and "b1-r2-n2" in text and "replaced" in text, text
    assert not expectation_lines(scenario, observed.outcomes, observed.steps), (
        "the right expectation must hold on the same run"
    )
