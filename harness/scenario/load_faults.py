"""The fault steps and fault expectations of a scenario file (docs/scenario-extensions.md,
"Faults under running workloads"), validated against what the earlier steps left.

A step may only do what could happen to the cluster at that point: a node goes NotReady only
while it is Ready and still exists, a taint is removed only if the node has it, pods fail
only for a workload or usage entry that has not been deleted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from harness.scenario.keypath import KeyPath, kind, yaml_text
from harness.scenario.model import (
    EVICTION_REASONS,
    HOSTNAME,
    Eviction,
    Node,
    PodFault,
    Replaced,
    Taint,
    TaintChange,
    Usage,
    Workload,
)


class FaultState:
    """What the steps so far left of nodes, their readiness and taints, workloads and usage.
    `parse_taint` is the loader's taint reader (one home for what a valid taint is)."""

    def __init__(
        self,
        nodes: Iterable[Node],
        workloads: Iterable[Workload],
        usage: Iterable[Usage],
        parse_taint: Callable[[KeyPath], Taint],
    ) -> None:
        listed = list(nodes)
        self.ready = {n.name: n.ready for n in listed}
        self.taints = {n.name: list(n.taints) for n in listed}
        self.workloads = {w.name: w for w in workloads}
        self.usage = {u.name for u in usage if u.name}
        self.parse_taint = parse_taint

    def follow(self, action: str, target: object) -> None:
        """Record what a step (of any action) changed."""
        if isinstance(target, Node):
            self.ready[target.name] = target.ready
            self.taints[target.name] = list(target.taints)
        elif isinstance(target, Workload):
            self.workloads[target.name] = target
        elif isinstance(target, Usage) and target.name:
            self.usage.add(target.name)
        elif isinstance(target, TaintChange):
            self._retaint(action, target)
        elif isinstance(target, str):
            self._follow_name(action, target)

    def _retaint(self, action: str, change: TaintChange) -> None:
        taints = self.taints[change.node]
        same = [t for t in taints if (t.key, t.effect) == (change.taint.key, change.taint.effect)]
        for taint in same:
            taints.remove(taint)
        if action == "taint-node":
            taints.append(change.taint)

    def _follow_name(self, action: str, name: str) -> None:
        if action == "delete-node":
            self.ready.pop(name, None)
            self.taints.pop(name, None)
        elif action in ("node-not-ready", "node-ready"):
            self.ready[name] = action == "node-ready"
        elif action == "delete-workload":
            self.workloads.pop(name, None)
        elif action == "delete-usage":
            self.usage.discard(name)

    def target(self, action: str, at: KeyPath) -> object:
        """The validated target of a fault step."""
        handlers: dict[str, Callable[[KeyPath], object]] = {
            "node-not-ready": lambda a: self._readiness(a, want_ready=True),
            "node-ready": lambda a: self._readiness(a, want_ready=False),
            "taint-node": self._taint_added,
            "untaint-node": self._taint_removed,
            "terminate-pods": lambda a: self._pods(a, usage_allowed=True),
            "fail-pods": lambda a: self._pods(a, usage_allowed=False),
        }
        return handlers[action](at)

    def _node(self, at: KeyPath) -> str:
        name = at.string()
        if name not in self.ready:
            at.fail(f"no node named {yaml_text(name)} (or an earlier step deleted it)")
        return name

    def _readiness(self, at: KeyPath, want_ready: bool) -> str:
        name = self._node(at)
        if self.ready[name] != want_ready:
            state = "NotReady" if want_ready else "Ready"
            at.fail(f"node {yaml_text(name)} is already {state} at this step")
        return name

    def _taint_added(self, at: KeyPath) -> TaintChange:
        change = self._taint_change(at, ("node", "key", "value", "effect"))
        if self._has(change):
            # The API server's ValidateNodeSpec: taints are unique by key and effect.
            at.fail(
                f"node {yaml_text(change.node)} already has a taint {change.taint.key} with "
                f"effect {change.taint.effect} (taints are unique by key and effect)"
            )
        return change

    def _taint_removed(self, at: KeyPath) -> TaintChange:
        change = self._taint_change(at, ("node", "key", "effect"))
        if not self._has(change):
            at.fail(
                f"node {yaml_text(change.node)} has no taint {change.taint.key} with effect "
                f"{change.taint.effect} at this step"
            )
        return change

    def _taint_change(self, at: KeyPath, keys: tuple[str, ...]) -> TaintChange:
        fields = at.mapping(keys, ("node", "key", "effect"))
        node = self._node(fields["node"])
        rest = {k: v for k, v in at.value.items() if k != "node"}
        return TaintChange(node, self.parse_taint(KeyPath(at.file, at.path, rest, at.error)))

    def _has(self, change: TaintChange) -> bool:
        key = (change.taint.key, change.taint.effect)
        return any((t.key, t.effect) == key for t in self.taints[change.node])

    def _pods(self, at: KeyPath, usage_allowed: bool) -> PodFault:
        keys = (
            ("workload", "usage", "node", "count")
            if usage_allowed
            else ("workload", "node", "count")
        )
        fields = at.mapping(keys)
        if ("workload" in fields) == ("usage" in fields):
            at.fail("needs exactly one of workload" + (" or usage" if usage_allowed else ""))
        if "usage" in fields:
            for extra in ("node", "count"):
                if extra in fields:
                    fields[extra].fail("a usage entry's pods are all of them: drop it")
            name = fields["usage"].string()
            if name not in self.usage:
                fields["usage"].fail(
                    f"no usage named {yaml_text(name)} (name the usage entry, or an earlier "
                    "step deleted it)"
                )
            return PodFault(usage=name)
        workload = fields["workload"].string()
        if workload not in self.workloads:
            fields["workload"].fail(
                f"no workload named {yaml_text(workload)} (or an earlier step deleted it)"
            )
        count = fields["count"].positive_int() if "count" in fields else None
        pods = sum(ps.count for ps in self.workloads[workload].pod_sets)
        if count is not None and count > pods:
            fields["count"].fail(f"workload {workload} has only {pods} pods")
        node = self._node(fields["node"]) if "node" in fields else None
        return PodFault(workload=workload, node=node, count=count)


# ---- fault expectations --------------------------------------------------------------------


def replaced(at: KeyPath, workload: Workload, lowest: str, nodes: set[str]) -> Replaced:
    """`replaced: {pod set: {failed node: node or [nodes]}}` ({} says: nothing replaced)."""
    _hostname_lowest(at, lowest)
    out: dict[str, dict[str, tuple[str, ...]]] = {}
    for ps_name, per_node in at.mapping(tuple(p.name for p in workload.pod_sets)).items():
        if not isinstance(per_node.value, dict) or not per_node.value:
            per_node.fail(
                "must map each replaced node to the node (or list of nodes) that took its pods"
            )
        out[ps_name] = {}
        for old, new in per_node.value.items():
            where = per_node.child(str(old), new)
            _known(where, str(old), nodes)
            taken = tuple(_new_nodes(where, nodes))
            if str(old) in taken:
                where.fail(f"node {yaml_text(str(old))} cannot replace itself")
            out[ps_name][str(old)] = tuple(sorted(taken))
    return out


def _hostname_lowest(at: KeyPath, lowest: str) -> None:
    """Kueue names nodes, and so replaces them, only in hostname-level assignments
    (pkg/util/tas/tas_assignment.go: HasNodeInPodSetAssignment)."""
    if lowest != HOSTNAME:
        at.fail(
            "Kueue replaces failed nodes only in assignments whose lowest level is "
            f"{HOSTNAME} (this topology's is {lowest})"
        )


def _new_nodes(at: KeyPath, nodes: set[str]) -> list[str]:
    if isinstance(at.value, str):
        _known(at, at.value, nodes)
        return [at.value]
    items = at.items() if isinstance(at.value, list) else None
    if not items:
        at.fail(f"must be a node name or a non-empty list of node names, got {kind(at.value)}")
    names = [item.string() for item in items]
    for index, (item, name) in enumerate(zip(items, names, strict=True)):
        _known(item, name, nodes)
        if name in names[:index]:
            item.fail(f"node {yaml_text(name)} is listed twice")
    return names


def _known(at: KeyPath, name: str, nodes: set[str]) -> None:
    if name not in nodes:
        at.fail(f"no node named {yaml_text(name)}")


def evicted(at: KeyPath) -> Eviction | bool:
    """`evicted: false`, or `{reason: NodeFailures, message: part of Kueue's message}`."""
    if at.value is False:
        return False
    if at.value is True:
        at.fail("give the eviction's reason: evicted: {reason: NodeFailures}")
    fields = at.mapping(("reason", "message"), ("reason",))
    reason = fields["reason"].string()
    if reason == "Preempted":
        fields["reason"].fail("an eviction by preemption is expected with preempted: true")
    if reason not in EVICTION_REASONS:
        fields["reason"].fail(
            f"{yaml_text(reason)} is not one of Kueue's eviction reasons "
            f"({', '.join(EVICTION_REASONS)})"
        )
    message = fields["message"].string() if "message" in fields else ""
    return Eviction(reason=reason, message=message)


def drift(
    at: KeyPath, workload: Workload, lowest: str, nodes: set[str]
) -> dict[str, dict[str, int]]:
    """`drift: {pod set: {node: running pods the assignment no longer names}}` (kueue#12735):
    only a node replacement leaves them, so only hostname-level topologies have them."""
    _hostname_lowest(at, lowest)
    counts = {p.name: p.count for p in workload.pod_sets}
    out: dict[str, dict[str, int]] = {}
    for ps_name, per_node in at.mapping(tuple(counts)).items():
        if not isinstance(per_node.value, dict):
            per_node.fail("must map each node to a pod count")
        out[ps_name] = {}
        for node, count in per_node.value.items():
            where = per_node.child(str(node), count)
            _known(where, str(node), nodes)
            out[ps_name][str(node)] = where.positive_int()
        if sum(out[ps_name].values()) > counts[ps_name]:
            per_node.fail(f"pod set {ps_name} has only {counts[ps_name]} pods")
    return out
