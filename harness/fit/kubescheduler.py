"""kube-scheduler's default profile (v1.36) for one pod: which nodes pass, which one wins.

Kueue only picks the domain; kube-scheduler binds each released pod to one node of it.
Filters run in the default profile's order and the first failure is the node's reason
(pkg/scheduler/framework/plugins): NodeUnschedulable, TaintToleration (NoSchedule and
NoExecute), NodeAffinity (the nodeSelector), NodeResourcesFit (pod count, then every
requested resource). Scores: TaintToleration x3 (untolerated PreferNoSchedule taints,
normalised and reversed), NodeResourcesFit LeastAllocated on cpu and memory (a container
without a request counts 100m / 200Mi), NodeResourcesBalancedAllocation on cpu and memory
(skipped for a pod that requests neither); the other default scorers give these pods the
same score on every node. kube-scheduler breaks ties at random; here the first node in
scenario order wins, so a prediction that hangs on a tie may differ from one real run.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from harness.fit.resources import ResourceVector
from harness.scenario.model import Node, Taint, Toleration

CPU, MEMORY, PODS = "cpu", "memory", "pods"
DEFAULT_MILLI_CPU = 100  # schedutil.DefaultMilliCPURequest
DEFAULT_MEMORY = 200 * 1024 * 1024  # schedutil.DefaultMemoryRequest
MAX_SCORE = 100
# kube-controller-manager's node lifecycle controller puts these on such nodes.
NOT_READY = Taint("node.kubernetes.io/not-ready", "", "NoSchedule")
UNSCHEDULABLE = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
UNSCHEDULABLE_REASON = "node(s) were unschedulable"
TAINT_REASON = "node(s) had untolerated taint(s)"
SELECTOR_REASON = "node(s) didn't match Pod's node affinity/selector"


@dataclass(frozen=True)
class Pod:
    """What kube-scheduler reads from a pod: requests (Kueue units), selector, tolerations."""

    requests: Mapping[str, int]
    node_selector: Mapping[str, str]
    tolerations: tuple[Toleration, ...]

    def nonzero(self, resource: str) -> int:
        """The request scoring uses: a missing cpu or memory request counts as a default."""
        if resource in self.requests:
            return self.requests[resource]
        return DEFAULT_MILLI_CPU if resource == CPU else DEFAULT_MEMORY

    def tolerates(self, taint: Taint) -> bool:
        return any(t.tolerates(taint) for t in self.tolerations)


@dataclass
class NodeLoad:
    """What kube-scheduler's cache counts on a node: bound pods and their requests."""

    requested: ResourceVector = field(default_factory=dict)
    nonzero: ResourceVector = field(default_factory=dict)
    pods: int = 0

    def add(self, pod: Pod, count: int = 1) -> None:
        for name, value in pod.requests.items():
            self.requested[name] = self.requested.get(name, 0) + value * count
        for name in (CPU, MEMORY):
            self.nonzero[name] = self.nonzero.get(name, 0) + pod.nonzero(name) * count
        self.pods += count

    def remove(self, pod: Pod, count: int = 1) -> None:
        self.add(pod, -count)


def filter_reasons(
    node: Node, allocatable: Mapping[str, int], load: NodeLoad, pod: Pod
) -> list[str]:
    """Why the node cannot take the pod now ([] when it can), as kube-scheduler words it."""
    if node.unschedulable and not pod.tolerates(UNSCHEDULABLE):
        return [UNSCHEDULABLE_REASON]
    taints = node.taints if node.ready else (*node.taints, NOT_READY)
    for taint in taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not pod.tolerates(taint):
            return [TAINT_REASON]
    if any(node.labels.get(k) != v for k, v in pod.node_selector.items()):
        return [SELECTOR_REASON]
    reasons = []
    if load.pods + 1 > allocatable.get(PODS, 0):
        reasons.append("Too many pods")
    for name, value in sorted(pod.requests.items()):
        free = allocatable.get(name, 0) - load.requested.get(name, 0)
        if name != PODS and value > 0 and value > free:
            reasons.append(f"Insufficient {name}")
    return reasons


def score(
    node: Node, allocatable: Mapping[str, int], load: NodeLoad, pod: Pod
) -> tuple[int, int, int]:
    """(untolerated PreferNoSchedule taints, LeastAllocated, BalancedAllocation or -1)."""
    prefer = sum(
        1
        for t in node.taints
        if t.effect == "PreferNoSchedule"
        and not any(tol.tolerates(t) for tol in pod.tolerations if tol.effect in ("", t.effect))
    )
    total = weights = 0
    for name in (CPU, MEMORY):
        capacity = allocatable.get(name, 0)
        if capacity == 0:
            continue
        requested = load.nonzero.get(name, 0) + pod.nonzero(name)
        total += 0 if requested > capacity else (capacity - requested) * MAX_SCORE // capacity
        weights += 1
    least = total // weights if weights else 0
    balanced = -1
    if pod.requests.get(CPU, 0) or pod.requests.get(MEMORY, 0):
        before = [load.requested.get(n, 0) for n in (CPU, MEMORY)]
        after = [b + pod.requests.get(n, 0) for b, n in zip(before, (CPU, MEMORY), strict=True)]
        room = [allocatable.get(n, 0) for n in (CPU, MEMORY)]
        with_pod, without = _balance(after, room), _balance(before, room)
        balanced = MAX_SCORE // 2 + _go_div(MAX_SCORE // 2 + with_pod - without, 2)
    return prefer, least, balanced


def _balance(requested: list[int], capacity: list[int]) -> int:
    fractions = [min(1.0, r / c) for r, c in zip(requested, capacity, strict=True) if c != 0]
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    return math.trunc((1 - std) * MAX_SCORE)


def _go_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def best_node(
    candidates: Iterable[tuple[Node, Mapping[str, int], NodeLoad]], pod: Pod
) -> Node | None:
    """The node kube-scheduler binds the pod to, or None when no candidate passes."""
    feasible = [
        (node, score(node, allocatable, load, pod))
        for node, allocatable, load in candidates
        if not filter_reasons(node, allocatable, load, pod)
    ]
    if not feasible:
        return None
    most_prefer = max(s[0] for _, s in feasible)

    def total(scores: tuple[int, int, int]) -> int:
        taint = MAX_SCORE if most_prefer == 0 else MAX_SCORE - MAX_SCORE * scores[0] // most_prefer
        return 3 * taint + scores[1] + max(scores[2], 0)

    best = max(feasible, key=lambda entry: total(entry[1]))  # first of equals: scenario order
    return best[0]


def unavailable_message(total_nodes: int, reasons: Mapping[str, int]) -> str:
    """kube-scheduler's FitError text (without its preemption part)."""
    histogram = sorted(f"{count} {reason}" for reason, count in reasons.items())
    return f"0/{total_nodes} nodes are available: {', '.join(histogram)}."
