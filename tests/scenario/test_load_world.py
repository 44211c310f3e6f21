"""Contract v2's world (docs/scenario-format-v2.md): the lists load into typed objects with
Kueue's defaults, a version-1 file becomes the same lists, and backends that cannot run
version 2 yet refuse it by name instead of answering something else."""

from __future__ import annotations

from fractions import Fraction

from harness.scenario import ample_quota
from harness.scenario.loader import scenario_from_data
from harness.scenario.model import FlavorFungibility, Preemption
from harness.scenario.strict_yaml import parse_yaml

V2 = """
name: two-teams
topologies:
  - {name: h100-topology, levels: [example.com/rack, kubernetes.io/hostname]}
resourceFlavors:
  - {name: h100, nodeLabels: {example.com/gpu: h100}, topologyName: h100-topology}
  - {name: cpu-only, nodeLabels: {example.com/gpu: none}}
workloadPriorityClasses: [{name: high, value: 1000}]
clusterQueues:
  - name: team-a
    cohortName: research
    queueingStrategy: StrictFIFO
    preemption: {withinClusterQueue: LowerPriority, reclaimWithinCohort: Any,
                 borrowWithinCohort: {policy: LowerPriority, maxPriorityThreshold: 100}}
    flavorFungibility: {whenCanBorrow: TryNextFlavor}
    resourceGroups:
      - coveredResources: [nvidia.com/gpu]
        flavors:
          - name: h100
            resources: [{name: nvidia.com/gpu, nominalQuota: 8, borrowingLimit: 4}]
      - coveredResources: [cpu]
        flavors:
          - name: cpu-only
            resources: [{name: cpu, nominalQuota: 10, lendingLimit: 2}]
  - name: team-b
    cohortName: research
    resourceGroups:
      - coveredResources: [nvidia.com/gpu]
        flavors: [{name: h100, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
nodes:
  - {name: n1, labels: {example.com/gpu: h100, example.com/rack: r1},
     allocatable: {nvidia.com/gpu: 8, cpu: 32, pods: 110}}
workloads:
  - name: train
    queue: team-a
    priorityClass: high
    podSets: [{name: main, count: 2, requests: {nvidia.com/gpu: 1}}]
expect:
  train: {admitted: true, flavors: {main: h100}, preempted: false}
"""

V1 = """
name: v1
topology: {name: t, levels: [kubernetes.io/hostname]}
queue: {nominalQuota: {nvidia.com/gpu: 4}}
nodes: [{name: n1, allocatable: {nvidia.com/gpu: 8, cpu: 8, pods: 110}}]
workloads:
  - name: w
    podSets: [{name: main, count: 2, requests: {nvidia.com/gpu: 1, cpu: 1}}]
"""


def test_v2_lists_load_with_kueue_defaults() -> None:
    sc = scenario_from_data(parse_yaml(V2, "x.yaml"), "x.yaml")
    a, b = sc.cluster_queues
    assert a.cohort == "research" and a.queueing_strategy == "StrictFIFO"
    assert a.preemption == Preemption("LowerPriority", "Any", "LowerPriority", 100)
    assert a.fungibility == FlavorFungibility("TryNextFlavor", "TryNextFlavor")
    assert [g.covered for g in a.resource_groups] == [("nvidia.com/gpu",), ("cpu",)]
    gpu = a.resource_groups[0].flavors[0].resources[0]
    assert (gpu.nominal, gpu.borrowing_limit, gpu.lending_limit) == (8, 4, None)
    assert a.resource_groups[1].flavors[0].resources[0].lending_limit == 2
    assert b.preemption == Preemption() and b.queueing_strategy == "BestEffortFIFO"
    assert b.fungibility == FlavorFungibility("MayStopSearch", "TryNextFlavor")
    assert sc.resource_flavor("cpu-only").topology_name is None
    (train,) = sc.workloads
    assert (train.queue, train.priority_class, sc.priority(train)) == ("team-a", "high", 1000)
    assert sc.expect is not None and sc.expect["train"].flavors == {"main": "h100"}
    assert sc.expect["train"].preempted is False
    assert [f.name for f in sc.flavors_of(sc.node("n1"))] == ["h100"]


def test_v1_shorthand_is_one_queue_with_ample_quota_for_unlisted_resources() -> None:
    sc = scenario_from_data(parse_yaml(V1, "x.yaml"), "x.yaml")
    ((topology,), (flavor,)) = sc.topologies, sc.resource_flavors
    assert topology.name == "t" and flavor.topology_name == "t"
    (cq,) = sc.cluster_queues
    assert cq.ample_quota
    (group,) = cq.resource_groups
    assert group.covered == ("cpu", "nvidia.com/gpu")
    quotas = {q.name: q.nominal for q in group.flavors[0].resources}
    assert quotas == {"cpu": Fraction(10**15), "nvidia.com/gpu": Fraction(4)}
    assert sc.workloads[0].queue == cq.name
    wider = ample_quota.covering(sc, ["memory", "cpu"]).cluster_queues[0].resource_groups[0]
    assert wider.covered == ("cpu", "memory", "nvidia.com/gpu")
    assert [q.nominal for q in wider.flavors[0].resources] == [10**15, 10**15, 4]


ADMITTED = """
name: held
topologies: [{name: t, levels: [example.com/rack, example.com/host]}]
resourceFlavors: [{name: h100, nodeLabels: {gpu: h100}, topologyName: t}, {name: plain}]
workloadPriorityClasses: [{name: low, value: 1}]
clusterQueues:
  - name: a
    resourceGroups:
      - coveredResources: [nvidia.com/gpu]
        flavors: [{name: h100, resources: [{name: nvidia.com/gpu, nominalQuota: 1}]}]
      - coveredResources: [cpu]
        flavors: [{name: plain, resources: [{name: cpu, nominalQuota: 1}]}]
nodes:
  - {name: n1, labels: {gpu: h100, example.com/rack: r1, example.com/host: h1},
     allocatable: {nvidia.com/gpu: 4, cpu: 4, pods: 10}}
admitted:
  - name: old
    priorityClass: low
    podSets:
      - {name: main, count: 4, requests: {nvidia.com/gpu: 1}, flavor: h100, placement: {h1: 4}}
      - {name: side, count: 1, requests: {cpu: 1}, flavor: plain}
workloads:
  - name: w
    podSets: [{name: main, count: 1, requests: {cpu: 1}}]
steps:
  - delete-workload: old
expect:
  old: {admitted: false, preempted: true}
"""


def test_admitted_workloads_load_with_flavor_and_node_placement() -> None:
    sc = scenario_from_data(parse_yaml(ADMITTED, "x.yaml"), "x.yaml")
    (old,) = sc.admitted
    assert (old.queue, old.priority_class, sc.priority(old)) == ("a", "low", 1)
    main, side = old.pod_sets
    # Above nominal quota is accepted (Kueue accepts such writes); the domain value h1
    # becomes the one node that carries it.
    assert (main.flavor, main.placement, main.pod_set.count) == ("h100", {"n1": 4}, 4)
    assert (side.flavor, side.placement) == ("plain", None)
    assert sc.steps[0].target == "old"
