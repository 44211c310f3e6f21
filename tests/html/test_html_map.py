"""The rack-and-GPU map (harness/html): who holds which cells, one map per flavor, what a
node's marks say, where sources disagree, the largest free slot per level, big maps
collapsed to racks. Pure functions on scenarios loaded by the real loader."""

from __future__ import annotations

import re
from fractions import Fraction

import yaml

from harness.fit import fit
from harness.html import outcomes_page
from harness.html.fragmentation import largest_free
from harness.html.palette import Palette
from harness.html.results import scenario_result
from harness.html.section import scenario_section
from harness.html.sources import disagreement, expected_source, fit_source
from harness.html.svgmap import COLLAPSE_AT, render_map
from harness.html.world import MapView, cell_resource, map_views, occupancy, worlds
from harness.results.observation import Observation
from harness.results.outcome import Outcome
from harness.scenario.loader import scenario_from_data
from harness.scenario.model import Scenario

RACKS = """
name: two-racks
description: "GPUs <b>and</b> racks"
topology: {name: t, levels: [example.com/rack, kubernetes.io/hostname]}
nodes:
  - {name: gpu-1, labels: {example.com/rack: r1}, allocatable: {nvidia.com/gpu: 4, pods: 110}}
  - {name: gpu-2, labels: {example.com/rack: r1}, allocatable: {nvidia.com/gpu: 4, pods: 110}, ready: false}
  - {name: gpu-3, labels: {example.com/rack: r2}, allocatable: {nvidia.com/gpu: 4, pods: 110}, unschedulable: true}
  - name: gpu-4
    labels: {example.com/rack: r2}
    allocatable: {nvidia.com/gpu: 8, pods: 110}
    taints: [{key: maint, value: "yes", effect: NoSchedule}]
  - {name: gpu-5, labels: {example.com/rack: r10}, allocatable: {nvidia.com/gpu: 4, pods: 110}}
usage:
  - {name: daemon, node: gpu-1, requests: {nvidia.com/gpu: 1}, count: 2}
workloads:
  - name: train
    podSets:
      - {name: main, count: 2, requests: {nvidia.com/gpu: 1}, topology: {mode: required, level: kubernetes.io/hostname}}
  - name: huge
    podSets:
      - {name: main, count: 9, requests: {nvidia.com/gpu: 1}, topology: {mode: required, level: kubernetes.io/hostname}}
steps:
  - delete-usage: daemon
"""

TWO_FLAVORS = """
name: two-flavors
topologies:
  - {name: hosts, levels: [kubernetes.io/hostname]}
  - {name: racks, levels: [example.com/rack, kubernetes.io/hostname]}
resourceFlavors:
  - {name: h100, nodeLabels: {example.com/gpu: h100}, topologyName: racks}
  - {name: a100, nodeLabels: {example.com/gpu: a100}, topologyName: hosts}
clusterQueues:
  - name: team
    resourceGroups:
      - coveredResources: [nvidia.com/gpu]
        flavors:
          - {name: h100, resources: [{name: nvidia.com/gpu, nominalQuota: 16}]}
          - {name: a100, resources: [{name: nvidia.com/gpu, nominalQuota: 16}]}
nodes:
  - {name: h100-1, labels: {example.com/gpu: h100, example.com/rack: r1}, allocatable: {nvidia.com/gpu: 8, pods: 110}}
  - {name: a100-1, labels: {example.com/gpu: a100}, allocatable: {nvidia.com/gpu: 8, pods: 110}}
workloads:
  - name: train
    podSets: [{name: main, count: 4, requests: {nvidia.com/gpu: 1}}]
"""

RACK_LEAF = """
name: rack-leaf
topology: {name: t, levels: [example.com/block, example.com/rack]}
nodes:
  - {name: gpu-1, labels: {example.com/block: b1, example.com/rack: r1}, allocatable: {nvidia.com/gpu: 8, pods: 110}}
  - {name: gpu-2, labels: {example.com/block: b1, example.com/rack: r1}, allocatable: {nvidia.com/gpu: 8, pods: 110}}
usage:
  - {node: gpu-1, requests: {nvidia.com/gpu: 6}}
workloads:
  - name: train
    podSets: [{name: main, count: 5, requests: {nvidia.com/gpu: 1}, topology: {mode: required, level: example.com/rack}}]
"""


def load(text: str) -> Scenario:
    return scenario_from_data(yaml.safe_load(text))


def first_map(scenario: Scenario, outcomes: dict[str, Outcome], step: int = 0) -> MapView:
    world = worlds(scenario)[step]
    resource = cell_resource(scenario)
    return map_views(scenario, world, occupancy(scenario, world, outcomes, resource), resource)[0]


def test_cells_hold_foreign_usage_then_the_admitted_workload() -> None:
    scenario = load(RACKS)
    outcomes = fit(scenario).outcomes
    view = first_map(scenario, outcomes)
    node1 = next(n for n in view.nodes if n.name == "gpu-1")
    assert [(r.owner, r.amount, r.foreign) for r in node1.runs] == [
        ("daemon", Fraction(2), True),
        ("train", Fraction(2), False),
    ]
    assert node1.free == 0
    assert view.resource == "nvidia.com/gpu"


def test_steps_change_the_world_drawn_after_them() -> None:
    scenario = load(RACKS)
    before, after = worlds(scenario)
    assert [u.name for u in before.usage] == ["daemon"]
    assert after.usage == ()


def test_node_marks_unready_cordoned_and_taints_the_flavor_refuses() -> None:
    view = first_map(load(RACKS), {})
    marks = {n.name: (n.unready, n.cordoned, n.taints) for n in view.nodes}
    assert marks["gpu-2"] == (True, False, ())
    assert marks["gpu-3"] == (False, True, ())
    assert marks["gpu-4"] == (False, False, ("maint=yes:NoSchedule",))
    svg = render_map(view, Palette(), "k")
    assert "not ready" in svg and "cordoned" in svg and "tainted" in svg


def test_map_draws_racks_in_natural_order_with_one_cell_per_gpu() -> None:
    scenario = load(RACKS)
    view = first_map(scenario, fit(scenario).outcomes)
    svg = render_map(view, Palette(["train"]), "k")
    racks = re.findall(r'<text class="h"[^>]*>(?:<title>[^<]*</title>)?([^<]+)</text>', svg)
    assert racks == ["r1", "r2", "r10"]
    assert all(f">gpu-{i}</text>" in svg for i in range(1, 6))
    # cells: 12 px a GPU (8 GPUs the widest node), one 1 px border every cell
    assert 'stroke-dasharray="1 11"' in svg
    assert 'fill="url(#kth-hatch)"' in svg  # the daemon's 2 GPUs
    assert f'fill="{Palette(["train"]).colour("train")}"' in svg


def test_one_map_per_flavor_over_its_nodes_and_topology() -> None:
    scenario = load(TWO_FLAVORS)
    outcomes = fit(scenario).outcomes
    world = worlds(scenario)[0]
    views = map_views(
        scenario, world, occupancy(scenario, world, outcomes, "nvidia.com/gpu"), "nvidia.com/gpu"
    )
    assert [(v.flavor, v.levels, [n.name for n in v.nodes]) for v in views] == [
        ("h100", ("example.com/rack",), ["h100-1"]),
        ("a100", (), ["a100-1"]),
    ]
    assert [r.owner for r in views[0].nodes[0].runs] == ["train"]


def test_pods_on_a_rack_leaf_are_drawn_on_its_nodes_marked_as_such() -> None:
    scenario = load(RACK_LEAF)
    outcomes = fit(scenario).outcomes
    assert outcomes["train"].placement == {"main": {"r1": 5}}
    view = first_map(scenario, outcomes)
    runs = {
        n.name: [(r.owner, r.pods, r.in_domain) for r in n.runs if not r.foreign]
        for n in view.nodes
    }
    assert runs == {"gpu-1": [("train", 2, True)], "gpu-2": [("train", 3, True)]}
    assert 'class="dom"' in render_map(view, Palette(), "k")


def test_largest_free_slot_per_level_counts_usable_nodes_only() -> None:
    view = first_map(load(RACKS), {})
    slots = [(s.level, s.largest, s.domain) for s in largest_free(view)]
    # gpu-2 unready, gpu-3 cordoned, gpu-4 tainted: r2 has nothing usable
    assert slots == [("example.com/rack", Fraction(4), "r10"), ("node", Fraction(4), "gpu-5")]
    assert largest_free(view)[0].with_free == 2


def test_sources_disagree_on_the_nodes_where_pods_differ() -> None:
    scenario = load(RACKS)
    predicted = fit(scenario)
    wrong = {**predicted.outcomes, "train": Outcome(True, {"main": {"gpu-5": 2}})}
    fit_says = fit_source(predicted)
    other = fit_source(type(predicted)(wrong, predicted.steps), label="Kueue")
    found = disagreement([fit_says, other], 0)
    assert found.domains == {"gpu-1", "gpu-5"}
    assert found.workloads == {"train"}
    assert disagreement([fit_says, fit_says], 0).domains == frozenset()


def test_expect_without_placement_is_not_compared() -> None:
    scenario = load(
        RACKS.replace("steps:\n  - delete-usage: daemon\n", "")
        + "expect:\n  train: {admitted: true}\n"
    )
    expected = expected_source(scenario)
    assert expected is not None
    assert disagreement([expected, fit_source(fit(scenario))], 0).domains == frozenset()


def test_a_failed_scenario_shows_every_source_side_by_side_and_the_pending_message() -> None:
    scenario = load(RACKS + "expect:\n  train: {admitted: true, placement: {main: {gpu-5: 2}}}\n")
    result = scenario_result(scenario, fit(scenario), status="failed", text="train differs")
    html = scenario_section(result, "s0")
    assert html.count("<h4>") == 2 * 1 + 1  # expected + fit after submission; fit after step 1
    assert ">expected</h4>" in html and ">fit model</h4>" in html
    assert 'class="d"' in html  # the differing nodes are outlined
    assert "<b>huge</b>: pending: couldn&#x27;t assign flavors to pod set main" in html
    assert "after step 1: delete-usage daemon" in html
    assert "GPUs &lt;b&gt;and&lt;/b&gt; racks" in html  # text is escaped


def test_a_passing_scenario_shows_one_map_per_state() -> None:
    scenario = load(RACKS)
    html = scenario_section(scenario_result(scenario, fit(scenario), status="passed"), "s0")
    assert html.count("<h4>") == 2
    assert 'class="d"' not in html
    assert '<details class="sc passed" id="s0">' in html


def test_a_big_map_collapses_to_rack_tiles_whose_nodes_wait_in_templates() -> None:
    nodes = "\n".join(
        f"  - {{name: n{i:04d}, labels: {{example.com/rack: r{i // 10}}}, allocatable: {{nvidia.com/gpu: 8, pods: 110}}}}"
        for i in range(COLLAPSE_AT + 10)
    )
    text = f"""
name: big
topology: {{name: t, levels: [example.com/rack, kubernetes.io/hostname]}}
nodes:
{nodes}
usage:
  - {{node: n0001, requests: {{nvidia.com/gpu: 3}}}}
workloads: []
"""
    view = first_map(load(text), {})
    html = render_map(view, Palette(), "big")
    svg, _, rest = html.partition("</svg>")
    assert "n0001" not in svg  # only tiles in the map itself
    assert svg.count('class="tile"') == 11
    templates = re.findall(r'<template id="(big-r\d+)">(.*?)</template>', rest)
    assert len(templates) == 11 and ">n0001</text>" in templates[0][1]
    assert 'data-panel="big-panel"' in svg and 'id="big-panel"' in rest
    # the histogram of r0: 9 nodes with 8 free, one with 5
    assert "r0: nodes by free nvidia.com/gpu: 5 free: 1, 8 free: 9" in svg


def test_without_gpus_cells_are_cpus_and_a_fraction_takes_part_of_one() -> None:
    scenario = load(
        """
name: cpus
topology: {name: t, levels: [kubernetes.io/hostname]}
nodes:
  - {name: cpu-1, labels: {}, allocatable: {cpu: "4", pods: 110}}
usage:
  - {node: cpu-1, requests: {cpu: 500m}}
workloads: []
"""
    )
    assert cell_resource(scenario) == "cpu"
    view = first_map(scenario, {})
    assert view.nodes[0].runs[0].amount == Fraction(1, 2)
    assert 'width="6" height="11" fill="url(#kth-hatch)"' in render_map(view, Palette(), "k")


def test_a_backend_column_shows_kueues_message_and_the_fit_models_verdict() -> None:
    scenario = load(RACKS)
    predicted = fit(scenario)
    seen = dict(predicted.outcomes)
    seen["huge"] = Outcome(
        admitted=False, message="Workload no longer fits after processing another workload"
    )
    observed = Observation(seen, list(predicted.steps))
    html = scenario_section(
        scenario_result(scenario, predicted, observed, backend="sim", status="passed"), "s0"
    )
    assert ">Kueue (sim)</h4>" in html and ">fit model</h4>" not in html  # they agree on nodes
    assert "no longer fits after processing another workload<br>" in html
    verdict = html.split("fit model: ", 1)[1].split("<", 1)[0]
    assert "topology &quot;t&quot; allows to fit only 4 out of 9 pod(s)" in verdict


def test_any_backends_outcomes_draw_on_the_scenarios_cluster() -> None:
    """outcomes_page: what `harness simulate --format html` calls with a snapshot."""
    scenario = load(RACKS)
    seen = {"train": Outcome(True, {"main": {"gpu-5": 2}}), "huge": Outcome(False, message="no")}
    page = outcomes_page(scenario, seen, label="sim")
    assert page.startswith("<!DOCTYPE html>") and ">Kueue (sim)</h4>" in page
    assert "train: 2 pod(s), 2 nvidia.com/gpu" in page and "<b>huge</b>: pending: no" in page
