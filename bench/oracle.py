"""Benchmark of the fit model: one 256-pod workload on 1,000 and 10,000 nodes, and a suite.

Prints numbers; asserts nothing. Run with `make bench` or `python bench/oracle.py`.
"""

from __future__ import annotations

import statistics
import sys
import time
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.fit import fit
from harness.loader import load_scenario
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


def big_scenario(nodes: int, mode: str, level: str | None) -> Scenario:
    """4 levels, 8 GPUs a node, every other node half busy."""
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
        if i % 2:
            usage.append(Usage(node=name, requests={"nvidia.com/gpu": Fraction(4)}))
    pod_set = PodSet(
        name="main",
        count=256,
        requests={"nvidia.com/gpu": Fraction(1)},
        topology=TopologyRequest(mode=mode, level=level),
    )
    return Scenario(
        name="bench",
        topology=Topology("bench", LEVELS),
        flavor=Flavor("bench"),
        queue=Queue(),
        nodes=tuple(node_list),
        usage=tuple(usage),
        workloads=(Workload(name="train", pod_sets=(pod_set,)),),
    )


def timed(func, repeat: int) -> list[float]:  # type: ignore[no-untyped-def]
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        out.append(time.perf_counter() - start)
    return out


def main() -> None:
    print("fit model (oracle) benchmark")
    for nodes in (1_000, 10_000):
        for mode, level in (
            ("required", LEVELS[1]),
            ("preferred", LEVELS[2]),
            ("unconstrained", None),
        ):
            scenario = big_scenario(nodes, mode, level)
            runs = timed(lambda s=scenario: fit(s), 5 if nodes <= 1000 else 3)
            print(
                f"  256 pods, {nodes:>6} nodes, {mode:<13}: "
                f"median {statistics.median(runs) * 1000:8.1f} ms  (min {min(runs) * 1000:.1f})"
            )
    root = Path(__file__).resolve().parent.parent / "suites"
    files = sorted(root.rglob("*.yaml"))[:60]
    scenarios = [load_scenario(f) for f in files]
    runs = timed(lambda: [fit(s) for s in scenarios], 5)
    print(
        f"  suite of {len(scenarios)} scenarios: median {statistics.median(runs) * 1000:.1f} ms "
        f"({statistics.median(runs) / max(1, len(scenarios)) * 1000:.2f} ms per scenario)"
    )


if __name__ == "__main__":
    main()
