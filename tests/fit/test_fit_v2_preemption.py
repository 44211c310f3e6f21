"""Preemption in the version-2 fit model (docs/dev/kueue-v0.19.2-rules-v2.md §5, §6, §3.4):
candidates, order, fill-back, the TAS stop rule, the cohort policies, the reservation of a
waiting preemptor, and what happens to victims afterwards. Each world is small enough to
work out by hand from Kueue v0.19.2's source; the comments give the reasoning."""

from __future__ import annotations

import pytest

from harness.errors import Nondeterministic
from harness.fit import fit
from harness.fit.cluster import Cluster
from harness.fit.ties import TieBreak
from harness.results.outcome import Outcome
from harness.scenario.loader import scenario_from_data
from harness.scenario.model import Scenario
from harness.scenario.strict_yaml import parse_yaml

HEAD = """
name: w
topologies: [{name: hosts, levels: [kubernetes.io/hostname]}]
workloadPriorityClasses:
  - {name: p1, value: 1}
  - {name: p2, value: 2}
  - {name: p3, value: 3}
  - {name: p5, value: 5}
  - {name: p10, value: 10}
"""


GPU = """
resourceFlavors:
  - {name: gpu, nodeLabels: {pool: gpu}, topologyName: hosts}
"""


def load(text: str, flavors: str = GPU) -> Scenario:
    return scenario_from_data(parse_yaml(HEAD + flavors + text, "w.yaml"), "w.yaml")


def outcomes(text: str) -> dict[str, Outcome]:
    return fit(load(text)).outcomes


def explained(text: str) -> list[str]:
    """The --explain lines of a run."""
    lines: list[str] = []
    fit(load(text), trace=lambda name, _tree, line: lines.append(f"{name}: {line}"))
    return lines


def after_one_cycle(text: str) -> dict[str, Outcome]:
    """Outcomes right after the first cycle of the last submission (victims evicted, not yet
    re-evaluated: they show the eviction message)."""
    scenario = load(text)
    model = Cluster(scenario, TieBreak(), None)
    for index, a in enumerate(scenario.admitted):
        model.hold_admitted(a, index)
    for w in scenario.workloads:
        model.submit(w)
    model.run_cycle()
    return model.outcomes


ONE_QUEUE = """
clusterQueues:
  - name: a
    preemption: {withinClusterQueue: %s}
    resourceGroups:
      - coveredResources: [nvidia.com/gpu]
        flavors: [{name: gpu, resources: [{name: nvidia.com/gpu, nominalQuota: 6}]}]
nodes:
  - {name: n1, labels: {pool: gpu}, allocatable: {nvidia.com/gpu: 6, pods: 110}}
"""


def admitted(name: str, pc: str, gpus: int, node: str = "n1", queue: str = "a") -> str:
    return (
        f"  - {{name: {name}, queue: {queue}, priorityClass: {pc}, podSets: [{{name: main, "
        f"count: {gpus}, requests: {{nvidia.com/gpu: 1}}, flavor: gpu, placement: {{{node}: {gpus}}}}}]}}\n"
    )


def job(name: str, pc: str, gpus: int, queue: str = "a") -> str:
    return (
        f"  - {{name: {name}, queue: {queue}, priorityClass: {pc}, podSets: [{{name: main, "
        f"count: {gpus}, requests: {{nvidia.com/gpu: 1}}}}]}}\n"
    )


def test_fill_back_keeps_a_victim_that_is_not_needed() -> None:
    # The 6-GPU queue is full. Walking candidates by priority: removing low (1 GPU) leaves
    # 1 free, removing mid (3 GPUs) leaves 4 >= 3: fits. Fill-back adds low back: 3 free,
    # still fits, so low is not a victim (fillBackWorkloads).
    got = outcomes(
        ONE_QUEUE % "LowerPriority"
        + "admitted:\n"
        + admitted("low", "p1", 1)
        + admitted("mid", "p2", 3)
        + admitted("top", "p3", 2)
        + "workloads:\n"
        + job("train", "p10", 3)
    )
    assert got["train"].admitted and not got["train"].preempted
    assert got["low"].admitted and not got["low"].preempted
    assert not got["mid"].admitted and got["mid"].preempted
    assert got["top"].admitted and not got["top"].preempted


def test_a_victim_shows_the_eviction_message_until_it_is_evaluated_again() -> None:
    text = (
        ONE_QUEUE % "LowerPriority"
        + "admitted:\n"
        + admitted("low", "p1", 6)
        + "workloads:\n"
        + job("train", "p10", 3)
    )
    first = after_one_cycle(text)
    assert first["low"] == Outcome(
        admitted=False,
        preempted=True,
        message="Preempted to accommodate a workload (UID: <uid of train>, JobUID: <job uid of "
        "train>) due to prioritization in the ClusterQueue; preemptor path: /a; preemptee path: /a",
    )
    assert first["train"].message == (
        "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in "
        "flavor gpu, 3 more needed. Pending the preemption of 1 workload(s)"
    )
    settled = outcomes(text)
    assert settled["train"].admitted
    # Requeued at once and evaluated again: its message is that evaluation's (rules §6.4).
    assert settled["low"] == Outcome(
        admitted=False,
        preempted=True,
        message="couldn't assign flavors to pod set main: insufficient unused quota for "
        "nvidia.com/gpu in flavor gpu, 3 more needed",
    )


def test_lower_priority_never_takes_an_equal_priority_victim() -> None:
    got = outcomes(
        ONE_QUEUE % "LowerPriority"
        + "admitted:\n"
        + admitted("same", "p5", 6)
        + "workloads:\n"
        + job("train", "p5", 2)
    )
    assert got["same"].admitted and not got["same"].preempted
    assert got["train"] == Outcome(
        admitted=False,
        message="couldn't assign flavors to pod set main: insufficient unused quota for "
        "nvidia.com/gpu in flavor gpu, 2 more needed",
    )


def test_never_within_the_queue_preempts_nothing() -> None:
    got = outcomes(
        ONE_QUEUE % "Never"
        + "admitted:\n"
        + admitted("low", "p1", 6)
        + "workloads:\n"
        + job("train", "p10", 2)
    )
    assert got["low"].admitted and not got["train"].admitted


def test_victims_are_walked_from_the_most_recent_reservation() -> None:
    # Both victims have priority 1; old was reserved first (file order), recent later
    # (CandidatesOrdering: a more recent QuotaReserved time first), so recent goes.
    got = outcomes(
        ONE_QUEUE % "LowerPriority"
        + "admitted:\n"
        + admitted("old", "p1", 3)
        + admitted("recent", "p1", 3)
        + "workloads:\n"
        + job("train", "p10", 3)
    )
    assert got["old"].admitted and got["recent"].preempted and got["train"].admitted


def test_victims_admitted_in_different_settles_are_not_tied() -> None:
    # a1 and a2 are submitted one after the other, so each is admitted in its own settle
    # (its own reservation second): a2 is the more recent and goes.
    got = outcomes(
        ONE_QUEUE % "LowerPriority"
        + "workloads:\n"
        + job("a1", "p1", 3)
        + job("a2", "p1", 3)
        + job("train", "p10", 3)
    )
    assert got["a2"].preempted and got["a1"].admitted and got["train"].admitted


def test_equal_victims_admitted_in_one_settle_are_a_tie() -> None:
    # Deleting blocker admits both a1 and a2 while that step settles: same priority, same
    # reservation second. train then needs one of them gone and Kueue picks by UID, random
    # on a cluster (rules §8).
    text = (
        ONE_QUEUE % "LowerPriority"
        + "admitted:\n"
        + admitted("blocker", "p10", 6)
        + "workloads:\n"
        + job("a1", "p1", 3)
        + job("a2", "p1", 3)
        + "steps:\n  - delete-workload: blocker\n  - submit:\n"
        + "      {name: train, queue: a, priorityClass: p10, podSets: [{name: main, count: 3, "
        "requests: {nvidia.com/gpu: 1}}]}\n"
    )
    with pytest.raises(Nondeterministic, match="a1, a2"):
        fit(load(text))


COHORT = """
clusterQueues:
  - name: a
    cohortName: c
    preemption: {reclaimWithinCohort: %s, borrowWithinCohort: %s}
    resourceGroups:
      - coveredResources: [nvidia.com/gpu]
        flavors: [{name: gpu, resources: [{name: nvidia.com/gpu, nominalQuota: 4}]}]
  - name: b
    cohortName: c
    resourceGroups:
      - coveredResources: [nvidia.com/gpu]
        flavors: [{name: gpu, resources: [{name: nvidia.com/gpu, nominalQuota: 4}]}]
nodes:
  - {name: n1, labels: {pool: gpu}, allocatable: {nvidia.com/gpu: 8, pods: 110}}
"""


def test_reclaim_within_cohort_evicts_the_borrower() -> None:
    # b borrows 2 of a's GPUs (6 > nominal 4). a's job (4 GPUs, within a's nominal: the
    # hierarchy advantage) reclaims: b's lowest-priority workload goes, whatever its priority
    # against the preemptor (reclaimWithinCohort: Any).
    text = (
        COHORT % ("Any", "{policy: Never}")
        + "admitted:\n"
        + admitted("b-high", "p10", 3, queue="b")
        + admitted("b-low", "p5", 3, queue="b")
        + "workloads:\n"
        + job("train", "p1", 4)
    )
    got = outcomes(text)
    assert got["train"].admitted
    assert got["b-low"].preempted and got["b-high"].admitted
    first = after_one_cycle(text)
    assert first["b-low"].message.endswith(
        "due to reclamation within the cohort; preemptor path: /c/a; preemptee path: /c/b"
    )


def test_reclaim_lower_priority_spares_an_equal_priority_borrower() -> None:
    got = outcomes(
        COHORT % ("LowerPriority", "{policy: Never}")
        + "admitted:\n"
        + admitted("b-high", "p10", 3, queue="b")
        + admitted("b-same", "p5", 3, queue="b")
        + "workloads:\n"
        + job("train", "p5", 4)
    )
    assert not got["train"].admitted and not got["b-same"].preempted


THRESHOLD = """
clusterQueues:
  - name: a
    cohortName: c
    preemption:
      reclaimWithinCohort: Any
      borrowWithinCohort: {policy: LowerPriority, maxPriorityThreshold: %d}
    resourceGroups:
      - coveredResources: [nvidia.com/gpu]
        flavors: [{name: gpu, resources: [{name: nvidia.com/gpu, nominalQuota: 2}]}]
  - name: b
    cohortName: c
    resourceGroups:
      - coveredResources: [nvidia.com/gpu]
        flavors: [{name: gpu, resources: [{name: nvidia.com/gpu, nominalQuota: 6}]}]
nodes:
  - {name: n1, labels: {pool: gpu}, allocatable: {nvidia.com/gpu: 8, pods: 110}}
admitted:
  - {name: b-p2, queue: b, priorityClass: p2, podSets: [{name: main, count: 4, requests: {nvidia.com/gpu: 1}, flavor: gpu, placement: {n1: 4}}]}
  - {name: b-p3, queue: b, priorityClass: p3, podSets: [{name: main, count: 4, requests: {nvidia.com/gpu: 1}, flavor: gpu, placement: {n1: 4}}]}
workloads:
  - {name: train, queue: a, priorityClass: p10, podSets: [{name: main, count: 4, requests: {nvidia.com/gpu: 1}}]}
"""


def test_borrow_within_cohort_preempts_while_borrowing_up_to_the_threshold() -> None:
    # a (nominal 2) needs 4, so it borrows even after any preemption: no hierarchy
    # advantage. b borrows 2 (8 > 6), so its workloads are candidates: b-p2 (priority 2, not
    # above the threshold 2) may go while a borrows (ReclaimWhileBorrowing); it is first in
    # the walk (lower priority) and frees the 4 GPUs a needs.
    got = fit(load(THRESHOLD % 2)).outcomes
    assert got["train"].admitted and got["b-p2"].preempted and not got["b-p3"].preempted
    lines = explained(THRESHOLD % 2)
    assert (
        "train: victim b-p2 (ClusterQueue b, priority 2): reclamation within the cohort while borrowing"
        in lines
    )


def test_borrow_within_cohort_spares_candidates_above_the_threshold() -> None:
    # Threshold 1: both are above it (ReclaimWithoutBorrowing). The first attempt (borrowing
    # allowed) skips them; the second forbids borrowing, which a cannot avoid: no victims.
    got = fit(load(THRESHOLD % 1)).outcomes
    assert not got["train"].admitted
    assert not got["b-p2"].preempted and not got["b-p3"].preempted


TAS_HOSTS = """
clusterQueues:
  - name: a
    preemption: {withinClusterQueue: LowerPriority}
    resourceGroups:
      - coveredResources: [nvidia.com/gpu]
        flavors: [{name: gpu, resources: [{name: nvidia.com/gpu, nominalQuota: 16}]}]
nodes:
  - {name: n1, labels: {pool: gpu}, allocatable: {nvidia.com/gpu: 8, pods: 110}}
  - {name: n2, labels: {pool: gpu}, allocatable: {nvidia.com/gpu: 8, pods: 110}}
"""


def test_victims_are_taken_until_the_topology_fits_not_only_the_quota() -> None:
    # Quota has room for 6 after removing low1 (the most recent low workload, on n1), but the
    # 6 pods must share one host (required hostname): n1 still holds mid, n2 holds low2.
    # The walk continues (low2 on n2: n2 has 8 free) and the fill-back returns low1.
    got = outcomes(
        TAS_HOSTS
        + "admitted:\n"
        + admitted("low2", "p1", 4, node="n2")
        + admitted("mid", "p2", 4, node="n1")
        + admitted("low1", "p1", 4, node="n1")
        + "workloads:\n"
        + "  - {name: train, queue: a, priorityClass: p10, podSets: [{name: main, count: 6, "
        "requests: {nvidia.com/gpu: 1}, topology: {mode: required, level: kubernetes.io/hostname}}]}\n"
    )
    assert got["train"].admitted and got["train"].placement == {"main": {"n2": 6}}
    assert got["low2"].preempted and not got["low1"].preempted and not got["mid"].preempted


TWO_FLAVORS = """
resourceFlavors:
  - {name: gpu, nodeLabels: {pool: gpu}, topologyName: hosts}
  - {name: spare, nodeLabels: {pool: spare}, topologyName: hosts}
"""


def test_a_requeued_victim_is_readmitted_on_the_second_flavor() -> None:
    text = """
clusterQueues:
  - name: a
    preemption: {withinClusterQueue: LowerPriority}
    resourceGroups:
      - coveredResources: [nvidia.com/gpu]
        flavors:
          - {name: gpu, resources: [{name: nvidia.com/gpu, nominalQuota: 4}]}
          - {name: spare, resources: [{name: nvidia.com/gpu, nominalQuota: 4}]}
nodes:
  - {name: n1, labels: {pool: gpu}, allocatable: {nvidia.com/gpu: 4, pods: 110}}
  - {name: s1, labels: {pool: spare}, allocatable: {nvidia.com/gpu: 4, pods: 110}}
admitted:
  - {name: low, queue: a, priorityClass: p1, podSets: [{name: main, count: 4, requests: {nvidia.com/gpu: 1}, flavor: gpu, placement: {n1: 4}}]}
  - {name: other, queue: a, priorityClass: p10, podSets: [{name: main, count: 4, requests: {nvidia.com/gpu: 1}, flavor: spare, placement: {s1: 4}}]}
workloads:
  - {name: train, queue: a, priorityClass: p10, podSets: [{name: main, count: 4, requests: {nvidia.com/gpu: 1}}]}
steps:
  - delete-workload: other
"""
    result = fit(load(text, TWO_FLAVORS))
    # Both flavors are full. On gpu the oracle finds low (preempt); on spare nothing
    # (noPreemptionCandidates), and a flavor with candidates is preferred: gpu, low goes.
    assert result.outcomes["train"].flavors == {"main": "gpu"}
    low = result.outcomes["low"]
    assert low.preempted and not low.admitted
    # Deleting other frees spare and flushes the queue: low comes back there, still marked.
    after = result.steps[0]["low"]
    assert after.admitted and after.preempted and after.flavors == {"main": "spare"}


RESERVE = """
clusterQueues:
  - name: a
    cohortName: c
    queueingStrategy: StrictFIFO
    preemption: {reclaimWithinCohort: %s}
    resourceGroups:
      - coveredResources: [nvidia.com/gpu]
        flavors: [{name: gpu, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
  - name: b
    cohortName: c
    resourceGroups:
      - coveredResources: [nvidia.com/gpu]
        flavors: [{name: gpu, resources: [{name: nvidia.com/gpu, nominalQuota: 16}]}]
nodes:
  - {name: n1, labels: {pool: gpu}, allocatable: {nvidia.com/gpu: 8, pods: 110}}
admitted:
  - {name: big, queue: b, priorityClass: p10, podSets: [{name: main, count: 4, requests: {nvidia.com/gpu: 1}, flavor: gpu, placement: {n1: 4}}]}
workloads:
  - {name: waiter, queue: a, priorityClass: p5, podSets: [{name: main, count: 8, requests: {nvidia.com/gpu: 1}, topology: {mode: required, level: kubernetes.io/hostname}}]}
  - {name: small, queue: b, priorityClass: p1, podSets: [{name: main, count: 2, requests: {nvidia.com/gpu: 1}}]}
"""


def test_a_waiting_preemptor_reserves_its_topology_as_if_empty() -> None:
    # waiter's quota fits, but n1 has 4 free GPUs, not 8: TAS turns Fit into Preempt, and
    # as if empty n1 would hold it. big is in a queue within its nominal: no candidate. So
    # waiter waits at its StrictFIFO head and each cycle reserves its quota and n1's 8 GPUs
    # (rules §3.4 step 3). small (processed after it: lower priority) finds n1 full in the
    # snapshot, is assigned again in the same cycle (TAS recompute), still cannot fit, and
    # as if empty it would: Preempt with no candidates.
    got = outcomes(RESERVE % "LowerPriority")
    assert not got["waiter"].admitted
    assert "allows to fit only 4 out of 8 pod(s)" in got["waiter"].message
    assert not got["small"].admitted
    assert "doesn't allow to fit any of 2 pod(s)" in got["small"].message


def test_a_queue_that_can_always_reclaim_reserves_nothing() -> None:
    # reclaimWithinCohort: Any (CanAlwaysReclaim): no reservation, small takes 2 of the 4.
    got = outcomes(RESERVE % "Any")
    assert not got["waiter"].admitted
    assert got["small"].admitted and got["small"].placement == {"main": {"n1": 2}}


SLICES_WITH_A_REMAINDER = """
name: slices-with-a-remainder
topologies: [{name: t, levels: [example.com/block, kubernetes.io/hostname]}]
resourceFlavors: [{name: a100, nodeLabels: {gpu: a100}, topologyName: t}]
workloadPriorityClasses: [{name: high, value: 1000}]
clusterQueues:
  - name: team-a
    resourceGroups:
      - coveredResources: [nvidia.com/gpu]
        flavors: [{name: a100, resources: [{name: nvidia.com/gpu, nominalQuota: 7}]}]
    preemption: {withinClusterQueue: LowerPriority}
nodes:
  - {name: n0, labels: {example.com/block: b1, gpu: a100}, allocatable: {nvidia.com/gpu: 2, pods: 2}}
  - {name: n1, labels: {example.com/block: b2, gpu: a100}, allocatable: {nvidia.com/gpu: 4, pods: 4}}
admitted:
  - name: old
    queue: team-a
    podSets: [{name: main, count: 2, requests: {nvidia.com/gpu: 2}, flavor: a100, placement: {n0: 1, n1: 1}}]
workloads:
  - name: new
    queue: team-a
    priorityClass: high
    podSets:
      - name: main
        count: 7
        requests: {nvidia.com/gpu: 1}
        topology: {mode: unconstrained, sliceLevel: example.com/block, sliceSize: 2}
"""


def test_a_count_with_a_slice_remainder_places_whole_slices_when_preempting() -> None:
    """7 pods in slices of 2 is 3 slices (findTopologyAssignment: count / sliceSize), so 6
    pods are placed: b1 holds 1 slice (n0), b2 2 (n1), 6 GPUs in all once `old` is gone.
    Quota: 7 GPUs needed, 3 free until `old` (lower priority, 4 GPUs) is preempted. The
    victim search must count the 6 pods placed, not the 7 asked (fuzz seed 1 case 8780: the
    model's capacity shortcut counted 7 > 6 and found no victim)."""
    scenario = scenario_from_data(parse_yaml(SLICES_WITH_A_REMAINDER, "w.yaml"), "w.yaml")
    outcomes = fit(scenario).outcomes
    assert outcomes["new"].admitted
    assert outcomes["new"].placement == {"main": {"n0": 2, "n1": 4}}
    assert outcomes["old"].preempted
