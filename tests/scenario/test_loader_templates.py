"""Templates for nodes: YAML merge keys, top-level `x-` scratch keys and `nodeGroups` give the
same scenario as the nodes written out one by one; collisions and typos are one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.errors import ScenarioError
from harness.scenario.loader import load_scenario
from harness.scenario.shorthand import ALL_NODES_LABEL
from harness.sim.contract import scenario_to_dict

SUITE = Path(__file__).parents[2] / "suites" / "templates" / "templates-rack-groups.yaml"

WRITTEN_OUT = """
name: x
topology: {name: t, levels: [example.com/rack, kubernetes.io/hostname]}
nodes:
  - {name: a1, labels: {example.com/rack: r1}, allocatable: {nvidia.com/gpu: 4, pods: 110}}
  - {name: a2, labels: {example.com/rack: r1}, allocatable: {nvidia.com/gpu: 8, pods: 110},
     taints: [{key: x.io/t, effect: NoSchedule}]}
workloads:
  - {name: w, podSets: [{name: main, count: 1, requests: {nvidia.com/gpu: 1}}]}
"""

MERGED = """
name: x
x-host: &host
  labels: {example.com/rack: r1}
  allocatable: {nvidia.com/gpu: 4, pods: 110}
x-tainted: &tainted
  allocatable: {nvidia.com/gpu: 8, pods: 110}
  taints: [{key: x.io/t, effect: NoSchedule}]
topology: {name: t, levels: [example.com/rack, kubernetes.io/hostname]}
nodes:
  - {<<: *host, name: a1}
  - {<<: [*tainted, *host], name: a2}
workloads:
  - {name: w, podSets: [{name: main, count: 1, requests: {nvidia.com/gpu: 1}}]}
"""


def load(tmp_path: Path, text: str) -> Any:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return load_scenario(path)


def refusal(tmp_path: Path, text: str) -> str:
    with pytest.raises(ScenarioError) as raised:
        load(tmp_path, text)
    assert "\n" not in str(raised.value)
    return str(raised.value)


def test_merge_keys_and_scratch_keys_give_the_written_out_nodes(tmp_path: Path) -> None:
    """In `<<: [*tainted, *host]` the earlier mapping wins (a2 gets 8 GPUs), as YAML says."""
    assert load(tmp_path, MERGED).nodes == load(tmp_path, WRITTEN_OUT).nodes


def test_a_key_written_beside_a_merge_overrides_the_merged_one(tmp_path: Path) -> None:
    text = MERGED.replace("{<<: *host, name: a1}", "{<<: *host, name: a1, labels: {}}")
    # The shorthand's flavor has no nodeLabels: it selects ALL_NODES_LABEL, on every node.
    assert load(tmp_path, text).nodes[0].labels == {
        "kubernetes.io/hostname": "a1",
        **ALL_NODES_LABEL,
    }


@pytest.mark.parametrize(
    ("before", "after", "problem"),
    [
        ("{<<: *host, name: a1}", "{<<: *host, name: a1, name: a3}", "duplicate key 'name'"),
        ("{<<: *host, name: a1}", "{<<: *host, <<: *tainted, name: a1}", "duplicate key '<<'"),
        ("{<<: *host, name: a1}", "{<<: 3, name: a1}", "expected a mapping or list of mappings"),
        ("{<<: *host, name: a1}", "{<<: *nowhere, name: a1}", "found undefined alias"),
    ],
)
def test_merge_mistakes_are_one_line(tmp_path: Path, before: str, after: str, problem: str) -> None:
    assert problem in refusal(tmp_path, MERGED.replace(before, after))


def test_x_keys_are_scratch_only_at_the_top(tmp_path: Path) -> None:
    text = MERGED.replace("{<<: *host, name: a1}", "{<<: *host, name: a1, x-note: hi}")
    assert "nodes[0]: unknown key 'x-note'" in refusal(tmp_path, text)


GROUPS = """
name: x
topology: {name: t, levels: [example.com/block, example.com/rack, kubernetes.io/hostname]}
nodes:
  - {name: login, labels: {example.com/block: b0, example.com/rack: r0}, allocatable: {pods: 10}}
nodeGroups:
  - name: "b{block}-r{rack}-h{host}"
    count: {block: 2, rack: 2, host: 3}
    labels: {example.com/block: "b{block}", example.com/rack: "b{block}-r{rack}", x.io/n: "n{index}"}
    allocatable: {nvidia.com/gpu: 8, pods: 110}
  - {name: "spare-{index}", count: 2, allocatable: {pods: 110}, unschedulable: true}
workloads:
  - {name: w, podSets: [{name: main, count: 1, requests: {nvidia.com/gpu: 1}}]}
"""


def test_node_groups_make_every_combination_in_order(tmp_path: Path) -> None:
    nodes = load(tmp_path, GROUPS).nodes
    names = [n.name for n in nodes]
    assert names[:5] == ["login", "b1-r1-h1", "b1-r1-h2", "b1-r1-h3", "b1-r2-h1"]
    assert names[-3:] == ["b2-r2-h3", "spare-1", "spare-2"] and len(names) == 15
    b2r1h3 = nodes[names.index("b2-r1-h3")]
    assert b2r1h3.labels == {
        "example.com/block": "b2",
        "example.com/rack": "b2-r1",
        "x.io/n": "n9",
        "kubernetes.io/hostname": "b2-r1-h3",
        **ALL_NODES_LABEL,  # the shorthand flavor has no nodeLabels: it selects this one
    }
    assert nodes[-1].unschedulable and not nodes[1].unschedulable


def test_the_sim_is_sent_plain_nodes(tmp_path: Path) -> None:
    sent = scenario_to_dict(load(tmp_path, GROUPS))
    assert "nodeGroups" not in sent and len(sent["nodes"]) == 15


@pytest.mark.parametrize(
    ("before", "after", "problem"),
    [
        (
            '"spare-{index}"',
            "b1-r1-h1",
            "nodeGroups[1].name: makes 'b1-r1-h1', which nodeGroups[0]",
        ),
        ('"spare-{index}"', "login", "nodeGroups[1].name: makes 'login', which nodes[0] already"),
        ('"spare-{index}"', "spare", "nodeGroups[1].name: makes 'spare' twice (put {index}"),
        ('"spare-{index}"', '"spare-{rack}"', "unknown placeholder '{rack}' in 'spare-{rack}'"),
        ('"spare-{index}"', '"Spare-{index}"', "nodeGroups[1].name: 'Spare-1' is not a valid node"),
        ('"b{block}-r{rack}"', '"b{block}/r{rack}"', "'b1/r1' is not a valid label value"),
        ("count: 2,", "count: 70000,", "nodeGroups[1].count: must be at most 65000, got 70000"),
        ("host: 3}", "host: 30000}", "nodeGroups[0].count: makes 120000 nodes; a group makes at"),
        ("host: 3}", "index: 3}", "'index' is not a counter name"),
        ("count: 2,", "", "nodeGroups[1]: missing required key 'count'"),
        ("count: 2,", "count: 2, replicas: 3,", "nodeGroups[1]: unknown key 'replicas'"),
    ],
)
def test_node_group_mistakes_are_one_line(
    tmp_path: Path, before: str, after: str, problem: str
) -> None:
    assert GROUPS.count(before) == 1
    assert problem in refusal(tmp_path, GROUPS.replace(before, after))


def test_node_groups_alone_are_enough(tmp_path: Path) -> None:
    start, end = GROUPS.index("nodes:\n"), GROUPS.index("nodeGroups:")
    assert len(load(tmp_path, GROUPS[:start] + GROUPS[end:]).nodes) == 14
    text = GROUPS[:start] + GROUPS[GROUPS.index("workloads:") :]
    assert "missing required key 'nodes' (or 'nodeGroups')" in refusal(tmp_path, text)


def test_expect_may_name_generated_nodes(tmp_path: Path) -> None:
    expect = "expect:\n  w: {admitted: true, placement: {main: {b2-r2-h3: 1}}}\n"
    assert load(tmp_path, GROUPS + expect).expect is not None


def test_the_suite_example_uses_all_three() -> None:
    """suites/templates/ shows merge keys, x- keys and nodeGroups together (its expectations
    run under `pytest suites`)."""
    text = SUITE.read_text()
    assert "<<: *" in text and "\nx-" in text and "\nnodeGroups:" in text
    assert [n.name for n in load_scenario(SUITE).nodes][:3] == [
        "b2-r1-spare",
        "b1-r1-n1",
        "b1-r1-n2",
    ]
