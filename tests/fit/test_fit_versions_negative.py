"""v0.17.1 counts a negative number of pods on a node whose free capacity is negative
(KueueRules.count_clamped_at_zero False: pkg/resources/requests.go:196 divides as it is; v0.18
clamps to 0). Here the free `pods` go negative because v0.17.1's admitted TAS pods hold two pod
slots each where the ClusterQueue covers `pods` (KueueRules.tas_usage_from_pod_spec): n1 has
2 pods allocatable and `old`'s 2 pods on it hold 4, so a pod asking 1 pod slot counts -2 there,
which its rack sums with its sibling's count. Each rule test fails with the flag set as
v0.19.2's (the rack then counts n1 as 0). Outcomes checked against kueue-sim v0.17.1."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.errors import UnsupportedVersionError
from harness.fit import fit
from harness.results.outcome import Outcome
from harness.scenario.loader import load_scenario
from tests import rule_flags
from tests.rule_flags import AS_IT_IS, AS_V0_19_2

HEAD = """\
name: negative-free-pods
kueue: v0.17.1
topologies:
- name: t
  levels: [example.com/block, example.com/rack, kubernetes.io/hostname]
resourceFlavors:
- {name: f, nodeLabels: {example.com/pool: p}, topologyName: t}
clusterQueues:
- name: cq
  resourceGroups:
  - coveredResources: [cpu, pods]
    flavors:
    - name: f
      resources:
      - {name: cpu, nominalQuota: 100}
      - {name: pods, nominalQuota: 1000}
nodes:
- {name: n1, labels: {example.com/block: b1, example.com/rack: r1, example.com/pool: p},
   allocatable: {cpu: "32", pods: N1_PODS}}
- {name: n2, labels: {example.com/block: b1, example.com/rack: r1, example.com/pool: p},
   allocatable: {cpu: "32", pods: 4}}
- {name: n3, labels: {example.com/block: b1, example.com/rack: r2, example.com/pool: p},
   allocatable: {cpu: "32", pods: 2}}
admitted:
- name: old
  queue: cq
  podSets:
  - {name: main, count: 2, requests: {cpu: "1"}, flavor: f, placement: {n1: 2}}
workloads:
- name: w
  queue: cq
  podSets:
"""


@pytest.fixture(params=[AS_IT_IS, AS_V0_19_2])
def clamped(request: pytest.FixtureRequest) -> Iterator[bool]:
    yield from rule_flags.rule_removed(request, "v0.17.1", count_clamped_at_zero=True)


def predict(tmp_path: Path, pod_sets: str, n1_pods: int = 2, version: str = "v0.17.1") -> Outcome:
    path = tmp_path / "scenario.yaml"
    path.write_text(HEAD.replace("N1_PODS", str(n1_pods)) + pod_sets)
    scenario = dataclasses.replace(load_scenario(path), kueue=version)
    return fit(scenario).outcomes["w"]


def test_a_negative_node_shrinks_its_required_rack(tmp_path: Path, clamped: bool) -> None:
    """r1 counts -2 + 4 = 2 pods, r2 2: 3 pods fit in no rack, and n1 is no exclusion (its
    count is not 0). Clamped, r1 holds 4 and n2 takes them."""
    w = predict(
        tmp_path,
        '  - {name: main, count: 3, requests: {cpu: "1"},'
        " topology: {mode: required, level: example.com/rack}}\n",
    )
    if clamped:
        assert w.admitted and w.placement == {"main": {"n2": 3}}
        return
    assert not w.admitted
    assert w.message.endswith('topology "t" allows to fit only 2 out of 3 pod(s)')


def test_a_negative_node_shrinks_the_whole_topology(tmp_path: Path, clamped: bool) -> None:
    """Preferred: no rack holds 5, and block b1 counts -2 + 4 + 2 = 4."""
    w = predict(
        tmp_path,
        '  - {name: main, count: 5, requests: {cpu: "1"},'
        " topology: {mode: preferred, level: example.com/rack}}\n",
    )
    if clamped:
        assert w.admitted and w.placement == {"main": {"n2": 4, "n3": 1}}
        return
    assert not w.admitted
    assert w.message.endswith('topology "t" allows to fit only 4 out of 5 pod(s)')


def test_a_negative_node_shrinks_a_groups_rack(tmp_path: Path, clamped: bool) -> None:
    """A leader/worker group: r1 holds -2 + 4 = 2 workers, 1 with the leader on n2."""
    group = "topology: {mode: required, level: example.com/rack, podSetGroupName: lws}"
    w = predict(
        tmp_path,
        f'  - {{name: leader, count: 1, requests: {{cpu: "1"}}, {group}}}\n'
        f'  - {{name: workers, count: 3, requests: {{cpu: "1"}}, {group}}}\n',
    )
    if clamped:
        assert w.admitted and w.placement == {"leader": {"n2": 1}, "workers": {"n2": 3}}
        return
    assert not w.admitted
    assert w.message.endswith('topology "t" allows to fit only 2 out of 3 pod(s)')


def test_slices_of_a_negative_count_truncate_toward_zero(tmp_path: Path) -> None:
    """n1 (3 pods, 4 held) counts -1 pod: -1/2 is 0 slices in Go (Python's -1 // 2 would be
    -1 and leave r1 one slice short), so r1 holds n2's 2 slices."""
    w = predict(
        tmp_path,
        '  - {name: main, count: 4, requests: {cpu: "1"}, topology: {mode: required,'
        " level: example.com/rack, sliceLevel: kubernetes.io/hostname, sliceSize: 2}}\n",
        n1_pods=3,
    )
    assert w.admitted and w.placement == {"main": {"n2": 4}}


def test_a_negative_count_in_an_assignment_is_refused(tmp_path: Path) -> None:
    """Below a slice level the hosts sort by count ascending, so n1's -2 is taken first and
    Kueue writes it into the assignment (n1=-2, n2=4, n3=2 in kueue-sim), which a real API
    server rejects: the model refuses. v0.18.2 places n2=4."""
    pod_sets = (
        '  - {name: main, count: 4, requests: {cpu: "1"}, topology: {mode: required,'
        " level: example.com/block, sliceLevel: example.com/rack, sliceSize: 2}}\n"
    )
    with pytest.raises(UnsupportedVersionError, match="gets -2 pods on n1"):
        predict(tmp_path, pod_sets)
    w = predict(tmp_path, pod_sets, version="v0.18.2")
    assert w.admitted and w.placement == {"main": {"n2": 4}}
