"""The fit model's quota view of a pod set: Kueue's Configuration `resources` section applied
(harness.kueue.quota_requests, rules §12), for the places that count quota; the TAS step and
kube-scheduler keep reading `PodSet.requests`, the pod's own requests, as Kueue does.

Modelled for Kueue v0.19.2; excludeResourcePrefixes alone also for v0.17/v0.18 (the same code
there), the rest refused on them (their transformation arithmetic differs, rules §12).
"""

from __future__ import annotations

from harness.kueue.quota_requests import Resources, declared_only, quota_requests
from harness.kueue.versions import DEFAULT_KUEUE
from harness.scenario.model import ClusterQueue, PodSet, Scenario

QUOTA_CHECK_GATE = "QuotaCheckStrategy"
"""Beta and on by default in v0.19 (pkg/features/kube_features.go)."""


def pod_quota(scenario: Scenario, pod_set: PodSet) -> Resources:
    """What one pod of `pod_set` counts against quota (exact quantities)."""
    return quota_requests(scenario.kueue_config.resources, pod_set.requests)


def counted(scenario: Scenario, cq: ClusterQueue, resource: str) -> bool:
    """Whether `resource` takes part in the quota check of `cq`: always, unless
    quotaCheckStrategy IgnoreUndeclared skips a resource no resource group covers."""
    if cq.group_of(resource) is not None:
        return True
    gate = scenario.feature_gates.get(QUOTA_CHECK_GATE, True)
    return not declared_only(scenario.kueue_config.resources, gate)


def not_modelled(scenario: Scenario, version: str) -> str | None:
    """Why the fit model cannot run the scenario's `resources` section on `version`, or None."""
    section = scenario.kueue_config.document.get("resources") or {}
    if version == DEFAULT_KUEUE:
        return None
    beyond = [k for k in ("transformations", "quotaCheckStrategy") if section.get(k)]
    if beyond:
        return f"{beyond[0]}: modelled for Kueue {DEFAULT_KUEUE} only, not {version}"
    return None
