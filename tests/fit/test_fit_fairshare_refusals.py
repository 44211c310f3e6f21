"""Fair sharing in the fit model is for flat cohorts: a Cohort object with a parent, quota
or weight of its own under kueueConfig.fairSharing is refused in one line, not guessed."""

from __future__ import annotations

import pytest

from harness.errors import UnsupportedVersionError
from harness.fit import fit
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


def test_fair_sharing_on_a_cohort_tree_is_refused_by_name() -> None:
    scenario = scenario_from_data(parse_yaml(TREE, "t.yaml"), "t.yaml")
    with pytest.raises(UnsupportedVersionError, match="Cohort object team"):
        fit(scenario)


def test_the_same_tree_without_fair_sharing_is_modelled() -> None:
    text = TREE.replace(
        "kueueConfig: {fairSharing: {preemptionStrategies: [LessThanOrEqualToFinalShare]}}\n", ""
    )
    assert fit(scenario_from_data(parse_yaml(text, "t.yaml"), "t.yaml")).outcomes["w"].admitted
