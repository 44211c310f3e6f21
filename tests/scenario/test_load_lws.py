"""`leaderWorkerSet:` workloads: one Workload per group, pod sets as Kueue names them."""

from __future__ import annotations

from typing import Any

import pytest

from harness.errors import ScenarioError
from harness.scenario.loader import scenario_from_data
from harness.scenario.model import LeaderWorkerSetGroup

HOST = "kubernetes.io/hostname"


def _data(workload: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "lws",
        "topology": {"name": "t", "levels": ["example.com/rack", HOST]},
        "nodes": [
            {"name": "n1", "labels": {"example.com/rack": "r1"}, "allocatable": {"cpu": 8}},
        ],
        "workloads": [workload, {"name": "after", "podSets": [_ps("main", 1)]}],
    }


def _ps(name: str, count: int) -> dict[str, Any]:
    return {"name": name, "count": count, "requests": {"cpu": 1}}


def test_groups_become_workloads_in_index_order_before_the_next_entry() -> None:
    s = scenario_from_data(
        _data(
            {
                "name": "serve",
                "leaderWorkerSet": {"replicas": 3},
                "podSets": [_ps("leader", 1), _ps("worker", 3)],
            }
        ),
        "f.yaml",
    )
    assert [w.name for w in s.workloads] == ["serve-0", "serve-1", "serve-2", "after"]
    assert [w.lws for w in s.workloads[:3]] == [
        LeaderWorkerSetGroup("serve", i, 3) for i in range(3)
    ]
    assert s.workloads[3].lws is None
    assert [(p.name, p.count) for p in s.workloads[1].pod_sets] == [("leader", 1), ("worker", 3)]


def test_replicas_default_to_one_and_main_alone_is_workers_only() -> None:
    s = scenario_from_data(
        _data({"name": "w", "leaderWorkerSet": {}, "podSets": [_ps("main", 4)]}), "f.yaml"
    )
    assert [w.name for w in s.workloads] == ["w-0", "after"]


def test_zero_replicas_make_no_workload_as_in_kueue() -> None:
    s = scenario_from_data(
        _data({"name": "w", "leaderWorkerSet": {"replicas": 0}, "podSets": [_ps("main", 4)]}),
        "f.yaml",
    )
    assert [w.name for w in s.workloads] == ["after"]


@pytest.mark.parametrize(
    ("workload", "error"),
    [
        (
            {"name": "x", "leaderWorkerSet": {"replicas": 2}, "podSets": [_ps("workers", 2)]},
            "f.yaml: workloads[0].podSets: a LeaderWorkerSet's pod sets are [leader, worker]",
        ),
        (
            {
                "name": "x",
                "leaderWorkerSet": {},
                "podSets": [_ps("leader", 2), _ps("worker", 2)],
            },
            "f.yaml: workloads[0].podSets[0].count: a LeaderWorkerSet group has exactly one leader",
        ),
        (
            {"name": "x", "leaderWorkerSet": {"replicas": -1}, "podSets": [_ps("main", 1)]},
            "f.yaml: workloads[0].leaderWorkerSet.replicas:",
        ),
        (
            {"name": "x", "leaderWorkerSet": {"size": 2}, "podSets": [_ps("main", 1)]},
            "f.yaml: workloads[0].leaderWorkerSet",
        ),
        (
            {"name": "x" * 62, "leaderWorkerSet": {"replicas": 2}, "podSets": [_ps("main", 1)]},
            "f.yaml: workloads[0].name: at most 61 characters",
        ),
    ],
)
def test_refusals_name_the_key(workload: dict[str, Any], error: str) -> None:
    with pytest.raises(ScenarioError) as raised:
        scenario_from_data(_data(workload), "f.yaml")
    assert str(raised.value).startswith(error)
    assert "\n" not in str(raised.value)
