"""The fit model's quota view of a pod set: Kueue's Configuration `resources` section applied
(harness.kueue.quota_requests, rules §12), for the places that count quota; the TAS step and
kube-scheduler keep reading `PodSet.requests`, the pod's own requests, as Kueue does.

The transformation arithmetic and the QuotaCheckStrategy gate's default are per version
(KueueRules.transformations_kept_apart, quota_check_strategy_field).
"""

from __future__ import annotations

from harness.errors import Nondeterministic, UnsupportedVersionError
from harness.fit.resources import ResourceVector
from harness.fit.tas_step import PerPod, TasRequest
from harness.fit.versions import RULES, KueueRules
from harness.kueue.quota_requests import (
    BeyondInt64,
    OutputNameClash,
    Resources,
    declared_only,
    pod_set_units,
    quota_requests,
    quota_requests_before_v0_19,
)
from harness.kueue.versions import DEFAULT_KUEUE
from harness.scenario.model import ClusterQueue, PodSet, Scenario

QUOTA_CHECK_GATE = "QuotaCheckStrategy"
"""Beta and on by default in v0.19, alpha and off in v0.18 (pkg/features/kube_features.go)."""


def _rules(scenario: Scenario) -> KueueRules:
    """The rules of the version the scenario runs (engine.check_supported refuses a version
    the model does not model; callers outside the fit model read it as v0.19.2)."""
    return RULES.get(scenario.kueue or DEFAULT_KUEUE, RULES[DEFAULT_KUEUE])


def pod_quota(scenario: Scenario, pod_set: PodSet) -> Resources:
    """What one pod of `pod_set` counts against quota (exact quantities)."""
    config = scenario.kueue_config.resources
    if _rules(scenario).transformations_kept_apart:
        return quota_requests(config, pod_set.requests)
    try:
        return quota_requests_before_v0_19(config, pod_set.requests)
    except BeyondInt64 as big:
        raise UnsupportedVersionError(
            f"{scenario.path}: kueueConfig.resources: pod set {pod_set.name} counts {big} "
            f"beyond int64, which Kueue {scenario.kueue} wraps or reads as 0 by how the "
            "quantity is stored (Quantity.Value): not modelled"
        ) from None
    except OutputNameClash as clash:
        raise Nondeterministic(
            f"{scenario.path}: kueueConfig.resources.transformations: pod set {pod_set.name} "
            f"keeps {clash} and a transformation outputs it: Kueue {scenario.kueue} adds "
            "the output to it or overwrites it in Go map order (workload.go "
            "applyResourceTransformations)"
        ) from None


def counted(scenario: Scenario, cq: ClusterQueue, resource: str) -> bool:
    """Whether `resource` takes part in the quota check of `cq`: always, unless
    quotaCheckStrategy IgnoreUndeclared skips a resource no resource group covers."""
    if cq.group_of(resource) is not None:
        return True
    gate = _rules(scenario).gate(scenario, QUOTA_CHECK_GATE)
    return not declared_only(scenario.kueue_config.resources, gate)


def not_modelled(scenario: Scenario, version: str) -> str | None:
    """Why the fit model cannot run the scenario's `resources` section on `version`, or None."""
    section = scenario.kueue_config.document.get("resources") or {}
    rules = RULES[version]
    if "quotaCheckStrategy" in section and not rules.quota_check_strategy_field:
        return (
            f"quotaCheckStrategy: not a field of Kueue {version}'s Configuration (new in "
            "v0.18; the sim refuses it too)"
        )
    upgrades = [str(s.target) for s in scenario.steps if s.action == "upgrade-kueue"]
    changes = any(
        RULES[v].transformations_kept_apart != rules.transformations_kept_apart
        for v in upgrades
        if v in RULES
    )
    if section.get("transformations") and changes:
        return (
            "transformations: their arithmetic changes at v0.19 (KueueRules."
            "transformations_kept_apart); an upgrade-kueue across it is not modelled (the "
            "sim and the embedded cluster run it)"
        )
    return None


def tas_view(scenario: Scenario, cq: ClusterQueue) -> PerPod | None:
    """What one admitted pod holds on its node where that is not its pod spec, else None.
    v0.17.1 (KueueRules.tas_usage_from_pod_spec off) takes it from the quota the workload
    holds: the admission's resourceUsage divided by the count (workload.go
    totalRequestsFromAdmission, flavorassigner.go:95-104 for the resources of a TAS
    flavor), so the `resources` section reaches the nodes there (an excluded or replaced
    resource is not counted on them, an output is)."""
    section = scenario.kueue_config.resources
    if _rules(scenario).tas_usage_from_pod_spec:
        return None
    if not section.exclude_prefixes and not section.transformations:
        return None

    def per_pod(tr: TasRequest) -> ResourceVector:
        group = next(
            (g for g in cq.resource_groups if any(f.name == tr.flavor for f in g.flavors)), None
        )
        out: ResourceVector = {}
        for r, q in pod_quota(scenario, tr.pod_set).items():
            if group is None or r not in group.covered or r == "pods" or not tr.pod_set.count:
                continue
            total = pod_set_units(r, q, tr.pod_set.count)
            count = tr.pod_set.count
            # Requests.Divide: Go's int64 division, truncating toward zero
            out[r] = total // count if total >= 0 else -(-total // count)
        return out

    return per_pod
