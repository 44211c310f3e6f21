"""The version-2 fuzz generator (harness/fuzz/world_v2.py): deterministic per case, every
case loads, and the shapes issue 11 asks for (several flavors and queues, cohorts,
priorities, each preemption policy, fungibility, StrictFIFO, admitted workloads and their
deletion) all occur."""

from __future__ import annotations

from collections import Counter

from harness.fuzz.runner import Checker
from harness.fuzz.world_v2 import generate_v2
from harness.results.outcome import Outcome
from harness.scenario.loader import scenario_from_data
from harness.scenario.model import Scenario

CASES = 400


def test_same_seed_and_index_give_the_same_v2_scenario() -> None:
    assert generate_v2(3, 17) == generate_v2(3, 17)
    assert generate_v2(3, 17) != generate_v2(3, 18)


def test_every_v2_case_loads() -> None:
    for index in range(CASES):
        data = generate_v2(1, index)
        scenario_from_data(data, data["name"])  # raises on anything the loader refuses


def test_v2_generator_covers_the_shapes_it_promises() -> None:
    seen: Counter[str] = Counter()
    for index in range(CASES):
        scenario = scenario_from_data(generate_v2(1, index), "case")
        seen["flavors>1"] += len(scenario.resource_flavors) > 1
        seen["queues>1"] += len(scenario.cluster_queues) > 1
        seen["cohort"] += any(cq.cohort for cq in scenario.cluster_queues)
        seen["strict"] += any(
            cq.queueing_strategy == "StrictFIFO" for cq in scenario.cluster_queues
        )
        seen["admitted"] += bool(scenario.admitted)
        seen["priorities"] += bool(scenario.priority_classes)
        seen["delete-step"] += any(s.action == "delete-workload" for s in scenario.steps)
        for cq in scenario.cluster_queues:
            p, f = cq.preemption, cq.fungibility
            seen[f"within:{p.within_cluster_queue}"] += 1
            seen[f"reclaim:{p.reclaim_within_cohort}"] += 1
            seen[f"borrow:{p.borrow_within_cohort}"] += 1
            seen["threshold"] += p.max_priority_threshold is not None
            seen["lending"] += any(
                q.lending_limit is not None
                for g in cq.resource_groups
                for fq in g.flavors
                for q in fq.resources
            )
            seen["borrowing-limit"] += any(
                q.borrowing_limit is not None
                for g in cq.resource_groups
                for fq in g.flavors
                for q in fq.resources
            )
            seen[f"whenCanBorrow:{f.when_can_borrow}"] += 1
            seen[f"whenCanPreempt:{f.when_can_preempt}"] += 1
    wanted = [
        "flavors>1", "queues>1", "cohort", "strict", "admitted", "priorities", "delete-step",
        "within:LowerPriority", "within:LowerOrNewerEqualPriority", "reclaim:Any",
        "reclaim:LowerPriority", "borrow:LowerPriority", "threshold", "lending",
        "borrowing-limit", "whenCanBorrow:TryNextFlavor", "whenCanPreempt:MayStopSearch",
    ]  # fmt: skip
    missing = [shape for shape in wanted if seen[shape] < 5]
    assert not missing, f"shapes seen fewer than 5 times in {CASES} cases: {missing}"


def test_a_case_the_fit_model_cannot_model_is_skipped_not_a_disagreement() -> None:
    def observe(_scenario: Scenario) -> dict[str, Outcome]:
        return {}

    data = generate_v2(1, 0)
    data["clusterQueues"][0]["preemption"] = {"withinClusterQueue": "LowerPriority"}
    data["kueue"] = "v0.1.0"  # a version the fit model does not model
    with Checker(observe) as checker:
        verdict = checker.check(data)
    assert verdict.skipped and not verdict.disagrees and not verdict.lines


def test_shrinker_cuts_version_2_worlds() -> None:
    """A fake disagreement that needs only one admitted workload: the shrinker removes the
    other admitted workloads, queues, flavors, priorities and most nodes around it."""
    from harness.fuzz.shrink import shrink

    data = next(
        d
        for d in (generate_v2(5, i) for i in range(200))
        if len(d.get("admitted", [])) >= 2 and len(d["resourceFlavors"]) >= 2
    )

    def interesting(candidate: dict[str, object]) -> bool:
        return bool(candidate.get("admitted"))

    small, _calls = shrink(data, interesting, budget=400)
    assert len(small["admitted"]) == 1
    assert len(small["resourceFlavors"]) == 1 and len(small["clusterQueues"]) == 1
    assert len(small["nodes"]) < len(data["nodes"])
    assert "workloadPriorityClasses" not in small or "priorityClass" in small["admitted"][0]
    scenario_from_data(small, "shrunk")
