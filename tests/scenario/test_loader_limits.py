"""What Kubernetes or Kueue would refuse is refused by the loader, in one short line that speaks
YAML; what they accept (right up to each limit) still loads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.errors import ScenarioError
from harness.scenario.keypath import yaml_text
from harness.scenario.loader import load_scenario, scenario_from_data

MALFORMED = Path(__file__).parents[1] / "data" / "malformed"


def base(**changes: Any) -> dict[str, Any]:
    """A valid scenario: one 4-GPU node (8 cpu, 10 pods) in rack r1, one 2-pod workload."""
    data: dict[str, Any] = {
        "name": "x",
        "topology": {"name": "t", "levels": ["example.com/rack", "kubernetes.io/hostname"]},
        "nodes": [
            {
                "name": "n1",
                "labels": {"example.com/rack": "r1"},
                "allocatable": {"nvidia.com/gpu": 4, "cpu": "8", "pods": 10},
            }
        ],
        "workloads": [
            {"name": "w", "podSets": [{"name": "main", "count": 2, "requests": {"cpu": "1"}}]}
        ],
    }
    data.update(changes)
    return data


def refusal(data: dict[str, Any]) -> str:
    with pytest.raises(ScenarioError) as raised:
        scenario_from_data(data, "f.yaml")
    return str(raised.value)


@pytest.mark.parametrize("name", ["deep-list", "deep-mapping"])
def test_deep_nesting_is_one_line_and_exit_2(name: str) -> None:
    """600 levels used to end in a 2,989-line RecursionError traceback."""
    done = subprocess.run(
        [sys.executable, "-m", "harness", "oracle", str(MALFORMED / f"{name}.yaml")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1, done.stderr[-500:]
    assert "nesting deeper than 100 levels" in done.stderr


def test_nesting_up_to_the_limit_still_parses(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    nested = "[" * 98 + "]" * 98  # 98 + the top-level mapping and its value: 100 levels
    path.write_text(yaml.safe_dump(base()) + f"x-deep: {nested}\n")
    assert load_scenario(path).name == "x"


def test_unknown_feature_gate_names_the_closest_in_a_short_line() -> None:
    message = refusal(base(featureGates={"TASBalancedPlacment": True}))
    assert "closest: TASBalancedPlacement" in message
    assert len(message) < 200, len(message)  # it listed all 90 gates: 2,783 characters
    assert "closest" not in refusal(base(featureGates={"Zzzzzz": True}))


@pytest.mark.parametrize(
    ("changes", "ending"),
    [
        ({"name": True}, "got true"),
        ({"name": None}, "got null"),
        ({"topology": {"name": False, "levels": ["kubernetes.io/hostname"]}}, "got false"),
        ({"kueue": float("inf")}, "got .inf"),
        ({"featureGates": {"TASBalancedPlacement": None}}, "got null"),
        ({"workloads": [{"name": "w", "podSets": [{"name": "m", "count": True}]}]}, "got true"),
    ],
)
def test_messages_speak_yaml_not_python(changes: dict[str, Any], ending: str) -> None:
    """Python would say True, None, False, inf; the user wrote YAML."""
    with_requests = base(**changes)
    for workload in with_requests["workloads"]:
        for pod_set in workload["podSets"]:
            pod_set.setdefault("requests", {})
    assert refusal(with_requests).endswith(ending)


def test_yaml_text_quotes_the_yaml_way() -> None:
    assert yaml_text("it's") == "'it''s'"  # Python's repr would say "it's"
    assert yaml_text(False) == "false" and yaml_text(None) == "null"
    assert yaml_text("tab\there") == '"tab\\there"'


def test_int32_counts_load_up_to_the_limit() -> None:
    big = {"name": "main", "count": 2**31 - 1, "requests": {"cpu": "1"}}
    assert scenario_from_data(base(workloads=[{"name": "w", "podSets": [big]}])).workloads
    big["count"] = 2**31
    assert "must be at most 2147483647, got 2147483648" in refusal(
        base(workloads=[{"name": "w", "podSets": [big]}])
    )


def test_whole_extended_resources_and_fractional_cpu_load() -> None:
    pod_set = {"name": "main", "count": 2, "requests": {"nvidia.com/gpu": "2000m", "cpu": "1500m"}}
    node = {"name": "n1", "allocatable": {"nvidia.com/gpu": 4, "cpu": "7.5", "pods": 10}}
    scenario = scenario_from_data(
        base(nodes=[node], workloads=[{"name": "w", "podSets": [pod_set]}])
    )
    assert scenario.workloads[0].pod_sets[0].requests["nvidia.com/gpu"] == 2


def test_usage_may_fill_a_node_exactly() -> None:
    usage = [
        {"node": "n1", "requests": {"nvidia.com/gpu": 2, "cpu": "4"}, "count": 2},
        {"node": "n1", "requests": {}, "count": 8},
    ]
    assert len(scenario_from_data(base(usage=usage)).usage) == 2


def test_steps_free_and_add_capacity_before_usage_is_checked() -> None:
    """delete-usage frees what it held and add-node brings new capacity, in step order."""
    steps = [
        {"delete-usage": "busy"},
        {"add-usage": {"node": "n1", "requests": {"nvidia.com/gpu": 4}}},
        {
            "add-node": {
                "name": "n2",
                "labels": {"example.com/rack": "r2"},
                "allocatable": {"pods": 1},
            }
        },
        {"add-usage": {"node": "n2", "requests": {}}},
    ]
    usage = [{"name": "busy", "node": "n1", "requests": {"nvidia.com/gpu": 3}}]
    assert len(scenario_from_data(base(usage=usage, steps=steps)).steps) == 4
    steps.insert(0, steps.pop(1))  # the same usage before the delete overcommits n1
    assert "steps[0].add-usage.requests.nvidia.com/gpu: the usage on node 'n1' adds up to 7" in (
        refusal(base(usage=usage, steps=steps))
    )


def test_usage_on_a_deleted_node_is_refused() -> None:
    steps = [{"delete-node": "n1"}, {"add-usage": {"node": "n1", "requests": {}}}]
    assert "steps[1].add-usage.node: node 'n1' was deleted by an earlier step" in refusal(
        base(steps=steps)
    )


def test_step_expect_may_name_a_node_a_step_added_but_the_top_expect_may_not() -> None:
    add = {"add-node": {"name": "n2", "allocatable": {"cpu": "8", "pods": 10}}}
    placed = {"w": {"admitted": True, "placement": {"main": {"n2": 2}}}}
    assert scenario_from_data(base(steps=[{**add, "expect": placed}])).steps
    assert "expect.w.placement.main.n2: no node named 'n2'" in refusal(
        base(steps=[add], expect=placed)
    )


def test_topology_of_16_levels_loads() -> None:
    levels = [f"a.io/l{i}" for i in range(15)] + ["kubernetes.io/hostname"]
    assert len(
        scenario_from_data(base(topology={"name": "t", "levels": levels})).topologies[0].levels
    )


def test_a_resource_map_read_before_is_still_checked_by_its_value_types() -> None:
    """The loader remembers resource maps it accepted (a snapshot repeats a few 25,000
    times); `true` compares equal to `1` and must not pass as it."""

    def with_gpus(value: object) -> dict[str, Any]:
        node = {**base()["nodes"][0], "allocatable": {"nvidia.com/gpu": value, "pods": 10}}
        return base(nodes=[node])

    assert scenario_from_data(with_gpus(1)).nodes[0].allocatable["nvidia.com/gpu"] == 1
    assert "nodes[0].allocatable.nvidia.com/gpu: " in refusal(with_gpus(True))
    first = scenario_from_data(with_gpus(1)).nodes[0].allocatable
    first["pods"] = 0  # a caller changing its copy changes nothing for the next load
    assert scenario_from_data(with_gpus(1)).nodes[0].allocatable["pods"] == 10


def test_fractional_and_whole_usage_add_up_exactly() -> None:
    """The ledger keeps whole amounts as int and the rest as fractions: 8 cpu is filled by
    7 + 3 x 333m + 1m exactly, and one more millicore is beyond allocatable (a warning)."""
    parts = ["7", "333m", "333m", "333m", "1m"]
    usage = [{"node": "n1", "requests": {"cpu": c}} for c in parts]
    exact = scenario_from_data(base(usage=usage))
    assert (len(exact.usage), exact.warnings) == (5, ())
    over = [*usage, {"node": "n1", "requests": {"cpu": "1m"}}]
    (warning,) = scenario_from_data(base(usage=over), "f.yaml").warnings
    assert warning.startswith(
        "f.yaml: usage[5].requests.cpu: the usage on node 'n1' adds up to 8001m cpu, more than"
        " its allocatable 8"
    )
