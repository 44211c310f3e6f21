"""Pure builders for a version-2 scenario's Kueue objects: every Topology, ResourceFlavor,
WorkloadPriorityClass and ClusterQueue under the scenario's own names, and one LocalQueue of
the same name per ClusterQueue (docs/scenario-format-v2.md).

Every default Kueue's CRDs fill in (apis/kueue/v1beta2/clusterqueue_types.go,
`+kubebuilder:default`) is written out, so the object read back from the API server equals
the one built here and an identical ClusterQueue can be kept for the next scenario
(harness.providers.cleanup compares specs). A version-1 file keeps its own builders in
harness.runner.objects (kth-cq-<n>, kth-lq, the ALL_NODES_LABEL workaround).
"""

from __future__ import annotations

from harness.kube import KUEUE_API
from harness.kueue.cluster_queue_spec import cluster_queue_spec
from harness.runner.objects import Names, Obj, taint, toleration
from harness.scenario.model import (
    AdmissionCheck,
    ClusterQueue,
    Flavor,
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
    return {
        "apiVersion": KUEUE_API,
        "kind": "ClusterQueue",
        "metadata": {"name": cq.name, "labels": names.labels},
        "spec": spec,
    }


def local_queue(cluster_queue_name: str, names: Names, *, hold: bool = False) -> Obj:
    """The LocalQueue named after its ClusterQueue. `hold`: stopPolicy Hold, so Kueue
    admits nothing from it while the runner writes pre-admitted workloads' admissions (it
    keeps admitted workloads; only HoldAndDrain evicts them)."""
    return {
        "apiVersion": KUEUE_API,
        "kind": "LocalQueue",
        "metadata": {
            "name": cluster_queue_name,
            "namespace": names.namespace,
            "labels": names.labels,
        },
        "spec": {"clusterQueue": cluster_queue_name, "stopPolicy": "Hold" if hold else "None"},
    }


def cluster_objects(scenario: Scenario, names: Names) -> list[Obj]:
    """The cluster-scoped Kueue objects, in the order they can be created (a flavor after
    its Topology, a ClusterQueue after its flavors, priority classes and admission checks)."""
    return [
        *(topology(t, names) for t in scenario.topologies),
        *(resource_flavor(f, names) for f in scenario.resource_flavors),
        *(priority_class(pc, names) for pc in scenario.priority_classes),
        *(admission_check(c, names) for c in scenario.admission_checks),
        *(cluster_queue(cq, names) for cq in scenario.cluster_queues),
    ]


def held_queues(scenario: Scenario) -> set[str]:
    """ClusterQueues whose LocalQueue must hold while `admitted` entries are written."""
    return {a.queue for a in scenario.admitted}
