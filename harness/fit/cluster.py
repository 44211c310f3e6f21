"""The world outside Kueue's scheduler, as it changes the scheduler model's cache and queues:
workloads admitted before the scenario starts, submissions, deletions, node and non-TAS pod
changes (which requeue parked workloads as Kueue's controllers do), and Kueue upgrades.
"""

from __future__ import annotations

from dataclasses import replace

from harness.fit.checks import waiting_message
from harness.fit.cycle import NEVER_EVALUATED, Model
from harness.fit.resource_transform import pod_quota, tas_view
from harness.fit.resources import from_quantities
from harness.fit.snapshot import Holding
from harness.fit.tas_step import TasRequest
from harness.fit.tree import LeafKey
from harness.fit.versions import upgraded_rules
from harness.kueue import local_queue_stop as lq_stop
from harness.kueue.admission_checks import admitted_states
from harness.kueue.admitted_flavors import flavor_of
from harness.kueue.queue_activity import drains, inactive_message
from harness.kueue.quota_requests import pod_set_units
from harness.kueue.webhook_rules import webhook_rejection
from harness.results.outcome import Outcome
from harness.scenario.model import (
    AdmittedWorkload,
    Flavor,
    Node,
    Step,
    Usage,
    Workload,
)


class Cluster(Model):
    """The scheduler model and the changes the scenario makes around it."""

    def hold_admitted(self, a: AdmittedWorkload, index: int) -> None:
        """A workload admitted before the scenario starts, reserved one second apart in file
        order before anything else; evicted at once when its ClusterQueue drains."""
        cq = self.scenario.cluster_queue(a.queue)
        lq = self.scenario.local_queue_of(a)
        if drains(cq) or lq_stop.drains(lq.stop_policy):
            self._drained(a)
            return
        quota: dict[tuple[str, str], int] = {}
        tas: dict[str, dict[LeafKey, dict[str, int]]] = {}
        per_leaf: dict[str, dict[LeafKey, int]] = {}
        for aps in a.pod_sets:
            ps = aps.pod_set
            totals = {
                r: pod_set_units(r, q, ps.count) for r, q in pod_quota(self.scenario, ps).items()
            }
            if cq.group_of("pods") is not None:
                totals["pods"] = totals.get("pods", 0) + ps.count
            for r, v in totals.items():
                if cq.group_of(r) is not None:
                    fr = (flavor_of(cq, aps.flavor, r), r)
                    quota[fr] = quota.get(fr, 0) + v
            if "," in aps.flavor:  # several flavors: none with a topology (load_admitted)
                continue
            topology = self.scenario.topology_of(self.scenario.resource_flavor(aps.flavor))
            if topology is None:
                continue
            view = tas_view(self.scenario, cq)
            request = TasRequest(ps, aps.flavor)
            per_pod = dict(view(request)) if view else from_quantities(ps.requests)
            slots = self.rules.pod_slots_held(cq.group_of("pods") is not None)
            per_pod["pods"] = per_pod.get("pods", 0) + slots
            for node, count in (aps.placement or {}).items():
                key = leaf_key(self.nodes[node], topology.levels)
                per_leaf.setdefault(ps.name, {})[key] = count
                target = tas.setdefault(aps.flavor, {}).setdefault(key, {})
                for r, v in per_pod.items():
                    target[r] = target.get(r, 0) + v * count
        self.now = max(self.now, self.created[a.name])
        self.workloads[a.name] = a.as_workload()
        self.checks.states[a.name] = admitted_states(cq, a)
        ready = self.checks.all_ready(a.name)  # else it holds quota, its Job suspended
        if not ready and lq_stop.held(lq.stop_policy):
            # A held LocalQueue takes a reservation without admission away
            # (reconcileOnLocalQueueActiveState): it waits like a drained one.
            self._drained(a)
            return
        self.outcomes[a.name] = Outcome(
            admitted=ready,
            placement={p.pod_set.name: dict(p.placement) for p in a.pod_sets if p.placement},
            flavors={p.pod_set.name: p.flavor for p in a.pod_sets},
            quota_reserved=not ready,
            message="" if ready else waiting_message(),
        )
        self._hold(
            Holding(
                name=a.name,
                cq=a.queue,
                priority=self.scenario.priority(a),
                created=self.created[a.name],
                reserved=index - len(self.scenario.admitted),
                quota=quota,
                frs=frozenset(quota),
                tas=tas,
                flavors={p.pod_set.name: p.flavor for p in a.pod_sets},
                placement={p.pod_set.name: dict(p.placement) for p in a.pod_sets if p.placement},
                per_leaf=per_leaf,
            )
        )

    def _drained(self, a: AdmittedWorkload) -> None:
        """HoldAndDrain: the workload controller evicts it (ClusterQueueStopped, or
        LocalQueueStopped) and, once its Job stopped, it waits in its inactive queue
        (harness.kueue.queue_activity, harness.kueue.local_queue_stop)."""
        w = a.as_workload()
        self.workloads[a.name] = w
        self.queues.push(self._pending(w))
        # Its checks as written with the admission, reset to Pending by the eviction
        # (resetChecksOnEviction), then those of a workload without admission.
        cq = self.scenario.cluster_queue(a.queue)
        self.checks.states[a.name] = admitted_states(cq, a)
        self.checks.reset_on_eviction(a.name)
        self.checks.sync(a.name, cq, None)
        # Not an `evicted` outcome: that one is what a step evicts (runner/repair.py).
        self._pending_outcome(a.name, inactive_message(self.scenario.cluster_queue(a.queue)))

    def submit(self, w: Workload) -> None:
        """A workload created: Kueue's webhook refuses it, or it joins its queue."""
        self.tick += 1
        self.now = max(self.now, self.created[w.name])
        rejection = webhook_rejection(w)
        if rejection is not None:
            self.outcomes[w.name] = Outcome(admitted=False, message=rejection, rejected=True)
            return
        self.queues.push(self._pending(w))
        self.outcomes.setdefault(w.name, NEVER_EVALUATED)
        cq = self.scenario.cluster_queue(w.queue)
        self.checks.sync(w.name, cq, None)
        if cq.name in self.queues.inactive:  # never a head: the workload controller says why
            self._pending_outcome(w.name, inactive_message(cq))
        elif self.queues.local_queue(w) in self.queues.stopped:
            self._pending_outcome(w.name, "")  # its held LocalQueue's message

    def delete(self, name: str) -> None:
        """A workload deleted: its quota and nodes free up, and the parked workloads of its
        ClusterQueue's cohort (or of that ClusterQueue) are requeued, whether it held quota
        or waited: the Delete handler requeues them unconditionally
        (pkg/controller/core/workload_controller.go Delete,
        QueueAssociatedInadmissibleWorkloadsAfter)."""
        self.tick += 1
        outcome = self.outcomes.pop(name, None)
        self.queues.delete(name)
        held = self._release(name)
        if held is not None:
            self.generation[held.cq] += 1
            self.requeue_associated(name, held.cq)
        elif outcome is not None and not outcome.rejected and name in self.workloads:
            self.requeue_associated(name, self.workloads[name].queue)

    def change_nodes(self, step: Step) -> None:
        """A node or non-TAS pod step (docs/scenario-extensions.md): the TAS snapshot sees the
        new nodes; a node change on a TAS flavor's nodes requeues every parked workload
        (pkg/controller/tas/resource_flavor.go), a freed non-TAS pod those of the queues
        using the node's flavors (non_tas_usage_controller.go); new usage requeues none."""
        self.tick += 1
        target, action = step.target, step.action
        touched: Node | None = None
        if action == "delete-usage":
            gone = [u for u in self.usage if u.name == target]
            self.usage = [u for u in self.usage if u.name != target]
            touched = self.nodes.get(gone[0].node) if gone else None
        elif action == "add-usage":
            assert isinstance(target, Usage)
            self.usage.append(target)
        elif action in ("cordon", "uncordon"):
            node = self.nodes[str(target)]
            self.nodes[node.name] = touched = replace(node, unschedulable=action == "cordon")
        elif action == "delete-node":
            touched = self.nodes.pop(str(target), None)
            self.usage = [u for u in self.usage if u.node != target]
        elif action == "add-node":
            assert isinstance(target, Node)
            self.nodes[target.name] = touched = target
        self.snap.rebuild_tas(self.nodes.values(), self.usage)
        self._rebind()
        flavors = [f for f in self._tas_flavors_of(touched)] if touched else []
        if not flavors:
            return
        if action == "delete-usage" and not self.rules.requeue_on_non_tas_pod_deletion:
            return  # kueue#13772 (fixed in v0.19.1): only the TAS cache learns of it
        if action == "delete-usage":
            names = {f.name for f in flavors}
            using = [
                cq.name
                for cq in self.scenario.cluster_queues
                if any(fq.name in names for g in cq.resource_groups for fq in g.flavors)
            ]
            self.queues.flush({m for cq in using for m in self._cohort_of(cq)})
        else:
            self.queues.flush([cq.name for cq in self.scenario.cluster_queues])

    def upgrade(self, version: str) -> None:
        """`upgrade-kueue`: the new Kueue rebuilds its queues from the Workloads, so every
        pending workload is queued afresh and decided by the new version's rules; admitted
        ones keep their quota and topology assignment."""
        self.tick += 1
        self.rules = upgraded_rules(self.scenario, self.rules, version)
        self.queues.restart(self.rules.gate(self.scenario, "SchedulingEquivalenceHashing"))
        self.preserve_scan = self.rules.gate(self.scenario, "FlavorFungibilityPreserveScanProgress")
        self._rebuild_if_sharing_changed()

    def _rebuild_if_sharing_changed(self) -> None:
        """The new Kueue builds its TAS cache afresh: from v0.18 hostname-level flavors count
        each other's usage on a shared node (KueueRules.overlapping_flavors_share_usage)."""
        share = self.rules.shares_usage(self.scenario)
        if share != self.snap.share:
            self.snap.share = share
            self.snap.rebuild_tas(self.nodes.values(), self.usage)

    def _tas_flavors_of(self, node: Node) -> list[Flavor]:
        """`NodeMatchesFlavor`: TAS flavors whose labels and topology levels the node has."""
        out = []
        for flavor in self.scenario.flavors_of(node):
            topology = self.scenario.topology_of(flavor)
            if topology is not None and all(level in node.labels for level in topology.levels):
                out.append(flavor)
        return out


def leaf_key(node: Node, levels: tuple[str, ...]) -> LeafKey:
    if levels[-1] == "kubernetes.io/hostname":
        return node.name
    return tuple(node.labels.get(level, "") for level in levels)
