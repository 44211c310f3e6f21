"""Which nodes kube-scheduler could bind one pod of a pod set to, before anything runs: the
fit model's binding rule (harness.fit.kubescheduler.filter_reasons over the pod Kueue starts,
harness.fit.binding.plain_pod, on a node holding only the scenario's `usage`), handed to the
sim so that it, too, leaves a workload whose pods can never all bind not PodsReady
(blockAdmission). Static: the nodes as the scenario starts them, one pod per node; the fit
model's Binder also counts the pods bound since (the sim does not follow them)."""

from __future__ import annotations

from harness.fit.binding import plain_pod
from harness.fit.kubescheduler import NodeLoad, Pod, filter_reasons
from harness.fit.resources import from_quantities
from harness.scenario.model import Scenario, Workload


def bindable_nodes(sc: Scenario, workload: Workload) -> dict[str, dict[str, list[str]]]:
    """Pod set -> TAS flavor -> the nodes one of its pods passes kube-scheduler's filters on."""
    loads = {n.name: NodeLoad() for n in sc.nodes}
    for entry in sc.usage:
        if entry.node in loads:
            loads[entry.node].add(Pod(from_quantities(entry.requests), {}, ()), entry.count)
    flavors = [f for f in sc.resource_flavors if sc.topology_of(f) is not None]
    out: dict[str, dict[str, list[str]]] = {}
    for ps in workload.pod_sets:
        per_flavor = out.setdefault(ps.name, {})
        for flavor in flavors:
            pod = plain_pod(ps, flavor)
            per_flavor[flavor.name] = [
                n.name
                for n in sc.nodes
                if not filter_reasons(n, from_quantities(n.allocatable), loads[n.name], pod)
            ]
    return out
