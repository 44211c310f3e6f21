"""Kueue's flavor assignment across flavors and cohorts, without preemption
(docs/dev/kueue-v0.19.2-rules-v2.md §4.1-4.4), on worlds loaded from contract-v2 YAML."""

from __future__ import annotations

from harness.fit.cohort import QuotaBook
from harness.fit.flavors import FIT, NO_CANDIDATES, assign_flavors, fnv1a64
from harness.scenario.loader import scenario_from_data
from harness.scenario.model import Scenario
from harness.scenario.strict_yaml import parse_yaml


def world(fungibility: str = "", a_gpus: int = 4, count: int = 6) -> Scenario:
    text = f"""
name: w
resourceFlavors:
  - {{name: h100, nodeLabels: {{gpu: h100}}}}
  - {{name: a100, nodeLabels: {{gpu: a100}}}}
clusterQueues:
  - name: a
    cohortName: c
    {fungibility}
    resourceGroups:
      - coveredResources: [nvidia.com/gpu]
        flavors:
          - {{name: h100, resources: [{{name: nvidia.com/gpu, nominalQuota: {a_gpus}}}]}}
          - {{name: a100, resources: [{{name: nvidia.com/gpu, nominalQuota: 8}}]}}
  - name: b
    cohortName: c
    resourceGroups:
      - coveredResources: [nvidia.com/gpu]
        flavors: [{{name: h100, resources: [{{name: nvidia.com/gpu, nominalQuota: 4}}]}}]
nodes: [{{name: n1, labels: {{gpu: h100}}, allocatable: {{nvidia.com/gpu: 8, pods: 10}}}}]
workloads:
  - name: w
    queue: a
    podSets: [{{name: main, count: {count}, requests: {{nvidia.com/gpu: 1, cpu: 0}}}}]
"""
    return scenario_from_data(parse_yaml(text, "x.yaml"), "x.yaml")


def test_fnv1a64_matches_the_reference_vector() -> None:
    # FNV-1a 64 of "a" (the published test vector).
    assert fnv1a64("a") == 0xAF63DC4C8601EC8C


def test_may_stop_search_borrows_on_the_first_flavor() -> None:
    sc = world()
    got = assign_flavors(sc, QuotaBook.of(sc.cluster_queues), sc.workloads[0])
    assert got.flavors == {"main": {"nvidia.com/gpu": "h100"}}
    assert got.mode.preemption == FIT and got.borrowing  # 6 > nominal 4: borrows from b


def test_try_next_flavor_when_borrowing_takes_the_flavor_within_nominal() -> None:
    sc = world("flavorFungibility: {whenCanBorrow: TryNextFlavor}")
    got = assign_flavors(sc, QuotaBook.of(sc.cluster_queues), sc.workloads[0])
    assert got.flavors == {"main": {"nvidia.com/gpu": "a100"}} and not got.borrowing


def test_no_flavor_fits_lists_every_flavor_reason() -> None:
    sc = world(count=10)
    book = QuotaBook.of(sc.cluster_queues)
    book.add("b", {("h100", "nvidia.com/gpu"): 4})
    got = assign_flavors(sc, book, sc.workloads[0])
    # h100: cap 8 < 10; a100: 10 > nominal 8 and no cohort member lends a100.
    assert got.mode.preemption < NO_CANDIDATES
    assert got.message(["main"]) == (
        "couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu in "
        "flavor a100, previously considered podsets requests (0) + current podset request "
        "(10) > maximum capacity (8), insufficient quota for nvidia.com/gpu in flavor h100, "
        "previously considered podsets requests (0) + current podset request (10) > maximum "
        "capacity (8)"
    )


def test_within_nominal_but_used_is_pending_without_candidates() -> None:
    sc = world(a_gpus=8)
    book = QuotaBook.of(sc.cluster_queues)
    book.add("a", {("h100", "nvidia.com/gpu"): 4, ("a100", "nvidia.com/gpu"): 4})
    book.add("b", {("h100", "nvidia.com/gpu"): 4})
    got = assign_flavors(sc, book, sc.workloads[0])
    # Both flavors: nominal 8 >= 6, so Kueue asks its oracle; with Never policies it finds
    # no candidates; the earlier flavor is kept among equals.
    assert got.mode.preemption == NO_CANDIDATES
    assert got.flavors == {"main": {"nvidia.com/gpu": "h100"}}
    assert "insufficient unused quota for nvidia.com/gpu in flavor h100, 2 more needed" in (
        got.message(["main"])
    )


def test_scan_progress_starts_at_the_recorded_flavor_and_records_where_it_stopped() -> None:
    sc = world()
    book = QuotaBook.of(sc.cluster_queues)
    first = assign_flavors(sc, book, sc.workloads[0])
    # Keyed by (pod set slot, resource).
    gpu = (0, "nvidia.com/gpu")
    assert first.tried == {gpu: 0}  # MayStopSearch stopped at h100, before the last flavor
    again = assign_flavors(sc, book, sc.workloads[0], start={gpu: 1})
    assert again.flavors == {"main": {"nvidia.com/gpu": "a100"}} and again.tried == {gpu: -1}
