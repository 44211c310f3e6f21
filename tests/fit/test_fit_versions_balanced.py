"""TASBalancedPlacement on Kueue v0.17.1 and v0.18.2 (harness/fit/versions.py balanced_*,
harness/fit/balanced.py, harness/fit/placement.py `_balanced`). Hand-worked cases, each
checked on each version's sim; each fails with the rule's flag set as v0.19.2's."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness.errors import Nondeterministic
from harness.fit import fit
from harness.fit.versions import RULES
from harness.scenario.loader import load_scenario
from harness.scenario.model import Scenario

SUITES = Path(__file__).resolve().parents[2] / "suites"
LEADER_SPACE_ONCE = SUITES / "kueue-cases" / "balanced-group-leader-space-once.yaml"

# 13 one-GPU pods, preferred block. Block b1 has three 5-GPU racks, b2 one 9-GPU rack. The
# greedy pick over all racks takes b2/r1 (9) and one b1 rack (5): threshold min(13/2, 5) = 5.
# Pruning keeps everything, and b1 alone (15) holds 13 pods, so b1 is picked; its racks then
# need three domains, and 13 < 3 x 5: "Not enough slices to meet the threshold"
# (tas_balanced_placement.go v0.17.1:159-161). v0.18+ fall back to BestFit (5, 5, 3 in b1);
# v0.17.1 fails with that reason (tas_flavor_snapshot.go v0.17.1:880-883).
THRESHOLD_UNMET = """\
name: balanced-threshold-unmet
featureGates: {TASBalancedPlacement: true}
topology:
  name: t
  levels: [cloud.com/block, cloud.com/rack, kubernetes.io/hostname]
nodes:
  - {name: a1, labels: {cloud.com/block: b1, cloud.com/rack: r1}, allocatable: {example.com/gpu: 5, pods: 20}}
  - {name: a2, labels: {cloud.com/block: b1, cloud.com/rack: r2}, allocatable: {example.com/gpu: 5, pods: 20}}
  - {name: a3, labels: {cloud.com/block: b1, cloud.com/rack: r3}, allocatable: {example.com/gpu: 5, pods: 20}}
  - {name: c1, labels: {cloud.com/block: b2, cloud.com/rack: r1}, allocatable: {example.com/gpu: 9, pods: 20}}
workloads:
  - name: wl
    podSets:
      - {name: main, count: 13, requests: {example.com/gpu: 1}, topology: {mode: preferred, level: cloud.com/block}}
"""

# 3 one-GPU pods, preferred rack: r1 holds 1, r2 and r3 hold 2 each. Two racks are needed;
# threshold 1; among the pairs, {r1, r2} and {r1, r3} both hold exactly 3. The dynamic
# programme keeps the first it meets: v0.19 walks the racks by level values (r2 before r3);
# v0.17/v0.18 in Go map order, the entropy sort leaving r2 and r3 tied (kueue#12052). The
# sim on v0.17.1 and v0.18.2 answers n2 in some runs and n3 in others.
TIED_RACKS = """\
name: balanced-tied-racks
featureGates: {TASBalancedPlacement: true}
topology:
  name: t
  levels: [cloud.com/rack, kubernetes.io/hostname]
nodes:
  - {name: n1, labels: {cloud.com/rack: r1}, allocatable: {example.com/gpu: 1, pods: 20}}
  - {name: n2, labels: {cloud.com/rack: r2}, allocatable: {example.com/gpu: 2, pods: 20}}
  - {name: n3, labels: {cloud.com/rack: r3}, allocatable: {example.com/gpu: 2, pods: 20}}
workloads:
  - name: wl
    podSets:
      - {name: main, count: COUNT, requests: {example.com/gpu: 1}, topology: {mode: preferred, level: cloud.com/rack}}
"""

# One 1-GPU pod, preferred group that is also the slice level (size 1). The hostname leaves
# sit below the slice level, so their slice counts are 0 and pruning at threshold 1 empties
# the group: v0.18+ skip the candidate (no threshold, BestFit places the pod); v0.17.1 keeps
# it (tas_balanced_placement.go v0.17.1:266-272) and fails (fuzz seed 11 case 438, shrunk).
SLICE_LEVEL_PREFERRED = """\
name: balanced-slice-level-preferred
featureGates: {TASBalancedPlacement: true}
topology:
  name: t
  levels: [example.com/group, kubernetes.io/hostname]
nodes:
  - {name: n13, labels: {example.com/group: z2}, allocatable: {nvidia.com/gpu: 1, pods: 1}}
workloads:
  - name: wl-0
    podSets:
      - name: main
        count: 1
        requests: {nvidia.com/gpu: 1}
        topology: {mode: preferred, level: example.com/group, sliceLevel: example.com/group, sliceSize: 1}
"""


# A leader/worker group, preferred rack r1 with three hosts. The leader needs 3 GPUs and an
# example.com/x, which c lacks: a holds the leader and 7 workers (10 alone), b the leader
# and 1 worker (4 alone), c 3 workers. The greedy pick for 14 workers takes a (7 beside the
# leader), b (4), c (3): threshold min(14/3, 7, c's 3) = 3 on every version. v0.17.1 prunes
# each host whose workers beside a leader are below it (tas_balanced_placement.go
# v0.17.1:319-333): b goes, r1 (10 + 3) no longer holds 14, yet it stays the candidate
# (:264-273) and the placement fails. v0.18+ keep b for workers (v0.18.2 :361-370,
# kueue#10948): a 1 + 7, b 4, c 3. Each version's sim answers so.
PRUNE_LEADER_ROOM = """\
name: balanced-group-prune-leader-room
featureGates: {TASBalancedPlacement: true}
topology:
  name: t
  levels: [cloud.com/block, cloud.com/rack, kubernetes.io/hostname]
nodes:
  - {name: a, labels: {cloud.com/block: b1, cloud.com/rack: r1}, allocatable: {example.com/gpu: 10, example.com/x: 1, pods: 20}}
  - {name: b, labels: {cloud.com/block: b1, cloud.com/rack: r1}, allocatable: {example.com/gpu: 4, example.com/x: 1, pods: 20}}
  - {name: c, labels: {cloud.com/block: b1, cloud.com/rack: r1}, allocatable: {example.com/gpu: 3, pods: 20}}
workloads:
  - name: wl
    podSets:
      - {name: leader, count: 1, requests: {example.com/gpu: 3, example.com/x: 1}, topology: {mode: preferred, level: cloud.com/rack, podSetGroupName: g}}
      - {name: workers, count: 14, requests: {example.com/gpu: 1}, topology: {mode: preferred, level: cloud.com/rack, podSetGroupName: g}}
"""


def _as_v0_19_2(monkeypatch: pytest.MonkeyPatch, version: str, flag: str) -> None:
    """`version`'s rules with `flag` as v0.19.2 has it (the rule removed)."""
    new = getattr(RULES["v0.19.2"], flag)
    monkeypatch.setitem(RULES, version, dataclasses.replace(RULES[version], **{flag: new}))


def _load(tmp_path: Path, text: str, version: str) -> Scenario:
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    return dataclasses.replace(load_scenario(path), kueue=version)


def test_v0_17_fails_where_v0_18_falls_back_to_best_fit(tmp_path: Path) -> None:
    for version in ("v0.18.2", "v0.19.2"):
        outcome = fit(_load(tmp_path, THRESHOLD_UNMET, version)).outcomes["wl"]
        assert outcome.admitted, version
        assert outcome.placement == {"main": {"a1": 5, "a2": 5, "a3": 3}}, version
    old = fit(_load(tmp_path, THRESHOLD_UNMET, "v0.17.1")).outcomes["wl"]
    assert not old.admitted
    assert old.message == (
        "couldn't assign flavors to pod set main: "
        "TAS Balanced Placement: Not enough slices to meet the threshold"
    )


def test_v0_17_keeps_a_candidate_that_no_longer_fits_once_pruned(tmp_path: Path) -> None:
    for version in ("v0.18.2", "v0.19.2"):
        outcome = fit(_load(tmp_path, SLICE_LEVEL_PREFERRED, version)).outcomes["wl-0"]
        assert outcome.admitted and outcome.placement == {"main": {"n13": 1}}, version
    old = fit(_load(tmp_path, SLICE_LEVEL_PREFERRED, "v0.17.1")).outcomes["wl-0"]
    assert not old.admitted
    assert old.message == (
        "couldn't assign flavors to pod set main: "
        "TAS Balanced Placement: Cannot find optimal domain set to fit the request"
    )


@pytest.mark.parametrize("version", ["v0.17.1", "v0.18.2"])
def test_before_v0_19_a_tie_that_changes_the_placement_is_map_order(
    tmp_path: Path, version: str
) -> None:
    new = fit(_load(tmp_path, TIED_RACKS.replace("COUNT", "3"), "v0.19.2")).outcomes["wl"]
    assert new.placement == {"main": {"n1": 1, "n2": 2}}
    with pytest.raises(Nondeterministic) as err:
        fit(_load(tmp_path, TIED_RACKS.replace("COUNT", "3"), version))
    assert "main on n1=1, n2=2 or main on n1=1, n3=2" in str(err.value)
    # 4 pods take r2 and r3 in either order: the tie changes nothing, so no refusal.
    both = fit(_load(tmp_path, TIED_RACKS.replace("COUNT", "4"), version)).outcomes["wl"]
    assert both.placement == {"main": {"n2": 2, "n3": 2}}


GROUP_SPREAD = {"leader": {"a": 1}, "workers": {"a": 7, "b": 4, "c": 3}}


def test_v0_17_caps_a_groups_threshold_by_room_beside_a_leader(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """x1 (7 GPUs) and x2 (5) hold a leader and 10 workers. v0.17.1 caps the threshold by x2's
    room beside a leader (4; tas_balanced_placement.go v0.17.1:71-78), so x1, the leader's
    node, takes the 2 extra workers: 6 and 4. v0.18+ cap it by x2's workers (5; v0.18.2
    :72): 5 and 5. Removing the rule gives v0.17.1 the 5 and 5."""
    old = dataclasses.replace(load_scenario(LEADER_SPACE_ONCE), kueue="v0.17.1")
    assert fit(old).outcomes["wl"].placement == {"leader": {"x1": 1}, "workers": {"x1": 6, "x2": 4}}
    for version in ("v0.18.2", "v0.19.2"):
        new = dataclasses.replace(load_scenario(LEADER_SPACE_ONCE), kueue=version)
        outcome = fit(new).outcomes["wl"]
        assert outcome.placement == {"leader": {"x1": 1}, "workers": {"x1": 5, "x2": 5}}, version
    _as_v0_19_2(monkeypatch, "v0.17.1", "balanced_leader_threshold_by_workers")
    assert fit(old).outcomes["wl"].placement["workers"] == {"x1": 5, "x2": 5}


def test_v0_17_prunes_a_domain_without_room_beside_a_leader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for version in ("v0.18.2", "v0.19.2"):
        outcome = fit(_load(tmp_path, PRUNE_LEADER_ROOM, version)).outcomes["wl"]
        assert outcome.admitted and outcome.placement == GROUP_SPREAD, version
    old = fit(_load(tmp_path, PRUNE_LEADER_ROOM, "v0.17.1")).outcomes["wl"]
    assert not old.admitted
    # The sim names the leader's pod set, the model the workers': the harness compares
    # messages without the pod set (verdict.py _POD_SET_PREFIX).
    assert old.message.endswith(
        ": TAS Balanced Placement: Cannot find optimal domain set to fit the request"
    )
    _as_v0_19_2(monkeypatch, "v0.17.1", "balanced_leader_threshold_by_workers")
    removed = fit(_load(tmp_path, PRUNE_LEADER_ROOM, "v0.17.1")).outcomes["wl"]
    assert removed.admitted and removed.placement == GROUP_SPREAD
