"""Fault steps on real Kueue (the embedded cluster): a planted wrong expectation must fail with
a readable difference. Every file under suites/faults runs as a scenario item in `make test`'s
pass on the embedded cluster (and `make e2e`), once.

Marked `cluster` (enable with --cluster-tests or --cluster=local).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness.results.report import expectation_lines
from harness.runner.backend import ClusterBackend
from harness.scenario.loader import load_scenario
from harness.scenario.model import Expectation

pytestmark = pytest.mark.cluster
REPO = Path(__file__).resolve().parents[2]


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
