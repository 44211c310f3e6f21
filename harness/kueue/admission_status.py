"""The Workload `status.admission` and conditions of a workload admitted before a scenario
starts (contract v2 `admitted:`): one builder shared by the sim and the real-cluster runner,
so both write the same admission and Kueue reads the same thing on both.

The shape is what Kueue v0.19.2 writes itself (sigs.k8s.io/kueue@v0.19.2
pkg/scheduler/flavorassigner/flavorassigner.go: `PodSetAssignment.toAPI`): per pod set its
name, the flavor of every resource it requests (plus `pods` when its ClusterQueue covers
`pods`, as `assignFlavors` adds it), `resourceUsage` = count x per-pod request as the
Configuration's `resources` section counts it (harness.kueue.quota_requests), of the
resources a resource group covers, `count`, and for
a TAS flavor a v1beta2 `topologyAssignment` (pkg/cache/scheduler/tas_flavor_snapshot.go:
`buildAssignment`: only the hostname level when it is the lowest level, else every level;
domains sorted by their level values). The topology assignment uses the plain v1beta2 form
(one slice, individual values and counts; pkg/util/tas/tas_assignment.go reads it like the
compressed forms Kueue picks). Quantities are exact Kubernetes text (`harness.k8s.quantity`); the
API server may canonicalise them, so compare read-backs as parsed quantities.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from fractions import Fraction
from typing import Any

from harness.k8s.quantity import CPU, format_quantity
from harness.kueue.admission_checks import admitted_states
from harness.kueue.admitted_flavors import flavor_of
from harness.kueue.quota_requests import (
    BeyondInt64,
    OutputNameClash,
    pod_set_units,
    quota_requests,
    quota_requests_before_v0_19,
)
from harness.kueue.versions import before
from harness.scenario.model import (
    HOSTNAME,
    AdmittedPodSet,
    AdmittedWorkload,
    ClusterQueue,
    Scenario,
)

PODS = "pods"
ADMISSION_FIELD_MANAGER = "kueue-admission"
"""Kueue's own field manager for admission status (pkg/constants: AdmissionName): the harness
applies admissions under it so that Kueue's later eviction (an apply without `admission`)
removes them (server-side apply only removes fields the applier owns)."""


def admission_status(scenario: Scenario, admitted: AdmittedWorkload) -> dict[str, Any]:
    """`status.admission` for one `admitted` entry of the scenario."""
    cq = scenario.cluster_queue(admitted.queue)
    covers_pods = cq.group_of(PODS) is not None
    return {
        "clusterQueue": cq.name,
        "podSetAssignments": [
            _pod_set_assignment(scenario, cq, ps, covers_pods) for ps in admitted.pod_sets
        ],
    }


def _pod_set_assignment(
    scenario: Scenario, cq: ClusterQueue, admitted: AdmittedPodSet, covers_pods: bool
) -> dict[str, Any]:
    pod_set = admitted.pod_set
    per_pod = _per_pod_quota(scenario, pod_set.requests)
    # Kueue's own totals (int64 units per pod, rounded up, times the count), which its
    # Workload webhook requires to be a multiple of the count (workload_webhook.go).
    usage: dict[str, Fraction] = {
        resource: _from_units(resource, pod_set_units(resource, quantity, pod_set.count))
        for resource, quantity in per_pod.items()
        if quantity != 0
    }
    if covers_pods:
        usage[PODS] = Fraction(pod_set.count)
    # resourceUsage only of resources a resource group covers: Kueue's cache counts every
    # resourceUsage entry against its flavor, and the cohort's quota of it
    # (FlavorResourceUsage), while Kueue itself never holds quota for a resource no group
    # covers (IgnoreUndeclared skips it). The flavors stay: the entry's TAS usage is placed
    # on them (TASUsage), and they are the flavors it was admitted on.
    held = [r for r in sorted(usage) if cq.group_of(r) is not None]
    out: dict[str, Any] = {
        "name": pod_set.name,
        "flavors": {r: flavor_of(cq, admitted.flavor, r) for r in sorted(usage)},
        "resourceUsage": {resource: format_quantity(usage[resource]) for resource in held},
        "count": pod_set.count,
    }
    if admitted.placement is not None:
        out["topologyAssignment"] = topology_assignment(scenario, admitted)
    return out


def _per_pod_quota(scenario: Scenario, requests: Mapping[str, Fraction]) -> Mapping[str, Fraction]:
    """One pod's quota as the scenario's Kueue version computes it (KueueRules.
    transformations_kept_apart); where that version's answer is Go map order or overflows
    (the fit model refuses those), v0.19's."""
    config = scenario.kueue_config.resources
    if before(scenario.kueue, "v0.19.0"):
        try:
            return quota_requests_before_v0_19(config, requests)
        except (OutputNameClash, BeyondInt64):
            pass
    return quota_requests(config, requests)


def topology_assignment(scenario: Scenario, admitted: AdmittedPodSet) -> dict[str, Any]:
    """The v1beta2 TopologyAssignment of an admitted pod set's placement (node -> pods)."""
    flavor = scenario.resource_flavor(admitted.flavor)
    topology = next(t for t in scenario.topologies if t.name == flavor.topology_name)
    levels = (HOSTNAME,) if topology.levels[-1] == HOSTNAME else topology.levels
    domains = sorted(
        (
            tuple(
                node if level == HOSTNAME else scenario.node(node).labels[level] for level in levels
            ),
            count,
        )
        for node, count in (admitted.placement or {}).items()
    )
    return {
        "levels": list(levels),
        "slices": [
            {
                "domainCount": len(domains),
                "valuesPerLevel": [
                    {"individual": {"roots": [values[i] for values, _ in domains]}}
                    for i in range(len(levels))
                ],
                "podCounts": {"individual": [count for _, count in domains]},
            }
        ],
    }


def admission_conditions(cluster_queue: str, reserved_at: datetime) -> list[dict[str, Any]]:
    """The QuotaReserved and Admitted conditions Kueue sets on admission
    (pkg/workload/workload.go: SetQuotaReservation, and the Admitted condition)."""
    stamp = reserved_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    return [
        {
            "type": "QuotaReserved",
            "status": "True",
            "reason": "QuotaReserved",
            "message": f"Quota reserved in ClusterQueue {cluster_queue}",
            "lastTransitionTime": stamp,
        },
        {
            "type": "Admitted",
            "status": "True",
            "reason": "Admitted",
            "message": "The workload is admitted",
            "lastTransitionTime": stamp,
        },
    ]


def check_status(
    scenario: Scenario, admitted: AdmittedWorkload, reserved_at: datetime
) -> list[dict[str, Any]]:
    """status.admissionChecks of an `admitted` entry (harness.kueue.admission_checks
    .admitted_states), as Kueue's admission patch carries them (pkg/workload/patching:
    admissionChecksStatusPatch); empty when its ClusterQueue has no checks."""
    stamp = reserved_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    states = admitted_states(scenario.cluster_queue(admitted.queue), admitted)
    return [
        {"name": name, "state": state, "message": "", "lastTransitionTime": stamp}
        for name, state in states.items()
    ]


def admitted_status(
    scenario: Scenario, admitted: AdmittedWorkload, reserved_at: datetime
) -> dict[str, Any]:
    """The whole status of an `admitted` entry: admission, its check states, QuotaReserved
    and, once every check is Ready, Admitted (SyncAdmittedCondition)."""
    checks = check_status(scenario, admitted, reserved_at)
    conditions = admission_conditions(admitted.queue, reserved_at)
    if any(c["state"] != "Ready" for c in checks):
        conditions = [c for c in conditions if c["type"] != "Admitted"]
    out: dict[str, Any] = {
        "admission": admission_status(scenario, admitted),
        "conditions": conditions,
    }
    if checks:
        out["admissionChecks"] = checks
    return out


def reservation_times(scenario: Scenario, now: datetime) -> dict[str, datetime]:
    """When each `admitted` entry reserved quota: whole seconds, one apart in file order, the
    last one second before `now` (Kueue orders preemption candidates by this time)."""
    base = now.replace(microsecond=0) - timedelta(seconds=len(scenario.admitted))
    return {a.name: base + timedelta(seconds=i) for i, a in enumerate(scenario.admitted)}


def _from_units(resource: str, units: int) -> Fraction:
    """A quantity from Kueue's int64 units (millicores for cpu; resources.ResourceQuantity)."""
    return Fraction(units, 1000) if resource == CPU else Fraction(units)
