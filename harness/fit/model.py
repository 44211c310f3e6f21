"""The fit model's driver: admit workloads one by one, as Kueue's scheduler would.

Each workload is checked by the webhooks, then against ClusterQueue quota, then placed pod
set group by pod set group (FindTopologyAssignmentsForFlavor). Admitted workloads keep
their quota and topology usage; after each step of a dynamic scenario the pending ones are
retried in submission order (Kueue requeues inadmissible workloads when capacity frees).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, replace

from harness.errors import UnsupportedVersionError
from harness.fit.binding import Binder, Unplaceable
from harness.fit.cycle import fit_v2
from harness.fit.faults import Faults, Gates, Held, StepReport
from harness.fit.flavors import pod_set_groups
from harness.fit.placement import PlacementFailed, place
from harness.fit.queueing import scheduling_hash
from harness.fit.quota import quota_reasons, quota_request, requests_something
from harness.fit.request import placement_request
from harness.fit.resources import ResourceVector, add_into, from_quantities
from harness.fit.tas_step import lowest_values
from harness.fit.tree import LeafKey, Tree, build_tree
from harness.fit.versions import MODELLED_KUEUE_VERSIONS as MODELLED_KUEUE_VERSIONS
from harness.fit.versions import KueueRules, rules_for, upgraded_rules
from harness.fit.webhook import webhook_rejection
from harness.outcome import Outcome, Placement
from harness.scenario import Node, PodSet, Scenario, Step, Usage, Workload

# Gates whose non-default value changes placement in ways the model does not cover.
UNMODELLED_GATE_VALUES = {"TopologyAwareScheduling": False, "SchedulerLibraryIntegration": True}

Trace = Callable[[str, Tree | None, str], None]
SKIPPED = Outcome(
    admitted=False, message="Workload no longer fits after processing another workload"
)
# Kueue admits with a topology assignment that holds no domain; the API server refuses that
# write (topologyAssignment.slices: Required value), so no status is ever stored.
UNWRITABLE = Outcome(admitted=False, message="")


@dataclass
class _State:
    scenario: Scenario
    nodes: dict[str, Node]
    usage: list[Usage]
    rules: KueueRules
    admitted: dict[str, Held] = field(default_factory=dict)
    pending: list[Workload] = field(default_factory=list)
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    inadmissible_shapes: set[Hashable] = field(default_factory=set)
    binder: Binder = field(init=False)
    faults: Faults = field(init=False)
    hashing: bool = field(init=False)
    workloads: dict[str, Workload] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.binder = Binder(self.scenario)
        self.faults = Faults(Gates.of(self.scenario, self.rules), self.rules)
        self.hashing = self.rules.gate(self.scenario, "SchedulingEquivalenceHashing")

    def workload(self, name: str) -> Workload:
        return self.workloads[name]

    def tree(self) -> Tree:
        """The TAS snapshot now: every admitted workload's usage on the current nodes."""
        return _snapshot(self)

    def evict(self, name: str) -> None:
        """Evicted: quota and nodes released, pods deleted (those stuck Terminating stay),
        requeued at once in submission order (NodeFailures skips the PodsReady backoff)."""
        self.admitted.pop(name, None)
        self.binder.forget(name)
        order = list(self.workloads)
        self.pending.append(self.workloads[name])
        self.pending.sort(key=lambda w: order.index(w.name))


@dataclass
class FitResult:
    """Outcomes after the initial submissions, and after each step; `faults`: what each
    step's fault rules decided and why (version 1; `--explain`)."""

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
    if scenario.shorthand is None and (faults := scenario.fault_features()):
        raise UnsupportedVersionError(
            f"{scenario.path}: the fit model models faults only in version-1 scenarios: "
            f"{'; '.join(faults)}"
        )
    return rules


def fit(scenario: Scenario, trace: Trace | None = None) -> FitResult:
    """Predict what Kueue does with every workload of the scenario."""
    rules = check_supported(scenario)
    if scenario.shorthand is None:
        note = (lambda name, line: trace(name, None, line)) if trace else None
        initial, after_steps = fit_v2(scenario, note, rules)
        return FitResult(outcomes=initial, steps=after_steps)
    state = _State(scenario, {n.name: n for n in scenario.nodes}, list(scenario.usage), rules)
    for workload in scenario.workloads:
        state.outcomes[workload.name] = _attempt(state, workload, trace)
    initial = dict(state.outcomes)
    after_steps, reports = [], []
    for step in scenario.steps:
        state.faults.report = StepReport()
        _apply(state, step, trace)
        after_steps.append(_after_step(state))
        reports.append(state.faults.report)
    return FitResult(outcomes=initial, steps=after_steps, faults=reports)


def _after_step(state: _State) -> dict[str, Outcome]:
    """The outcomes after a step, with what the step replaced and evicted, and the drift.
    A replaced assignment becomes the workload's placement from now on."""
    report, out = state.faults.report, {}
    for name, outcome in state.outcomes.items():
        held = state.admitted.get(name)
        if held is not None and name in report.replaced:
            outcome = replace(outcome, placement=_placement_of(state, name, held))
            state.outcomes[name] = outcome
        if held is not None:
            outcome = replace(
                outcome,
                replaced=report.replaced.get(name, {}),
                drift=state.faults.drift(state, name),
            )
        out[name] = replace(outcome, evicted=report.evicted.get(name))
    return out


def _placement_of(state: _State, name: str, held: Held) -> Placement:
    return {
        ps.name: lowest_values(held.per_leaf[ps.name])
        for ps in state.workloads[name].pod_sets
        if ps.name in held.per_leaf
    }


def _attempt(state: _State, workload: Workload, trace: Trace | None) -> Outcome:
    state.workloads.setdefault(workload.name, workload)
    rejection = webhook_rejection(workload)
    if rejection is not None:
        return Outcome(admitted=False, message=rejection, rejected=True)
    if any(_stuck_at_head(state.outcomes.get(w.name)) for w in state.pending):
        # A skipped or unwritable workload goes straight back to the head of the queue, ahead
        # of every later one, so BestEffortFIFO never pops those: they get no status at all.
        state.pending.append(workload)
        return Outcome(admitted=False, message="")
    shape = scheduling_hash(workload, priority=0)  # version 1: no priority classes
    if state.hashing and shape in state.inadmissible_shapes:
        # SchedulingEquivalenceHashing (on by default): a workload shaped like one just found
        # inadmissible is parked with it, unevaluated, keeping whatever status it had.
        state.pending.append(workload)
        return state.outcomes.get(workload.name, Outcome(admitted=False, message=""))
    outcome, admitted = _schedule(state, workload, trace)
    if admitted is not None:
        state.admitted[workload.name] = admitted
        flavor = state.scenario.flavor.name
        flavors: dict[str, str | None] = {ps.name: flavor for ps in workload.pod_sets}
        bound = state.binder.admit(workload, flavors, admitted.per_leaf, state.nodes, state.usage)
        outcome = _with_binding(outcome, bound)
    else:
        state.pending.append(workload)
        if not _stuck_at_head(outcome):
            state.inadmissible_shapes.add(shape)
    return outcome


def _stuck_at_head(outcome: Outcome | None) -> bool:
    return outcome is SKIPPED or outcome is UNWRITABLE


def _groups(workload: Workload) -> list[list[PodSet]]:
    return [[workload.pod_sets[i] for i in g] for g in pod_set_groups(workload)]


def _schedule(
    state: _State, workload: Workload, trace: Trace | None
) -> tuple[Outcome, Held | None]:
    scenario = state.scenario
    groups = _groups(workload)
    used: ResourceVector = {}
    for entry in state.admitted.values():
        add_into(used, entry.quota)
    reasons, stopped = quota_reasons(scenario, groups, used, state.rules.quota_reasons_past_no_fit)
    borrows = state.rules.grouped_pod_set_borrows_flavor
    unassigned = _without_flavor(scenario, groups, borrows)
    error = None  # Assignment.Message returns a pod set's error before any other reason
    if unassigned is not None and not stopped:
        error = f"failed to assign flavors to pod set {unassigned}: {_no_tas_request(scenario)}"
        if state.rules.tas_request_error_blocks or reasons:
            return Outcome(admitted=False, message=error), None
        # v0.17.1: those pod sets get no TAS request and the rest is placed as it is (a
        # group's members requesting nothing too: v0.17.1 has no kueue#13859).
        groups = [
            kept
            for g in groups
            if (kept := [p for p in g if requests_something(scenario, p)] if not borrows else g)
            and any(requests_something(scenario, p) for p in kept)
        ]
    if reasons:
        message = "; ".join(
            f"couldn't assign flavors to pod set {name}: {', '.join(r)}"
            for name, r in reasons.items()
        )
        if trace:
            trace(workload.name, None, f"pending on quota: {message}")
        return Outcome(admitted=False, message=message), None
    tree = _snapshot(state)
    mixed = scenario.feature_gates.get("TASProfileMixed", True)
    balanced = state.rules.balanced(scenario)
    assumed: dict[LeafKey, ResourceVector] = {}  # what later pod sets see taken
    held: dict[LeafKey, ResourceVector] = {}  # what the admitted workload holds
    placement: dict[str, dict[str, int]] = {}
    per_leaf_by_pod_set: dict[str, dict[LeafKey, int]] = {}
    for members in groups:
        request = placement_request(scenario.topology, members)
        algo = state.rules.counting(best_fit=not (request.unconstrained and mixed))
        label = f"{workload.name}/{request.workers.name}"
        observe = (lambda t: trace(label, t, "free capacity")) if trace else None  # noqa: B023
        try:
            result = place(
                tree, request, scenario.flavor.tolerations, assumed, algo, balanced, observe
            )
        except PlacementFailed as failed:
            if trace:
                trace(workload.name, None, f"pending: {failed}")
            name = request.workers.name
            message = error or f"couldn't assign flavors to pod set {name}: {failed}"
            return Outcome(False, message=message), None
        for pod_set in members:
            per_leaf = result.per_pod_set.get(pod_set.name, {})
            per_pod = from_quantities(pod_set.requests)
            for key, count in per_leaf.items():
                usage = _usage_of(per_pod, count)
                slots = state.rules.pod_slots_held("pods" in scenario.queue.nominal_quota)
                add_into(held.setdefault(key, {}), usage | {"pods": usage["pods"] * slots})
                if not state.rules.assumed_usage_counts_pods:
                    usage = {name: value * count for name, value in per_pod.items()}
                add_into(assumed.setdefault(key, {}), usage)
            placement[pod_set.name] = lowest_values(per_leaf)
            per_leaf_by_pod_set[pod_set.name] = dict(per_leaf)
    placed = [p for members in groups for p in members]
    asks_a_slot = state.rules.pod_slots_held("pods" in scenario.queue.nominal_quota) > 1
    if any(not p.requests for p in placed) and not asks_a_slot:
        # The scheduler's last check (TASFlavorSnapshot.Fits) counts how often each pod set's
        # per-pod request fits a domain; an empty request counts 0, so it never fits (on
        # v0.17.1 the request holds `pods` when the queue covers it: tas_usage_from_pod_spec).
        return SKIPPED, None
    if any(not placement.get(p.name) for p in placed):
        return UNWRITABLE, None
    if trace:
        trace(workload.name, None, f"admitted: {placement}")
    ordered = {p.name: placement[p.name] for p in workload.pod_sets if p.name in placement}
    quota: ResourceVector = {}
    for members in groups:
        add_into(quota, quota_request(scenario, members))
    admitted = Held(quota=quota, tas=held, per_leaf=per_leaf_by_pod_set)
    return Outcome(admitted=True, placement=ordered), admitted


def _snapshot(state: _State) -> Tree:
    scenario = state.scenario
    tas_usage: dict[LeafKey, ResourceVector] = {}
    for entry in state.admitted.values():
        for key, vector in entry.tas.items():
            add_into(tas_usage.setdefault(key, {}), vector)
    return build_tree(
        scenario.topology, scenario.flavor, state.nodes.values(), state.usage, tas_usage
    )


def _without_flavor(scenario: Scenario, groups: list[list[PodSet]], borrows: bool) -> str | None:
    """The first pod set that requests nothing and so gets no flavor, hence no TAS request.

    From v0.19.1 (kueue#13859, `borrows`) a group member without requests borrows its
    group's TAS flavor (flavorassigner.go:928-938 resolvePodSetFlavors). Before, it keeps
    only the flavors of the resources it requests (v0.18.2 flavorassigner.go:714, v0.17.1
    :673 `FilterKeys`): none, so it fails like a pod set alone.
    """
    for members in groups:
        if not any(requests_something(scenario, p) for p in members):
            return members[0].name
        if not borrows:
            for pod_set in members:
                if not requests_something(scenario, pod_set):
                    return pod_set.name
    return None


def _no_tas_request(scenario: Scenario) -> str:
    """Why a pod set without a flavor gets no TAS request (tas_flavorassigner.go
    podSetTopologyRequest): a ClusterQueue that covers no resource has no TAS flavor at all
    (ErrNoTASCacheInformation, checked first); otherwise it was assigned none of them
    (onlyTASFlavor: ErrNoTASFlavorAssigned)."""
    if not any(g.flavors for cq in scenario.cluster_queues for g in cq.resource_groups):
        return "workload requires Topology, but there is no TAS cache information"
    return "no TAS flavor assigned"


def _with_binding(outcome: Outcome, bound: Unplaceable) -> Outcome:
    return replace(outcome, unschedulable=bound.counts, unschedulable_reasons=bound.reasons)


def _usage_of(per_pod: ResourceVector, count: int) -> ResourceVector:
    out = {name: value * count for name, value in per_pod.items()}
    out["pods"] = out.get("pods", 0) + count
    return out


# ---- dynamic steps ---------------------------------------------------------------------------


def _apply(state: _State, step: Step, trace: Trace | None) -> None:
    target = step.target
    if step.action == "delete-workload":
        assert isinstance(target, str)
        state.admitted.pop(target, None)
        state.faults.unhealthy.pop(target, None)
        state.pending = [w for w in state.pending if w.name != target]
        state.outcomes.pop(target, None)
        state.binder.forget(target)
    elif step.action == "delete-usage":
        state.usage = [u for u in state.usage if u.name != target]
        if not state.rules.requeue_on_non_tas_pod_deletion:
            _retry_pending(state, trace, requeue=False)  # kueue#13772: nothing requeued
            return
    elif step.action in ("cordon", "uncordon"):
        assert isinstance(target, str)
        node = state.nodes[target]
        state.nodes[target] = replace(node, unschedulable=step.action == "cordon")
    elif step.action == "delete-node":
        assert isinstance(target, str)
        state.faults.node_deleted(state, target)
        state.nodes.pop(target, None)
        state.usage = [u for u in state.usage if u.node != target]
    elif step.action == "add-node":
        assert isinstance(target, Node)
        state.nodes[target.name] = target
    elif step.action == "add-usage":
        assert isinstance(target, Usage)
        state.usage.append(target)
    elif step.action == "upgrade-kueue":
        # The new Kueue starts with empty queues: every pending workload is queued afresh
        # (the retry below) and decided by the new version's rules; admitted ones keep
        # their quota and topology assignment (read back from the Workloads).
        state.rules = upgraded_rules(state.scenario, state.rules, str(target))
        state.hashing = state.rules.gate(state.scenario, "SchedulingEquivalenceHashing")
        state.faults.rules = state.rules
        state.faults.gates = Gates.of(state.scenario, state.rules)
    elif step.action == "submit":
        assert isinstance(target, Workload)
        _retry_pending(state, trace)
        state.outcomes[target.name] = _attempt(state, target, trace)
        _react(state, trace)
        return
    else:
        state.faults.apply(state, step)
    _react(state, trace)
    _retry_pending(state, trace)


MAX_FAULT_ROUNDS = 100


def _react(state: _State, trace: Trace | None) -> None:
    """Kueue's node controller and second pass until nothing changes; evicted workloads are
    requeued and retried with every pending one after each round."""
    for _ in range(MAX_FAULT_ROUNDS):
        if not state.faults.settle(state):
            return
        _retry_pending(state, trace)


def _retry_pending(state: _State, trace: Trace | None, requeue: bool = True) -> None:
    """kube-scheduler retries the pods it could not bind (at once, on the cluster event);
    then Kueue requeues every inadmissible workload and forgets the parked shapes (unless
    the event requeues none: `requeue` False)."""
    for name, bound in state.binder.retry(state.nodes, state.usage).items():
        if name in state.outcomes and name in state.admitted:
            state.outcomes[name] = _with_binding(state.outcomes[name], bound)
    waiting = state.pending
    if not requeue:  # only what sits at the head of the queue is tried again, as every cycle
        waiting = [w for w in waiting if _stuck_at_head(state.outcomes.get(w.name))]
    else:
        state.inadmissible_shapes.clear()
    state.pending = [w for w in state.pending if w not in waiting]
    for workload in waiting:
        state.outcomes[workload.name] = _attempt(state, workload, trace)
