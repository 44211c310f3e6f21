"""The sim on version-2 scenarios: what Kueue's controllers do around its scheduler (preemption
carried out, admitted workloads, flushes), the sim's clock, and how it reports.

Each case says what Kueue v0.19.2 must do and why (docs/dev/kueue-v0.19.2-rules-v2.md);
none is copied from a run. Needs Go to build harness/sim/go/ the first time.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from harness.backends.sim import SimBackend
from harness.errors import Nondeterministic
from harness.fuzz.world_v2 import generate_v2
from harness.scenario.loader import scenario_from_data
from harness.scenario.strict_yaml import parse_yaml
from harness.sim.contract import scenario_to_dict
from harness.sim.process import run_sim

HOST = "kubernetes.io/hostname"


def contract(text: str) -> dict[str, Any]:
    """A scenario file's text as kueue-sim's input, validated like a file."""
    return scenario_to_dict(scenario_from_data(parse_yaml(text, "<test>"), "<test>"))


def answer_of(binary: Path, data: dict[str, Any]) -> dict[str, Any]:
    [answer] = run_sim([data], binary)
    assert answer["error"] is None, answer["error"]
    return answer


ONE_CQ = """
name: within-cq
topologies: [{name: hosts, levels: [kubernetes.io/hostname]}]
resourceFlavors: [{name: h100, nodeLabels: {gpu: h100}, topologyName: hosts}]
workloadPriorityClasses: [{name: high, value: 100}, {name: low, value: 1}]
clusterQueues:
  - name: team-a
    preemption: {withinClusterQueue: LowerPriority}
    resourceGroups:
      - coveredResources: [nvidia.com/gpu]
        flavors: [{name: h100, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
nodes: [{name: n1, labels: {gpu: h100}, allocatable: {nvidia.com/gpu: 8, pods: 110}}]
admitted:
  - name: low
    priorityClass: low
    podSets: [{name: main, count: 8, requests: {nvidia.com/gpu: 1}, flavor: h100, placement: {n1: 8}}]
workloads:
  - name: high
    priorityClass: high
    podSets: [{name: main, count: 8, requests: {nvidia.com/gpu: 1}}]
"""


@pytest.mark.sim
def test_a_preempted_workload_is_released_and_the_preemptor_admitted(sim_binary: Path) -> None:
    # high needs all 8 GPUs of the quota; low (lower priority, same ClusterQueue) holds them.
    # Kueue evicts low; the job reconciler gives its quota back; high is admitted on n1; low,
    # re-evaluated, cannot preempt a higher priority and waits for quota.
    outcome = answer_of(sim_binary, contract(ONE_CQ))["outcome"]
    assert outcome["high"] == {
        "admitted": True,
        "placement": {"main": {"n1": 8}},
        "flavors": {"main": "h100"},
    }
    assert outcome["low"]["admitted"] is False
    assert outcome["low"]["preempted"] is True
    assert (
        "insufficient unused quota for nvidia.com/gpu in flavor h100, 8 more needed"
        in (outcome["low"]["message"])
    )


@pytest.mark.sim
def test_without_a_preemption_policy_the_admitted_workload_keeps_its_quota(
    sim_binary: Path,
) -> None:
    data = contract(ONE_CQ.replace("preemption: {withinClusterQueue: LowerPriority}", ""))
    outcome = answer_of(sim_binary, data)["outcome"]
    assert outcome["low"] == {
        "admitted": True,
        "placement": {"main": {"n1": 8}},
        "flavors": {"main": "h100"},
    }
    assert outcome["high"]["admitted"] is False
    assert "preempted" not in outcome["high"]


@pytest.mark.sim
def test_the_backend_adapter_runs_version_2_scenarios(sim_binary: Path) -> None:
    backend = SimBackend()
    try:
        observed = backend.run(scenario_from_data(parse_yaml(ONE_CQ, "<test>"), "<test>"))
    finally:
        backend.close()
    assert observed.outcomes["high"].flavors == {"main": "h100"}
    assert observed.outcomes["low"].preempted is True
    assert not observed.outcomes["low"].admitted


@pytest.mark.sim
def test_a_malformed_admission_is_refused_by_kueues_workload_webhook(sim_binary: Path) -> None:
    # resourceUsage must be a multiple of count (webhooks.validateAdmission): 8 pods cannot
    # use 9 GPUs. The sim reports the scenario as an error instead of running it.
    data = contract(ONE_CQ)
    bad = copy.deepcopy(data)
    bad["admitted"][0]["status"]["admission"]["podSetAssignments"][0]["resourceUsage"] = {
        "nvidia.com/gpu": "9"
    }
    [answer] = run_sim([bad], sim_binary)
    # (Kueue formats the count pointer with %d, so the number after "of" is an address.)
    assert 'resourceUsage[nvidia.com/gpu]: Invalid value: "9": is not a multiple of' in (
        answer["error"] or ""
    )


COHORT = """
name: same-cycle-victims
topologies: [{name: hosts, levels: [kubernetes.io/hostname]}]
resourceFlavors: [{name: plain, nodeLabels: {pool: plain}}]
clusterQueues:
  - name: team-a
    cohortName: research
    resourceGroups: [{coveredResources: [cpu], flavors: [{name: plain, resources: [{name: cpu, nominalQuota: 0}]}]}]
  - name: team-b
    cohortName: research
    preemption: {reclaimWithinCohort: Any}
    resourceGroups: [{coveredResources: [cpu], flavors: [{name: plain, resources: [{name: cpu, nominalQuota: 4}]}]}]
  - name: team-c
    cohortName: research
    resourceGroups: [{coveredResources: [cpu], flavors: [{name: plain, resources: [{name: cpu, nominalQuota: 0}]}]}]
nodes: [{name: n1, labels: {pool: plain}, allocatable: {cpu: 8, pods: 110}}]
admitted:
  - name: blocker
    queue: team-b
    podSets: [{name: main, count: 1, requests: {cpu: 4}, flavor: plain}]
workloads:
  - {name: va, queue: team-a, podSets: [{name: main, count: 1, requests: {cpu: 2}}]}
  - {name: vc, queue: team-c, podSets: [{name: main, count: 1, requests: {cpu: 2}}]}
steps:
  - delete-workload: blocker
  - submit: {name: claim, queue: team-b, podSets: [{name: main, count: 1, requests: {cpu: 2}}]}
"""


@pytest.mark.sim
def test_each_admission_gets_its_own_second_so_the_later_one_is_the_first_victim(
    sim_binary: Path,
) -> None:
    # Deleting blocker frees team-b's 4 CPUs; va and vc borrow them in the same cycle, va first
    # (created first). claim (team-b, within its nominal quota) reclaims 2 CPUs: Kueue takes
    # the most recently reserved borrower first (preemption/common/ordering.go). The sim moves
    # its clock one second per admission, so that is vc; with both in one second the UID order
    # would pick va (on a cluster this is a tie: rules §8).
    steps = answer_of(sim_binary, contract(COHORT))["steps"]
    freed, claimed = steps
    assert freed["va"]["admitted"] is True and freed["vc"]["admitted"] is True
    assert claimed["claim"]["admitted"] is True
    assert claimed["va"]["admitted"] is True
    assert claimed["vc"]["admitted"] is False and claimed["vc"]["preempted"] is True


@pytest.mark.sim
def test_deleting_an_admitted_workload_retries_its_cohort(sim_binary: Path) -> None:
    # The pending workloads were parked as inadmissible; the admitted one was never pending in
    # this run, yet its deletion must flush the cohort as for any workload Kueue knows.
    steps = answer_of(sim_binary, contract(COHORT))["steps"]
    assert [steps[0][w]["admitted"] for w in ("va", "vc")] == [True, True]


TWO_GROUPS = """
name: two-groups
topologies: [{name: hosts, levels: [kubernetes.io/hostname]}]
resourceFlavors:
  - {name: gpu-a, nodeLabels: {pool: gpu}}
  - {name: cpu-x, nodeLabels: {pool: cpu}}
clusterQueues:
  - name: team-a
    resourceGroups:
      - {coveredResources: [nvidia.com/gpu], flavors: [{name: gpu-a, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]}
      - {coveredResources: [cpu], flavors: [{name: cpu-x, resources: [{name: cpu, nominalQuota: 8}]}]}
nodes: [{name: n1, labels: {pool: gpu}, allocatable: {nvidia.com/gpu: 8, cpu: 8, pods: 110}}]
workloads:
  - {name: both, podSets: [{name: main, count: 2, requests: {nvidia.com/gpu: 1, cpu: 1}}]}
"""


@pytest.mark.sim
def test_a_pod_set_with_flavors_from_two_groups_lists_both_in_group_order(
    sim_binary: Path,
) -> None:
    # Neither flavor has a topology, so there is no placement to report, only the flavors.
    outcome = answer_of(sim_binary, contract(TWO_GROUPS))["outcome"]
    assert outcome["both"] == {
        "admitted": True,
        "placement": {},
        "flavors": {"main": "gpu-a,cpu-x"},
    }


WRAPPING = """
name: wrapping
topologies:
  - {name: t1, levels: [kubernetes.io/hostname]}
  - {name: t2, levels: [kubernetes.io/hostname]}
resourceFlavors:
  - {name: f1, nodeLabels: {pool: one}, topologyName: t1}
  - {name: f2, nodeLabels: {pool: two}, topologyName: t2}
clusterQueues:
  - name: team-a
    queueingStrategy: StrictFIFO
    resourceGroups:
      - coveredResources: [nvidia.com/gpu]
        flavors:
          - {name: f1, resources: [{name: nvidia.com/gpu, nominalQuota: 16}]}
          - {name: f2, resources: [{name: nvidia.com/gpu, nominalQuota: 16}]}
nodes:
  - {name: one-1, labels: {pool: one}, allocatable: {nvidia.com/gpu: 2, pods: 110}}
  - {name: two-1, labels: {pool: two}, allocatable: {nvidia.com/gpu: 3, pods: 110}}
workloads:
  - name: big
    podSets: [{name: main, count: 4, requests: {nvidia.com/gpu: 1}, topology: {mode: required, level: kubernetes.io/hostname}}]
"""


@pytest.mark.sim
def test_a_strict_fifo_head_whose_flavor_scan_wraps_is_reported_unstable(
    sim_binary: Path,
) -> None:
    # Quota fits on f1, so the scan stops there and TAS fails (2 of 4 pods on one host); the
    # next cycle resumes at f2 (3 of 4) and the one after wraps to f1 (rules §4.5): StrictFIFO
    # retries its head every cycle, so its message alternates for ever.
    answer = answer_of(sim_binary, contract(WRAPPING))
    [unstable] = answer["unstable"]
    assert unstable.startswith("big: its message changes from one scheduling cycle to the next")
    assert "only 2 out of 4" in unstable and "only 3 out of 4" in unstable
    backend = SimBackend()
    try:
        with pytest.raises(Nondeterministic, match="Kueue never settles"):
            backend.run(scenario_from_data(parse_yaml(WRAPPING, "<test>"), "<test>"))
    finally:
        backend.close()


@pytest.mark.sim
def test_best_effort_fifo_ends_its_scan_on_the_last_flavor(sim_binary: Path) -> None:
    # The same workload in a BestEffortFIFO queue: after f2 the scan is over and the workload is
    # parked, its message the one of the last flavor tried.
    data = contract(WRAPPING.replace("queueingStrategy: StrictFIFO", ""))
    answer = answer_of(sim_binary, data)
    assert "unstable" not in answer
    message = answer["outcome"]["big"]["message"]
    assert 'topology "t2" allows to fit only 3 out of 4 pod(s)' in message


GROUP_ON_FULL_FLAVOR = """
name: group-on-full-flavor
topologies:
  - {name: l4-topology, levels: [example.com/rack, kubernetes.io/hostname]}
  - {name: a100-topology, levels: [example.com/rack, kubernetes.io/hostname]}
resourceFlavors:
  - {name: l4, nodeLabels: {example.com/gpu: l4}, topologyName: l4-topology}
  - {name: a100, nodeLabels: {example.com/gpu: a100}, topologyName: a100-topology}
clusterQueues:
  - name: team-a
    resourceGroups:
      - coveredResources: [nvidia.com/gpu, cpu]
        flavors:
          - name: l4
            resources: [{name: nvidia.com/gpu, nominalQuota: 10}, {name: cpu, nominalQuota: 96}]
          - name: a100
            resources: [{name: nvidia.com/gpu, nominalQuota: 12}, {name: cpu, nominalQuota: 24}]
nodes:
  - {name: l4-n0, labels: {example.com/gpu: l4, example.com/rack: r1}, allocatable: {cpu: '64', nvidia.com/gpu: 2, pods: 110}}
  - {name: a100-n0, labels: {example.com/gpu: a100, example.com/rack: r9}, allocatable: {cpu: '8', nvidia.com/gpu: 4, pods: 110}}
usage:
  - {node: l4-n0, requests: {nvidia.com/gpu: 2}}
workloads:
  - name: group
    podSets:
      - {name: leader, count: 1, requests: {cpu: '1'}, topology: {mode: preferred, level: example.com/rack, podSetGroupName: lws}}
      - {name: workers, count: 1, requests: {nvidia.com/gpu: 2, cpu: 500m}, topology: {mode: preferred, level: example.com/rack, podSetGroupName: lws}}
  - name: later
    podSets:
      - {name: main, count: 1, requests: {cpu: '1'}}
"""


@pytest.mark.sim
def test_kueue_finding_a_group_whose_leader_has_no_gpu_never_leaves_its_first_flavor(
    sim_binary: Path,
) -> None:
    # Kueue v0.19.2: l4 has quota but no free GPU, so TAS fails there and the scan should go on
    # to a100 next cycle (rules §4.5). For a pod set group, findFlavorForPodSets looks the
    # progress up on the group's first pod set and the resource being assigned
    # (NextFlavorToTryForPodSetResource(psIDs[0], nvidia.com/gpu)), but the leader's record
    # only has cpu: the scan restarts at l4 every cycle. The group stays pending on l4, is
    # requeued at once (its record says flavors are left) and the BestEffortFIFO queue never
    # gets past it: "later" is never evaluated.
    answer = answer_of(sim_binary, contract(GROUP_ON_FULL_FLAVOR))
    outcome = answer["outcome"]
    assert outcome["group"]["admitted"] is False
    assert (
        'topology "l4-topology" doesn\'t allow to fit any of 1 pod(s)'
        in outcome["group"]["message"]
    )
    assert outcome["later"] == {"admitted": False, "message": ""}
    assert (
        "later: not evaluated: queued behind group, which Kueue retries every scheduling cycle"
        in (answer["notes"])
    )
    # When the leader requests a GPU too, its record has the resource and the scan moves on.
    leader_gpu = GROUP_ON_FULL_FLAVOR.replace(
        "requests: {cpu: '1'}, topology", "requests: {cpu: '1', nvidia.com/gpu: 1}, topology"
    )
    outcome = answer_of(sim_binary, contract(leader_gpu))["outcome"]
    assert outcome["group"]["flavors"] == {"leader": "a100", "workers": "a100"}
    assert outcome["later"]["admitted"] is True


def grouped(data: dict[str, Any]) -> bool:
    """Whether a scenario has pod set groups: when TAS fails for a group, Kueue names one of
    its pod sets in Go map order (rules §8), so those messages differ run to run."""
    pod_sets = [ps for w in data.get("workloads", []) for ps in w["podSets"]]
    return any("podSetGroupName" in (ps.get("topology") or {}) for ps in pod_sets)


@pytest.mark.sim
def test_version_2_answers_are_the_same_run_to_run(sim_binary: Path) -> None:
    # Lockstep cycles and the fake clock make a batch's answers identical across runs
    # (fuzz worlds: several flavors, cohorts, priorities, preemption, admitted workloads).
    worlds = [generate_v2(5, i) for i in range(60)]
    batch = [
        scenario_to_dict(scenario_from_data(data, f"case-{i}"))
        for i, data in enumerate(worlds)
        if not grouped(data)
    ]
    assert len(batch) >= 30
    first, second = run_sim(batch, sim_binary), run_sim(batch, sim_binary)
    assert [a["error"] for a in first] == [None] * len(batch)
    assert first == second
