"""`upgrade-kueue` on the sim. kueue-sim runs one Kueue version per process, so the scenario
is cut at the step: the old version runs what comes before it, and the world that leaves
(nodes, usage, every workload admitted where it was placed or still waiting) becomes the
scenario the new version starts from. That is what a replaced Kueue does: it rebuilds its
caches and queues from the cluster's objects, so admitted Workloads keep their quota and
topology assignment and pending ones are queued afresh in creation order
(docs/scenario-extensions.md, "Upgrading Kueue in a scenario").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from harness.errors import HarnessError
from harness.results.outcome import Outcome
from harness.scenario.model import AdmittedPodSet, AdmittedWorkload, Node, Scenario, Usage, Workload

CARRIED_STEPS = frozenset(
    {"delete-workload", "delete-usage", "cordon", "uncordon", "add-node", "delete-node"}
    | {"add-usage", "submit"}
)
"""Steps before an upgrade whose effect on the world the cut carries over. Fault steps are
not: what a failing node leaves (unhealthy nodes, evicted and replaced pods) is Kueue state
the next version reads from Workload status, which this cut does not rebuild."""


class NotCarried(HarnessError):
    """The world before the upgrade cannot be handed to the new version's sim."""


def upgrade_index(scenario: Scenario) -> int | None:
    """The index of the first `upgrade-kueue` step, or None."""
    for index, step in enumerate(scenario.steps):
        if step.action == "upgrade-kueue":
            return index
    return None


def before(scenario: Scenario, index: int) -> Scenario:
    """What the old version runs: the scenario up to the upgrade step."""
    return replace(scenario, steps=scenario.steps[:index])


def after(scenario: Scenario, index: int, state: Mapping[str, Outcome]) -> Scenario:
    """What the new version starts from: the world after the steps before `index`, with every
    workload of `state` (the old version's last outcomes) admitted where it was placed or
    submitted again, in the order the old version saw them; then the steps after it."""
    nodes = {n.name: n for n in scenario.nodes}
    usage = list(scenario.usage)
    order: list[str] = [a.name for a in scenario.admitted] + [w.name for w in scenario.workloads]
    submitted: dict[str, Workload] = {w.name: w for w in scenario.workloads}
    for a in scenario.admitted:
        submitted[a.name] = Workload(a.name, tuple(p.pod_set for p in a.pod_sets), a.queue,
                                     a.priority_class)  # fmt: skip
    for step in scenario.steps[:index]:
        target = step.target
        if step.action not in CARRIED_STEPS:
            raise NotCarried(
                f"{scenario.path}: steps: upgrade-kueue after {step.action}: the sim cannot "
                "hand what a fault leaves in Kueue's Workload status to the new version"
            )
        if step.action == "delete-workload":
            order.remove(str(target))
        elif step.action == "delete-usage":
            usage = [u for u in usage if u.name != target]
        elif step.action in ("cordon", "uncordon"):
            name = str(target)
            nodes[name] = replace(nodes[name], unschedulable=step.action == "cordon")
        elif step.action == "add-node":
            assert isinstance(target, Node)
            nodes[target.name] = target
        elif step.action == "delete-node":
            nodes.pop(str(target))
            usage = [u for u in usage if u.node != target]
        elif step.action == "add-usage":
            assert isinstance(target, Usage)
            usage.append(target)
        else:  # submit
            assert isinstance(target, Workload)
            submitted[target.name] = target
            order.append(target.name)
    admitted, waiting = [], []
    for name in order:
        outcome = state.get(name)
        if outcome is None or outcome.rejected:
            raise NotCarried(f"{scenario.path}: {name}: no outcome before the upgrade to carry")
        if outcome.admitted:
            admitted.append(_admitted(scenario, submitted[name], outcome, set(nodes)))
        else:
            waiting.append(submitted[name])
    return replace(
        scenario,
        nodes=tuple(nodes.values()),
        usage=tuple(usage),
        admitted=tuple(admitted),
        workloads=tuple(waiting),
        steps=scenario.steps[index + 1 :],
    )


def _admitted(
    scenario: Scenario, workload: Workload, outcome: Outcome, nodes: set[str]
) -> AdmittedWorkload:
    """The workload as its Workload object stands: each pod set on its flavor and nodes."""
    pod_sets = []
    for pod_set in workload.pod_sets:
        flavor = outcome.flavors.get(pod_set.name)
        if flavor is None:
            raise NotCarried(
                f"{scenario.path}: {workload.name}: the sim named no flavor for pod set "
                f"{pod_set.name}, so its admission cannot be carried over the upgrade"
            )
        placement = outcome.placement.get(pod_set.name)
        if placement is not None and not set(placement) <= nodes:
            raise NotCarried(
                f"{scenario.path}: {workload.name}: placed on {sorted(placement)}, not on "
                "nodes (a lowest level other than the hostname is not carried over)"
            )
        pod_sets.append(AdmittedPodSet(pod_set, flavor, placement or None))
    return AdmittedWorkload(workload.name, workload.queue, tuple(pod_sets),
                            workload.priority_class)  # fmt: skip
