"""Admitted but unplaceable on real Kueue: the scenario fails at once, saying what happened.

Marked `cluster` (enable with --cluster=local or --cluster-tests). Before the runner watched
for kube-scheduler's verdict, the same scenario ended in the runner's 60 s pods timeout
("waited 60s for the 1 pods ... to be bound by kube-scheduler").
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from harness.fit import fit
from harness.results.report import observed_against_both
from harness.runner.backend import ClusterBackend
from harness.scenario.loader import load_scenario

pytestmark = pytest.mark.cluster
FINDINGS = Path(__file__).resolve().parents[2] / "suites" / "kueue-findings"


@pytest.mark.parametrize(
    ("file", "says"),
    [
        (
            "findings-rack-leaf-pod-larger-than-any-node.yaml",
            "kube-scheduler: 0/6 nodes are available: 3 Insufficient nvidia.com/gpu, "
            "3 node(s) didn't match Pod's node affinity/selector.",
        ),
        (
            "findings-rack-leaf-selector-names-other-rack.yaml",
            "2 pod(s) stay scheduling-gated (it selects cloud.example.com/rack=r1, its "
            "assigned domain has cloud.example.com/rack=r2); Kueue's ungater: failed ungating "
            "pod:",
        ),
    ],
)
def test_unexpected_unplaceable_pods_fail_in_seconds_with_the_reason(
    runner: ClusterBackend, file: str, says: str
) -> None:
    scenario = load_scenario(FINDINGS / file)
    expect = scenario.expect or {}
    without = {name: replace(want, unschedulable=None) for name, want in expect.items()}
    scenario = replace(scenario, name=f"{scenario.name}-unexpected", expect=without)
    observed = runner.run(scenario)
    seconds = runner.timings[scenario.name]  # shape, submit and read; not the cluster's start
    report = observed_against_both(scenario, fit(scenario), observed).render()
    (name,) = expect
    assert f"{name}: admitted by Kueue, but " in report
    assert "pod(s) can never run" in report and says in report
    assert "add `unschedulable: {main: " in report
    assert "Kueue vs the fit model" not in report  # the model predicted exactly this
    print(f"{scenario.name}: failed with the reason after {seconds:.1f} s")
    assert seconds < 20, f"took {seconds:.1f} s: the pods deadline is {runner.timeouts.pods} s"
