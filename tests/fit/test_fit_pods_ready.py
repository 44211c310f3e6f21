"""waitForPodsReady in the fit model: timers it cannot time against a cluster are refused in
one line; a held workload blocks the next admission under blockAdmission; a test that can
fail: without the step nothing is evicted; a deactivation's parked workloads evaluated once or
twice (a race in Kueue) carry the one evaluation's message as the race."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import UnsupportedVersionError
from harness.fit import fit
from harness.scenario.loader import scenario_from_data
from harness.scenario.strict_yaml import parse_yaml

BASE = """
name: pr
kueueConfig: {waitForPodsReady: {timeout: 5s, requeuingStrategy: {backoffBaseSeconds: 3}}}
topologies: [{name: t, levels: [example.com/rack, kubernetes.io/hostname]}]
resourceFlavors: [{name: gpu, nodeLabels: {gpu: "y"}, topologyName: t}]
clusterQueues:
  - name: a
    resourceGroups:
      - coveredResources: [nvidia.com/gpu]
        flavors: [{name: gpu, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
nodes:
  - {name: n1, labels: {gpu: "y", example.com/rack: r1}, allocatable: {nvidia.com/gpu: 4, pods: 10}}
  - {name: n2, labels: {gpu: "y", example.com/rack: r2}, allocatable: {nvidia.com/gpu: 4, pods: 10}}
workloads: [{name: w, podSets: [{name: main, count: 4, requests: {nvidia.com/gpu: 1}}]}]
"""


def _fit(text: str):  # type: ignore[no-untyped-def]
    return fit(scenario_from_data(parse_yaml(text, "t.yaml"), "t.yaml"))


def test_timeout_evicts_and_readmits() -> None:
    result = _fit(BASE + "steps: [{pods-not-ready: w}]\n")
    after = result.steps[0]["w"]
    assert after.admitted and after.evicted is not None
    assert after.evicted.reason == "PodsReadyTimeout"


def test_without_a_short_timeout_nothing_is_evicted() -> None:
    text = BASE.replace("timeout: 5s, ", "").replace("kueueConfig", "kueueConfig")
    after = _fit(text + "steps: [{pods-not-ready: w}]\n").steps[0]["w"]
    assert after.admitted and after.evicted is None


def test_limit_zero_deactivates() -> None:
    text = BASE.replace("backoffBaseSeconds: 3", "backoffBaseSeconds: 3, backoffLimitCount: 0")
    after = _fit(text + "steps: [{pods-not-ready: w}]\n").steps[0]["w"]
    assert not after.admitted and after.evicted is not None
    assert after.evicted.reason == "Deactivated"


def test_block_admission_holds_the_next_workload() -> None:
    text = BASE.replace("timeout: 5s, ", "blockAdmission: true, ")
    steps = """steps:
  - pods-not-ready: w
  - submit: {name: v, podSets: [{name: main, count: 4, requests: {nvidia.com/gpu: 1}}]}
  - pods-ready: w
"""
    result = _fit(text + steps)
    assert "waiting for all admitted workloads" in result.steps[1]["v"].message
    assert result.steps[2]["v"].admitted


@pytest.mark.parametrize(
    ("section", "match"),
    [
        ("{timeout: 2s}", "timeout: 2s races the pods' start"),
        ("{timeout: 5s, requeuingStrategy: {backoffBaseSeconds: 60}}", "backoff of 60s"),
    ],
)
def test_timers_it_cannot_time_are_refused(section: str, match: str) -> None:
    text = BASE.replace(
        "{waitForPodsReady: {timeout: 5s, requeuingStrategy: {backoffBaseSeconds: 3}}}",
        "{waitForPodsReady: " + section + "}",
    )
    with pytest.raises(UnsupportedVersionError, match=match):
        _fit(text + "steps: [{pods-not-ready: w}]\n")


def test_a_short_timeout_over_pods_that_never_run_is_refused() -> None:
    # The lowest level is the rack: Kueue counts its two 4-GPU nodes as one pool of 8 and
    # admits a 6-GPU pod that no node can run (docs/kueue-findings.md).
    text = """
name: never
kueueConfig: {waitForPodsReady: {timeout: 5s}}
topologies: [{name: t, levels: [example.com/rack]}]
resourceFlavors: [{name: gpu, nodeLabels: {gpu: "y"}, topologyName: t}]
clusterQueues:
  - name: a
    resourceGroups:
      - coveredResources: [nvidia.com/gpu]
        flavors: [{name: gpu, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
nodes:
  - {name: n1, labels: {gpu: "y", example.com/rack: r1}, allocatable: {nvidia.com/gpu: 4, pods: 10}}
  - {name: n2, labels: {gpu: "y", example.com/rack: r1}, allocatable: {nvidia.com/gpu: 4, pods: 10}}
workloads: [{name: w, podSets: [{name: main, count: 1, requests: {nvidia.com/gpu: 6}}]}]
"""
    with pytest.raises(UnsupportedVersionError, match="never all run"):
        _fit(text)
    assert _fit(text.replace("timeout: 5s", "timeout: 10m")).outcomes["w"].admitted


TWO_HEADS = (
    Path(__file__).resolve().parents[2]
    / "suites/fuzz-regressions/fuzz-pods-ready-deactivated-requeues-twice-two-heads.yaml"
)
"""The regression this rule came from: fill, victim and big before hog times out thrice."""
NEEDED = "insufficient unused quota for nvidia.com/gpu in flavor h100, {} more needed"


def test_a_deactivation_evaluates_the_parked_workloads_once_or_twice() -> None:
    # hog deactivated: big is evaluated against hog's 2 GPUs ("1 more needed"), victim takes
    # one, and the second requeue evaluates big against the 1 left ("2 more needed"); one
    # evaluation only is Kueue's other order (pods_ready.requeued_twice).
    after = _fit(TWO_HEADS.read_text()).steps[0]
    assert after["hog"].message.startswith("The workload is deactivated")
    assert after["victim"].admitted and after["fill"].admitted
    big = after["big"]
    assert not big.admitted
    assert big.message.endswith(NEEDED.format(2))
    assert big.message_race is not None and big.message_race.endswith(NEEDED.format(1))
    assert after["hog"].message_race is None


def test_a_deactivation_with_nothing_parked_leaves_no_race() -> None:
    text = BASE.replace("backoffBaseSeconds: 3", "backoffBaseSeconds: 3, backoffLimitCount: 0")
    after = _fit(text + "steps: [{pods-not-ready: w}]\n").steps[0]["w"]
    assert after.message_race is None
