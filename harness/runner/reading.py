"""Reading what Kueue decided: a Workload's state, its placement, and where pods landed."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.kube import condition
from harness.runner.decode import lowest_level_pods

Obj = dict[str, Any]
# Reasons Kueue uses while a workload is still waiting for its first evaluation.
UNEVALUATED = ("PendingEvaluation",)
NO_CONDITION = "no QuotaReserved condition"


@dataclass(frozen=True)
class State:
    """admitted / reserved (quota reserved, waiting for admission checks) / pending
    (evaluated and refused) / unsettled, with what was seen."""

    kind: str
    message: str = ""

    @property
    def settled(self) -> bool:
        return self.kind in ("admitted", "reserved", "pending")


def state(wl: Obj | None) -> State:
    """Admitted: QuotaReserved and Admitted True. Pending: QuotaReserved False with a
    scheduler message. Anything else (absent, not yet evaluated) is unsettled."""
    if wl is None:
        return State("unsettled", "Workload absent")
    reserved = condition(wl, "QuotaReserved")
    admitted = condition(wl, "Admitted")
    if reserved and reserved.get("status") == "True":
        if admitted and admitted.get("status") == "True":
            return State("admitted")
        if _checks_waiting(wl):
            return State("reserved")
        return State("unsettled", "QuotaReserved=True, Admitted not yet True")
    refused = reserved is not None and reserved.get("status") == "False"
    if (
        refused
        and reserved
        and reserved.get("message")
        and reserved.get("reason") not in UNEVALUATED
    ):
        return State("pending", str(reserved["message"]))
    seen = (
        "no QuotaReserved condition"
        if reserved is None
        else (
            f"QuotaReserved={reserved.get('status')} ({reserved.get('reason')}: "
            f"{reserved.get('message', '')})"
        )
    )
    return State("unsettled", seen)


def _checks_waiting(wl: Obj) -> bool:
    """Holding quota, not admitted: some check is Pending and none is Retry or Rejected
    (Kueue's workload controller soon evicts or deactivates a workload with one of those,
    and admits one whose checks are all Ready). Without UnadmittedWorkloadsObservability
    (off in v0.19.2) Kueue writes no Admitted condition while it waits
    (pkg/workload/admissionchecks.go SyncAdmittedCondition)."""
    states = [c.get("state") for c in (wl.get("status") or {}).get("admissionChecks") or []]
    return "Pending" in states and not any(s in ("Retry", "Rejected") for s in states)


def admission_placement(wl: Obj, rename: Mapping[str, str]) -> dict[str, dict[str, int]]:
    """Pod set -> lowest-level value -> pods, from status.admission (v1beta2).

    `rename` maps Kueue's pod set names to the scenario's (a Job's one pod set is "main")."""
    admission = (wl.get("status") or {}).get("admission") or {}
    out: dict[str, dict[str, int]] = {}
    for psa in admission.get("podSetAssignments") or []:
        name = rename.get(psa.get("name", "main"), psa.get("name", "main"))
        ta = psa.get("topologyAssignment")
        out[name] = lowest_level_pods(ta) if ta else {}
    return out


def pods_placement(pods: Iterable[Obj], lowest_value: Mapping[str, str]) -> dict[str, int]:
    """Lowest-level value -> pods, from where kube-scheduler bound the pods.

    `lowest_value` maps node name -> that node's lowest-level topology label value."""
    out: dict[str, int] = {}
    for pod in pods:
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name:
            continue
        key = lowest_value.get(node_name, f"<node {node_name} without the lowest level label>")
        out[key] = out.get(key, 0) + 1
    return out


def bound(pods: Iterable[Obj]) -> int:
    return sum(1 for p in pods if (p.get("spec") or {}).get("nodeName"))


PREEMPTED = "Preempted"
EVICTION_MESSAGE = "Preempted to accommodate"
"""How Kueue's eviction message starts (pkg/scheduler/preemption: preemptionMessage); a victim
keeps it as its pending message until the scheduler evaluates it again."""
PENDING_PREEMPTION = "Pending the preemption of"
"""A preemptor's pending message while its victims still hold quota (rules §7)."""


def admission_flavors(
    wl: Obj, rename: Mapping[str, str], groups: Sequence[Sequence[str]]
) -> dict[str, str]:
    """Pod set -> the ResourceFlavor it was admitted on, from status.admission.

    A pod set whose resources got flavors from several resource groups reports them joined
    by "," in resource-group order (`groups`: each group's covered resources, in the
    ClusterQueue's order; resources outside every group come last)."""
    admission = (wl.get("status") or {}).get("admission") or {}
    rank = {r: i for i, covered in enumerate(groups) for r in covered}
    out: dict[str, str] = {}
    for psa in admission.get("podSetAssignments") or []:
        name = rename.get(psa.get("name", "main"), psa.get("name", "main"))
        by_resource: Mapping[str, str] = psa.get("flavors") or {}
        ordered: list[str] = []
        for resource in sorted(by_resource, key=lambda r: (rank.get(r, len(rank)), r)):
            if by_resource[resource] not in ordered:
                ordered.append(by_resource[resource])
        out[name] = ",".join(ordered)
    return out


def evictions(wl: Obj | None, reason: str = PREEMPTED) -> int:
    """How often Kueue evicted the workload for `reason` (status.schedulingStats.evictions):
    the durable record, kept when a victim is admitted again (rules §6.5)."""
    stats = ((wl or {}).get("status") or {}).get("schedulingStats") or {}
    return sum(
        int(e.get("count") or 0) for e in stats.get("evictions") or [] if e.get("reason") == reason
    )


def preempted(wl: Obj | None) -> bool:
    """Kueue evicted the workload by preemption at some point: an eviction recorded with
    reason Preempted, or Evicted (reason Preempted) / Preempted conditions still True."""
    if evictions(wl) > 0:
        return True
    evicted = condition(wl, "Evicted") if wl else None
    if evicted and evicted.get("status") == "True" and evicted.get("reason") == PREEMPTED:
        return True
    cond = condition(wl, "Preempted") if wl else None
    return bool(cond and cond.get("status") == "True")


def evicted_now(wl: Obj | None) -> bool:
    """The Evicted condition is True: Kueue decided the eviction, the quota may still be held."""
    cond = condition(wl, "Evicted") if wl else None
    return bool(cond and cond.get("status") == "True")
