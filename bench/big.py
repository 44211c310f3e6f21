"""The benchmarks' large GPU scenario: one 256-pod workload on N nodes of 8 GPUs.

Shared by bench/oracle.py (the fit model) and bench/cluster.py (the embedded cluster), so
"the 1,000-node scenario" is the same shape in both numbers. It is built as scenario-file
data, so `bench/cluster.py --full-runs` can also write it as a suite file for pytest.
"""

from __future__ import annotations

from typing import Any

from harness.scenario.loader import scenario_from_data
from harness.scenario.model import Scenario

LEVELS = ("bench.io/zone", "bench.io/block", "bench.io/rack", "kubernetes.io/hostname")


def big_document(
    nodes: int, mode: str = "required", level: str | None = LEVELS[1], busy: bool = True
) -> dict[str, Any]:
    """The scenario file's data: 4 levels (1,000 nodes a zone, 100 a block, 10 a rack);
    with `busy`, every other node has half its GPUs taken by a foreign pod. No `expect`:
    the fit model's answer is the expectation."""
    names = [f"node-{i:05d}" for i in range(nodes)]
    topology: dict[str, Any] = {"mode": mode} if level is None else {"mode": mode, "level": level}
    return {
        "name": f"bench-{nodes}-nodes",
        "description": f"bench/big.py: one 256-pod GPU workload, {mode}, on {nodes} nodes",
        "topology": {"name": "bench", "levels": list(LEVELS)},
        "flavor": {"name": "bench"},
        "nodes": [
            {
                "name": name,
                "labels": {
                    LEVELS[0]: f"z{i // 1000}",
                    LEVELS[1]: f"b{i // 100}",
                    LEVELS[2]: f"r{i // 10}",
                },
                "allocatable": {"nvidia.com/gpu": 8, "cpu": "64", "pods": 110},
            }
            for i, name in enumerate(names)
        ],
        "usage": [
            {"node": name, "requests": {"nvidia.com/gpu": 4}}
            for i, name in enumerate(names)
            if busy and i % 2
        ],
        "workloads": [
            {
                "name": "train",
                "podSets": [
                    {
                        "name": "main",
                        "count": 256,
                        "requests": {"nvidia.com/gpu": 1},
                        "topology": topology,
                    }
                ],
            }
        ],
    }


def big_scenario(
    nodes: int, mode: str = "required", level: str | None = LEVELS[1], busy: bool = True
) -> Scenario:
    """big_document loaded as a scenario file is."""
    return scenario_from_data(big_document(nodes, mode, level, busy), "bench/big.py")
