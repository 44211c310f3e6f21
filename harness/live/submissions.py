"""A user's manifests -> the workloads they would become on the snapshotted cluster.

Each manifest's queue is resolved as Kueue does: its LocalQueue (the queue-name label, or a
Workload's spec.queueName) in its namespace, then that LocalQueue's ClusterQueue. Its
priority as Kueue's ExtractPriority (pkg/controller/jobframework/reconciler.go): the
WorkloadPriorityClass label; else the first pod template's priorityClassName, a Kubernetes
PriorityClass; else the cluster's globalDefault PriorityClass; else 0. A LeaderWorkerSet
becomes one Workload per group. What the fit model does not model (affinity, ...) becomes a
note on the prediction, not a silent omission.

A manifest Kueue would not manage (no queue) or that names a priority class the cluster
lacks is refused in one line naming the file and key, as Kueue's webhook or reconciler
would leave it without a Workload.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.kueue import keys as kueue_keys
from harness.live import naming
from harness.live.manifests import Manifest, workload_data
from harness.live.queue_objects import OWN_NAMESPACE
from harness.live.workload_objects import class_for_value
from harness.results.outcome import Outcome
from harness.scenario.keypath import KeyPath

FIXED = ("Job", "JobSet", "Workload")
"""Kinds whose pod templates the API server keeps as created (a LeaderWorkerSet rolls)."""
ANY = "*"
"""The namespace of a scenario's own LocalQueues: every one."""


@dataclass
class Submission:
    """One Workload a manifest becomes. `workload`: its scenario data (None when Kueue
    would not even queue it, then `outcome` says what Kueue would report)."""

    key: str
    """The manifest's metadata.name (NAME/GROUP for a LeaderWorkerSet's groups)."""
    manifest: Manifest
    workload: dict[str, Any] | None = None
    outcome: Outcome | None = None
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    """What Kueue would ignore or do otherwise than the prediction assumes (told on stderr)."""


@dataclass
class Cluster:
    """What the snapshot says about queues and priorities (x-snapshot and its lists)."""

    local_queues: Sequence[Mapping[str, str]]
    cluster_queues: set[str]
    priority_classes: dict[str, int]
    """WorkloadPriorityClass name -> value; synthetic ones are added as needed."""
    pod_priority_classes: Mapping[str, int]
    global_default: str | None
    names: set[str]
    """Workload names the snapshot already uses."""
    admitted: set[str] = field(default_factory=set)
    shown: Mapping[str, str] = field(default_factory=dict)
    """Scenario name -> the cluster's NAMESPACE/WORKLOAD (x-snapshot.workloads)."""
    owners: Mapping[str, str] | None = None
    """NAMESPACE/KIND/NAME -> scenario name (x-snapshot.owners; None: not recorded)."""
    scenario_queues: Mapping[tuple[str, str], tuple[str, str]] | None = None
    """With top-level `localQueues:`: (namespace, LocalQueue) -> the scenario's (namespace,
    name), which a workload's `queue` and `namespace` then give (harness/live/queue_objects)."""

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Cluster:
        """From a snapshot; a scenario written by hand has, per contract v2, one LocalQueue
        per ClusterQueue, of the same name (here in every namespace)."""
        extra = data.get("x-snapshot") or {}
        queues = {cq["name"] for cq in data.get("clusterQueues") or []}
        local = extra.get("localQueues")
        if local is None:
            local = [{"namespace": ANY, "name": q, "clusterQueue": q} for q in sorted(queues)]
        return cls(
            local_queues=list(local),
            cluster_queues=queues,
            priority_classes={
                pc["name"]: int(pc["value"]) for pc in data.get("workloadPriorityClasses") or []
            },
            pod_priority_classes=dict(extra.get("podPriorityClasses") or {}),
            global_default=extra.get("globalDefaultPriorityClass"),
            names={w["name"] for w in [*data.get("admitted", []), *data.get("workloads", [])]},
            admitted={w["name"] for w in data.get("admitted") or []},
            shown=dict(extra.get("workloads") or {}),
            owners=extra.get("owners"),
            scenario_queues=(
                {
                    (lq.get("namespace") or OWN_NAMESPACE, lq["name"]): (
                        lq.get("namespace", ""),
                        lq["name"],
                    )
                    for lq in data["localQueues"]
                }
                if "localQueues" in data
                else None
            ),
        )


def submissions(
    manifests: Sequence[Manifest], cluster: Cluster, namespace: str
) -> list[Submission]:
    """Every Workload the manifests become, in order."""
    out = []
    for m in manifests:
        groups = m.groups()
        for group in range(groups):
            key = m.name if groups == 1 else f"{m.name}/{group}"
            out.append(_submission(m, key, cluster, m.namespace or namespace))
    return out


def _submission(m: Manifest, key: str, cluster: Cluster, namespace: str) -> Submission:
    sub = Submission(key, m, warnings=m.warnings())
    queue = _cluster_queue(m, cluster, namespace, sub)
    if queue is None:
        return sub
    data = workload_data(m, unmodelled=lambda at: _note_unmodelled(at, sub))
    existing = _existing(m, namespace, cluster)
    data["name"] = naming.unique_label(m.name, cluster.names)
    if existing:
        sub.warnings.append(f"{m.file}: {existing}; predicted here as a new one, {data['name']!r}")
    data["queue"] = queue
    if cluster.scenario_queues is not None:  # the snapshot names LocalQueues
        where = (namespace, m.queue_name() or "")
        scenario_ns, lq = cluster.scenario_queues.get(where, ("", queue))
        data["queue"] = lq
        if scenario_ns:
            data["namespace"] = scenario_ns
    priority_class = _priority_class(m, cluster)
    if priority_class:
        data["priorityClass"] = priority_class
    sub.workload = data
    return sub


def _existing(m: Manifest, namespace: str, cluster: Cluster) -> str:
    """Why applying it would not make a new workload: an object of that kind, namespace and
    name is already on the cluster ("" when none is known)."""
    if cluster.owners is None:  # a scenario written by hand: its own names are all we know
        if m.name not in cluster.names:
            return ""
        state = "admitted" if m.name in cluster.admitted else "pending"
        return (
            f"the scenario already has a workload named {m.name!r} ({state}): on a cluster "
            "`kubectl apply` would update that object, not create a new workload"
        )
    ref = f"{namespace}/{m.kind}/{m.name}"
    name = cluster.owners.get(ref)
    if name is None:
        return ""
    state = "admitted" if name in cluster.admitted else "pending"
    return (
        f"{m.kind} {namespace}/{m.name} is already on the cluster (its Workload "
        f"{cluster.shown.get(name, name)} is {state}): `kubectl apply` would not create a new "
        f"workload, it would update that {m.kind}"
        + (f" (or be refused: a {m.kind}'s pod template cannot change)" if m.kind in FIXED else "")
    )


def _note_unmodelled(at: KeyPath, sub: Submission) -> None:
    if not at.path.endswith("priorityClassName"):  # read here: it gives the priority
        sub.notes.append(f"{at.path}: not modelled by the fit model; the prediction ignores it")


def _cluster_queue(m: Manifest, cluster: Cluster, namespace: str, sub: Submission) -> str | None:
    """Its ClusterQueue, or None with the outcome Kueue would report (LocalQueue missing)."""
    lq = m.queue_name()
    in_namespace = [q for q in cluster.local_queues if q["namespace"] in (namespace, ANY)]
    if not lq:
        where = m.at().child("metadata", None).child("labels", None)
        where.child(kueue_keys.QUEUE_LABEL, None).fail(
            "missing: Kueue manages only workloads with a queue (manageJobsWithoutQueueName is "
            "off by default); applied as it is, it would run outside Kueue, its pods taking "
            f"capacity Kueue counts on; {_local_queues(namespace, in_namespace)}"
        )
    found = [q for q in in_namespace if q["name"] == lq]
    if not found:
        # Kueue's words (pkg/controller/core/workload_controller.go).
        sub.outcome = Outcome(admitted=False, message=f"LocalQueue {lq} doesn't exist")
        sub.notes.append(_local_queues(namespace, in_namespace))
        return None
    cq = found[0]["clusterQueue"]
    if cq not in cluster.cluster_queues:
        sub.outcome = Outcome(
            admitted=False,
            message=f"ClusterQueue {cq} doesn't exist or is inactive (not in the snapshot)",
        )
        return None
    return str(cq)


def _local_queues(namespace: str, queues: Sequence[Mapping[str, str]]) -> str:
    """The LocalQueues a manifest of the namespace could name (what a user picks from)."""
    return f"LocalQueues in namespace {namespace}: {', '.join(q['name'] for q in queues) or 'none'}"


def _priority_class(m: Manifest, cluster: Cluster) -> str | None:
    at = m.at()
    wpc = m.priority_class()
    if wpc:
        if wpc not in cluster.priority_classes:
            _priority_at(m).fail(
                f"no WorkloadPriorityClass {wpc!r} on the cluster (known: "
                f"{', '.join(sorted(cluster.priority_classes)) or 'none'})"
            )
        return wpc
    if m.kind == "Workload":
        value = (m.obj["spec"].get("priority")) or 0
        return class_for_value(int(value), cluster.priority_classes) if value else None
    pod_class = next(
        (
            ps.template.value.get("spec", {}).get("priorityClassName")
            for ps in m.pod_sets()
            if ps.template.value.get("spec", {}).get("priorityClassName")
        ),
        None,
    )
    if pod_class and pod_class not in cluster.pod_priority_classes:
        at.child("spec", None).child("priorityClassName", pod_class).fail(
            f"no PriorityClass {pod_class!r} on the cluster"
        )
    pod_class = pod_class or cluster.global_default
    if not pod_class:
        return None
    value = int(cluster.pod_priority_classes[pod_class])
    return class_for_value(value, cluster.priority_classes) if value else None


def _priority_at(m: Manifest) -> KeyPath:
    if m.kind == "Workload":
        return m.at().child("spec", None).child("priorityClassRef", None)
    labels = m.at().child("metadata", None).child("labels", None)
    return labels.child(kueue_keys.PRIORITY_CLASS_LABEL, None)
