"""The fit model's node-failure rules (docs/dev/kueue-v0.19.2-node-replacement.md), one rule
per test on a small cluster: when a node counts as failed for a workload, where the second
pass may put the lost pods, and when the workload is evicted instead."""

from __future__ import annotations

from harness.fit import fit
from harness.fit.replacement import ReplacementFailed, find_replacement
from harness.fit.request import placement_request
from harness.fit.sorting import Algorithm
from harness.fit.tree import build_tree
from harness.results.outcome import Outcome
from harness.scenario.loader import scenario_from_data
from harness.scenario.model import Eviction, Scenario
from harness.scenario.strict_yaml import parse_yaml

NODES = """
topology: {name: t, levels: [example.com/block, example.com/rack, kubernetes.io/hostname]}
flavor: {name: gpu}
x-host: &host {nvidia.com/gpu: 8, pods: 110}
nodes:
  - {name: a1, labels: {example.com/block: b1, example.com/rack: r1}, allocatable: *host}
  - {name: a2, labels: {example.com/block: b1, example.com/rack: r1}, allocatable: *host}
  - {name: a3, labels: {example.com/block: b1, example.com/rack: r1}, allocatable: *host}
  - {name: c1, labels: {example.com/block: b1, example.com/rack: r10}, allocatable: *host}
  - {name: c2, labels: {example.com/block: b1, example.com/rack: r10}, allocatable: {nvidia.com/gpu: 24, pods: 110}}
"""
# BestFit puts a two-pod job in rack r1 (room for 3 pods) rather than r10 (room for 4), on
# a1 and a2.


def world(pod_set: str, steps: str, gates: str = "", usage: str = "") -> Scenario:
    text = f"name: w\n{gates}{NODES}{usage}workloads:\n  - name: job\n    podSets:\n"
    text += f"      - {{name: main, {pod_set}}}\nsteps:{chr(10) + steps if steps else ' []'}"
    return scenario_from_data(parse_yaml(text, "w.yaml"), "w.yaml")


REQUIRED_RACK = (
    "count: 2, requests: {nvidia.com/gpu: 8}, topology: {mode: required, level: example.com/rack}"
)
PREFERRED_RACK = (
    "count: 2, requests: {nvidia.com/gpu: 8}, topology: {mode: preferred, level: example.com/rack}"
)


def last(scenario: Scenario) -> Outcome:
    return fit(scenario).steps[-1]["job"]


def test_a_required_replacement_stays_in_the_rack_of_the_first_remaining_node() -> None:
    # job runs on a1, a2 (rack r1); a1 is deleted: a3, also in r1, takes its pod.
    got = last(world(REQUIRED_RACK, "  - delete-node: a1\n"))
    assert got.placement == {"main": {"a2": 1, "a3": 1}}
    assert got.replaced == {"main": {"a1": ("a3",)}}
    assert got.evicted is None


def test_rack_r1_is_not_rack_r10() -> None:
    # kueue#14452: with a3 busy, r1 has no spare; r10's nodes are free but outside the rack.
    busy = "usage:\n  - {name: busy, node: a3, requests: {nvidia.com/gpu: 8}}\n"
    got = last(world(REQUIRED_RACK, "  - delete-node: a1\n", usage=busy))
    assert got.evicted == Eviction(
        "NodeFailures", "Workload was evicted as there was no replacement for unhealthy node(s): a1"
    )
    assert got.replaced == {}
    assert got.admitted and got.placement == {"main": {"c2": 2}}  # readmitted in r10


def test_a_preferred_replacement_may_leave_its_rack() -> None:
    # The same loss under a preferred rack: no domain to stay in, the tightest rack that fits
    # one pod anywhere. r1 (a3 only) is tighter than r10 (two free nodes).
    got = last(world(PREFERRED_RACK, "  - delete-node: a1\n"))
    assert got.replaced == {"main": {"a1": ("a3",)}}
    busy = "usage:\n  - {name: busy, node: a3, requests: {nvidia.com/gpu: 8}}\n"
    got = last(world(PREFERRED_RACK, "  - delete-node: a1\n", usage=busy))
    assert got.replaced == {"main": {"a1": ("c1",)}}
    assert got.evicted is None


def test_a_notready_node_fails_only_once_no_pod_progresses_there() -> None:
    one_pod_each = "count: 2, requests: {nvidia.com/gpu: 8}, topology: {mode: required, level: example.com/rack}"
    running = world(one_pod_each, "  - node-not-ready: a1\n")
    assert fit(running).steps[0]["job"].replaced == {}
    terminating = world(
        one_pod_each, "  - node-not-ready: a1\n  - terminate-pods: {workload: job, node: a1}\n"
    )
    result = fit(terminating)
    assert result.steps[1]["job"].replaced == {"main": {"a1": ("a3",)}}


def test_without_pod_termination_gate_a_notready_node_fails_at_once_and_pods_drift() -> None:
    gates = "featureGates: {TASReplaceNodeOnPodTermination: false}\n"
    got = last(world(REQUIRED_RACK, "  - node-not-ready: a1\n", gates=gates))
    assert got.replaced == {"main": {"a1": ("a3",)}}
    assert got.drift == {"main": {"a1": 1}}


def test_taints_judged_against_the_pod_sets_tolerations() -> None:
    noschedule = "  - taint-node: {node: a1, key: k, effect: NoSchedule}\n"
    assert last(world(REQUIRED_RACK, noschedule)).replaced == {}  # pods keep running
    noexecute = "  - taint-node: {node: a1, key: k, effect: NoExecute}\n"
    assert last(world(REQUIRED_RACK, noexecute)).replaced == {"main": {"a1": ("a3",)}}
    tolerant = REQUIRED_RACK.replace(
        "count: 2", "tolerations: [{key: k, operator: Exists}], count: 2"
    )
    assert last(world(tolerant, noexecute)).replaced == {}
    # Tolerated for good, the node stays healthy even once the pods are gone; tolerated
    # only for some seconds, it fails then (classifyTaints: toleratedTemporarily).
    gone = noexecute + "  - terminate-pods: {workload: job, node: a1}\n"
    assert last(world(tolerant, gone)).replaced == {}
    for_a_while = tolerant.replace("operator: Exists}", "operator: Exists, tolerationSeconds: 60}")
    assert last(world(for_a_while, noexecute)).replaced == {}
    assert last(world(for_a_while, gone)).replaced == {"main": {"a1": ("a3",)}}
    gates = "featureGates: {TASReplaceNodeOnNodeTaints: false}\n"
    got = last(world(REQUIRED_RACK, noexecute, gates=gates))
    assert got.replaced == {} and got.unschedulable == {"main": 1}  # evicted pod stuck


def test_a_second_failed_node_evicts_before_the_first_is_replaced() -> None:
    steps = "  - node-not-ready: a1\n  - node-not-ready: a2\n  - terminate-pods: {workload: job}\n"
    got = last(world(REQUIRED_RACK, steps))
    assert got.evicted is not None and got.evicted.reason == "NodeFailures"
    # The two pods end in one step: which node Kueue records first races (the order is not
    # predicted, only the message's start).
    assert got.evicted.message == (
        "Workload eviction triggered due to multiple TAS assigned node failures, including: "
    )
    # Two failures one after the other are two replacements.
    two = last(world(REQUIRED_RACK, "  - delete-node: a1\n  - delete-node: a2\n"))
    assert two.evicted is not None  # r1 has a3 only: the second loss has no spare


def test_a_cordoned_remaining_node_makes_the_assignment_stale() -> None:
    got = last(world(REQUIRED_RACK, "  - cordon: a2\n  - delete-node: a1\n"))
    assert got.evicted is not None
    assert got.evicted.message.endswith("no replacement for unhealthy node(s): a1")


def test_fail_fast_off_keeps_the_workload_until_room_appears() -> None:
    gates = "featureGates: {TASFailedNodeReplacementFailFast: false}\n"
    busy = "usage:\n  - {name: busy, node: a3, requests: {nvidia.com/gpu: 8}}\n"
    result = fit(world(REQUIRED_RACK, "  - delete-node: a1\n  - delete-usage: busy\n", gates, busy))
    first, second = result.steps
    assert first["job"].evicted is None and first["job"].replaced == {}
    assert first["job"].placement == {"main": {"a1": 1, "a2": 1}}
    assert second["job"].replaced == {"main": {"a1": ("a3",)}}


def test_the_replacement_search_counts_leaves_outside_the_domain() -> None:
    # findReplacementAssignment on its own: r1 full, so the search inside it fails and
    # Kueue's message counts r10's two nodes as topologyDomain exclusions.
    busy = "usage:\n  - {name: busy, node: a3, requests: {nvidia.com/gpu: 8}}\n"
    scenario = world(REQUIRED_RACK, "", usage=busy)
    nodes = [n for n in scenario.nodes if n.name != "a1"]
    own = {"a2": {"nvidia.com/gpu": 8, "pods": 1}}  # the job's pod that stays on a2
    tree = build_tree(
        scenario.topologies[0], scenario.resource_flavors[0], nodes, scenario.usage, own
    )
    ps = scenario.workloads[0].pod_sets[0]
    assert placement_request(scenario.topologies[0], [ps]).required
    try:
        find_replacement(tree, ps, {"a1": 1, "a2": 1}, "a1", (), {}, Algorithm(best_fit=True))
    except ReplacementFailed as failed:
        assert "topologyDomain: 2" in str(failed)
    else:
        raise AssertionError("expected no replacement inside rack r1")


def test_terminating_pods_of_a_deleted_workload_still_hold_their_node() -> None:
    single = "count: 1, requests: {nvidia.com/gpu: 8}, topology: {mode: required, level: kubernetes.io/hostname}"
    nxt = (
        "  - submit: {name: next, podSets: [{name: main, count: 1, requests: "
        "{nvidia.com/gpu: 8}, topology: {mode: required, level: kubernetes.io/hostname}}]}\n"
    )
    steps = "  - terminate-pods: {workload: job}\n  - delete-workload: job\n" + nxt
    got = fit(world(single, steps)).steps[-1]["next"]
    assert got.placement == {"main": {"a1": 1}}  # kueue#10076: Kueue sees a1 free
    assert got.unschedulable == {"main": 1}


def test_a_broken_slice_is_repaired_inside_its_slice_domain() -> None:
    # Slices of 2 pods per rack: one pod lost leaves r1's slice incomplete, so the lost pod
    # goes back to r1 (a3), placed alone (no layer size divides 1: effective slice size 1).
    sliced = (
        "count: 2, requests: {nvidia.com/gpu: 8}, topology: {mode: preferred, "
        "level: example.com/block, sliceLevel: example.com/rack, sliceSize: 2}"
    )
    got = last(world(sliced, "  - delete-node: a1\n"))
    assert got.replaced == {"main": {"a1": ("a3",)}}


def test_no_pod_is_released_onto_a_node_awaiting_replacement() -> None:
    # Tolerated for 60 s, the node fails once the job's pod there failed; with no spare in
    # r1 and fail-fast off, a1 stays in unhealthyNodes and the new pod stays gated (released,
    # it would bind to a1, which tolerates it, and the node would look healthy again).
    gates = "featureGates: {TASFailedNodeReplacementFailFast: false}\n"
    busy = "usage:\n  - {name: busy, node: a3, requests: {nvidia.com/gpu: 8}}\n"
    tolerant = REQUIRED_RACK.replace(
        "count: 2", "tolerations: [{key: k, operator: Exists, tolerationSeconds: 60}], count: 2"
    )
    steps = (
        "  - taint-node: {node: a1, key: k, effect: NoExecute}\n"
        "  - fail-pods: {workload: job, node: a1}\n"
    )
    got = last(world(tolerant, steps, gates, busy))
    assert got.replaced == {} and got.evicted is None
    assert got.unschedulable == {"main": 1}
    assert "unhealthyNodes" in got.unschedulable_reasons["main"]


def test_multiple_failures_at_once_predict_no_node_order() -> None:
    """Pods ending together on two NotReady nodes: Kueue's node controller names the node it
    recorded first, then the one whose reconcile evicts (evictWorkloadIfNeeded), and which
    reconcile comes first races: real Kueue v0.19.2 wrote "x3, x1" and, in make e2e run N
    of 2026-12-07, "x1, x3" for suites/faults/faults-two-notready-...-evicted. The model
    predicts the message's start only."""
    text = """name: w
topology: {name: t, levels: [example.com/block, example.com/rack, kubernetes.io/hostname]}
flavor: {name: gpu}
x-host: &host {nvidia.com/gpu: 8, pods: 110}
nodes:
  - {name: x9, labels: {example.com/block: b1, example.com/rack: r1}, allocatable: *host}
  - {name: x0, labels: {example.com/block: b1, example.com/rack: r2}, allocatable: *host}
workloads:
  - name: job
    podSets:
      - {name: main, count: 2, requests: {nvidia.com/gpu: 8}, topology: {mode: preferred, level: example.com/block}}
steps:
  - node-not-ready: x9
  - node-not-ready: x0
  - terminate-pods: {workload: job}
"""
    scenario = scenario_from_data(parse_yaml(text, "w.yaml"), "w.yaml")
    evicted = fit(scenario).steps[-1]["job"].evicted
    assert evicted is not None
    assert evicted.message.endswith("including: ")
