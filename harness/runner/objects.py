"""Pure builders: scenario parts -> the Kubernetes and Kueue objects the runner creates.

No I/O here, so every object is unit-tested without a cluster. The mapping follows
shared/kueue-objects-notes.md; docs/scenario-extensions.md says what the runner adds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from harness.install.kueue import JOBSET_API as JOBSET_API  # re-exported: callers build JobSets
from harness.install.lws import LWS_API as LWS_API  # re-exported: callers build LWSs
from harness.k8s.quantity import format_quantity
from harness.kube import KUEUE_API, RUN_LABEL
from harness.kueue.keys import (
    GROUP,
    PREFERRED,
    PRIORITY_CLASS_LABEL,
    QUEUE_LABEL,
    REQUIRED,
    SLICE_LEVEL,
    SLICE_SIZE,
    UNCONSTRAINED,
)
from harness.providers.kwok import NOT_READY_ANNOTATION
from harness.scenario.model import (
    AdmittedWorkload,
    Node,
    PodSet,
    Scenario,
    Taint,
    Toleration,
    TopologyRequest,
    Usage,
    Workload,
)

Obj = dict[str, Any]
JOB_INDEX_LABEL = "batch.kubernetes.io/job-completion-index"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
WORKLOAD_LABEL = "kueue-tas-harness/workload"
USAGE_LABEL = "kueue-tas-harness/usage"
# A fault step fails, deletes or evicts running pods; a Job that counted them against a
# backoffLimit of 0 would fail and Kueue would finish its Workload. Counted per index, each
# lost pod is recreated after the Job controller's first backoff (10 s): a shared count
# doubles it per failure, so a node holding 8 pods of one Job would delay their recreation
# by min(10 s x 2^7, 10 min) (pkg/controller/job: DefaultJobPodFailureBackOff).
BACKOFF_LIMIT_PER_INDEX = 1000
IMAGE = "registry.k8s.io/pause:3.10"  # never pulled: KWOK fakes the kubelet
# Resources Kubernetes lets a container request without a limit; others need limit == request.
OVERCOMMITTABLE = ("cpu", "memory", "ephemeral-storage")


@dataclass(frozen=True)
class Names:
    """Where one scenario's objects live; every object carries the run label."""

    run_id: str
    namespace: str
    others: tuple[tuple[str, str], ...] = ()
    """The scenario's `namespaces:`, each (its name, the real name this run gives it)."""

    @property
    def labels(self) -> dict[str, str]:
        return {RUN_LABEL: self.run_id}

    def real(self, scenario_namespace: str) -> str:
        """Where a scenario namespace lives ("" the scenario's own)."""
        return dict(self.others).get(scenario_namespace, self.namespace)

    def namespace_of(self, w: Workload) -> str:
        return self.real(w.namespace)

    @property
    def all_namespaces(self) -> tuple[str, ...]:
        return (self.namespace, *(real for _, real in self.others))

    @property
    def run_selector(self) -> str:
        """The label selector of everything this run created."""
        return f"{RUN_LABEL}={self.run_id}"

    def queue_of(self, w: Workload) -> str:
        """The LocalQueue the workload is submitted to (without `localQueues:` each
        ClusterQueue has one of its own name)."""
        return w.queue_name


def resource_list(resources: Mapping[str, Fraction]) -> dict[str, str]:
    return {name: format_quantity(value) for name, value in resources.items()}


def taint(t: Taint) -> Obj:
    out: Obj = {"key": t.key, "effect": t.effect}
    if t.value:
        out["value"] = t.value
    return out


def toleration(t: Toleration) -> Obj:
    out: Obj = {"operator": t.operator}
    for key, value in (("key", t.key), ("value", t.value), ("effect", t.effect)):
        if value:
            out[key] = value
    if t.toleration_seconds is not None:
        out["tolerationSeconds"] = t.toleration_seconds
    return out


def namespace(names: Names, name: str = "", labels: Mapping[str, str] | None = None) -> Obj:
    """The scenario's namespace, or (`name`) the real one of a `namespaces:` entry with its
    labels."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name or names.namespace, "labels": {**(labels or {}), **names.labels}},
    }


def namespaces_for(
    namespace: str, scenario_namespaces: Iterable[str]
) -> tuple[tuple[str, str], ...]:
    """A real name per `namespaces:` entry, unique within the run: the scenario's namespace
    and the entry's name, cut to 63 characters."""
    return tuple(
        (n, f"{namespace[: max(3, 62 - len(n))].rstrip('-')}-{n}"[:63].rstrip("-"))
        for n in scenario_namespaces
    )


def node(n: Node, names: Names) -> Obj:
    """A Node with exactly the scenario's allocatable (also as capacity).

    The object name is the scenario's node name, the same as its hostname label, and so
    reused across scenarios: Kueue's node-failure controller takes a TAS pod's hostname
    nodeSelector for a Node name (pkg/controller/tas/node_controller.go) and evicts the
    workload when no Node has that name (tried: "no replacement for unhealthy node(s)").

    Ready nodes are handed to KWOK, which adds Ready=True and a lease heartbeat. A node
    with `ready: false` is not given to KWOK and is created with Ready=False, so no
    heartbeat ever turns it Ready and Kueue's TAS cache leaves it out."""
    resources = resource_list(n.allocatable)
    status: Obj = {"allocatable": dict(resources), "capacity": dict(resources)}
    annotations = {"node.alpha.kubernetes.io/ttl": "0"}
    if n.ready:
        annotations[KWOK_ANNOTATION] = "fake"
    else:
        status["conditions"] = [
            {
                "type": "Ready",
                "status": "False",
                "reason": "ScenarioNotReady",
                "message": "ready: false in the scenario",
            }
        ]
    spec: Obj = {"providerID": f"kwok://{n.name}"}
    if n.taints:
        spec["taints"] = [taint(t) for t in n.taints]
    if n.unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": n.name,
            "labels": {**n.labels, **names.labels},
            "annotations": annotations,
        },
        "spec": spec,
        "status": status,
    }


def usage_key(u: Usage, index: int) -> str:
    """The label value that groups one usage entry's pods (its name, else its position)."""
    return u.name or f"usage-{index}"


def usage_pods(u: Usage, index: int, names: Names) -> list[Obj]:
    """`count` pods bound to the node by spec.nodeName: no scheduler, no Kueue labels.

    They tolerate every taint so the taint manager never evicts them from a tainted or
    NotReady node (Kueue counts them as long as they are bound and not terminated)."""
    key = usage_key(u, index)
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{key}-{i}",
                "namespace": names.namespace,
                "labels": {**names.labels, USAGE_LABEL: key},
            },
            "spec": {
                "nodeName": u.node,
                "restartPolicy": "Never",
                "terminationGracePeriodSeconds": 0,
                "tolerations": [{"operator": "Exists"}],
                "containers": [_container(u.requests)],
            },
        }
        for i in range(u.count)
    ]


def _container(requests: Mapping[str, Fraction]) -> Obj:
    req = resource_list(requests)
    limits = {k: v for k, v in req.items() if k not in OVERCOMMITTABLE}
    resources: Obj = {"requests": req}
    if limits:
        resources["limits"] = limits
    return {"name": "c", "image": IMAGE, "resources": resources}


def all_workloads(scenario: Scenario) -> list[Workload]:
    """Initial workloads plus those submitted by steps, in file order."""
    extra = [s.target for s in scenario.steps if isinstance(s.target, Workload)]
    return [*scenario.workloads, *extra]


def topology_annotations(tr: TopologyRequest | None) -> dict[str, str]:
    """The pod-template annotations that ask Kueue for this topology request."""
    if tr is None:
        return {}
    out: dict[str, str] = {}
    if tr.mode == "required" and tr.level:
        out[REQUIRED] = tr.level
    elif tr.mode == "preferred" and tr.level:
        out[PREFERRED] = tr.level
    elif tr.mode == "unconstrained":
        out[UNCONSTRAINED] = "true"
    if tr.slice_level is not None:
        out[SLICE_LEVEL] = tr.slice_level
    if tr.slice_size is not None:
        out[SLICE_SIZE] = str(tr.slice_size)
    if tr.group is not None:
        out[GROUP] = tr.group
    return out


def pod_annotations(w: Workload, ps: PodSet) -> dict[str, str]:
    """A pod template's annotations: its topology request and, for a `podsReady: false`
    workload, the one that makes KWOK start its pods not Ready (harness.providers.kwok)."""
    out = topology_annotations(ps.topology)
    if not w.pods_ready:
        out[NOT_READY_ANNOTATION] = "true"
    return out


def _pod_spec(ps: PodSet) -> Obj:
    spec: Obj = {
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 0,
        "containers": [_container(ps.requests)],
    }
    if ps.node_selector:
        spec["nodeSelector"] = dict(ps.node_selector)
    if ps.tolerations:
        spec["tolerations"] = [toleration(t) for t in ps.tolerations]
    return spec


def job(w: Workload, names: Names) -> Obj:
    """A suspended Indexed batch/v1 Job for a one-pod-set workload; Kueue's webhook and
    job reconciler turn it into a Workload with one pod set named "main"."""
    (ps,) = w.pod_sets
    labels = {**names.labels, WORKLOAD_LABEL: w.name}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": w.name,
            "namespace": names.namespace_of(w),
            "labels": {**labels, **queue_labels(w, names)},
        },
        "spec": {
            "parallelism": ps.count,
            "completions": ps.count,
            "completionMode": "Indexed",
            "backoffLimitPerIndex": BACKOFF_LIMIT_PER_INDEX,
            "suspend": True,
            "template": {
                "metadata": {"labels": labels, "annotations": pod_annotations(w, ps)},
                "spec": _pod_spec(ps),
            },
        },
    }


def jobset(w: Workload, names: Names) -> Obj:
    """A suspended JobSet with one replicated Job (1 replica, Indexed, `count` pods) per pod
    set, in order: Kueue's JobSet webhook validates it as it would in production and its
    reconciler builds the Workload (pod set name = replicated Job name). Only the CRD is
    installed, so once admitted nothing creates pods."""
    labels = {**names.labels, WORKLOAD_LABEL: w.name}
    return {
        "apiVersion": JOBSET_API,
        "kind": "JobSet",
        "metadata": {
            "name": w.name,
            "namespace": names.namespace_of(w),
            "labels": {**labels, **queue_labels(w, names)},
        },
        "spec": {
            "suspend": True,
            "replicatedJobs": [
                {
                    "name": ps.name,
                    "replicas": 1,
                    "template": {
                        "metadata": {"labels": labels},  # child Jobs: cleared with the run
                        "spec": {
                            "parallelism": ps.count,
                            "completions": ps.count,
                            "completionMode": "Indexed",
                            "backoffLimitPerIndex": BACKOFF_LIMIT_PER_INDEX,
                            "template": {
                                "metadata": {
                                    "labels": labels,
                                    "annotations": pod_annotations(w, ps),
                                },
                                "spec": _pod_spec(ps),
                            },
                        },
                    },
                }
                for ps in w.pod_sets
            ],
        },
    }


def leader_worker_set(w: Workload, names: Names) -> Obj:
    """The LeaderWorkerSet of a group workload with spec.replicas = its index + 1: the
    runner creates it for group 0 and scales it up one group per submission (Kueue makes
    one Workload per group, pkg/controller/jobs/leaderworkerset). Pod sets "leader" and
    "worker" are the leader and worker templates (size = 1 + workers); "main" alone is the
    worker template (size = its count). StatefulSet pods restart Always."""
    assert w.lws is not None
    labels = {**names.labels, WORKLOAD_LABEL: w.lws.set_name}

    def template(ps: PodSet) -> Obj:
        spec = {**_pod_spec(ps), "restartPolicy": "Always"}
        meta = {"labels": labels, "annotations": topology_annotations(ps.topology)}
        return {"metadata": meta, "spec": spec}

    by_name = {ps.name: ps for ps in w.pod_sets}
    lwt: Obj = {"size": sum(ps.count for ps in w.pod_sets)}
    if "leader" in by_name:
        lwt["leaderTemplate"] = template(by_name["leader"])
    lwt["workerTemplate"] = template(by_name.get("worker") or by_name["main"])
    return {
        "apiVersion": LWS_API,
        "kind": "LeaderWorkerSet",
        "metadata": {
            "name": w.lws.set_name,
            "namespace": names.namespace_of(w),
            "labels": {**labels, **queue_labels(w, names)},
        },
        "spec": {"replicas": w.lws.index + 1, "leaderWorkerTemplate": lwt},
    }


def topology_request(tr: TopologyRequest | None) -> Obj:
    """spec.podSets[].topologyRequest as the Job webhook's builder would fill it
    (jobframework/tas.go: a lone slice key is dropped, a group needs required/preferred)."""
    out: Obj = {"podIndexLabel": JOB_INDEX_LABEL}
    if tr is None:
        return out
    if tr.mode == "required" and tr.level:
        out["required"] = tr.level
    elif tr.mode == "preferred" and tr.level:
        out["preferred"] = tr.level
    elif tr.mode == "unconstrained":
        out["unconstrained"] = True
    if tr.slice_level is not None and tr.slice_size is not None:
        out["podSetSliceRequiredTopology"] = tr.slice_level
        out["podSetSliceSize"] = tr.slice_size
    if tr.group is not None and tr.mode in ("required", "preferred"):
        out["podSetGroupName"] = tr.group
    return out


def workload(w: Workload, names: Names, priority: int = 0) -> Obj:
    """A Kueue Workload created directly (several pod sets cannot be one batch/v1 Job);
    it skips the Job webhook but still passes Kueue's Workload webhooks.

    A priority class goes in as Kueue's job reconciler writes it for a Job with the
    priority-class label (jobframework/reconciler.go: PrepareWorkloadPriority): a
    WorkloadPriorityClass reference and `priority` = its value (`priority`, the caller's
    lookup). Without a class both are left out: Kueue reads priority 0."""
    labels = {**names.labels, WORKLOAD_LABEL: w.name}
    spec: Obj = {}
    if w.priority_class is not None:
        spec["priorityClassRef"] = {
            "group": "kueue.x-k8s.io",
            "kind": "WorkloadPriorityClass",
            "name": w.priority_class,
        }
        spec["priority"] = priority
    return {
        "apiVersion": KUEUE_API,
        "kind": "Workload",
        "metadata": {"name": w.name, "namespace": names.namespace_of(w), "labels": labels},
        "spec": {
            **spec,
            "queueName": names.queue_of(w),
            "podSets": [
                {
                    "name": ps.name,
                    "count": ps.count,
                    "topologyRequest": topology_request(ps.topology),
                    "template": {
                        "metadata": {"annotations": topology_annotations(ps.topology)},
                        "spec": _pod_spec(ps),
                    },
                }
                for ps in w.pod_sets
            ],
        },
    }


def queue_labels(w: Workload, names: Names) -> dict[str, str]:
    """The labels that send a Job or JobSet to its LocalQueue with its priority class."""
    out = {QUEUE_LABEL: names.queue_of(w)}
    if w.priority_class is not None:
        out[PRIORITY_CLASS_LABEL] = w.priority_class
    return out


def as_workload(a: AdmittedWorkload) -> Workload:
    """An `admitted` entry as the workload it was submitted as (its Job, JobSet or Workload
    is built like any other)."""
    return a.as_workload()
