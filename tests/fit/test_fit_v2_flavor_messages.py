"""Messages of flavor assignment that quote Go values the way Kueue v0.19.2 prints them."""

from __future__ import annotations

from harness.fit import fit
from harness.scenario.loader import scenario_from_data
from harness.scenario.strict_yaml import parse_yaml

WORLD = """
name: w
topologies: [{name: hosts, levels: [kubernetes.io/hostname]}]
resourceFlavors:
  - name: spot
    nodeLabels: {pool: spot}
    nodeTaints: [{key: example.com/dedicated, value: other, effect: NoSchedule}]
    topologyName: hosts
clusterQueues:
  - name: a
    resourceGroups:
      - coveredResources: [nvidia.com/gpu]
        flavors: [{name: spot, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
nodes:
  - {name: n1, labels: {pool: spot}, allocatable: {nvidia.com/gpu: 8, pods: 110}}
workloads:
  - {name: job, podSets: [{name: main, count: 1, requests: {nvidia.com/gpu: 1}}]}
"""


def test_an_untolerated_flavor_taint_is_quoted_as_go_prints_the_struct() -> None:
    # checkFlavorForPodSets: appendf("untolerated taint %s in flavor %s", taint, ...) with
    # a corev1.Taint value; its String method has a pointer receiver, so fmt prints the
    # fields: {key value effect <nil>} (TimeAdded is nil). Checked with go run on
    # k8s.io/api v0.36.2, the version Kueue v0.19.2 builds with.
    got = fit(scenario_from_data(parse_yaml(WORLD, "w.yaml"), "w.yaml")).outcomes["job"]
    assert got.message == (
        "couldn't assign flavors to pod set main: untolerated taint "
        "{example.com/dedicated other NoSchedule <nil>} in flavor spot"
    )
