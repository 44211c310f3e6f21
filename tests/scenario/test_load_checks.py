"""Admission checks in a scenario: what the loader builds (the refusals are in
tests/data/malformed/ac-*.yaml) and which checks a workload needs."""

from __future__ import annotations

from pathlib import Path

from harness.kueue.admission_checks import required_checks
from harness.kueue.queue_activity import inactive_reason
from harness.scenario.loader import load_scenario
from harness.scenario.model import CheckChange, CheckRule

SUITE = Path(__file__).parents[2] / "suites" / "admission-checks"


def test_v1beta1_list_becomes_rules_for_every_flavor() -> None:
    sc = load_scenario(SUITE / "ac-two-checks-both-must-be-ready.yaml")
    assert sc.cluster_queues[0].admission_checks == (CheckRule("budget"), CheckRule("capacity"))
    capacity = sc.admission_checks[1]
    assert capacity.parameters == {
        "apiGroup": "example.com",
        "kind": "CapacityConfig",
        "name": "default",
    }
    assert capacity.active


def test_strategy_keeps_on_flavors_and_steps_name_the_check() -> None:
    sc = load_scenario(SUITE / "ac-on-flavors-check-only-for-one-flavor.yaml")
    cq = sc.cluster_queues[0]
    assert cq.admission_checks == (CheckRule("h100-capacity", ("h100",)),)
    assert sc.steps[0].target == CheckChange("big", "h100-capacity", "Ready")
    assert sc.expect is not None and sc.expect["big"].quota_reserved is True
    assert sc.expect["big"].placement == {"main": {"h100-n1": 4, "h100-n2": 4}}
    assert sc.expect["small"].quota_reserved is None


def test_required_checks_follow_the_admission_flavors() -> None:
    cq = load_scenario(SUITE / "ac-on-flavors-check-only-for-one-flavor.yaml").cluster_queues[0]
    assert required_checks(cq, None) == set()  # not for every flavor: not listed before
    assert required_checks(cq, {"h100"}) == {"h100-capacity"}
    assert required_checks(cq, {"a100"}) == set()


def test_inactive_and_missing_checks_make_the_queue_inactive() -> None:
    inactive = load_scenario(SUITE / "ac-inactive-check-makes-queue-inactive.yaml")
    missing = load_scenario(SUITE / "ac-missing-check-makes-queue-inactive.yaml")
    for sc in (inactive, missing):
        training, serving = sc.cluster_queues
        assert inactive_reason(training, sc.admission_checks) is not None
        assert inactive_reason(serving, sc.admission_checks) is None
