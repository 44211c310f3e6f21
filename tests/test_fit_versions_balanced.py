"""TASBalancedPlacement on Kueue v0.17.1 and v0.18.2 (harness/fit/versions.py balanced_*,
harness/fit/balanced.py, harness/fit/placement.py `_balanced`). Hand-worked cases, each
checked on each version's sim; each fails with the rule's flag set as v0.19.2's."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from harness.errors import Nondeterministic
from harness.fit import fit
from harness.loader import load_scenario
from harness.scenario import Scenario

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
