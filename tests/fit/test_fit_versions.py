"""The fit model per Kueue version (harness/fit/versions.py): each version's gate defaults as
its own kube_features.go sets them, the rules that changed without a gate (kueue#13772), and
the refusals where a version's behaviour is not modelled. Each rule's test fails with the
rule removed (the rule's flag set as v0.19.2's)."""

from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path

import pytest

from harness import toolchain
from harness.errors import Nondeterministic, UnsupportedVersionError
from harness.fit import fit
from harness.fit.versions import RULES, V0_19_2_GATES
from harness.scenario import ample_quota
from harness.scenario.loader import load_scenario
from harness.scenario.model import Scenario

SUITES = Path(__file__).resolve().parents[2] / "suites"
FREED = SUITES / "guide" / "guide-required-host-waits-for-freed-node.yaml"
TWINS = SUITES / "queueing" / "queueing-identical-pending-parked.yaml"
PREEMPTOR = SUITES / "v2" / "preemption" / "v2-fit-waiting-preemptor-reserves-a-host.yaml"
needs_go = pytest.mark.skipif(shutil.which("go") is None, reason="reads Kueue's Go modules")


def on(path: Path, version: str, **gates: bool) -> Scenario:
    scenario = dataclasses.replace(load_scenario(path), kueue=version)
    if gates:
        scenario = dataclasses.replace(scenario, feature_gates={**scenario.feature_gates, **gates})
    return scenario


def _defaults(version: str) -> dict[str, bool]:
    """Each gate's default in that version's kube_features.go: the last VersionedSpecs entry
    at or below the binary's minor version."""
    source = toolchain.kueue_module_dir(toolchain.pins_for(version))
    text = (source / "pkg" / "features" / "kube_features.go").read_text()
    table = text[text.index("var defaultVersionedFeatureGates") :]
    minor = tuple(int(x) for x in version.removeprefix("v").split(".")[:2])
    out = {}
    for gate, body in re.findall(r"\n\t(\w+): \{\n(.*?)\n\t\},", table, re.S):
        specs = re.findall(r'MustParse\("(\d+)\.(\d+)"\), Default: (true|false)', body)
        valid = [d for major, mnr, d in specs if (int(major), int(mnr)) <= minor]
        if valid:
            out[gate] = valid[-1] == "true"
    return out


@needs_go
@pytest.mark.parametrize("version", list(RULES))
def test_the_gate_defaults_are_the_versions_own(version: str) -> None:
    """A gate the version does not register counts as off (its behaviour is absent)."""
    defaults = _defaults(version)
    assert defaults["TopologyAwareScheduling"] is True  # the parser found the table
    no_gates = load_scenario(FREED)
    assert not no_gates.feature_gates
    for gate in V0_19_2_GATES:
        assert RULES[version].gate(no_gates, gate) == defaults.get(gate, False), gate


def test_non_tas_pod_deletion_requeues_only_from_v0_19_1() -> None:
    """kueue#13772, seen on the embedded cluster (kueue-version-differences.md §8)."""
    for version, admitted in (("v0.17.1", False), ("v0.18.2", False), ("v0.19.2", True)):
        after = fit(on(FREED, version)).steps[0]["train"]
        assert after.admitted is admitted, version
        if not admitted:
            assert "allows to fit only 2 out of 4" in after.message


def test_non_tas_pod_deletion_in_a_version_2_world() -> None:
    """A version-2 world (harness/fit/cycle.py change_nodes): no flush of the parked workloads."""
    v2 = on(TWINS, "v0.18.2")
    before = fit(dataclasses.replace(v2, kueue="v0.19.2")).steps[0]
    after = fit(v2).steps[0]
    assert before["twin-a"].admitted and not after["twin-a"].admitted


def test_equivalent_workloads_are_each_evaluated_on_v0_17_1() -> None:
    """SchedulingEquivalenceHashing is off by default in v0.17.1 (on from v0.18): the twin
    of an inadmissible workload is evaluated and gets its own message instead of waiting
    unevaluated beside it."""
    assert fit(on(TWINS, "v0.18.2")).outcomes["twin-b"].message == ""
    message = fit(on(TWINS, "v0.17.1")).outcomes["twin-b"].message
    assert "allows to fit only 1 out of 4" in message


def test_a_same_cycle_tas_conflict_is_skipped_on_v0_17_1() -> None:
    """TASRecomputeAssignmentWithinSchedulingCycle is not in v0.17.1: the second workload
    of a cycle whose nominated placement was taken is skipped, not assigned again."""
    recomputed = fit(on(PREEMPTOR, "v0.18.2")).outcomes["small"].message
    skipped = fit(on(PREEMPTOR, "v0.17.1")).outcomes["small"].message
    assert "doesn't allow to fit any of 2 pod(s)" in recomputed
    assert skipped == "Workload no longer fits after processing another workload"


@pytest.mark.parametrize(
    ("path", "version", "gates", "problem"),
    [
        (FREED, "v0.16.0", {}, "kueue: the fit model models Kueue v0.17.1, v0.18.2, v0.19.2, not v0.16.0"),
        (SUITES / "faults" / "faults-hotswap-delete-node-replaced-in-block.yaml", "v0.17.1", {"TASReplaceNodeDueToNotReadyOverFixedTime": True}, "kueue: v0.17.1: featureGates.TASReplaceNodeDueToNotReadyOverFixedTime: Kueue v0.17.1 does not register the gate"),
        (SUITES / "node-state" / "node-state-rack-named-like-node.yaml", "v0.18.2", {}, "node gpu-a1 is named like its top-level topology domain"),
    ],
)  # fmt: skip
def test_what_a_version_does_not_model_is_refused(
    path: Path, version: str, gates: dict[str, bool], problem: str
) -> None:
    with pytest.raises(UnsupportedVersionError) as err:
        fit(on(path, version, **gates))
    assert problem in str(err.value)
    assert str(err.value).startswith(f"{path}: ")


QUOTA_SHORT = SUITES / "quota" / "quota-cpu-limits-gpu-jobs.yaml"


def _second_asks(scenario: Scenario, gpus_per_pod: int) -> Scenario:
    """`second` asks for more GPUs than the queue's whole quota (32): NoFit on GPUs, while its
    CPUs are short of unused quota only."""
    first, second = scenario.workloads
    (main,) = second.pod_sets
    requests = {**main.requests, "nvidia.com/gpu": main.requests["nvidia.com/gpu"] * gpus_per_pod}
    wider = dataclasses.replace(second, pod_sets=(dataclasses.replace(main, requests=requests),))
    return dataclasses.replace(scenario, workloads=(first, wider), expect=None)


def test_before_v0_19_a_no_fit_resource_beside_another_short_one_is_map_order() -> None:
    """v0.18.2's flavor assigner breaks out of its loop over the requests map at the first
    NoFit resource, so the message names the CPU shortage or not at random: refused as
    nondeterministic. v0.19.2 names both; with only CPU short all three versions agree."""
    both_short = _second_asks(load_scenario(QUOTA_SHORT), gpus_per_pod=5)
    message = fit(both_short).outcomes["second"].message
    assert "insufficient quota for nvidia.com/gpu" in message
    assert "insufficient unused quota for cpu" in message
    for version in ("v0.17.1", "v0.18.2"):
        with pytest.raises(Nondeterministic, match="Go map order"):
            fit(dataclasses.replace(both_short, kueue=version))
    cpu_only = load_scenario(QUOTA_SHORT)
    messages = {fit(dataclasses.replace(cpu_only, kueue=v)).outcomes["second"].message
                for v in RULES}  # fmt: skip
    assert messages == {
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor "
        "gpu, 24 more needed"
    }


LEADER_WITHOUT_GPU = (
    SUITES / "kueue-findings" / "v2-group-leader-without-gpu-loses-flavor-scan.yaml"
)


@pytest.mark.parametrize("version", ["v0.17.1", "v0.18.2"])
def test_before_v0_19_a_groups_scan_starts_at_its_furthest_record(version: str) -> None:
    """The leader records only cpu; v0.19.2 looks the group up for nvidia.com/gpu first
    (SliceRequests order) and retries l4 for ever. Before v0.19 the requests map is walked in
    Go map order, so a cycle soon starts from the leader's cpu record: a100, as real Kueue
    v0.18.2 does. With the v0.19 rule on the older version the group stays on l4."""
    older = on(LEADER_WITHOUT_GPU, version)
    outcome = fit(older).outcomes["group"]
    assert outcome.admitted and outcome.flavors == {"leader": "a100", "workers": "a100"}
    assert fit(older).outcomes["later"].admitted
    as_v0_19 = dataclasses.replace(RULES[version], scan_start_in_request_order=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(RULES, version, as_v0_19)
        assert not fit(older).outcomes["group"].admitted
    assert not fit(on(LEADER_WITHOUT_GPU, "v0.19.2")).outcomes["group"].admitted


REFUSED = SUITES / "v2" / "fuzz-regressions" / "v2-fuzz-refused-admission-restarts-scan.yaml"


@pytest.mark.parametrize("version", ["v0.17.1", "v0.18.2"])
def test_a_refused_admission_restarts_the_flavor_scan(version: str) -> None:
    """The API server refuses the empty topology assignment; dropping the assumed workload
    moves the ClusterQueue's generation, so the next scan starts at a100 again: the same
    refusal every cycle and no status. Keeping the scan would reach l4 and write its
    "does not contain the requested level" message (fuzz v2 seed 7 case 1707)."""
    outcome = fit(on(REFUSED, version)).outcomes["wl-2"]
    assert not outcome.admitted
    assert outcome.message == ""


NO_PODS_ENTRY = SUITES / "capacity" / "capacity-node-without-pods-allocatable.yaml"


def _asking(scenario: Scenario, **requests: int) -> Scenario:
    (train,) = scenario.workloads
    (main,) = train.pod_sets
    wider = dataclasses.replace(main, requests={**main.requests, **requests})
    wl = dataclasses.replace(train, pod_sets=(wider,))
    # The shorthand's ClusterQueue covers what the workloads request, as the loader makes it.
    asking = dataclasses.replace(scenario, workloads=(wl,), expect=None)
    return ample_quota.covering(asking, wider.requests)


def test_before_v0_19_a_resource_without_capacity_entry_is_the_limiting_one() -> None:
    """gpu-1 has no `pods` entry and too few GPUs for a 9-GPU pod. v0.19.2 counts both 0 and
    names nvidia.com/gpu (the tie goes by name); v0.18.2 and v0.17.1 return at the missing
    entry, so they name pods. Two missing entries: which one is named is Go map order."""
    nine = _asking(load_scenario(NO_PODS_ENTRY), **{"nvidia.com/gpu": 9})
    tail = {v: fit(dataclasses.replace(nine, kueue=v)).outcomes["train"].message.split("; ")[-1]
            for v in RULES}  # fmt: skip
    assert tail["v0.19.2"] == 'excluded: resource "nvidia.com/gpu": 2'
    assert (
        tail["v0.18.2"]
        == tail["v0.17.1"]
        == ('excluded: resource "nvidia.com/gpu": 1, resource "pods": 1')
    )
    two_missing = _asking(load_scenario(NO_PODS_ENTRY), **{"example.com/fpga": 1})
    assert not fit(two_missing).outcomes["train"].admitted
    with pytest.raises(Nondeterministic, match=r"no capacity entry for example\.com/fpga, pods"):
        fit(dataclasses.replace(two_missing, kueue="v0.18.2"))


NOTHING_REQUESTED = """\
name: pod-set-requesting-nothing
topology: {name: t, levels: [kubernetes.io/hostname]}
nodes:
  - {name: n1, allocatable: {cpu: "4", nvidia.com/gpu: 4, pods: 110}}
workloads:
  - name: mixed
    podSets:
      - {name: launcher, count: 1, requests: {cpu: "1"}, topology: {mode: required, level: kubernetes.io/hostname}}
      - {name: workers, count: 2, requests: {}, topology: {mode: required, level: kubernetes.io/hostname}}
  - name: alone
    podSets:
      - {name: main, count: 1, requests: {}, topology: {mode: required, level: kubernetes.io/hostname}}
  - name: too-big
    podSets:
      - {name: launcher, count: 1, requests: {nvidia.com/gpu: 5}, topology: {mode: required, level: kubernetes.io/hostname}}
      - {name: workers, count: 1, requests: {}, topology: {mode: required, level: kubernetes.io/hostname}}
"""


def test_a_pod_set_requesting_nothing_blocks_admission_only_from_v0_18(tmp_path: Path) -> None:
    """A pod set requesting nothing gets no flavor, so no TAS request ("no TAS flavor
    assigned"). From v0.18 that makes the workload NoFit; v0.17.1 marked the pod set after
    the mode was cached, so the workload is admitted with only its other pod sets placed
    (fuzz seed 1 cases 133, 151, 201, 409, 434 and 1389 on v0.17.1's sim)."""
    scenario = _loaded(tmp_path, NOTHING_REQUESTED)
    for version in ("v0.18.2", "v0.19.2"):
        outcomes = fit(dataclasses.replace(scenario, kueue=version)).outcomes
        assert not outcomes["mixed"].admitted, version
        assert outcomes["mixed"].message == (
            "failed to assign flavors to pod set workers: no TAS flavor assigned"
        )
        assert outcomes["alone"].message == (
            "failed to assign flavors to pod set main: no TAS flavor assigned"
        )
    old = fit(dataclasses.replace(scenario, kueue="v0.17.1")).outcomes
    assert old["mixed"].admitted and old["mixed"].placement == {"launcher": {"n1": 1}}
    assert old["alone"].admitted and not old["alone"].placement
    # When the rest does not fit either, the pending message is the marked pod set's error:
    # Assignment.Message returns at the first pod set with an error.
    assert old["too-big"].message == (
        "failed to assign flavors to pod set workers: no TAS flavor assigned"
    )


SHARED_SLOTS = """\
name: pod-sets-share-a-nodes-pod-slots
topology: {name: t, levels: [kubernetes.io/hostname]}
nodes:
  - {name: n1, allocatable: {cpu: "8", nvidia.com/gpu: 8, pods: 2}}
workloads:
  - name: train
    podSets:
      - {name: launcher, count: 1, requests: {nvidia.com/gpu: 1}, topology: {mode: required, level: kubernetes.io/hostname}}
      - {name: workers, count: 2, requests: {nvidia.com/gpu: 1}, topology: {mode: required, level: kubernetes.io/hostname}}
"""

HELD_SLOTS = """\
name: pods-quota-admitted-pod-slots
topology: {name: t, levels: [kubernetes.io/hostname]}
nodes:
  - {name: n1, allocatable: {cpu: "8", nvidia.com/gpu: 8, pods: 4}}
queue:
  nominalQuota: {nvidia.com/gpu: 8, pods: 10}
workloads:
  - name: first
    podSets:
      - {name: main, count: 2, requests: {nvidia.com/gpu: 1}, topology: {mode: required, level: kubernetes.io/hostname}}
  - name: second
    podSets:
      - {name: main, count: 1, requests: {nvidia.com/gpu: 1}, topology: {mode: required, level: kubernetes.io/hostname}}
"""


def _loaded(tmp_path: Path, text: str) -> Scenario:
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    return load_scenario(path)


def test_before_v0_18_a_workloads_own_pod_sets_take_no_pod_slots_from_each_other(
    tmp_path: Path,
) -> None:
    """n1 has 2 pod slots. From v0.18 the launcher placed first takes one, so 2 workers do
    not fit; v0.17.1's assumed usage has no `pods` (addAssumedUsage), so all 3 pods are put
    on n1 (the sim on each version agrees)."""
    scenario = _loaded(tmp_path, SHARED_SLOTS)
    new = fit(dataclasses.replace(scenario, kueue="v0.18.2")).outcomes["train"]
    assert not new.admitted
    assert new.message.endswith('topology "t" allows to fit only 1 out of 2 pod(s)')
    old = fit(dataclasses.replace(scenario, kueue="v0.17.1")).outcomes["train"]
    assert old.admitted and old.placement == {"launcher": {"n1": 1}, "workers": {"n1": 2}}


def test_on_v0_17_1_an_admitted_pod_holds_two_slots_when_the_queue_covers_pods(
    tmp_path: Path,
) -> None:
    """n1 has 4 pod slots and `first` holds 2 pods on it. From v0.18 2 slots are left for
    `second`; v0.17.1 counts `pods` from the quota usage and once more in the TAS cache, so
    `first` holds all 4 (the sim on each version agrees)."""
    scenario = _loaded(tmp_path, HELD_SLOTS)
    new = fit(dataclasses.replace(scenario, kueue="v0.18.2")).outcomes["second"]
    assert new.admitted and new.placement == {"main": {"n1": 1}}
    old = fit(dataclasses.replace(scenario, kueue="v0.17.1")).outcomes["second"]
    assert not old.admitted
    assert old.message.endswith(
        'doesn\'t allow to fit any of 1 pod(s). Total nodes: 1; excluded: resource "pods": 1'
    )


# fuzz --world v2 seed 1 case 1173 (v0.17.1), shrunk: team-a has quota for one GPU but no
# `pods` quota; team-c's old-0 borrows the cohort's GPUs.
RECLAIM_WITHOUT_PODS_QUOTA = """\
name: reclaim-without-pods-quota
topologies:
- name: h100-topology
  levels: [example.com/rack, kubernetes.io/hostname]
resourceFlavors:
- name: h100
  nodeLabels: {example.com/gpu: h100}
  topologyName: h100-topology
clusterQueues:
- name: team-a
  resourceGroups:
  - coveredResources: &id001 [nvidia.com/gpu, cpu, memory, pods]
    flavors:
    - name: h100
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 1}
      - {name: cpu, nominalQuota: 1}
      - {name: memory, nominalQuota: 1Gi}
      - {name: pods, nominalQuota: 0}
  cohortName: research
  preemption: {reclaimWithinCohort: Any}
- name: team-c
  resourceGroups:
  - coveredResources: *id001
    flavors:
    - name: h100
      resources:
      - {name: nvidia.com/gpu, nominalQuota: 1}
      - {name: cpu, nominalQuota: 3}
      - {name: memory, nominalQuota: 1Gi}
      - {name: pods, nominalQuota: 5}
  cohortName: research
nodes:
- name: h100-n0
  labels: {example.com/rack: r1, example.com/gpu: h100}
  allocatable: {cpu: '4', nvidia.com/gpu: 4, pods: 4}
admitted:
- name: old-0
  queue: team-c
  podSets:
  - name: main
    count: 4
    requests: {nvidia.com/gpu: 1, cpu: '1'}
    flavor: h100
    placement: {h100-n0: 4}
workloads:
- name: wl-0
  podSets:
  - name: main
    count: 1
    requests: {nvidia.com/gpu: 1}
  queue: team-a
"""


@pytest.mark.parametrize("team_a_pods", [0, 1])
def test_on_v0_17_1_the_preemptor_asks_for_pods_too(tmp_path: Path, team_a_pods: int) -> None:
    """wl-0 reclaims team-a's GPU from old-0 on v0.18.2. v0.17.1's preemption request holds
    `pods` (flavorassigner.go adds them into TotalRequests), which team-a has no quota for:
    no hierarchical advantage, the no-borrowing attempt fails on `pods`, and old-0 is only a
    candidate for that attempt, so wl-0 waits. With one `pods` of quota both preempt (the
    sim on each version agrees)."""
    text = RECLAIM_WITHOUT_PODS_QUOTA.replace(
        "{name: pods, nominalQuota: 0}", f"{{name: pods, nominalQuota: {team_a_pods}}}"
    )
    scenario = _loaded(tmp_path, text)
    new = fit(dataclasses.replace(scenario, kueue="v0.18.2")).outcomes
    assert new["old-0"].preempted and new["wl-0"].admitted
    old = fit(dataclasses.replace(scenario, kueue="v0.17.1")).outcomes
    if team_a_pods:
        assert old["old-0"].preempted and old["wl-0"].admitted
    else:
        assert old["old-0"].admitted and not old["old-0"].preempted
        assert old["wl-0"].message.endswith(
            "insufficient unused quota for nvidia.com/gpu in flavor h100, 1 more needed"
        )
