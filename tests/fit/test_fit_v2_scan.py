"""Scan progress across cycles (rules §4.5) where Kueue's record misses: a pod set group
looks its start up on its first pod set, for the first resource of the group's requests;
a leader requesting only cpu has no record for the GPU, so the scan starts at the first
flavor every cycle (workload.go NextFlavorToTryForPodSetResource). Found by the v2 fuzzer
against Kueue's scheduler (seed 11, case 384)."""

from __future__ import annotations

from harness.fit import fit
from harness.scenario.loader import scenario_from_data
from harness.scenario.strict_yaml import parse_yaml

WORLD = """
name: w
topologies:
  - {name: groups, levels: [example.com/group, kubernetes.io/hostname]}
  - {name: hosts, levels: [kubernetes.io/hostname]}
resourceFlavors:
  - {name: h100, nodeLabels: {gpu: h100}, topologyName: groups}
  - {name: l4, nodeLabels: {gpu: l4}, topologyName: hosts}
clusterQueues:
  - name: a
    resourceGroups:
      - coveredResources: [nvidia.com/gpu, cpu]
        flavors:
          - {name: h100, resources: [{name: nvidia.com/gpu, nominalQuota: 2}, {name: cpu, nominalQuota: 1}]}
          - {name: l4, resources: [{name: nvidia.com/gpu, nominalQuota: 2}, {name: cpu, nominalQuota: 1}]}
nodes:
  - {name: h1, labels: {gpu: h100, example.com/group: g1}, allocatable: {cpu: "1", nvidia.com/gpu: 1, pods: 4}}
workloads:
  - name: wl
    podSets:
      - {name: %s, count: 1, requests: {cpu: "1"%s}, topology: {mode: preferred, level: example.com/group, podSetGroupName: lws}}
      - {name: workers, count: 2, requests: {nvidia.com/gpu: 1}, topology: {mode: preferred, level: example.com/group, podSetGroupName: lws}}
"""


def message(leader: str, extra: str = "") -> str:
    text = WORLD % (leader, extra)
    return fit(scenario_from_data(parse_yaml(text, "w.yaml"), "w.yaml")).outcomes["wl"].message


def test_a_group_whose_first_pod_set_has_no_gpu_restarts_at_the_first_flavor() -> None:
    # h100 fits the quota (MayStopSearch stops there, before the last flavor) but its one
    # node holds 1 of the 2 workers. The record says "h100 looked at" for the leader's cpu
    # and the workers' GPU; the next cycle looks up the leader's GPU (the group's first
    # resource in hash order): none, so h100 again, every cycle.
    assert message("leader").endswith('topology "groups" allows to fit only 1 out of 2 pod(s)')


def test_with_a_gpu_on_the_leader_the_scan_moves_on() -> None:
    # The leader's record has the GPU: the next cycle starts at l4, whose topology lacks
    # the requested level; l4 was the last flavor, so the workload is parked with that.
    got = message("leader", ", nvidia.com/gpu: 0")
    assert got.endswith('Flavor "l4" does not contain the requested level')
