"""The second half of admission: can kube-scheduler bind the pods Kueue just placed?

Kueue admits against each domain's summed free capacity; it checks taints and nodeSelectors
only when the lowest level is the hostname, and only the workers' pod set of a leader/worker
group (pkg/cache/scheduler/tas_flavor_snapshot.go findTopologyAssignment). Its ungater then
releases each pod with the nodeSelector of its domain (pkg/controller/tas/topology_ungater.go:
{level: value} for every level of the assignment, only the hostname when that is the lowest),
and kube-scheduler binds it to one node of that domain, or cannot. Two ways a pod never runs:

- it stays scheduling-gated: the API server refuses to change a key a gated pod's nodeSelector
  already has (only additions are allowed), so a pod set whose own nodeSelector names another
  value of a level than its assigned domain is never released; pods beyond what the
  assignment covers are never released either;
- kube-scheduler finds no node of the domain for it (harness.fit.kubescheduler).

Pods are bound workload by workload in admission order, pod set by pod set, domain by domain,
one pod at a time, each on the node kube-scheduler's default scores prefer. For identical pods
the number that fits on a set of nodes does not depend on the order; where pods of different
shapes share nodes the real order (pods of one JobSet, or of two workloads admitted close
together, are bound interleaved) can change which node is left, and this order is the
approximation. What bound pods occupy is kept per node for later workloads; Kueue's own
admission keeps counting the domain aggregate (the scheduler model does not read this).
Unbound pods are retried after every step, as kube-scheduler requeues them on cluster changes.

Pods of every TAS flavor share the nodes: before v0.18 (KueueRules.overlapping_flavors_share_usage)
a hostname-level flavor's snapshot counts only its own workloads' TAS pods, so Kueue can place
a pod on a node a sibling flavor's pods already fill, and it waits here. Pod sets on a flavor
without topology are not followed (kube-scheduler picks their node).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from harness.fit.kubescheduler import NodeLoad, Pod, best_node, filter_reasons
from harness.fit.kubescheduler import unavailable_message as scheduler_message
from harness.fit.resources import ResourceVector, from_quantities
from harness.fit.tree import LeafKey
from harness.scenario.model import HOSTNAME, Flavor, Node, PodSet, Scenario, Usage, Workload

PerLeaf = Mapping[str, Mapping[LeafKey, int]]


@dataclass
class _Bound:
    """Bound pods. `terminating`: deleted but kept by a finalizer (a `terminate-pods` step):
    still holding the node for kube-scheduler, no longer progressing for Kueue."""

    workload: str
    node: str
    pod: Pod
    count: int
    pod_set: str = ""
    terminating: bool = False


@dataclass
class _Waiting:
    """Pods of one pod set and domain that kube-scheduler could not bind (yet)."""

    pod_set: str
    domain: str
    pod: Pod
    count: int
    why: str = ""


@dataclass
class Unplaceable:
    """Per pod set: pods that never run, and one line on why."""

    counts: dict[str, int] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)


@dataclass
class Binder:
    """kube-scheduler's picture of the nodes as TAS pods are released and bound."""

    scenario: Scenario
    bound: list[_Bound] = field(default_factory=list)
    waiting: dict[str, list[_Waiting]] = field(default_factory=dict)
    gated: dict[str, list[_Waiting]] = field(default_factory=dict)
    flavors: dict[str, dict[str, str | None]] = field(default_factory=dict)
    """Per workload: pod set -> its TAS flavor (the pod sets whose pods are followed)."""
    _nodes_seen: list[Node] = field(default_factory=list)
    _allocatable: dict[str, ResourceVector] = field(default_factory=dict)
    _selecting: _Selecting | None = None
    _load_cache: dict[str, NodeLoad] | None = None
    _load_key: tuple[object, int, object, int] = (None, 0, None, 0)
    """kube-scheduler's node loads as of the last binding, and (the `bound` list and its
    length, the usage list and its length) then: appends happen only in _bind and removals
    shorten the list or replace it, so the same lists of the same lengths mean nothing
    changed since (the key holds the lists, so no later list can reuse their identity)."""

    def admit(
        self,
        workload: Workload,
        flavors: Mapping[str, str | None],
        per_leaf: PerLeaf,
        nodes: Mapping[str, Node],
        usage: list[Usage],
    ) -> Unplaceable:
        """Release and bind an admitted workload's pods; what cannot run. `flavors`: the pod
        sets the ungater releases (those requesting TAS) -> their TAS flavor (None: none was
        assigned, so no pod of it is ever released)."""
        self.flavors[workload.name] = dict(flavors)
        gated: list[_Waiting] = []
        waiting: list[_Waiting] = []
        for pod_set in self._followed(workload):
            leaves = per_leaf.get(pod_set.name, {})
            for key, count in sorted(leaves.items(), key=_by_path):
                pod, conflict = self._released_pod(workload.name, pod_set, key)
                item = _Waiting(pod_set.name, _domain_name(key), pod, count, conflict)
                (gated if conflict else waiting).append(item)
            missing = pod_set.count - sum(leaves.values())
            if missing > 0:
                why = (
                    f"Kueue's topology assignment holds {sum(leaves.values())} of "
                    f"{pod_set.count} pods; the ungater has no domain for the rest"
                )
                pod = self._plain_pod(workload.name, pod_set)
                gated.append(_Waiting(pod_set.name, "", pod, missing, why))
        self.gated[workload.name] = gated
        self.waiting[workload.name] = waiting
        self._bind(workload.name, nodes, usage)
        return self.unplaceable(workload.name)

    def forget(self, workload: str) -> None:
        """The workload was deleted or evicted: its pods leave the nodes, except those stuck
        Terminating, which hold their node until the scenario ends (kueue#10076)."""
        kept = [b for b in self.bound if b.workload != workload or b.terminating]
        if len(kept) != len(self.bound):
            was, length, usage, used = self._load_key
            if self._load_cache is not None and was is self.bound and length == len(self.bound):
                for b in self.bound:
                    if b.workload == workload and not b.terminating and b.node in self._load_cache:
                        self._load_cache[b.node].remove(b.pod, b.count)
                self._load_key = (kept, len(kept), usage, used)
            self.bound = kept
        self.waiting.pop(workload, None)
        self.gated.pop(workload, None)
        self.flavors.pop(workload, None)

    def pods_of(self, workload: str, node: str | None = None) -> list[_Bound]:
        """The workload's bound pods (on `node` only, if given), in binding order."""
        return [
            b for b in self.bound if b.workload == workload and (node is None or b.node == node)
        ]

    def reassign(
        self,
        workload: Workload,
        per_leaf: PerLeaf,
        nodes: Mapping[str, Node],
        usage: list[Usage],
        held_back: frozenset[str] = frozenset(),
    ) -> Unplaceable:
        """Release and bind again after pods went away or the assignment changed.

        The Job keeps `count` active pods per pod set: those still running anywhere plus new
        ones. The ungater releases a new pod into a domain only while the pods already there
        (terminating ones included, terminated ones not) are fewer than the domain's count
        (topology_ungater.go podsForPodSet), and never onto a node in the Workload's
        unhealthyNodes (`held_back`). Released pods pinned to a node the assignment no longer
        names are failed by Kueue and recreated, so nothing released earlier is kept."""
        gated: list[_Waiting] = []
        waiting: list[_Waiting] = []
        for pod_set in self._followed(workload):
            mine = [b for b in self.pods_of(workload.name) if b.pod_set == pod_set.name]
            pending = pod_set.count - sum(b.count for b in mine if not b.terminating)
            for key, count in sorted(per_leaf.get(pod_set.name, {}).items(), key=_by_path):
                levels = self._levels(workload.name, pod_set)
                there = sum(b.count for b in mine if _in_domain(nodes.get(b.node), key, levels))
                need = min(max(0, count - there), pending)
                if need == 0:
                    continue
                pending -= need
                pod, conflict = self._released_pod(workload.name, pod_set, key)
                if key in held_back:
                    conflict = (
                        f"stays scheduling-gated: {key} is in the Workload's unhealthyNodes "
                        "and the ungater releases no pod onto it"
                    )
                item = _Waiting(pod_set.name, _domain_name(key), pod, need, conflict)
                (gated if conflict else waiting).append(item)
            if pending > 0:
                why = (
                    "stays scheduling-gated: every domain of the assignment already has its "
                    "count of pods (terminating ones included)"
                )
                pod = self._plain_pod(workload.name, pod_set)
                gated.append(_Waiting(pod_set.name, "", pod, pending, why))
        self.gated[workload.name] = gated
        self.waiting[workload.name] = waiting
        self._bind(workload.name, nodes, usage)
        return self.unplaceable(workload.name)

    def retry(self, nodes: Mapping[str, Node], usage: list[Usage]) -> dict[str, Unplaceable]:
        """After a step: pods on deleted nodes are gone, unbound ones are tried again."""
        if any(b.node not in nodes for b in self.bound):
            self.bound = [b for b in self.bound if b.node in nodes]
        for workload, items in list(self.waiting.items()):
            if any(item.count > 0 for item in items):  # all bound: nothing to try
                self._bind(workload, nodes, usage)
        return {w: self.unplaceable(w) for w in self.waiting}

    def unplaceable(self, workload: str) -> Unplaceable:
        out = Unplaceable()
        for item in self.gated.get(workload, []) + self.waiting.get(workload, []):
            if item.count <= 0:
                continue
            out.counts[item.pod_set] = out.counts.get(item.pod_set, 0) + item.count
            where = f" in {item.domain}" if item.domain else ""
            line = f"{item.count} pod(s){where}: {item.why}"
            previous = out.reasons.get(item.pod_set)
            out.reasons[item.pod_set] = f"{previous}; {line}" if previous else line
        return out

    # -- internals ---------------------------------------------------------------------------

    def _flavor(self, workload: str, pod_set: PodSet) -> Flavor:
        name = self.flavors[workload][pod_set.name]
        return self.scenario.resource_flavor(name) if name else Flavor(name="")

    def _followed(self, workload: Workload) -> list[PodSet]:
        """The pod sets placed by TAS, whose pods the ungater releases into domains."""
        mine = self.flavors.get(workload.name, {})
        return [ps for ps in workload.pod_sets if ps.name in mine]

    def _levels(self, workload: str, pod_set: PodSet) -> tuple[str, ...]:
        topology = self.scenario.topology_of(self._flavor(workload, pod_set))
        return topology.levels if topology is not None else ()

    def _plain_pod(self, workload: str, pod_set: PodSet) -> Pod:
        return plain_pod(pod_set, self._flavor(workload, pod_set))

    def _released_pod(self, workload: str, pod_set: PodSet, key: LeafKey) -> tuple[Pod, str]:
        """The pod as the ungater would release it into this domain, or why it cannot."""
        base = self._plain_pod(workload, pod_set)
        levels = self._levels(workload, pod_set)
        added = {HOSTNAME: key} if isinstance(key, str) else dict(zip(levels, key, strict=True))
        for label, value in added.items():
            own = base.node_selector.get(label)
            if own is not None and own != value:
                return base, (
                    f"stays scheduling-gated: Kueue's ungater must add nodeSelector "
                    f"{label}={value}, but the pod already selects {label}={own} (the API "
                    "server lets a gated pod's nodeSelector only gain keys)"
                )
        selector = {**base.node_selector, **added}
        return Pod(base.requests, selector, base.tolerations), ""

    def _bind(self, workload: str, nodes: Mapping[str, Node], usage: list[Usage]) -> None:
        allocatable, selecting = self._node_views(nodes)
        loads = self._loads(nodes, usage)
        for item in self.waiting.get(workload, []):
            matching = selecting.matching(item.pod.node_selector)
            while item.count > 0:
                candidates = ((n, allocatable[n.name], loads[n.name]) for n in matching)
                node = best_node(candidates, item.pod)
                if node is None:
                    break
                loads[node.name].add(item.pod)
                self.bound.append(_Bound(workload, node.name, item.pod, 1, item.pod_set))
                item.count -= 1
            if item.count > 0:
                reasons: dict[str, int] = {}
                for n in nodes.values():
                    for reason in filter_reasons(n, allocatable[n.name], loads[n.name], item.pod):
                        reasons[reason] = reasons.get(reason, 0) + 1
                item.why = "kube-scheduler: " + scheduler_message(len(nodes), reasons)
        self._load_key = (self.bound, len(self.bound), usage, len(usage))

    def _node_views(
        self, nodes: Mapping[str, Node]
    ) -> tuple[dict[str, ResourceVector], _Selecting]:
        """Allocatable vectors and the label index, made again only when a node changed (a
        stream replay binds thousands of workloads on the same nodes: remaking them was 60 %
        of a 1,056-workload replay on 640 nodes)."""
        now = list(nodes.values())
        if self._selecting is None or now != self._nodes_seen:  # identity first: fast
            self._nodes_seen = now
            self._allocatable = {n.name: from_quantities(n.allocatable) for n in now}
            self._selecting = _Selecting(nodes)
            self._load_cache = None
        return self._allocatable, self._selecting

    def _loads(self, nodes: Mapping[str, Node], usage: list[Usage]) -> dict[str, NodeLoad]:
        was, length, used, count = self._load_key
        same = was is self.bound and length == len(self.bound)
        if self._load_cache is not None and same and used is usage and count == len(usage):
            return self._load_cache
        self._load_cache = loads = {name: NodeLoad() for name in nodes}
        for entry in usage:
            if entry.node in loads:
                pod = Pod(from_quantities(entry.requests), {}, ())
                loads[entry.node].add(pod, entry.count)
        for b in self.bound:
            if b.node in loads:
                loads[b.node].add(b.pod, b.count)
        return loads


def plain_pod(pod_set: PodSet, flavor: Flavor) -> Pod:
    """The pod as Kueue starts it: its flavor's nodeLabels and tolerations merged in."""
    return Pod(
        requests=from_quantities(pod_set.requests),
        node_selector={**pod_set.node_selector, **flavor.node_labels},
        tolerations=pod_set.tolerations + flavor.tolerations,
    )


class _Selecting:
    """Nodes whose labels match a nodeSelector, in `nodes` order. One domain's pods select
    its level values, so each selector is matched against the nodes of its most selective
    label only (scanning every node for every domain made binding a placement over many
    domains grow with domains x nodes: 4.7 of 13 s at 20,000 nodes, unconstrained)."""

    def __init__(self, nodes: Mapping[str, Node]) -> None:
        self.nodes = list(nodes.values())
        self.by_label: dict[str, dict[str, list[Node]]] = {}

    def matching(self, selector: Mapping[str, str]) -> list[Node]:
        if not selector:
            return list(self.nodes)
        buckets = [self._with(key).get(value, []) for key, value in selector.items()]
        fewest = min(buckets, key=len)
        return [n for n in fewest if all(n.labels.get(k) == v for k, v in selector.items())]

    def _with(self, key: str) -> dict[str, list[Node]]:
        index = self.by_label.get(key)
        if index is None:
            index = self.by_label[key] = {}
            for n in self.nodes:
                value = n.labels.get(key)
                if value is not None:
                    index.setdefault(value, []).append(n)
        return index


def _in_domain(node: Node | None, key: LeafKey, levels: tuple[str, ...]) -> bool:
    if node is None:
        return False
    if isinstance(key, str):
        return node.name == key
    return all(node.labels.get(level) == v for level, v in zip(levels, key, strict=True))


def _path(key: LeafKey) -> tuple[str, ...]:
    return (key,) if isinstance(key, str) else key


def _by_path(item: tuple[LeafKey, int]) -> tuple[str, ...]:
    return _path(item[0])


def _domain_name(key: LeafKey) -> str:
    return key if isinstance(key, str) else "/".join(key)
