"""The benchmarks' large GPU scenario: one 256-pod workload on N nodes of 8 GPUs.

Shared by bench/oracle.py (the fit model) and bench/cluster.py (the embedded cluster), so
"the 1,000-node scenario" is the same shape in both numbers.
"""

from __future__ import annotations

from fractions import Fraction

from harness import shorthand
from harness.scenario import (
    HOSTNAME,
    Flavor,
    Node,
    PodSet,
    Queue,
    Scenario,
    Topology,
    TopologyRequest,
    Usage,
    Workload,
)

LEVELS = ("bench.io/zone", "bench.io/block", "bench.io/rack", HOSTNAME)


def big_scenario(
    nodes: int, mode: str = "required", level: str | None = LEVELS[1], busy: bool = True
) -> Scenario:
    """4 levels (1,000 nodes a zone, 100 a block, 10 a rack); with `busy`, every other
    node has half its GPUs taken by a foreign pod."""
    node_list, usage = [], []
    for i in range(nodes):
        name = f"node-{i:05d}"
        labels = {
            LEVELS[0]: f"z{i // 1000}",
            LEVELS[1]: f"b{i // 100}",
            LEVELS[2]: f"r{i // 10}",
            HOSTNAME: name,
        }
        alloc = {"nvidia.com/gpu": Fraction(8), "cpu": Fraction(64), "pods": Fraction(110)}
        node_list.append(Node(name=name, labels=labels, allocatable=alloc))
        if busy and i % 2:
            usage.append(Usage(node=name, requests={"nvidia.com/gpu": Fraction(4)}))
    pod_set = PodSet(
        name="main",
        count=256,
        requests={"nvidia.com/gpu": Fraction(1)},
        topology=TopologyRequest(mode=mode, level=level),
    )
    return shorthand.scenario(
        name=f"bench-{nodes}-nodes",
        topology=Topology("bench", LEVELS),
        flavor=Flavor("bench"),
        queue=Queue(),
        nodes=tuple(node_list),
        usage=tuple(usage),
        workloads=(Workload(name="train", pod_sets=(pod_set,)),),
    )
