"""A cluster's Kueue objects -> the version-2 world keys (docs/scenario-format-v2.md):
Topologies, ResourceFlavors, WorkloadPriorityClasses, Cohorts, ClusterQueues, written in Kueue's own
field names. What the contract has no words for is told to Gaps, naming the object."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from harness.kube import Obj
from harness.live import queue_objects
from harness.live.gaps import Gaps

CQ_UNREPRESENTED = {
    "concurrentAdmissionPolicy": "concurrent admission",
}
"""ClusterQueue spec fields contract v2 leaves out (load_queues.CQ_NOT_IN_V2 refuses them);
admission checks are written by harness.live.check_objects."""


EXPLAINED_INACTIVE = (
    "Stopped",
    "FlavorNotFound",
    "AdmissionCheckNotFound",
    "AdmissionCheckInactive",
)
"""Reasons of an inactive ClusterQueue the scenario holds (its stopPolicy, the missing flavor,
its checks as written by harness.live.check_objects), so its copy is inactive too. Kueue's
others (Terminating, TopologyNotFound, the MultiKueue ones) are said in Gaps."""


def _name(obj: Obj) -> str:
    return str(obj["metadata"]["name"])


def _spec(obj: Obj) -> dict[str, Any]:
    return dict(obj.get("spec") or {})


def topologies(items: Iterable[Obj]) -> list[Obj]:
    return [
        {"name": _name(t), "levels": [lv["nodeLabel"] for lv in _spec(t).get("levels") or []]}
        for t in sorted(items, key=_name)
    ]


def taint(t: Mapping[str, Any]) -> Obj:
    """A Kubernetes taint without timeAdded (the contract's key, value, effect)."""
    out: Obj = {"key": t["key"], "effect": t["effect"]}
    if t.get("value"):
        out["value"] = t["value"]
    return out


def toleration(t: Mapping[str, Any]) -> Obj:
    keys = ("key", "operator", "value", "effect", "tolerationSeconds")
    return {k: t[k] for k in keys if t.get(k) not in (None, "")}


def resource_flavors(items: Iterable[Obj], topology_names: set[str], gaps: Gaps) -> list[Obj]:
    out = []
    for rf in sorted(items, key=_name):
        spec, name = _spec(rf), _name(rf)
        entry: Obj = {"name": name}
        if spec.get("nodeLabels"):
            entry["nodeLabels"] = dict(spec["nodeLabels"])
        if spec.get("nodeTaints"):
            entry["nodeTaints"] = [taint(t) for t in spec["nodeTaints"]]
        if spec.get("tolerations"):
            entry["tolerations"] = [toleration(t) for t in spec["tolerations"]]
        topology = spec.get("topologyName")
        if topology and topology not in topology_names:
            gaps.add(
                f"ResourceFlavor {name}: its Topology {topology} does not exist (Kueue keeps "
                "ClusterQueues using it inactive); written without topologyName"
            )
        elif topology:
            entry["topologyName"] = topology
        out.append(entry)
    return out


def priority_classes(items: Iterable[Obj]) -> list[Obj]:
    return [
        {"name": _name(pc), "value": int(pc.get("value", 0))} for pc in sorted(items, key=_name)
    ]


def cluster_queues(items: Iterable[Obj], flavors: set[str], gaps: Gaps) -> list[Obj]:
    """Every ClusterQueue; one naming a flavor that does not exist is written as it is:
    the scenario keeps it inactive, as Kueue does (contract v2 since issue 29)."""
    out = []
    for cq in sorted(items, key=_name):
        entry = _cluster_queue(cq, flavors, gaps)
        if entry is not None:
            out.append(entry)
    return out


def _cluster_queue(cq: Obj, flavors: set[str], gaps: Gaps) -> Obj | None:
    spec, name = _spec(cq), _name(cq)
    groups = []
    for group in spec.get("resourceGroups") or []:
        groups.append(
            {
                "coveredResources": list(group.get("coveredResources") or []),
                "flavors": [_flavor_quotas(f) for f in group.get("flavors") or []],
            }
        )
    entry: Obj = {"name": name}
    if spec.get("cohortName"):
        entry["cohortName"] = spec["cohortName"]
    if spec.get("queueingStrategy"):
        entry["queueingStrategy"] = spec["queueingStrategy"]
    preemption = _preemption(spec.get("preemption") or {})
    if preemption:
        entry["preemption"] = preemption
    fungibility = spec.get("flavorFungibility") or {}
    keys = ("whenCanBorrow", "whenCanPreempt", "preference")  # contract v2 since issue 29
    kept = {k: fungibility[k] for k in keys if fungibility.get(k)}
    if kept:
        entry["flavorFungibility"] = kept
    if spec.get("stopPolicy") not in (None, "None"):  # contract v2 since issue 29
        entry["stopPolicy"] = spec["stopPolicy"]
    weight = (spec.get("fairSharing") or {}).get("weight")
    if weight is not None:
        entry["fairSharing"] = {"weight": str(weight)}
    entry.update(queue_objects.cluster_queue_keys(spec))  # namespaceSelector, admissionScope
    entry["resourceGroups"] = groups
    _unrepresented(cq, gaps)
    return entry


def _flavor_quotas(f: Mapping[str, Any]) -> Obj:
    resources = []
    for r in f.get("resources") or []:
        quota: Obj = {"name": r["name"], "nominalQuota": str(r.get("nominalQuota", "0"))}
        for key in ("borrowingLimit", "lendingLimit"):
            if r.get(key) is not None:
                quota[key] = str(r[key])
        resources.append(quota)
    return {"name": f["name"], "resources": resources}


def _preemption(p: Mapping[str, Any]) -> Obj:
    out: Obj = {}
    for key in ("withinClusterQueue", "reclaimWithinCohort"):
        if p.get(key) and p[key] != "Never":
            out[key] = p[key]
    borrow = p.get("borrowWithinCohort") or {}
    if borrow.get("policy") and borrow["policy"] != "Never":
        out["borrowWithinCohort"] = {"policy": borrow["policy"]}
        if borrow.get("maxPriorityThreshold") is not None:
            out["borrowWithinCohort"]["maxPriorityThreshold"] = borrow["maxPriorityThreshold"]
    return out


def _unrepresented(cq: Obj, gaps: Gaps) -> None:
    spec, name = _spec(cq), _name(cq)
    for key, what in CQ_UNREPRESENTED.items():
        if spec.get(key):
            gaps.add(f"ClusterQueue {name}: {what} ({key})")
    for cond in (cq.get("status") or {}).get("conditions") or []:
        explained = str(cond.get("reason")) in EXPLAINED_INACTIVE
        if cond.get("type") == "Active" and cond.get("status") != "True" and not explained:
            gaps.add(
                f"ClusterQueue {name}: inactive in Kueue ({cond.get('reason')}: "
                f"{cond.get('message')}); the snapshot's copy admits"
            )


def cohorts(items: Iterable[Obj], flavors: set[str], gaps: Gaps) -> list[Obj]:
    """Cohort objects as `cohorts:` entries (name, parentName, resourceGroups, fairSharing
    weight). A cycle of parents cannot be loaded (Kueue deactivates its ClusterQueues): its
    cohorts are left out, and so is a resource group naming a missing ResourceFlavor."""
    items = sorted(items, key=_name)
    parent_of = {_name(c): _spec(c).get("parentName") for c in items}
    out = []
    for cohort in items:
        spec, name = _spec(cohort), _name(cohort)
        if _in_cycle(name, parent_of):
            gaps.add(f"Cohort {name}: left out, its parents reach a cycle (Kueue deactivates it)")
            continue
        entry: Obj = {"name": name}
        if spec.get("parentName"):
            entry["parentName"] = spec["parentName"]
        groups = []
        for group in spec.get("resourceGroups") or []:
            missing = [f["name"] for f in group.get("flavors") or [] if f["name"] not in flavors]
            if missing:
                gaps.add(f"Cohort {name}: quota of missing ResourceFlavor {', '.join(missing)}")
                continue
            groups.append(
                {
                    "coveredResources": list(group.get("coveredResources") or []),
                    "flavors": [_flavor_quotas(f) for f in group.get("flavors") or []],
                }
            )
        if groups:
            entry["resourceGroups"] = groups
        weight = (spec.get("fairSharing") or {}).get("weight")
        if weight is not None:
            entry["fairSharing"] = {"weight": str(weight)}
        out.append(entry)
    return out


def _in_cycle(name: str, parent_of: Mapping[str, Any]) -> bool:
    """`hierarchy.HasCycle`: following parents from `name` comes back to a cohort seen."""
    seen: set[str] = set()
    node: str | None = name
    while node and parent_of.get(node):
        if node in seen:
            return True
        seen.add(node)
        node = parent_of.get(node)
    return False


def local_queues(items: Iterable[Obj]) -> list[Obj]:
    """namespace, name and ClusterQueue of every LocalQueue (x-snapshot.localQueues: the
    scenario names ClusterQueues; `simulate` maps a manifest's queue-name through these)."""
    out = []
    for lq in sorted(items, key=lambda o: (o["metadata"].get("namespace", ""), _name(o))):
        spec, meta = _spec(lq), lq["metadata"]
        out.append(
            {
                "namespace": meta.get("namespace", ""),
                "name": meta["name"],
                "clusterQueue": spec.get("clusterQueue", ""),
            }
        )
    return out
