"""The fit model's one engine: Kueue's scheduler (harness.fit.cycle) with the world around
it, steps and faults under running workloads (harness.fit.faults), for every scenario.

A step changes the world; Kueue's node controller and the scheduler's second pass then react
(faults.Faults.settle) and the scheduling cycles run until nothing changes, round after round
(an evicted workload is requeued at once and retried). Where Kueue breaks a tie at random the
scenario is replayed with the ties broken the other way; if that changes an outcome, it is
Nondeterministic (rules §8).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from harness.errors import UnsupportedVersionError
from harness.fit import check_controller, cq_stop, lq_stop, pods_ready
from harness.fit.cluster import Cluster
from harness.fit.cycle import MODELLED_EITHER_WAY, MODELLED_GATES, Note
from harness.fit.faults import Faults, Gates, PerLeaf, StepReport
from harness.fit.pods_ready import PodsReadiness
from harness.fit.resource_transform import not_modelled as resources_not_modelled
from harness.fit.resource_transform import tas_view
from harness.fit.tas_step import TasRequest, lowest_values, usage_of
from harness.fit.ties import Nondeterministic, TieBreak
from harness.fit.tree import Tree
from harness.fit.versions import MODELLED_KUEUE_VERSIONS as MODELLED_KUEUE_VERSIONS
from harness.fit.versions import KueueRules, rules_for, upgraded_rules
from harness.k8s.duration import seconds
from harness.kueue.admission_fair_sharing import not_run as afs_not_run
from harness.kueue.versions import DEFAULT_KUEUE
from harness.results.outcome import Outcome
from harness.scenario.model import (
    FAULT_ACTIONS,
    READINESS_ACTIONS,
    CheckChange,
    ClusterQueueStopChange,
    Flavor,
    Scenario,
    Step,
    StopPolicyChange,
    Workload,
)

# Gates whose non-default value changes placement in ways the model does not cover.
UNMODELLED_GATE_VALUES = {"TopologyAwareScheduling": False, "SchedulerLibraryIntegration": True}
MODELLED_CONFIG = ("fairSharing", "admissionFairSharing", "waitForPodsReady", "resources")
"""kueueConfig sections the model follows; any other is refused, not ignored."""
MAX_FAULT_ROUNDS = 100
NODE_FAULTS = ("node-not-ready", "node-ready", "taint-node", "untaint-node")
"""Fault steps that change a Node (its Ready condition or taints)."""

Trace = Callable[[str, Tree | None, str], None]


@dataclass
class FitResult:
    """Outcomes after the initial submissions, and after each step; `faults`: what each
    step's fault rules decided and why (`--explain`)."""

    outcomes: dict[str, Outcome]
    steps: list[dict[str, Outcome]]
    faults: list[StepReport] = field(default_factory=list)


def check_supported(scenario: Scenario) -> KueueRules:
    """The rules of the scenario's Kueue version; refuses versions and feature-gate values
    the model does not model."""
    rules = rules_for(scenario)
    running = rules
    for step in scenario.steps:
        if step.action == "upgrade-kueue":
            running = upgraded_rules(scenario, running, str(step.target))
    for gate, bad in UNMODELLED_GATE_VALUES.items():
        if scenario.feature_gates.get(gate) is bad:
            raise UnsupportedVersionError(
                f"{scenario.path}: featureGates.{gate}: {bad} is not modelled by the fit model"
            )
    unmodelled = scenario.kueue_config.unmodelled(MODELLED_CONFIG)
    if unmodelled:
        raise UnsupportedVersionError(
            f"{scenario.path}: kueueConfig.{unmodelled[0]}: not modelled by the fit model "
            "(the embedded cluster runs it: --cluster=local)"
        )
    if why := resources_not_modelled(scenario, rules.version):
        raise UnsupportedVersionError(f"{scenario.path}: kueueConfig.resources.{why}")
    if "admissionFairSharing" in scenario.kueue_config.document:
        why = afs_not_run(scenario)
        if why is None and rules.version != DEFAULT_KUEUE:
            why = f"modelled for Kueue {DEFAULT_KUEUE} only, not {rules.version}"
        if why is not None:
            raise UnsupportedVersionError(
                f"{scenario.path}: kueueConfig.admissionFairSharing: {why} (the embedded "
                "cluster runs it: --cluster=local)"
            )
    PodsReadiness(scenario).check_supported()
    held = [s.action for s in scenario.steps if s.action in READINESS_ACTIONS]
    section = scenario.kueue_config.document.get("waitForPodsReady")
    if held and section is None and not rules.pods_ready_on_by_default:
        raise UnsupportedVersionError(
            f"{scenario.path}: steps {held[0]}: Kueue {rules.version} runs waitForPodsReady "
            "only with a kueueConfig.waitForPodsReady section (on by default from v0.19); "
            "without it Kueue writes no PodsReady condition"
        )
    if why := _pods_ready_not_run(scenario, rules):
        raise UnsupportedVersionError(f"{scenario.path}: kueueConfig.waitForPodsReady: {why}")
    for gate, value in MODELLED_GATES.items():
        if gate not in MODELLED_EITHER_WAY and rules.gate(scenario, gate, value) != value:
            raise UnsupportedVersionError(
                f"{scenario.path}: featureGates.{gate}: {not value} is not modelled by the "
                f"fit model"
            )
    return rules


def _pods_ready_not_run(scenario: Scenario, rules: KueueRules) -> str | None:
    """Why the section cannot be predicted on this version (KueueRules
    pods_ready_timeout_defaulted, pods_ready_with_faults), else None."""
    section = scenario.kueue_config.document.get("waitForPodsReady")
    if section is None:
        return None
    if not rules.pods_ready_timeout_defaulted and not seconds(str(section.get("timeout", "0"))):
        return (
            f"Kueue {rules.version} refuses to start without a timeout (validateWaitForPodsReady: "
            '"timeout: must be specified"; v0.19 defaults it to 30m)'
        )
    faults = [s.action for s in scenario.steps if s.action in FAULT_ACTIONS]
    faults += [f"{n.name} not ready" for n in scenario.nodes if not n.ready]
    if not rules.pods_ready_with_faults and faults:
        return (
            f"beside node faults ({faults[0]}) is not modelled for Kueue {rules.version}: "
            "blockAdmission also holds the repair of a workload on a failed node there (fixed "
            "in v0.19 by kueue#13736)"
        )
    return None


def fit(scenario: Scenario, trace: Trace | None = None) -> FitResult:
    """Predict what Kueue does with every workload of the scenario."""
    rules = check_supported(scenario)
    ties = TieBreak()
    result = _run(scenario, ties, trace, rules)
    if ties.seen:
        again = _run(scenario, TieBreak(reverse=True), None, rules)
        if (again.outcomes, again.steps) != (result.outcomes, result.steps):
            raise Nondeterministic(
                f"{scenario.path}: Kueue's outcome depends on a tie it breaks at random: "
                f"{ties.seen[0]}"
            )
    return result


def _run(scenario: Scenario, ties: TieBreak, trace: Trace | None, rules: KueueRules) -> FitResult:
    note = (lambda name, line: trace(name, None, line)) if trace else None
    engine = Engine(scenario, ties, note, rules)
    if trace is not None:
        engine.observe = lambda label, tree: trace(label, tree, "free capacity")
    for index, a in enumerate(scenario.admitted):
        engine.hold_admitted(a, index)
    for workload in scenario.workloads:
        # Each submission settles before the next (contract v2, "Rules").
        engine.submit(workload)
        engine.settle()
    engine.readiness.check_never_started(engine)
    initial = dict(engine.outcomes)
    after_steps, reports = [], []
    for step in scenario.steps:
        engine.faults.report = StepReport()
        engine.step(step)
        after_steps.append(engine.after_step())
        reports.append(engine.faults.report)
        engine.readiness.check_never_started(engine)
    return FitResult(outcomes=initial, steps=after_steps, faults=reports)


class Engine(Cluster):
    """The scheduler model with Kueue's node-failure handling: the world the fault rules
    read and change (faults.World)."""

    def __init__(
        self, scenario: Scenario, ties: TieBreak, note: Note | None, rules: KueueRules
    ) -> None:
        super().__init__(scenario, ties, note, rules)
        self.faults = Faults(Gates.of(scenario, rules), rules)
        self.cq_drained: set[str] = set()
        """Workloads a ClusterQueue's HoldAndDrain evicted, not yet requeued (cq_stop)."""

    def step(self, step: Step) -> None:
        """One step, then Kueue's reaction until nothing changes."""
        target, action = step.target, step.action
        if action == "submit":
            assert isinstance(target, Workload)
            if self.readiness.blocked is not None:
                raise UnsupportedVersionError(
                    f"{self.scenario.path}: submit {target.name}: Kueue's scheduler is waiting "
                    "for PodsReady (blockAdmission) and never evaluates it: not modelled"
                )
            self.submit(target)
            self.settle()
            self._react()
            return
        if action == "delete-workload":
            self.faults.unhealthy.pop(str(target), None)
            self.delete(str(target))
            pods_ready.deleted(self, str(target))
        elif action == "set-admission-check":
            assert isinstance(target, CheckChange)
            check_controller.apply(self, target)
        elif action == "pods-not-ready":
            pods_ready.pods_not_ready(self, str(target))
        elif action == "pods-ready":
            pods_ready.pods_ready(self, str(target))
        elif action == "set-stop-policy" and isinstance(target, ClusterQueueStopChange):
            cq_stop.apply(self, target)
        elif action == "set-stop-policy":
            assert isinstance(target, StopPolicyChange)
            lq_stop.apply(self, target)
        elif action == "upgrade-kueue":
            self.upgrade(str(target))
            self.faults.rules = self.rules
            self.faults.gates = Gates.of(self.scenario, self.rules)
        elif action in FAULT_ACTIONS:
            self.faults.apply(self, step)
            self._after_fault(step)
        else:
            if action == "delete-node":
                self.faults.node_deleted(self, str(target))
            self.change_nodes(step)
        self.readiness.unblock(self)
        self._react()
        self.settle()
        self._rebind()

    def _after_fault(self, step: Step) -> None:
        """A node's readiness or taints changed: the TAS snapshot sees it, and, on a TAS
        flavor's node, every parked workload is requeued (resource_flavor.go
        checkNodeSchedulingPropertiesChanged: taints, conditions). Pods that went away let
        waiting ones bind."""
        self.tick += 1
        if step.action in NODE_FAULTS:
            self.snap.rebuild_tas(self.nodes.values(), self.usage)
            node = self.nodes.get(self._node_of(step))
            if node is not None and self._tas_flavors_of(node):
                self.queues.flush([cq.name for cq in self.scenario.cluster_queues])
        self._rebind()

    @staticmethod
    def _node_of(step: Step) -> str:
        target = step.target
        return target if isinstance(target, str) else str(getattr(target, "node", ""))

    def settle(self) -> None:
        """Cycles until nothing changes, then each `podsReady: false` workload's start
        timeout that runs out within the step (harness.fit.pods_ready), and cycles again."""
        super().settle()
        while pods_ready.run_due(self):
            super().settle()

    def _react(self) -> None:
        """Kueue's node controller and second pass, then scheduling, until nothing changes."""
        for _ in range(MAX_FAULT_ROUNDS):
            if not self.faults.settle(self):
                return
            self._rebind()
            self.settle()

    def after_step(self) -> dict[str, Outcome]:
        """The outcomes after a step, with what the step replaced and evicted, and the drift."""
        report, out = self.faults.report, {}
        for name, outcome in self.outcomes.items():
            if name in self.snap.holding:
                outcome = replace(
                    outcome,
                    replaced=report.replaced.get(name, {}),
                    drift=self.faults.drift(self, name),
                )
            out[name] = replace(outcome, evicted=report.evicted.get(name))
        return out

    # -- faults.World -------------------------------------------------------------------------

    def workload(self, name: str) -> Workload:
        return self.workloads[name]

    def assignments(self) -> dict[str, PerLeaf]:
        return {name: held.per_leaf for name, held in self.snap.holding.items()}

    def pod_set_flavors(self, name: str) -> dict[str, Flavor]:
        held = self.snap.holding[name]
        flavors = self._released(self.workloads[name], held).items()
        return {ps: self.scenario.resource_flavor(f) for ps, f in flavors if f}

    def tree(self, flavor: str) -> Tree:
        return self.snap.tas.trees[flavor]

    def reassign(self, name: str, per_leaf: PerLeaf) -> None:
        """The repaired assignment replaces the old one in the cache (same quota) and in the
        workload's placement."""
        held, w = self.snap.holding[name], self.workloads[name]
        flavors = self._released(w, held)
        requests = [TasRequest(ps, f) for ps in w.pod_sets if (f := flavors.get(ps.name))]
        cq = self.scenario.cluster_queue(held.cq)
        slots = self.rules.pod_slots_held(cq.group_of("pods") is not None)
        self.snap.tas.add_cache(held.tas, -1)
        held.per_leaf = {ps: dict(leaves) for ps, leaves in per_leaf.items()}
        held.tas = usage_of(requests, held.per_leaf, slots, tas_view(self.scenario, cq))
        self.snap.tas.add_cache(held.tas, 1)
        held.placement = {
            ps.name: lowest_values(held.per_leaf[ps.name])
            for ps in w.pod_sets
            if ps.name in held.per_leaf
        }
        if (outcome := self.outcomes.get(name)) is not None:
            self.outcomes[name] = replace(outcome, placement=dict(held.placement))

    def has_pods(self, name: str) -> bool:
        outcome = self.outcomes.get(name)
        return outcome is not None and outcome.admitted

    def second_pass_held(self, name: str) -> str | None:
        """With fair sharing, the scheduler's iterator keeps one entry per ClusterQueue
        (pkg/scheduler/fair_sharing_iterator.go makeFairSharingIterator: cqToEntry keyed by
        ClusterQueue), and the queue manager lists second-pass entries before the
        ClusterQueues' heads (pkg/cache/queue/manager.go heads), so a head of the same
        ClusterQueue takes the second pass's place and the second pass is requeued with its
        backoff unseen. A StrictFIFO ClusterQueue with a workload pending pops a head every
        cycle (a StrictFIFO head is requeued at once), so there the second pass waits until
        the ClusterQueue has nothing pending."""
        if self.scenario.kueue_config.fair_sharing is None:
            return None
        cq = self.snap.holding[name].cq
        if cq in self.queues.inactive:
            return None
        if self.scenario.cluster_queue(cq).queueing_strategy != "StrictFIFO":
            return None
        waiting = sorted(self.queues.heap.get(cq, ()))
        if not waiting:
            return None
        return (
            f"with fair sharing Kueue's scheduler takes one workload per ClusterQueue a cycle, "
            f"and {cq} (StrictFIFO) offers its pending head ({', '.join(waiting)}) every "
            "cycle: the second pass waits until nothing is pending there"
        )

    def evict(self, name: str) -> None:
        """Evicted (NodeFailures): quota and nodes released, pods deleted (those stuck
        Terminating stay), requeued at once, its cohort's parked workloads flushed."""
        held = self._release(name)
        if held is None:
            return
        self.generation[held.cq] += 1
        self.queues.push(self._pending(self.workloads[name]))
        self.requeue_associated(name, held.cq)
