"""The shared admission builder (harness/kueue/admission_status.py): what the sim and the runner write for
an `admitted` entry must decode back to the entry's flavor and placement, in the shape Kueue
itself writes (hostname-only levels when hostname is the lowest level; `pods` only when the
ClusterQueue covers it)."""

from __future__ import annotations

from datetime import UTC, datetime

from harness.kueue.admission_status import admission_conditions, admission_status, reservation_times
from harness.runner.decode import domains, lowest_level_pods
from harness.scenario.loader import scenario_from_data
from harness.scenario.model import Scenario
from harness.scenario.strict_yaml import parse_yaml

WORLD = """
name: admitted-shapes
topologies:
  - {name: hosts, levels: [example.com/rack, kubernetes.io/hostname]}
  - {name: racks, levels: [example.com/block, example.com/rack]}
resourceFlavors:
  - {name: h100, nodeLabels: {example.com/gpu: h100}, topologyName: hosts}
  - {name: a100, nodeLabels: {example.com/gpu: a100}, topologyName: racks}
  - {name: plain, nodeLabels: {example.com/gpu: none}}
clusterQueues:
  - name: team-a
    resourceGroups:
      - coveredResources: [nvidia.com/gpu, cpu, pods]
        flavors:
          - name: h100
            resources: [{name: nvidia.com/gpu, nominalQuota: 16}, {name: cpu, nominalQuota: 64},
                        {name: pods, nominalQuota: 100}]
          - name: a100
            resources: [{name: nvidia.com/gpu, nominalQuota: 16}, {name: cpu, nominalQuota: 64},
                        {name: pods, nominalQuota: 100}]
  - name: team-b
    resourceGroups:
      - coveredResources: [cpu]
        flavors: [{name: plain, resources: [{name: cpu, nominalQuota: 64}]}]
nodes:
  - {name: h-2, labels: {example.com/gpu: h100, example.com/rack: r1}, allocatable: {nvidia.com/gpu: 8, cpu: 32, pods: 110}}
  - {name: h-1, labels: {example.com/gpu: h100, example.com/rack: r1}, allocatable: {nvidia.com/gpu: 8, cpu: 32, pods: 110}}
  - {name: a-1, labels: {example.com/gpu: a100, example.com/block: b1, example.com/rack: ra}, allocatable: {nvidia.com/gpu: 8, cpu: 32, pods: 110}}
  - {name: p-1, labels: {example.com/gpu: none}, allocatable: {cpu: 32, pods: 110}}
admitted:
  - name: on-hosts
    queue: team-a
    podSets:
      - {name: main, count: 5, requests: {nvidia.com/gpu: 1, cpu: 500m}, flavor: h100,
         placement: {h-2: 2, h-1: 3}}
  - name: on-racks
    queue: team-a
    podSets:
      - {name: main, count: 2, requests: {nvidia.com/gpu: 2}, flavor: a100, placement: {ra: 2}}
  - name: no-tas
    queue: team-b
    podSets:
      - {name: main, count: 3, requests: {cpu: 1}, flavor: plain}
workloads: []
"""


def _scenario() -> Scenario:
    return scenario_from_data(parse_yaml(WORLD, "world.yaml"), "world.yaml")


def test_hostname_lowest_level_writes_hostnames_only_and_decodes_to_the_placement() -> None:
    scenario = _scenario()
    status = admission_status(scenario, scenario.admitted[0])
    assert status["clusterQueue"] == "team-a"
    (psa,) = status["podSetAssignments"]
    assert psa["name"] == "main" and psa["count"] == 5
    assert psa["flavors"] == {"nvidia.com/gpu": "h100", "cpu": "h100", "pods": "h100"}
    assert psa["resourceUsage"] == {"nvidia.com/gpu": "5", "cpu": "2500m", "pods": "5"}
    ta = psa["topologyAssignment"]
    assert ta["levels"] == ["kubernetes.io/hostname"]
    assert [values for values, _ in domains(ta)] == [("h-1",), ("h-2",)]  # sorted, as Kueue
    assert lowest_level_pods(ta) == {"h-1": 3, "h-2": 2}


def test_non_hostname_lowest_level_writes_every_level() -> None:
    scenario = _scenario()
    (psa,) = admission_status(scenario, scenario.admitted[1])["podSetAssignments"]
    ta = psa["topologyAssignment"]
    assert ta["levels"] == ["example.com/block", "example.com/rack"]
    assert list(domains(ta)) == [(("b1", "ra"), 2)]


def test_flavor_without_topology_has_no_assignment_and_no_pods_unless_covered() -> None:
    scenario = _scenario()
    (psa,) = admission_status(scenario, scenario.admitted[2])["podSetAssignments"]
    assert "topologyAssignment" not in psa
    assert psa["flavors"] == {"cpu": "plain"}
    assert psa["resourceUsage"] == {"cpu": "3"}


def test_resource_usage_is_what_the_configuration_counts_against_quota() -> None:
    data = parse_yaml(WORLD, "world.yaml")
    data["kueueConfig"] = {"resources": {"excludeResourcePrefixes": ["nvidia.com/"]}}
    scenario = scenario_from_data(data, "world.yaml")
    (psa,) = admission_status(scenario, scenario.admitted[0])["podSetAssignments"]
    assert psa["flavors"] == {"cpu": "h100", "pods": "h100"}
    assert psa["resourceUsage"] == {"cpu": "2500m", "pods": "5"}
    assert lowest_level_pods(psa["topologyAssignment"]) == {"h-1": 3, "h-2": 2}


def test_reservations_are_whole_seconds_in_file_order_before_now() -> None:
    scenario = _scenario()
    now = datetime(2026, 1, 1, 12, 0, 0, 700000, tzinfo=UTC)
    times = reservation_times(scenario, now)
    assert list(times) == ["on-hosts", "on-racks", "no-tas"]
    stamps = [t.timestamp() for t in times.values()]
    assert stamps == [now.replace(microsecond=0).timestamp() - 3 + i for i in range(3)]
    quota, admitted = admission_conditions("team-a", times["on-hosts"])
    assert quota["type"] == "QuotaReserved" and quota["status"] == "True"
    assert quota["message"] == "Quota reserved in ClusterQueue team-a"
    assert admitted["type"] == "Admitted" and admitted["lastTransitionTime"].endswith("Z")


def test_resource_usage_is_kueues_whole_units_per_pod_times_the_count() -> None:
    """totalRequestsFromPodSets rounds each pod's transformed quantity up to a whole unit,
    then multiplies by the count; the Workload webhook refuses a resourceUsage that is not a
    multiple of the count (workload_webhook.go). 500m cpu -> 0.5 credits -> 1 per pod, x5."""
    data = parse_yaml(WORLD, "world.yaml")
    transformation = {"input": "cpu", "outputs": {"example.com/credits": "1"}}
    data["kueueConfig"] = {"resources": {"transformations": [transformation]}}
    group = data["clusterQueues"][0]["resourceGroups"][0]
    group["coveredResources"].append("example.com/credits")
    for flavor in group["flavors"]:
        flavor["resources"].append({"name": "example.com/credits", "nominalQuota": 64})
    scenario = scenario_from_data(data, "world.yaml")
    (psa,) = admission_status(scenario, scenario.admitted[0])["podSetAssignments"]
    assert psa["resourceUsage"]["example.com/credits"] == "5"
    assert psa["resourceUsage"]["cpu"] == "2500m"


def test_a_resource_no_group_covers_keeps_its_flavor_but_holds_no_quota() -> None:
    """Kueue never holds quota for a resource no resource group covers (IgnoreUndeclared
    skips it; toAPI writes only resources with a flavor), while its cache counts every
    resourceUsage entry against its flavor: the entry's resourceUsage leaves it out. Its
    flavor stays, so the TAS usage is still placed on it (TASUsage reads the flavors)."""
    data = parse_yaml(WORLD, "world.yaml")
    data["kueueConfig"] = {"resources": {"quotaCheckStrategy": "IgnoreUndeclared"}}
    data["admitted"][0]["podSets"][0]["requests"]["example.com/nic"] = 1
    data["nodes"][0]["allocatable"]["example.com/nic"] = 4
    data["nodes"][1]["allocatable"]["example.com/nic"] = 4
    scenario = scenario_from_data(data, "world.yaml")
    (psa,) = admission_status(scenario, scenario.admitted[0])["podSetAssignments"]
    assert psa["flavors"]["example.com/nic"] == "h100"
    assert "example.com/nic" not in psa["resourceUsage"]
    assert psa["resourceUsage"]["nvidia.com/gpu"] == "5"
