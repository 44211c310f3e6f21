"""kube-scheduler on the nodes of version-2 worlds: the pods Kueue places on a node that
cannot start there.

Kueue's hostname-level snapshot counts every TAS pod on a node only when flavors share usage
(KueueRules.overlapping_flavors_share_usage, v0.18+). Before, each flavor sees its own
workloads and the non-TAS pods only (TAS pods of the other flavors are not non-TAS pods), so
it can admit a workload onto a node whose room a sibling flavor's pods already hold; the
ungater then releases the pod with that node's hostname, and kube-scheduler cannot bind it.

Only pods placed on a node (a hostname-level flavor) are bound here, workload by workload in
admission order, as harness.fit.binding does for one flavor: a pod that does not fit waits
and is retried whenever pods leave or the nodes change. Pods placed on a wider domain, and
pods of non-TAS flavors, are not followed (kube-scheduler picks their node).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from harness.fit.kubescheduler import NodeLoad, Pod, filter_reasons, unavailable_message
from harness.fit.resources import from_quantities
from harness.scenario.model import HOSTNAME, Node, PodSet, Scenario, Usage


@dataclass
class _Pods:
    """Pods of one pod set on one node: bound, or waiting with kube-scheduler's reason."""

    pod_set: str
    node: str
    pod: Pod
    count: int
    why: str = ""


@dataclass
class NodeBinder:
    """Which placed pods kube-scheduler has bound, per workload, and which wait."""

    scenario: Scenario
    bound: dict[str, list[_Pods]] = field(default_factory=dict)
    waiting: dict[str, list[_Pods]] = field(default_factory=dict)

    def admit(
        self,
        name: str,
        pod_sets: Mapping[str, tuple[PodSet, str]],
        placement: Mapping[str, Mapping[str, int]],
        nodes: Mapping[str, Node],
        usage: list[Usage],
    ) -> None:
        """An admitted workload's pods on nodes are released (pod set -> (shape, flavor));
        kube-scheduler binds those that fit."""
        waiting = []
        for ps_name, per_node in placement.items():
            pod_set, flavor = pod_sets[ps_name]
            if not self._on_nodes(flavor):
                continue
            for node, count in per_node.items():
                waiting.append(_Pods(ps_name, node, self._pod(pod_set, flavor, node), count))
        self.bound[name] = []
        if waiting:
            self.waiting[name] = waiting
            self._bind([name], nodes, usage)

    def forget(self, name: str) -> None:
        """The workload was deleted or evicted: its pods leave their nodes."""
        self.bound.pop(name, None)
        self.waiting.pop(name, None)

    def retry(self, nodes: Mapping[str, Node], usage: list[Usage]) -> list[str]:
        """Pods left or the nodes changed: pods on deleted nodes are gone, waiting ones are
        tried again in admission order. The workloads that had pods waiting."""
        for pods in self.bound.values():
            pods[:] = [p for p in pods if p.node in nodes]
        names = [n for n, items in self.waiting.items() if any(i.count for i in items)]
        if names:
            self._bind(names, nodes, usage)
        return names

    def unschedulable(self, name: str) -> tuple[dict[str, int], dict[str, str]]:
        """Per pod set: pods that cannot start, and why."""
        counts: dict[str, int] = {}
        reasons: dict[str, str] = {}
        for item in self.waiting.get(name, []):
            if item.count <= 0:
                continue
            counts[item.pod_set] = counts.get(item.pod_set, 0) + item.count
            line = f"{item.count} pod(s) in {item.node}: {item.why}"
            previous = reasons.get(item.pod_set)
            reasons[item.pod_set] = f"{previous}; {line}" if previous else line
        return counts, reasons

    def _on_nodes(self, flavor: str) -> bool:
        """Whether the flavor places pods on nodes (its topology's lowest level is hostname)."""
        topology = self.scenario.topology_of(self.scenario.resource_flavor(flavor))
        return topology is not None and topology.lowest_is_hostname

    def _pod(self, pod_set: PodSet, flavor_name: str, node: str) -> Pod:
        """The pod as the ungater releases it: the flavor's nodeLabels and tolerations merged
        in, pinned to its node."""
        flavor = self.scenario.resource_flavor(flavor_name)
        selector = {**pod_set.node_selector, **flavor.node_labels, HOSTNAME: node}
        tolerations = pod_set.tolerations + flavor.tolerations
        return Pod(from_quantities(pod_set.requests), selector, tolerations)

    def _bind(self, names: list[str], nodes: Mapping[str, Node], usage: list[Usage]) -> None:
        """Bind the waiting pods of `names`, one at a time, each on its node if it fits."""
        loads = self._loads(nodes, usage)
        allocatable = {n: from_quantities(node.allocatable) for n, node in nodes.items()}
        for name in names:
            for item in self.waiting[name]:
                node = nodes.get(item.node)
                while node is not None and item.count > 0:
                    if filter_reasons(node, allocatable[node.name], loads[node.name], item.pod):
                        break
                    loads[node.name].add(item.pod)
                    self.bound[name].append(_Pods(item.pod_set, node.name, item.pod, 1))
                    item.count -= 1
                if item.count > 0:
                    item.why = _why(nodes, allocatable, loads, item.pod)

    def _loads(self, nodes: Mapping[str, Node], usage: list[Usage]) -> dict[str, NodeLoad]:
        """What kube-scheduler counts on each node: non-TAS pods and the pods bound here."""
        loads = {name: NodeLoad() for name in nodes}
        for entry in usage:
            if entry.node in loads:
                loads[entry.node].add(Pod(from_quantities(entry.requests), {}, ()), entry.count)
        for pods in self.bound.values():
            for p in pods:
                if p.node in loads:
                    loads[p.node].add(p.pod, p.count)
        return loads


def _why(
    nodes: Mapping[str, Node],
    allocatable: Mapping[str, Mapping[str, int]],
    loads: Mapping[str, NodeLoad],
    pod: Pod,
) -> str:
    """kube-scheduler's message for a pod no node takes."""
    reasons: dict[str, int] = {}
    for n in nodes.values():
        for reason in filter_reasons(n, allocatable[n.name], loads[n.name], pod):
            reasons[reason] = reasons.get(reason, 0) + 1
    return "kube-scheduler: " + unavailable_message(len(nodes), reasons)
