"""How many pods of a pod set kube-scheduler could bind to each node, before anything runs:
the fit model's binding rule (harness.fit.kubescheduler.filter_reasons over the pod Kueue
starts, harness.fit.binding.plain_pod, on a node holding only the scenario's `usage`), handed
to the sim so that it, too, leaves a workload whose pods can never all bind not PodsReady
(blockAdmission). Static: the nodes as the scenario starts them, each node for this pod set
alone (identical pods: how many fit does not depend on the order they bind in); the fit
model's Binder also counts the pods of other workloads bound since (the sim does not follow
them)."""

from __future__ import annotations

from harness.fit.binding import plain_pod
from harness.fit.kubescheduler import PODS, NodeLoad, Pod, filter_reasons
from harness.fit.resources import from_quantities
from harness.scenario.model import Node, Scenario, Workload


def bindable_nodes(sc: Scenario, workload: Workload) -> dict[str, dict[str, dict[str, int]]]:
    """Pod set -> TAS flavor -> node -> how many of its pods pass kube-scheduler's filters
    there (at most the pod set's count; nodes that take none are left out)."""
    loads = {n.name: NodeLoad() for n in sc.nodes}
    for entry in sc.usage:
        if entry.node in loads:
            loads[entry.node].add(Pod(from_quantities(entry.requests), {}, ()), entry.count)
    flavors = [f for f in sc.resource_flavors if sc.topology_of(f) is not None]
    out: dict[str, dict[str, dict[str, int]]] = {}
    for ps in workload.pod_sets:
        per_flavor = out.setdefault(ps.name, {})
        for flavor in flavors:
            pod = plain_pod(ps, flavor)
            fits = {n.name: _pods_fit(n, loads[n.name], pod, ps.count) for n in sc.nodes}
            per_flavor[flavor.name] = {name: k for name, k in fits.items() if k}
    return out


def _pods_fit(node: Node, load: NodeLoad, pod: Pod, most: int) -> int:
    """How many copies of the pod the node takes beside its load: none if the filters refuse
    one, else what its free pods and resources hold."""
    allocatable = from_quantities(node.allocatable)
    if filter_reasons(node, allocatable, load, pod):
        return 0
    room = [allocatable.get(PODS, 0) - load.pods, most]
    for name, value in pod.requests.items():
        if name != PODS and value > 0:
            room.append(int((allocatable.get(name, 0) - load.requested.get(name, 0)) // value))
    return max(min(room), 0)
