"""The version-2 driver: Kueue's scheduling cycles over several ClusterQueues, without
preemption (rules §3: heads, nomination, entry order, processEntry, requeue).

Per cycle: the head of every ClusterQueue (higher priority first, then file order), each
nominated against the same state (flavor assignment, then TAS on the chosen flavor), the
entries ordered (non-borrowing first, higher priority, earlier), then processed: admitted
if it still fits, skipped if an earlier entry took its room, else pending. A pending
workload whose flavor scan stopped early is retried at once from the next flavor; else
BestEffortFIFO parks it until a flush and StrictFIFO keeps it at the head. Cycles run until
one changes nothing.

A Preempt entry (it would need victims; with policies Never there are none) reserves its
quota for the rest of the cycle (rules §3.4 step 3). Not modelled yet (refused by
`unsupported`): preemption policies, steps, pod set groups; nor the TAS part of that
reservation, nor the reset of scan progress when a ClusterQueue's allocatable generation
moves.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.fit.cohort import FlavorResource, QuotaBook
from harness.fit.flavors import FIT, NO_CANDIDATES, NO_FIT, Assignment, assign_flavors
from harness.fit.placement import Assignment as PlacementResult
from harness.fit.placement import PlacementFailed, place
from harness.fit.request import placement_request, with_pod
from harness.fit.resources import ResourceVector, add_into, from_quantities
from harness.fit.sorting import Algorithm
from harness.fit.tree import LeafKey, Tree, build_tree
from harness.outcome import Outcome
from harness.scenario import Flavor, Node, PodSet, Preemption, Scenario, Workload

SKIPPED = "Workload no longer fits after processing another workload"
STEPS = ("delete-workload", "submit")
NEVER_EVALUATED = Outcome(admitted=False, message="")
"""A workload Kueue never looked at (behind a StrictFIFO head): it has no status message."""


def unsupported(scenario: Scenario) -> str | None:
    """What of this version-2 scenario the driver does not model yet, or None."""
    if any(cq.preemption != Preemption() for cq in scenario.cluster_queues):
        return "preemption policies"
    if any(step.action not in STEPS for step in scenario.steps):
        return "steps other than " + " and ".join(STEPS)
    for w in scenario.workloads:
        if any(ps.topology is not None and ps.topology.group for ps in w.pod_sets):
            return "pod set groups (podSetGroupName)"
    return None


@dataclass
class _Holding:
    """A workload holding quota: per fr, and TAS usage per flavor and leaf."""

    cq: str
    quota: dict[FlavorResource, int]
    tas: dict[str, dict[LeafKey, ResourceVector]] = field(default_factory=dict)


@dataclass
class _Nomination:
    assignment: Assignment
    per_leaf: dict[str, dict[LeafKey, int]] = field(default_factory=dict)
    placement: dict[str, dict[str, int]] = field(default_factory=dict)
    message: str = ""
    preempt: bool = False
    """Mode Preempt (it would need victims, and there are none): its capacity is reserved."""

    @property
    def fits(self) -> bool:
        return not self.message


@dataclass
class Cycles:
    scenario: Scenario
    book: QuotaBook
    holding: dict[str, _Holding] = field(default_factory=dict)
    order: dict[str, int] = field(default_factory=dict)
    outcomes: dict[str, Outcome] = field(default_factory=dict)

    def priority(self, w: Workload) -> int:
        return self.scenario.priority(w)

    def tas_usage(self, flavor: Flavor) -> dict[LeafKey, ResourceVector]:
        out: dict[LeafKey, ResourceVector] = {}
        for held in self.holding.values():
            for key, vector in held.tas.get(flavor.name, {}).items():
                add_into(out.setdefault(key, {}), vector)
        return out

    def tree(self, flavor: Flavor, empty: bool = False) -> Tree | None:
        topology = self.scenario.topology_of(flavor)
        if topology is None:
            return None
        usage = {} if empty else self.tas_usage(flavor)
        return build_tree(topology, flavor, self.scenario.nodes, self.scenario.usage, usage)

    def hold(self, name: str, held: _Holding) -> None:
        self.holding[name] = held
        self.book.add(held.cq, held.quota)

    def nominate(self, w: Workload, start: dict[int, int] | None) -> _Nomination:
        a = assign_flavors(self.scenario, self.book, w, start)
        names = [ps.name for ps in w.pod_sets]
        if a.mode.preemption == NO_FIT:
            return _Nomination(a, message=a.message(names))
        if a.mode.preemption == NO_CANDIDATES:
            return _Nomination(a, message=a.message(names), preempt=self.fits_empty(w, a))
        out = _Nomination(a)
        for ps in w.pod_sets:
            flavor = self.scenario.resource_flavor(a.pod_set_flavor(ps.name).split(",")[0])
            tree = self.tree(flavor)
            if tree is None:
                continue
            try:
                result = self.place(tree, flavor, ps)
            except PlacementFailed as failed:
                # Rules §4.6: TAS turns Fit into Preempt when the pod set fits the flavor
                # as if no TAS workload ran there, else NoFit.
                message = f"couldn't assign flavors to pod set {ps.name}: {failed}"
                return _Nomination(a, message=message, preempt=self.fits_empty(w, a))
            per_leaf = result.per_pod_set.get(ps.name, {})
            out.per_leaf[ps.name] = dict(per_leaf)
            lowest: dict[str, int] = {}
            for key, count in per_leaf.items():
                label = key if isinstance(key, str) else key[-1]
                lowest[label] = lowest.get(label, 0) + count
            out.placement[ps.name] = lowest
        return out

    def place(self, tree: Tree, flavor: Flavor, ps: PodSet) -> PlacementResult:
        mixed = self.scenario.feature_gates.get("TASProfileMixed", True)
        balanced = self.scenario.feature_gates.get("TASBalancedPlacement", False)
        request = placement_request(tree.topology, [ps])
        algo = Algorithm(best_fit=not (request.unconstrained and mixed))
        return place(tree, request, flavor.tolerations, {}, algo, balanced)

    def fits_empty(self, w: Workload, a: Assignment) -> bool:
        """Every TAS pod set fits its flavor as if no TAS workload held any of it."""
        for ps in w.pod_sets:
            flavor = self.scenario.resource_flavor(a.pod_set_flavor(ps.name).split(",")[0])
            tree = self.tree(flavor, empty=True)
            if tree is None:
                continue
            try:
                self.place(tree, flavor, ps)
            except PlacementFailed:
                return False
        return True

    def reservation(self, w: Workload, nom: _Nomination) -> dict[FlavorResource, int]:
        """Rules §3.4 step 3 (quota part; reclaimWithinCohort is Never here): what a
        Preempt entry without targets keeps from later entries of the same cycle."""
        cq, book, out = w.queue, self.book, {}
        for fr, request in nom.assignment.usage.items():
            nominal, used = book.nominal(cq, fr), book.used(cq, fr)
            if nom.assignment.borrowing:
                limit = book.borrowing_limit(cq, fr)
                out[fr] = request if limit is None else min(request, nominal + limit - used)
            else:
                out[fr] = max(0, min(request, nominal - used))
        return out

    def still_fits(self, w: Workload, nom: _Nomination) -> bool:
        """`fits` at processing time: quota available, and room on every assigned leaf."""
        cq = w.queue
        if any(self.book.available(cq, fr) < v for fr, v in nom.assignment.usage.items()):
            return False
        for ps in w.pod_sets:
            if ps.name not in nom.per_leaf:
                continue
            flavor = self.scenario.resource_flavor(nom.assignment.pod_set_flavor(ps.name))
            tree = self.tree(flavor)
            assert tree is not None
            per_pod = with_pod(from_quantities(ps.requests))
            for key, count in nom.per_leaf[ps.name].items():
                leaf = tree.leaves[key]
                for r, v in per_pod.items():
                    free = leaf.capacity.get(r, 0) - leaf.non_tas.get(r, 0) - leaf.tas.get(r, 0)
                    if free < v * count:
                        return False
        return True

    def admit(self, w: Workload, nom: _Nomination) -> None:
        held = _Holding(w.queue, dict(nom.assignment.usage))
        for ps in w.pod_sets:
            if ps.name not in nom.per_leaf:
                continue
            flavor = nom.assignment.pod_set_flavor(ps.name)
            per_pod = with_pod(from_quantities(ps.requests))
            for key, count in nom.per_leaf[ps.name].items():
                target = held.tas.setdefault(flavor, {}).setdefault(key, {})
                add_into(target, {r: v * count for r, v in per_pod.items()})
        self.hold(w.name, held)
        self.outcomes[w.name] = Outcome(
            admitted=True,
            placement={
                p: nom.placement[p] for p in (ps.name for ps in w.pod_sets) if p in nom.placement
            },
            flavors={ps.name: nom.assignment.pod_set_flavor(ps.name) for ps in w.pod_sets},
        )


def leaf_key(node: Node, levels: tuple[str, ...]) -> LeafKey:
    if levels[-1] == "kubernetes.io/hostname":
        return node.name
    return tuple(node.labels.get(level, "") for level in levels)


def fit_v2(scenario: Scenario) -> tuple[dict[str, Outcome], list[dict[str, Outcome]]]:
    """Outcomes after every workload was submitted and the cycles settled, and after each
    step."""
    run = Cycles(scenario, QuotaBook.of(scenario.cluster_queues))
    for a in scenario.admitted:
        cq = scenario.cluster_queue(a.queue)
        held = _Holding(a.queue, {})
        for aps in a.pod_sets:
            ps = aps.pod_set
            wanted = {r: q for r, q in ps.requests.items()}
            units = from_quantities(wanted)
            if cq.group_of("pods") is not None:
                units["pods"] = units.get("pods", 0) + 1
            for r, v in units.items():
                if cq.group_of(r) is not None:
                    fr = (aps.flavor, r)
                    held.quota[fr] = held.quota.get(fr, 0) + v * ps.count
            topology = scenario.topology_of(scenario.resource_flavor(aps.flavor))
            per_pod = with_pod(from_quantities(ps.requests))
            for node, count in (aps.placement or {}).items():
                if topology is None:
                    continue
                key = leaf_key(scenario.node(node), topology.levels)
                target = held.tas.setdefault(aps.flavor, {}).setdefault(key, {})
                add_into(target, {r: v * count for r, v in per_pod.items()})
        run.hold(a.name, held)
        run.outcomes[a.name] = Outcome(
            admitted=True,
            placement={p.pod_set.name: dict(p.placement) for p in a.pod_sets if p.placement},
            flavors={p.pod_set.name: p.flavor for p in a.pod_sets},
        )
    submitted = [*scenario.workloads]
    submitted += [s.target for s in scenario.steps if isinstance(s.target, Workload)]
    queues = _Queues({w.name: i for i, w in enumerate(submitted)})
    for workload in scenario.workloads:
        # Each submission settles before the next (contract v2, "Rules").
        queues.pending.append(workload)
        run.outcomes.setdefault(workload.name, NEVER_EVALUATED)
        _settle(run, queues)
    initial = dict(run.outcomes)
    after_steps = []
    for step in scenario.steps:
        if isinstance(step.target, Workload):
            queues.pending.append(step.target)
            run.outcomes.setdefault(step.target.name, NEVER_EVALUATED)
        else:
            _delete(run, queues, str(step.target))
        _settle(run, queues)
        after_steps.append(dict(run.outcomes))
    return initial, after_steps


def _delete(run: Cycles, queues: _Queues, name: str) -> None:
    """A workload deleted: its quota and nodes free up; if it held quota, the parked
    workloads of its ClusterQueue's cohort (or of that ClusterQueue) are requeued (rules §3.7)."""
    run.outcomes.pop(name, None)
    queues.pending[:] = [w for w in queues.pending if w.name != name]
    queues.parked.discard(name)
    held = run.holding.pop(name, None)
    if held is None:
        return
    run.book.add(held.cq, held.quota, -1)
    flushed = set(run.book.members(held.cq)) | {held.cq}
    queues.parked -= {w.name for w in queues.pending if w.queue in flushed}


@dataclass
class _Queues:
    """Pending workloads, those parked as inadmissible, and each one's flavor scan."""

    order: dict[str, int]
    pending: list[Workload] = field(default_factory=list)
    parked: set[str] = field(default_factory=set)
    scan: dict[str, dict[int, int]] = field(default_factory=dict)


def _settle(run: Cycles, queues: _Queues) -> None:
    """Run cycles until one changes nothing (bounded: a StrictFIFO scan may wrap forever)."""
    scenario, order, pending = run.scenario, queues.order, queues.pending
    parked, scan = queues.parked, queues.scan
    last: object = None
    for _ in range(1_000):
        heads = []
        for cq in scenario.cluster_queues:
            queue = [w for w in pending if w.queue == cq.name and w.name not in parked]
            if queue:
                heads.append(min(queue, key=lambda w: (-run.priority(w), order[w.name])))
        if not heads:
            break
        nominated = [(w, run.nominate(w, scan.get(w.name))) for w in heads]
        nominated.sort(
            key=lambda e: (e[1].assignment.borrowing, -run.priority(e[0]), order[e[0].name])
        )
        changed = False
        reserved: list[tuple[str, dict[FlavorResource, int]]] = []
        for w, nom in nominated:
            cq = scenario.cluster_queue(w.queue)
            if nom.preempt:
                reserved.append((w.queue, run.reservation(w, nom)))
                run.book.add(*reserved[-1])
            if nom.fits and nom.assignment.mode.preemption == FIT:
                if run.still_fits(w, nom):
                    run.admit(w, nom)
                    pending.remove(w)
                    scan.pop(w.name, None)
                    changed = True
                else:
                    run.outcomes[w.name] = Outcome(admitted=False, message=SKIPPED)
                continue
            run.outcomes[w.name] = Outcome(admitted=False, message=nom.message)
            tried = nom.assignment.tried
            if any(t != -1 for t in tried.values()):
                scan[w.name] = {g: t + 1 for g, t in tried.items() if t != -1}
            else:
                scan.pop(w.name, None)
                if cq.queueing_strategy == "BestEffortFIFO":
                    parked.add(w.name)
                    changed = True
        for owner, amounts in reserved:
            run.book.add(owner, amounts, -1)
        state = (
            tuple((w.name, run.outcomes[w.name].message) for w, _ in nominated),
            tuple(sorted((k, tuple(sorted(v.items()))) for k, v in scan.items())),
        )
        if not changed and state == last:
            break
        last = state
