"""Kueue's ClusterQueueSpec for a scenario's ClusterQueue, every default spelled out: one
home for the runner (which creates it on a cluster) and the sim (which hands it to Kueue's
webhook and cache), so both give Kueue the same queue."""

from __future__ import annotations

from typing import Any

from harness.k8s.quantity import format_quantity
from harness.scenario.model import ClusterQueue, ResourceGroup, ResourceQuota

Spec = dict[str, Any]


def cluster_queue_spec(cq: ClusterQueue) -> Spec:
    """queueingStrategy, preemption, flavorFungibility, resourceGroups and cohortName (when
    set), stopPolicy (when not None), namespaceSelector (when not `{}`) and admissionScope;
    the caller adds what only it needs (name, the `{}` selector)."""
    borrow: Spec = {"policy": cq.preemption.borrow_within_cohort}
    if cq.preemption.max_priority_threshold is not None:
        borrow["maxPriorityThreshold"] = cq.preemption.max_priority_threshold
    spec: Spec = {
        "queueingStrategy": cq.queueing_strategy,
        "preemption": {
            "withinClusterQueue": cq.preemption.within_cluster_queue,
            "reclaimWithinCohort": cq.preemption.reclaim_within_cohort,
            "borrowWithinCohort": borrow,
        },
        "flavorFungibility": {
            "whenCanBorrow": cq.fungibility.when_can_borrow,
            "whenCanPreempt": cq.fungibility.when_can_preempt,
        },
        "resourceGroups": [_group(g) for g in cq.resource_groups],
    }
    if cq.fungibility.preference is not None:
        spec["flavorFungibility"]["preference"] = cq.fungibility.preference
    if cq.fair_weight is not None:
        spec["fairSharing"] = {"weight": format_quantity(cq.fair_weight)}
    if cq.cohort:
        spec["cohortName"] = cq.cohort
    if cq.stop_policy != "None":
        spec["stopPolicy"] = cq.stop_policy
    if cq.namespace_selector.as_dict():
        spec["namespaceSelector"] = cq.namespace_selector.as_dict()
    if cq.admission_mode is not None:
        spec["admissionScope"] = {"admissionMode": cq.admission_mode}
    if cq.admission_checks:
        spec["admissionChecksStrategy"] = {
            "admissionChecks": [
                {"name": r.name, **({"onFlavors": list(r.on_flavors)} if r.on_flavors else {})}
                for r in cq.admission_checks
            ]
        }
    return spec


def _group(g: ResourceGroup) -> Spec:
    return {
        "coveredResources": list(g.covered),
        "flavors": [
            {"name": f.name, "resources": [_quota(q) for q in f.resources]} for f in g.flavors
        ],
    }


def _quota(q: ResourceQuota) -> Spec:
    out: Spec = {"name": q.name, "nominalQuota": format_quantity(q.nominal)}
    if q.borrowing_limit is not None:
        out["borrowingLimit"] = format_quantity(q.borrowing_limit)
    if q.lending_limit is not None:
        out["lendingLimit"] = format_quantity(q.lending_limit)
    return out


def resource_groups_spec(groups: tuple[ResourceGroup, ...]) -> list[Spec]:
    """resourceGroups in Kueue's shape (a Cohort's has the ClusterQueue's)."""
    return [_group(g) for g in groups]
