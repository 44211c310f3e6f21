"""Fair sharing over a Cohort tree in the fit model: a Cohort's share is its subtree's
borrowing over what its parent can lend, divided by the Cohort's weight
(pkg/cache/scheduler/fair_sharing.go dominantResourceShare)."""

from __future__ import annotations

from harness.fit import fairshare, fit
from harness.fit.cohort import QuotaBook
from harness.fit.cohort_tree import COHORT
from harness.scenario.loader import scenario_from_data
from harness.scenario.strict_yaml import parse_yaml

TREE = """
name: fair-tree
kueueConfig: {fairSharing: {preemptionStrategies: [LessThanOrEqualToFinalShare]}}
cohorts: [{name: org}, {name: team, parentName: org}]
topologies: [{name: t, levels: [kubernetes.io/hostname]}]
resourceFlavors: [{name: gpu, nodeLabels: {gpu: "y"}, topologyName: t}]
clusterQueues:
  - name: a
    cohortName: team
    resourceGroups:
      - coveredResources: [nvidia.com/gpu]
        flavors: [{name: gpu, resources: [{name: nvidia.com/gpu, nominalQuota: 4}]}]
nodes: [{name: n1, labels: {gpu: "y"}, allocatable: {nvidia.com/gpu: 4, pods: 10}}]
workloads: [{name: w, podSets: [{name: main, count: 1, requests: {nvidia.com/gpu: 1}}]}]
"""


def test_fair_sharing_on_a_cohort_tree_is_modelled() -> None:
    scenario = scenario_from_data(parse_yaml(TREE, "t.yaml"), "t.yaml")
    assert fit(scenario).outcomes["w"].admitted


WEIGHTED = """
name: fair-weights
kueueConfig: {fairSharing: {preemptionStrategies: [LessThanOrEqualToFinalShare]}}
cohorts:
  - {name: org}
  - {name: team, parentName: org, fairSharing: {weight: "2"}}
  - {name: other, parentName: org, resourceGroups: [{coveredResources: [cpu], flavors: [
      {name: f, resources: [{name: cpu, nominalQuota: 6}]}]}]}
resourceFlavors: [{name: f}]
clusterQueues:
  - name: a
    cohortName: team
    resourceGroups:
      - coveredResources: [cpu]
        flavors: [{name: f, resources: [{name: cpu, nominalQuota: 2}]}]
nodes: [{name: n1, allocatable: {cpu: 8, pods: 10}}]
workloads: [{name: w, podSets: [{name: main, count: 1, requests: {cpu: 1}}]}]
"""


def test_a_cohorts_share_is_its_subtree_borrowing_over_its_weight() -> None:
    scenario = scenario_from_data(parse_yaml(WEIGHTED, "t.yaml"), "t.yaml")
    book = QuotaBook.of(scenario.cluster_queues, scenario.cohorts)
    book.add("a", {("f", "cpu"): 5000})
    # team borrows 3 cpu of the 8 its parent org can lend: 375 per mille, over weight 2.
    team = fairshare.node_share(book, (COHORT, "team"))
    assert team.borrowing and team.ratio == 375.0 and team.weighted() == 187.5
    assert not fairshare.node_share(book, (COHORT, "other")).borrowing
    assert fairshare.node_share(book, (COHORT, "org")).ratio == 0


def test_the_same_tree_without_fair_sharing_is_modelled() -> None:
    text = TREE.replace(
        "kueueConfig: {fairSharing: {preemptionStrategies: [LessThanOrEqualToFinalShare]}}\n", ""
    )
    assert fit(scenario_from_data(parse_yaml(text, "t.yaml"), "t.yaml")).outcomes["w"].admitted
