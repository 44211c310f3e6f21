"""A cluster's Kueue Workloads -> the scenario's `admitted` and `workloads`.

Admitted: a Workload holding quota (QuotaReserved=True, not Finished), with the flavor and,
on a TAS flavor, the placement of each pod set as Kueue recorded them (status.admission;
harness.runner.decode reads the v1beta2 topology assignment). Pending: the other active
Workloads of a LocalQueue, in creation order (Kueue's queue order after priority), so a
simulated manifest queues behind them as it would. Pod sets are read from the Workload's
own templates by harness.live.manifests, as for a user's manifest.

A Workload is named after the object that owns it (its Job, JobSet, ...) where that name is
free, else after itself; `names` maps each scenario name back to NAMESPACE/WORKLOAD.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.kube import Obj
from harness.live import check_objects, naming
from harness.live.gaps import Gaps
from harness.live.manifests import PodSetSource, UserManifestError, pod_set_data
from harness.runner.decode import DecodeError, lowest_level_pods
from harness.scenario.keypath import KeyPath
from harness.scenario.model import HOSTNAME


@dataclass
class World:
    """What the workloads are checked against: the written ClusterQueues, flavors (name ->
    entry), topologies (name -> levels), node names, hostname values -> node names, and the
    LocalQueues and priority classes of the cluster."""

    cluster_queues: set[str]
    flavors: Mapping[str, Obj]
    topologies: Mapping[str, Sequence[str]]
    nodes: Sequence[Obj]
    hostnames: Mapping[str, str]
    local_queues: Sequence[Obj]
    priority_classes: dict[str, int]
    """WorkloadPriorityClass name -> value; synthetic ones are added as needed."""
    check_rules: Mapping[str, Sequence[Obj]] = field(default_factory=dict)
    """ClusterQueue -> the admissionChecksStrategy rules written for it."""
    group_flavors: Mapping[str, Sequence[Sequence[str]]] = field(default_factory=dict)
    """ClusterQueue -> the flavors of each resource group, in order."""
    levels: set[str] = field(init=False)

    def __post_init__(self) -> None:
        self.levels = {lv for levels in self.topologies.values() for lv in levels}


@dataclass
class Written:
    admitted: list[Obj] = field(default_factory=list)
    pending: list[Obj] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)
    """scenario name -> NAMESPACE/WORKLOAD."""
    owners: dict[str, str] = field(default_factory=dict)
    """NAMESPACE/KIND/NAME of the object that owns each (the Workload itself when nothing
    does) -> scenario name: what a manifest of that name would update, not create."""


class _Skip(Exception):
    """This workload cannot be written; the message says why (for Gaps)."""


def workloads(items: Iterable[Obj], world: World, gaps: Gaps) -> Written:
    out, taken = Written(), set[str]()
    inactive = unqueued = 0
    ordered = sorted(items, key=lambda w: (w["metadata"].get("creationTimestamp", ""), _ref(w)))
    for wl in ordered:
        status = wl.get("status") or {}
        if _condition(status, "Finished"):
            continue
        reserved = _condition(status, "QuotaReserved") and status.get("admission")
        failed = check_objects.failed(wl) if reserved else {}
        if "Rejected" in failed.values():
            gaps.add(f"Workload {_ref(wl)}: left out, a Rejected check deactivates it")
            continue
        if failed:  # Retry: Kueue evicts it and requeues it at once
            gaps.add(f"Workload {_ref(wl)}: a check in Retry evicts it; written as pending")
            reserved = None
        if not reserved and (wl.get("spec") or {}).get("active") is False:
            inactive += 1
            continue
        try:
            queue = _queue(wl, world, bool(reserved))
            if queue is None:
                unqueued += 1
                continue
            entry = _entry(wl, queue, world, gaps)
            if reserved:
                _admitted_pod_sets(entry, status["admission"], world)
                _check_states(entry, wl, world)
        except _Skip as why:
            gaps.add(f"Workload {_ref(wl)}: left out, {why}")
            continue
        except UserManifestError as err:
            gaps.add(f"Workload {_ref(wl)}: left out, {err}")
            continue
        entry["name"] = naming.unique_label(_preferred_name(wl), taken)
        out.names[entry["name"]] = _ref(wl)
        out.owners[_owner_ref(wl)] = entry["name"]
        (out.admitted if reserved else out.pending).append(entry)
    if inactive:
        gaps.add(f"{inactive} deactivated Workload(s) left out (spec.active: false)")
    if unqueued:
        gaps.add(f"{unqueued} pending Workload(s) of a LocalQueue that does not exist left out")
    return out


def _ref(wl: Obj) -> str:
    return f"{wl['metadata'].get('namespace', '')}/{wl['metadata']['name']}"


def _condition(status: Mapping[str, Any], kind: str) -> bool:
    return any(
        c.get("type") == kind and c.get("status") == "True" for c in status.get("conditions") or []
    )


def _owner_ref(wl: Obj) -> str:
    refs = wl["metadata"].get("ownerReferences") or []
    owner = next((r for r in refs if r.get("controller")), None)
    kind, name = (owner["kind"], owner["name"]) if owner else ("Workload", wl["metadata"]["name"])
    return f"{wl['metadata'].get('namespace', '')}/{kind}/{name}"


def _preferred_name(wl: Obj) -> str:
    refs = wl["metadata"].get("ownerReferences") or []
    owner = next((r for r in refs if r.get("controller")), None)
    return str(owner["name"]) if owner else str(wl["metadata"]["name"])


def _queue(wl: Obj, world: World, reserved: bool) -> str | None:
    """Its ClusterQueue: the one it was admitted to, else its LocalQueue's (None: no such
    LocalQueue, so it is not queued anywhere)."""
    if reserved:
        cq = str(wl["status"]["admission"]["clusterQueue"])
    else:
        ns, lq = wl["metadata"].get("namespace", ""), (wl.get("spec") or {}).get("queueName")
        found = [q for q in world.local_queues if (q["namespace"], q["name"]) == (ns, lq)]
        if not found:
            return None
        cq = str(found[0]["clusterQueue"])
    if cq not in world.cluster_queues:
        raise _Skip(f"its ClusterQueue {cq} is not in the snapshot")
    return cq


def _entry(wl: Obj, queue: str, world: World, gaps: Gaps) -> Obj:
    spec = wl.get("spec") or {}
    at = KeyPath(f"Workload {_ref(wl)}", "spec", spec, UserManifestError)
    pod_sets = []
    for ps_at in at.child("podSets", spec.get("podSets") or []).items():
        ps = ps_at.value
        request = (
            ps_at.child("topologyRequest", ps["topologyRequest"])
            if ps.get("topologyRequest")
            else None
        )
        source = PodSetSource(
            ps["name"],
            int(ps["count"]),
            ps_at.child("template", ps["template"]),
            topology_request=request,
        )
        data = pod_set_data(source, unmodelled=lambda _at: None)
        topology = data.get("topology") or {}
        for key in ("level", "sliceLevel"):
            if key in topology and topology[key] not in world.levels:
                raise _Skip(f"pod set {ps['name']} asks for level {topology[key]}, no Topology has")
        pod_sets.append(data)
    entry: Obj = {"name": "", "queue": queue}
    priority_class = _priority_class(wl, world, gaps)
    if priority_class:
        entry["priorityClass"] = priority_class
    entry["podSets"] = pod_sets
    return entry


def _priority_class(wl: Obj, world: World, gaps: Gaps) -> str | None:
    """The WorkloadPriorityClass of its priority (spec.priority, what Kueue orders by): its
    own class when that still has this value, else one named after the value."""
    spec = wl.get("spec") or {}
    value = int(spec.get("priority") or 0)
    ref = spec.get("priorityClassRef") or {}
    name = ref.get("name")
    if (
        name
        and ref.get("kind", "WorkloadPriorityClass") == "WorkloadPriorityClass"
        and (world.priority_classes.get(name) == value)
    ):
        return str(name)
    if not name and value == 0:
        return None
    synthetic = class_for_value(value, world.priority_classes)
    source = f"{ref.get('kind', 'class')} {name}" if name else "no class"
    gaps.add(
        f"priority {value} ({source}) has no WorkloadPriorityClass of that value: written as "
        f"WorkloadPriorityClass {synthetic}"
    )
    return synthetic


def class_for_value(value: int, classes: dict[str, int]) -> str:
    """A WorkloadPriorityClass of this value, named after it (priority-50, priority-minus-5),
    added to `classes` (name -> value) unless one of that name and value is there."""
    name = f"priority-{value}" if value >= 0 else f"priority-minus-{-value}"
    if classes.get(name, value) != value:
        name = naming.unique_label(name, set(classes))
    classes[name] = value
    return name


def _admitted_pod_sets(entry: Obj, admission: Mapping[str, Any], world: World) -> None:
    """Each pod set's admitted count, flavor and (on a TAS flavor) placement."""
    assignments = {a["name"]: a for a in admission.get("podSetAssignments") or []}
    for ps in entry["podSets"]:
        a = assignments.get(ps["name"])
        if a is None:
            raise _Skip(f"pod set {ps['name']} has no assignment in status.admission")
        if a.get("count") is not None:
            ps["count"] = int(a["count"])
        flavors = sorted(set((a.get("flavors") or {}).values()))
        if not flavors:
            raise _Skip(f"pod set {ps['name']} was admitted on no flavor")
        tas = [f for f in flavors if world.flavors.get(f, {}).get("topologyName")]
        if len(flavors) > 1 and tas:
            raise _Skip(
                f"pod set {ps['name']} was admitted on several flavors ({', '.join(flavors)}), "
                f"{tas[0]} with a topology: contract v2 gives a TAS pod set one"
            )
        ps["flavor"] = _in_group_order(flavors, world.group_flavors.get(entry["queue"], []))
        if tas:
            ps["placement"] = _placement(ps["name"], a, world.flavors[flavors[0]], world)


def _check_states(entry: Obj, wl: Obj, world: World) -> None:
    """A workload holding quota without the Admitted condition waits for its checks: their
    states are written. An admitted one is left without: Kueue keeps a workload admitted
    even when a check added later is Pending (it syncs Admitted only while not admitted,
    workload_controller.go Reconcile), and an entry listing none is admitted."""
    rules = world.check_rules.get(entry["queue"])
    if not rules or _condition(wl.get("status") or {}, "Admitted"):
        return
    flavors = {f for ps in entry["podSets"] for f in str(ps["flavor"]).split(",")}
    entry["admissionChecks"] = check_objects.states(wl, rules, flavors)


def _in_group_order(flavors: Sequence[str], groups: Sequence[Sequence[str]]) -> str:
    """Several flavors (one per resource group) joined by `,` in the ClusterQueue's group
    order, as contract v2 writes them; one flavor as it is."""
    rank = {f: i for i, group in enumerate(groups) for f in group}
    return ",".join(sorted(flavors, key=lambda f: (rank.get(f, len(rank)), f)))


def _placement(
    pod_set: str, assignment: Mapping[str, Any], flavor: Obj, world: World
) -> dict[str, int]:
    topology = assignment.get("topologyAssignment")
    if not topology:
        raise _Skip(
            f"pod set {pod_set} has no topology assignment yet on TAS flavor {flavor['name']}"
        )
    try:
        per_domain = lowest_level_pods(topology)
    except DecodeError as err:
        raise _Skip(f"pod set {pod_set}: {err}") from None
    levels = list(world.topologies[flavor["topologyName"]])
    out: dict[str, int] = {}
    for value, pods in per_domain.items():
        if levels[-1] == HOSTNAME:
            node = world.hostnames.get(value)
            if node is None:
                raise _Skip(f"pod set {pod_set} is placed on node {value}, not in the snapshot")
            out[node] = out.get(node, 0) + pods
            continue
        members = [n for n in world.nodes if n["labels"].get(levels[-1]) == value]
        if len(members) != 1:
            raise _Skip(
                f"pod set {pod_set} holds {pods} pod(s) in {levels[-1]}={value}, a domain of "
                f"{len(members)} nodes; an admitted placement names one node per domain"
            )
        out[value] = out.get(value, 0) + pods
    return out
