"""Reading what Kueue decided: a Workload's state, its placement, and where pods landed."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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
    """admitted / pending (evaluated and refused) / unsettled, with what was seen."""

    kind: str
    message: str = ""

    @property
    def settled(self) -> bool:
        return self.kind in ("admitted", "pending")


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
