"""Faults under running workloads (docs/scenario-extensions.md): what the kubelet, the taint
manager and the Job controller do to pods, and how Kueue v0.19.2 repairs or evicts (and
v0.17.1, v0.18.2: the differences are KueueRules flags, harness.fit.versions).

Rules and citations: docs/dev/kueue-v0.19.2-node-replacement.md. The TAS node controller
(pkg/controller/tas/node_controller.go) decides per workload whether a node of its
assignment failed and records it in `unhealthyNodes` (a second, different node evicts); the
scheduler's second pass (harness.fit.replacement) repairs the assignment or, with
TASFailedNodeReplacementFailFast, evicts; an evicted workload is requeued at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from harness.errors import UnsupportedVersionError
from harness.fit.faultnotes import NodeHealth, Note
from harness.fit.faultwhy import WAITS, no_replacement_note, replaced_note
from harness.fit.faultworld import PerLeaf as PerLeaf
from harness.fit.faultworld import World, on_nodes
from harness.fit.nodehealth import Gates as Gates
from harness.fit.nodehealth import node_health
from harness.fit.replacement import ReplacementFailed, find_replacement
from harness.fit.request import with_pod
from harness.fit.resources import ResourceVector, add_into, from_quantities
from harness.fit.tree import LeafKey
from harness.fit.versions import RULES, KueueRules
from harness.scenario.model import Eviction, PodFault, Step, Taint, TaintChange

MULTIPLE_FAILURES = (
    "Workload eviction triggered due to multiple TAS assigned node failures, including: {}"
)
NO_REPLACEMENT = "Workload was evicted as there was no replacement for unhealthy node(s): {}"


@dataclass
class StepReport:
    """What one step did to each workload: nodes replaced, evictions, and why (`notes`, in
    the order decided; `acted`: the nodes the step touched, whose verdicts are told even
    when nothing failed)."""

    replaced: dict[str, dict[str, dict[str, tuple[str, ...]]]] = field(default_factory=dict)
    evicted: dict[str, Eviction] = field(default_factory=dict)
    notes: dict[str, list[Note]] = field(default_factory=dict)
    acted: set[str] = field(default_factory=set)

    def note(self, workload: str, note: Note) -> None:
        """Record once: the rules run again each round until nothing changes."""
        notes = self.notes.setdefault(workload, [])
        if note not in notes:
            notes.append(note)


@dataclass
class Faults:
    """Kueue's node-failure bookkeeping across steps (Workload.status.unhealthyNodes)."""

    gates: Gates
    rules: KueueRules = RULES["v0.19.2"]
    unhealthy: dict[str, list[str]] = field(default_factory=dict)
    touched: set[str] = field(default_factory=set)
    report: StepReport = field(default_factory=StepReport)

    # -- the step, as the node, the kubelet and the taint manager act ----------------------

    def apply(self, world: World, step: Step) -> bool:
        """Apply a fault step; False if `step` is not one."""
        target, action = step.target, step.action
        if isinstance(target, str):
            self.report.acted.add(target)
        elif isinstance(target, (TaintChange, PodFault)) and target.node is not None:
            self.report.acted.add(target.node)
        if action in ("node-not-ready", "node-ready"):
            node = world.nodes[str(target)]
            world.nodes[node.name] = replace(node, ready=action == "node-ready")
        elif action == "taint-node":
            assert isinstance(target, TaintChange)
            node = world.nodes[target.node]
            world.nodes[node.name] = replace(node, taints=(*node.taints, target.taint))
            if target.taint.effect == "NoExecute":
                self._taint_manager(world, target.node, target.taint)
        elif action == "untaint-node":
            assert isinstance(target, TaintChange)
            node = world.nodes[target.node]
            kept = tuple(
                t
                for t in node.taints
                if (t.key, t.effect) != (target.taint.key, target.taint.effect)
            )
            world.nodes[node.name] = replace(node, taints=kept)
        elif action in ("terminate-pods", "fail-pods"):
            assert isinstance(target, PodFault)
            if target.workload is not None:
                self._pod_fault(world, target, terminate=action == "terminate-pods")
            # A usage pod stuck Terminating still counts as non-TAS usage (its capacity is
            # freed only when it is gone: non_tas_usage_controller.go), so nothing changes.
        else:
            return False
        return True

    def node_deleted(self, world: World, name: str) -> None:
        """Pod GC deletes the pods of a node that is gone; their Jobs recreate them."""
        self.report.acted.add(name)
        for b in list(world.binder.bound):
            if b.node == name:
                self.touched.add(b.workload)
        world.binder.bound = [b for b in world.binder.bound if b.node != name]

    def _taint_manager(self, world: World, node: str, taint: Taint) -> None:
        """kube-controller-manager deletes the pods that do not tolerate a NoExecute taint (a
        toleration with tolerationSeconds defers that beyond any step)."""
        gone = [b for b in world.binder.bound if b.node == node and not b.pod.tolerates(taint)]
        for b in gone:
            world.binder.bound.remove(b)
            self.touched.add(b.workload)

    def _pod_fault(self, world: World, fault: PodFault, terminate: bool) -> None:
        """The workload's running pods on `node` (or all), at most `count`, in pod-set order:
        stuck Terminating (still holding the node) or Failed (gone); the Job replaces them."""
        assert fault.workload is not None
        w = world.workload(fault.workload)
        order = {ps.name: i for i, ps in enumerate(w.pod_sets)}
        pods = [b for b in world.binder.pods_of(w.name, fault.node) if not b.terminating]
        pods.sort(key=lambda b: order.get(b.pod_set, 0))
        for b in pods[: fault.count if fault.count is not None else len(pods)]:
            self.report.acted.add(b.node)
            if terminate:
                b.terminating = True
            else:
                world.binder.bound.remove(b)
        self.touched.add(w.name)

    # -- Kueue's reaction ------------------------------------------------------------------

    def settle(self, world: World) -> bool:
        """One round: the node controller, the second pass, then the Job's new pods released
        and bound. True if anything changed (the caller retries pending workloads and calls
        again). The node controller reacts to a pod's end (100 ms batching) before its
        replacement pod is created, released and bound, so it judges the pods left."""
        changed = False
        watched = [n for n in world.assignments() if self._watched(world, n)]
        self._not_watched(world)
        fresh: dict[str, str] = {}
        for name in watched:
            if name in world.assignments():
                changed |= self._node_controller(world, name, fresh)
        for name in self._second_pass_order(world, watched, fresh):
            if name in world.assignments() and self.unhealthy.get(name):
                changed |= self._second_pass(world, name)
        self._rebind(world)
        return changed

    def _second_pass_order(
        self, world: World, watched: list[str], fresh: dict[str, str]
    ) -> list[str]:
        """The order Kueue repairs them in. Workloads one node failed for at once are a tie
        Kueue breaks at random: its node controller writes their unhealthyNodes in Go map
        order (node_controller.go handleUnhealthyNode / reconcileWorkloadsOnNode range over
        a sets.Set), the workload controller's update handler pre-queues each second pass as
        it sees the write (workload_controller.go Update -> QueueSecondPassIfNeeded, a 1 s
        timer each), and the first timer wakes the scheduler alone: the workload written
        first is repaired first and may take the free node the other one needed."""
        due = [n for n in watched if n in world.assignments() and self.unhealthy.get(n)]
        first = {node: i for i, n in reversed(list(enumerate(due))) if (node := fresh.get(n))}
        return world.ties.sort(
            due,
            key=lambda n: (first[fresh[n]] if n in fresh else due.index(n),),
            order=due.index,
            what=lambda tied: (
                f"{' and '.join(tied)} lost node {fresh[tied[0]]} at once: Kueue's node "
                "controller writes their unhealthyNodes in Go map order, and the workload "
                "written first gets its second pass first"
            ),
        )

    def _watched(self, world: World, name: str) -> bool:
        """Kueue's node controller follows the workload's nodes: the gate is on and its
        assignment names nodes (the topology's lowest level is the hostname). It reconciles
        a node on that node's events and on pod events there (node_controller.go
        SetupWithManager); a workload waiting for its admission checks has no pods, so it
        is judged only when the step acted on one of its nodes."""
        if not (self.gates.replacement and on_nodes(world, name)):
            return False
        return world.has_pods(name) or bool(set(_assigned_nodes(world, name)) & self.report.acted)

    def _rebind(self, world: World) -> None:
        assignments = world.assignments()
        for name in sorted(self.touched):
            per_leaf = assignments.get(name)
            if per_leaf is not None:
                blocked = frozenset(self.unhealthy.get(name, ()))
                world.binder.reassign(
                    world.workload(name), per_leaf, world.nodes, world.usage, blocked
                )
        self.touched.clear()

    def _not_watched(self, world: World) -> None:
        """Why Kueue does nothing for the workloads a step touched."""
        why = (
            "TASFailedNodeReplacement is off, so Kueue's node controller ignores node "
            "failures and keeps the assignment"
            if not self.gates.replacement
            else "the topology's lowest level is not kubernetes.io/hostname, so the assignment "
            "names no node and Kueue never sees a node fail (it keeps the assignment)"
        )
        assignments = world.assignments()
        for name in sorted(self.touched):
            if name in assignments and not self._watched(world, name):
                self.report.note(name, Note("not-watched", why))

    def _node_controller(self, world: World, name: str, fresh: dict[str, str]) -> bool:
        """Per node of the assignment: failed for this workload (recorded in `fresh`: the
        node it failed on now), or healthy again."""
        listed = self.unhealthy.setdefault(name, [])
        changed = False
        for node in _assigned_nodes(world, name):
            health = node_health(world, self.gates, self.rules, name, node)
            failed = health.failed
            if failed and node not in listed:
                if listed:
                    # Kueue names the nodes recorded before, then the one whose reconcile
                    # evicts (evictWorkloadIfNeeded); two failing in the same step race for
                    # that order, so only the message's start is predicted then.
                    at_once = fresh.get(name) in listed
                    nodes = "" if at_once else ", ".join([*listed, node])
                    self._note_multiple(world, name, node, health, listed)
                    self.evict(world, name, MULTIPLE_FAILURES.format(nodes))
                    return True
                self.report.note(name, Note("failed", health.why, node))
                listed.append(node)
                fresh[name] = node
                self.touched.add(name)
                changed = True
            elif not failed and node in listed:
                why = health.why or "Ready without a NoSchedule or NoExecute taint"
                self.report.note(name, Note("recovered", f"healthy again ({why})", node))
                listed.remove(node)
                self.touched.add(name)
                changed = True
            elif not failed and node in self.report.acted:
                why = health.why or "Ready without a NoSchedule or NoExecute taint"
                self.report.note(name, Note("kept", f"not failed: {why}", node))
        return changed

    def _note_multiple(
        self, world: World, name: str, node: str, health: NodeHealth, listed: list[str]
    ) -> None:
        first = ", ".join(listed)
        self.report.note(name, Note("failed", health.why, node))
        self.report.note(
            name,
            Note(
                "multiple-failures",
                f"a second node, {node}, failed before {first} was replaced: Kueue evicts on "
                "multiple node failures without looking for a replacement",
                node,
                detail={"unhealthyNodes": [*listed, node]},
            ),
        )

    def _second_pass(self, world: World, name: str) -> bool:
        """findReplacementAssignment for each pod set naming unhealthyNodes[0], in pod-set
        order, each seeing the earlier ones' replacements; the first failure stops it."""
        per_leaf, failed = world.assignments()[name], self.unhealthy[name][0]
        held = world.second_pass_held(name)
        if held is not None:
            self.report.note(name, Note("waits", held, failed))
            return False
        watched = on_nodes(world, name)
        w = world.workload(name)
        mixed = world.scenario.feature_gates.get("TASProfileMixed", True)
        rules = self.rules
        self._late_pods(world, name, failed)
        assumed: dict[LeafKey, ResourceVector] = {}
        repaired: dict[str, dict[LeafKey, int]] = {}
        replaced: dict[str, dict[str, tuple[str, ...]]] = {}
        for ps in w.pod_sets:
            current = per_leaf.get(ps.name, {})
            if failed not in current or ps.name not in watched:
                continue
            flavor, _ = watched[ps.name]
            tree = world.tree(flavor.name)
            unconstrained = ps.topology is None or ps.topology.mode not in ("required", "preferred")
            algo = rules.counting(best_fit=not (unconstrained and mixed))
            try:
                found = find_replacement(
                    tree,
                    ps,
                    current,
                    failed,
                    flavor.tolerations,
                    assumed,
                    algo,
                    by_prefix=not rules.replacement_domain_by_id,
                )
            except ReplacementFailed as why:
                note = no_replacement_note(world.nodes, _holders(world), tree, ps, failed, why)
                self.report.note(name, note)
                if self.gates.fail_fast:
                    self.evict(world, name, NO_REPLACEMENT.format(",".join(self.unhealthy[name])))
                    return True
                self.report.note(name, Note("waits", WAITS, failed, ps.name))
                return False
            self.report.note(name, replaced_note(tree, ps, failed, found))
            per_pod = from_quantities(ps.requests)
            if rules.assumed_usage_counts_pods:  # v0.17.1's addAssumedUsage: no `pods`
                per_pod = with_pod(per_pod)
            for key, n in found.added.items():
                add_into(assumed.setdefault(key, {}), {r: v * n for r, v in per_pod.items()})
            repaired[ps.name] = found.assignment
            replaced[ps.name] = {failed: tuple(sorted(str(k) for k in found.added))}
        world.reassign(name, per_leaf | repaired)
        self.report.replaced.setdefault(name, {}).update(replaced)
        self.unhealthy[name] = []
        self.touched.add(name)
        return True

    def _late_pods(self, world: World, name: str, failed: str) -> None:
        """v0.17.1 (KueueRules.unhealthy_only_from_assignment): pods released onto the
        failed node and never bound stay pinned there once the assignment moves, and a later
        failure of that node lists it in this workload's unhealthyNodes too (kueue#10837).
        The model does not keep such pods: refused."""
        if self.rules.unhealthy_only_from_assignment:
            return
        if any(p.domain == failed and p.count for p in world.binder.waiting.get(name, [])):
            raise UnsupportedVersionError(
                f"{world.scenario.path}: kueue: {self.rules.version}: workload {name} has "
                f"pods released onto {failed} and not bound when it is replaced: before "
                "v0.17.2 a later failure of that node lists it as unhealthy for the workload "
                "too (kueue#10837), which is not modelled"
            )

    def evict(self, world: World, name: str, message: str) -> None:
        """Evicted with reason NodeFailures: unhealthyNodes cleared, the Job suspended (its
        pods deleted), quota released and the workload requeued at once."""
        self.report.evicted[name] = Eviction("NodeFailures", message)
        self.unhealthy.pop(name, None)
        world.evict(name)

    def drift(self, world: World, name: str) -> dict[str, dict[str, int]]:
        """Running pods on nodes the assignment no longer names (kueue#12735)."""
        watched = on_nodes(world, name)
        per_leaf = world.assignments()[name]
        out: dict[str, dict[str, int]] = {}
        for b in world.binder.pods_of(name):
            if b.terminating or b.pod_set not in watched:
                continue
            if b.node not in per_leaf.get(b.pod_set, {}):
                per = out.setdefault(b.pod_set, {})
                per[b.node] = per.get(b.node, 0) + b.count
        return out


def _holders(world: World) -> dict[LeafKey, list[str]]:
    """Who holds each node: admitted workloads, then usage."""
    out: dict[LeafKey, list[str]] = {}
    for name, per_leaf in world.assignments().items():
        for key in dict.fromkeys(k for leaves in per_leaf.values() for k in leaves):
            out.setdefault(key, []).append(name)
    for u in world.usage:
        out.setdefault(u.node, []).append(u.name or f"usage on {u.node}")
    return out


def _assigned_nodes(world: World, name: str) -> Iterator[str]:
    """The assignment's nodes in the order Kueue's node controller records their failures
    when pods on several end at once: pod-set order, then the assignment's domain order
    (sorted by level values), which is the pods' rank order (the ungater puts rank i on the
    i-th domain: topology_ungater.go rankToDomainID), which is the order a step ends them in.
    Kueue's multiple-failure message lists the nodes in that order (x3 before x1 when x3's
    rack sorts first)."""
    watched = on_nodes(world, name)
    known = {n.name: n for n in world.scenario.nodes} | world.nodes

    def values(node: str, levels: tuple[str, ...]) -> tuple[str, ...]:
        labels = known[node].labels if node in known else {}
        return (*(labels.get(level, "") for level in levels[:-1]), node)

    seen: set[str] = set()
    for ps, per_leaf in world.assignments()[name].items():
        if ps not in watched:
            continue
        levels = watched[ps][1].levels
        keys = (k for k in per_leaf if isinstance(k, str))
        for key in sorted(keys, key=lambda k: values(k, levels)):
            if key not in seen:
                seen.add(key)
                yield key
