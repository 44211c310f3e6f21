"""Grouped pod sets (a leader and its workers, `podSetGroupName`) on Kueue before v0.19.1
(harness/fit/versions.py: leader_aware_best_fit, leader_penalty_from_leader_domains,
grouped_pod_set_borrows_flavor). Each test fails with its rule's flag set as v0.19.2's
(checked by hand: `dataclasses.replace(RULES[v], flag=True)` in place of RULES[v])."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from harness.fit import fit
from harness.scenario.loader import load_scenario
from harness.scenario.model import Scenario

SUITES = Path(__file__).resolve().parents[2] / "suites"
KEEPS_CAPACITY = SUITES / "kueue-cases" / "group-leader-keeps-worker-capacity.yaml"
SPARE_CPU = SUITES / "groups" / "groups-leader-uses-spare-cpu.yaml"
MIXED_SIZES = SUITES / "kueue-cases" / "group-skips-rack-mixed-sizes.yaml"
EMPTY_MEMBER = SUITES / "fuzz-regressions" / "fuzz-empty-requests-group-never-fits.yaml"


def on(path: Path, version: str) -> Scenario:
    return dataclasses.replace(load_scenario(path), kueue=version, expect=None)


def test_before_v0_19_1_the_walk_down_ignores_where_the_leader_costs_no_worker() -> None:
    """Kueue's CHANGELOG example (kueue#13766): a 1-CPU leader and four 2-CPU workers on
    2-, 4- and 3-CPU hosts of one rack. Rack r1 counts 4 workers with the leader (h3's
    leader penalty is 0), but v0.18.2's walk down takes h2 first (the most workers), puts the
    leader there (1 worker left), then h1 and h3: 3 of 4, updateCountsToMinimumGeneric
    returns nothing (tas_flavor_snapshot.go:1524) and the admission holds no domain."""
    for version in ("v0.17.1", "v0.18.2"):
        outcome = fit(on(KEEPS_CAPACITY, version)).outcomes["wl"]
        assert not outcome.admitted and outcome.message == "", version
    placed = fit(on(KEEPS_CAPACITY, "v0.19.2")).outcomes["wl"]
    assert placed.admitted and placed.placement["leader"] == {"h3": 1}


def test_before_v0_19_1_ties_between_worker_hosts_keep_the_leader_on_the_first() -> None:
    """gpu-1 and gpu-2 (4 workers each) sort before gpu-3 (3 workers, where the leader costs
    none): v0.18.2 puts the leader on gpu-1 and places 10 of 11 workers."""
    assert not fit(on(SPARE_CPU, "v0.18.2")).outcomes["lws"].admitted
    assert fit(on(SPARE_CPU, "v0.19.2")).outcomes["lws"].placement["leader"] == {"gpu-3": 1}


def test_v0_17_1_counts_the_leader_penalty_of_every_child() -> None:
    """v0.17.1 fillInCountsHelper (tas_flavor_snapshot.go:1680) takes the smallest leader
    penalty over all children: rack `small` counts 5 workers with the leader (small-used
    cannot hold it, penalty 0), so best fit picks it over `large` (7), where the leader on
    small-free leaves no worker room. v0.18 (kueue#10948) counts leader-capable children
    only: `small` counts 0 and the group goes to large-free."""
    assert not fit(on(MIXED_SIZES, "v0.17.1")).outcomes["wl"].admitted
    placed = fit(on(MIXED_SIZES, "v0.18.2")).outcomes["wl"]
    assert placed.placement == {"leader": {"large-free": 1}, "workers": {"large-free": 2}}


def test_before_v0_19_1_a_group_member_requesting_nothing_gets_no_flavor() -> None:
    """kueue#13859: before v0.19.1 the group's flavors are filtered by the member's own
    requests (v0.18.2 flavorassigner.go:714): none, so "no TAS flavor assigned" (v0.18.2,
    NoFit) or the member is left without a placement (v0.17.1, the workload goes on)."""
    blocked = fit(on(EMPTY_MEMBER, "v0.18.2")).outcomes["group-empty-worker"]
    assert blocked.message == "failed to assign flavors to pod set workers: no TAS flavor assigned"
    leader_only = fit(on(EMPTY_MEMBER, "v0.17.1")).outcomes["group-empty-worker"]
    assert leader_only.admitted and leader_only.placement == {"leader": {"n1": 1}}
    borrowed = fit(on(EMPTY_MEMBER, "v0.19.2")).outcomes["group-empty-worker"]
    assert borrowed.message == "Workload no longer fits after processing another workload"


V2_EMPTY_LEADER = """\
name: v2-group-empty-leader
kueue: v0.19.2
topologies:
  - {name: t, levels: [example.com/rack, kubernetes.io/hostname]}
resourceFlavors:
  - {name: gpu, nodeLabels: {example.com/gpu: x}, topologyName: t}
clusterQueues:
  - name: cq
    resourceGroups:
      - coveredResources: [nvidia.com/gpu, cpu]
        flavors:
          - name: gpu
            resources: [{name: nvidia.com/gpu, nominalQuota: 8}, {name: cpu, nominalQuota: 64}]
nodes:
  - {name: n1, labels: {example.com/gpu: x, example.com/rack: r1}, allocatable: {cpu: "64", nvidia.com/gpu: 8, pods: 110}}
workloads:
  - name: group
    podSets:
      - {name: leader, count: 1, requests: {}, topology: {mode: required, level: example.com/rack, podSetGroupName: lws}}
      - {name: workers, count: 2, requests: {nvidia.com/gpu: 1}, topology: {mode: required, level: example.com/rack, podSetGroupName: lws}}
"""


def test_before_v0_19_1_a_member_requesting_nothing_has_no_flavor_in_the_v2_world(
    tmp_path: Path,
) -> None:
    """The same rule in a version-2 scenario (fit/flavors.py assign_flavors)."""
    path = tmp_path / "v2-group-empty-leader.yaml"
    path.write_text(V2_EMPTY_LEADER)
    blocked = fit(on(path, "v0.18.2")).outcomes["group"]
    assert blocked.message == "failed to assign flavors to pod set leader: no TAS flavor assigned"
    workers_only = fit(on(path, "v0.17.1")).outcomes["group"]
    assert workers_only.admitted and workers_only.placement == {"workers": {"n1": 2}}
    assert "no TAS flavor assigned" not in (
        fit(on(path, "v0.19.2")).outcomes["group"].message or ""
    )


PREEMPTION = Path(__file__).resolve().parents[1] / "data" / "v2-group-preemption-before-v0191.yaml"


def test_the_preemption_check_places_the_group_with_the_versions_rules() -> None:
    """`harness fuzz --world v2 --seed 3` case 1547, shrunk: wl-2's group fits only if the
    leader's host is h100-n3. With old-0 removed, v0.18.2's best fit picks h100-n0 (fewer
    workers, no leader room) and the required host level fails, so the preemption search
    (workloadFits -> FindTopologyAssignmentsForWorkload) finds no candidates and nothing is
    preempted; v0.19.2 skips h100-n0 (kueue#13766), preempts old-0 and admits wl-2."""
    older = fit(on(PREEMPTION, "v0.18.2")).outcomes
    assert older["old-0"].admitted and not older["wl-2"].admitted
    assert "insufficient unused quota" in (older["wl-2"].message or "")
    newer = fit(on(PREEMPTION, "v0.19.2")).outcomes
    assert newer["old-0"].preempted and newer["wl-2"].admitted
