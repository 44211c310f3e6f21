"""The fit model's per-version quota rules (harness.fit.versions: quota_beyond_int64_unlimited,
transformations_kept_apart, quota_check_strategy_field; harness.fit.resource_transform
tas_view), on suite files. Each outcome named here is what Kueue's own code gave in the sim
of that version (2026-12-07)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness.errors import Nondeterministic, UnsupportedVersionError
from harness.fit import fit
from harness.scenario.loader import load_scenario
from harness.scenario.model import Scenario

RESOURCES = Path(__file__).resolve().parents[2] / "suites" / "resources"
NO_LONGER_FITS = "Workload no longer fits after processing another workload"


def on(name: str, version: str) -> Scenario:
    return dataclasses.replace(load_scenario(RESOURCES / f"{name}.yaml"), kueue=version)


def test_unlimited_quota_lends_nothing_from_v0_18_and_is_refused_before() -> None:
    for version in ("v0.18.2", "v0.19.2"):
        outcome = fit(on("res-unlimited-quota-lends-nothing", version)).outcomes
        assert not outcome["borrows-a"].admitted
        assert outcome["borrows-b"].admitted
    with pytest.raises(UnsupportedVersionError, match="nominalQuota: a quota beyond int64"):
        fit(on("res-unlimited-quota-lends-nothing", "v0.17.1"))


def test_v0_17_asks_the_nodes_for_a_replaced_resources_outputs() -> None:
    """v0.17.1 counts an admitted TAS pod's quota view on its node, and its Fits check asks
    the nodes for example.com/accelerator-memory, which they do not have."""
    small = fit(on("res-replace-drops-retain-keeps-input", "v0.17.1")).outcomes["small"]
    assert not small.admitted
    assert small.message == NO_LONGER_FITS
    assert fit(on("res-replace-drops-retain-keeps-input", "v0.18.2")).outcomes["small"].admitted


def test_quota_check_strategy_follows_the_gate_default_per_version() -> None:
    train = fit(on("res-ignore-undeclared-skips-uncovered", "v0.18.2")).outcomes["train"]
    assert not train.admitted
    assert "example.com/nic unavailable in ClusterQueue" in train.message
    assert fit(on("res-ignore-undeclared-skips-uncovered", "v0.19.2")).outcomes["train"].admitted
    with pytest.raises(UnsupportedVersionError, match=r"not a field of Kueue v0\.17\.1"):
        fit(on("res-ignore-undeclared-skips-uncovered", "v0.17.1"))


def test_an_output_named_like_a_kept_request_is_nondeterministic_before_v0_19() -> None:
    scenario = on("res-retain-cpu-credits-gate-admission", "v0.18.2")
    section = scenario.kueue_config.resources
    clash = dataclasses.replace(
        section.transformations[0],
        outputs={"cpu": section.transformations[0].outputs["example.com/cpu-credits"]},
        input="example.com/cpu-credits",
    )
    pod = scenario.workloads[0].pod_sets[0]
    both = dataclasses.replace(
        pod, requests={**pod.requests, "example.com/cpu-credits": pod.requests["cpu"]}
    )
    workload = dataclasses.replace(scenario.workloads[0], pod_sets=(both,))
    config = dataclasses.replace(
        scenario.kueue_config, resources=dataclasses.replace(section, transformations=(clash,))
    )
    clashing = dataclasses.replace(scenario, kueue_config=config, workloads=(workload,))
    with pytest.raises(Nondeterministic, match="adds the output to it or overwrites it"):
        fit(clashing)


def test_before_v0_19_several_failing_resources_are_map_order() -> None:
    """A resource no group covers beside a group with no room: v0.19 stops at the first in
    request order; v0.18.2 ranges over the requests map and stops at either
    (flavorassigner.go:679-704)."""
    scenario = on("res-ignore-undeclared-skips-uncovered", "v0.18.2")
    train = scenario.workloads[0]
    pod = train.pod_sets[0]
    big = dataclasses.replace(pod, count=7)  # 7 cpu of 6: no flavor fits
    both = dataclasses.replace(scenario, workloads=(dataclasses.replace(train, pod_sets=(big,)),))
    with pytest.raises(Nondeterministic, match="first failing resource in Go map order"):
        fit(both)
    newest = dataclasses.replace(both, kueue="v0.19.2", feature_gates={"QuotaCheckStrategy": False})
    message = fit(newest).outcomes["train"].message
    assert message == (
        "couldn't assign flavors to pod set main: resource example.com/nic unavailable in "
        "ClusterQueue"
    )
