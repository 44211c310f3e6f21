"""Pure builders for a version-2 scenario's Kueue objects: every Topology, ResourceFlavor,
WorkloadPriorityClass and ClusterQueue under the scenario's own names, and one LocalQueue of
the same name per ClusterQueue (docs/scenario-format-v2.md); a version-1 file arrives as
these lists too (the loader desugars it).

Every default Kueue's CRDs fill in (apis/kueue/v1beta2/clusterqueue_types.go,
`+kubebuilder:default`) is written out, so the object read back from the API server equals
the one built here and an identical ClusterQueue can be kept for the next scenario
(harness.providers.cleanup compares specs).
"""

from __future__ import annotations

from harness.k8s.quantity import format_quantity
from harness.k8s.selector import NAMESPACE_NAME_LABEL
from harness.kube import KUEUE_API
from harness.kueue.cluster_queue_spec import cluster_queue_spec
from harness.kueue.cohort_spec import cohort_spec
from harness.runner.objects import Names, Obj, taint, toleration
from harness.scenario.model import (
    AdmissionCheck,
    ClusterQueue,
    Cohort,
    Flavor,
    LocalQueue,
    PriorityClass,
    Scenario,
    Topology,
)


def topology(t: Topology, names: Names) -> Obj:
    return {
        "apiVersion": KUEUE_API,
        "kind": "Topology",
        "metadata": {"name": t.name, "labels": names.labels},
        "spec": {"levels": [{"nodeLabel": level} for level in t.levels]},
    }


def resource_flavor(f: Flavor, names: Names) -> Obj:
    """nodeLabels, nodeTaints, tolerations and topologyName as the scenario gives them."""
    spec: Obj = {}
    if f.node_labels:
        spec["nodeLabels"] = dict(f.node_labels)
    if f.node_taints:
        spec["nodeTaints"] = [taint(t) for t in f.node_taints]
    if f.tolerations:
        spec["tolerations"] = [toleration(t) for t in f.tolerations]
    if f.topology_name is not None:
        spec["topologyName"] = f.topology_name
    return {
        "apiVersion": KUEUE_API,
        "kind": "ResourceFlavor",
        "metadata": {"name": f.name, "labels": names.labels},
        "spec": spec,
    }


def priority_class(pc: PriorityClass, names: Names) -> Obj:
    return {
        "apiVersion": KUEUE_API,
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": pc.name, "labels": names.labels},
        "value": pc.value,
    }


def admission_check(c: AdmissionCheck, names: Names) -> Obj:
    """The AdmissionCheck's spec; its Active condition is the check controller's, which the
    harness plays (harness.runner.check_controller)."""
    spec: Obj = {"controllerName": c.controller_name}
    if c.parameters is not None:
        spec["parameters"] = dict(c.parameters)
    return {
        "apiVersion": KUEUE_API,
        "kind": "AdmissionCheck",
        "metadata": {"name": c.name, "labels": names.labels},
        "spec": spec,
    }


def cluster_queue(cq: ClusterQueue, names: Names) -> Obj:
    """The ClusterQueue under its own name: Kueue quotes it in messages ("preemptor path:
    /research/team-a"), so the scenario's name is what the expectations see."""
    spec: Obj = {"namespaceSelector": {}, "stopPolicy": "None", **cluster_queue_spec(cq)}
    for expression in spec["namespaceSelector"].get("matchExpressions") or []:
        # The API server names each namespace in this label: the run's real names.
        if expression["key"] == NAMESPACE_NAME_LABEL and "values" in expression:
            expression["values"] = [
                names.real(v) if v in dict(names.others) else v for v in expression["values"]
            ]
    for key, value in (spec["namespaceSelector"].get("matchLabels") or {}).items():
        if key == NAMESPACE_NAME_LABEL and value in dict(names.others):
            spec["namespaceSelector"]["matchLabels"][key] = names.real(value)
    return {
        "apiVersion": KUEUE_API,
        "kind": "ClusterQueue",
        "metadata": {"name": cq.name, "labels": names.labels},
        "spec": spec,
    }


def cohort(c: Cohort, names: Names) -> Obj:
    """The Cohort under its own name: Kueue quotes the tree in messages ("preemptor path:
    /root/team/cq")."""
    return {
        "apiVersion": KUEUE_API,
        "kind": "Cohort",
        "metadata": {"name": c.name, "labels": names.labels},
        "spec": cohort_spec(c),
    }


def local_queue(
    cluster_queue_name: str, names: Names, *, hold: bool = False, name: str = ""
) -> Obj:
    """The LocalQueue named after its ClusterQueue (or `name`: a fixture's own). `hold`:
    stopPolicy Hold, so Kueue admits nothing from it while the runner writes pre-admitted
    workloads' admissions (it keeps admitted workloads; only HoldAndDrain evicts them)."""
    return {
        "apiVersion": KUEUE_API,
        "kind": "LocalQueue",
        "metadata": {
            "name": name or cluster_queue_name,
            "namespace": names.namespace,
            "labels": names.labels,
        },
        "spec": {"clusterQueue": cluster_queue_name, "stopPolicy": "Hold" if hold else "None"},
    }


def scenario_local_queue(lq: LocalQueue, names: Names, *, hold: bool = False) -> Obj:
    """A `localQueues:` entry (or a ClusterQueue's own) in its real namespace, with its
    stopPolicy; `hold`: Hold while `admitted` entries are written (harness.runner.preadmit
    then sets the scenario's policy)."""
    obj = local_queue(lq.cluster_queue, names, hold=hold, name=lq.name)
    obj["metadata"]["namespace"] = names.real(lq.namespace)
    if not hold and lq.stop_policy != "None":
        obj["spec"]["stopPolicy"] = lq.stop_policy
    if lq.fair_weight is not None:
        obj["spec"]["fairSharing"] = {"weight": format_quantity(lq.fair_weight)}
    return obj


def cluster_objects(scenario: Scenario, names: Names) -> list[Obj]:
    """The cluster-scoped Kueue objects, in the order they can be created (a flavor after
    its Topology, a ClusterQueue after its flavors, priority classes, Cohorts and admission
    checks)."""
    return [
        *(topology(t, names) for t in scenario.topologies),
        *(resource_flavor(f, names) for f in scenario.resource_flavors),
        *(priority_class(pc, names) for pc in scenario.priority_classes),
        *(cohort(c, names) for c in scenario.cohorts),
        *(admission_check(c, names) for c in scenario.admission_checks),
        *(cluster_queue(cq, names) for cq in scenario.cluster_queues),
    ]


def held_queues(scenario: Scenario) -> set[str]:
    """ClusterQueues whose LocalQueue must hold while `admitted` entries are written."""
    return {a.queue for a in scenario.admitted}


def namespaces_problem(scenario: Scenario) -> str | None:
    """What the runner does not carry out in a namespace of `namespaces:` yet: `admitted`
    entries there (their admissions are written in the scenario's own), fault steps and
    LeaderWorkerSets (their pods are looked up in the scenario's own namespace)."""
    if not scenario.local_queues:
        return None
    if any(a.namespace for a in scenario.admitted):
        return (
            f"{scenario.path}: admitted: an entry in another namespace: not run on a cluster "
            "yet (admissions are written in the scenario's own namespace)"
        )
    elsewhere = [w for w in scenario.workloads if w.namespace]
    if elsewhere and scenario.fault_features():
        return (
            f"{scenario.path}: fault steps with workloads in namespaces: not run on a cluster yet"
        )
    if any(w.lws is not None for w in elsewhere):
        return f"{scenario.path}: a LeaderWorkerSet in namespaces: not run on a cluster yet"
    return None
