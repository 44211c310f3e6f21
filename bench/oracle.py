"""Benchmark of the fit model: one 256-pod workload on 1,000, 5,000 and 10,000 nodes, and a
suite.

Prints numbers; asserts nothing. Run with `make bench` or `python bench/oracle.py`.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from big import LEVELS, big_scenario
from world_v2 import preemption_world

from harness.backends.sim import SimBackend
from harness.errors import HarnessError
from harness.fit import fit
from harness.scenario.loader import load_scenario, scenario_from_data


def timed(func, repeat: int) -> list[float]:  # type: ignore[no-untyped-def]
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        out.append(time.perf_counter() - start)
    return out


def main() -> None:
    print("fit model (oracle) benchmark")
    for nodes in (1_000, 5_000, 10_000):  # linear in nodes: ~5x and ~10x the first
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
    v2_preemption()
    root = Path(__file__).resolve().parent.parent / "suites"
    scenarios = []
    for f in sorted(root.rglob("*.yaml")):
        scenario = load_scenario(f)
        try:
            fit(scenario)
        except HarnessError:
            continue  # a scenario the fit model does not model yet (suites/faults)
        scenarios.append(scenario)
        if len(scenarios) == 60:
            break
    runs = timed(lambda: [fit(s) for s in scenarios], 5)
    print(
        f"  suite of {len(scenarios)} scenarios: median {statistics.median(runs) * 1000:.1f} ms "
        f"({statistics.median(runs) / max(1, len(scenarios)) * 1000:.2f} ms per scenario)"
    )


def v2_preemption() -> None:
    """Issue 11's case: 3 flavors x 1,000 nodes, 200 admitted workloads in 4 ClusterQueues of
    one cohort, a 256-pod preemptor; the fit model's time next to the sim's (goal: fit <=
    100 ms). An engine that cannot run it yet says why instead of a number."""
    scenario = scenario_from_data(preemption_world(), "bench/world_v2.py")
    label = "  v2: 3 flavors x 1,000 nodes, 200 admitted, 256-pod preemptor"
    try:
        runs = timed(lambda: fit(scenario), 5)
        outcome = fit(scenario).outcomes
        victims = sum(1 for o in outcome.values() if o.preempted)
        print(
            f"{label}, fit model: median {statistics.median(runs) * 1000:.1f} ms "
            f"(min {min(runs) * 1000:.1f}); train admitted={outcome['train'].admitted}, "
            f"{victims} preempted"
        )
    except HarnessError as err:
        print(f"{label}, fit model: not run: {str(err).splitlines()[0]}")
    sim = SimBackend()
    try:
        sim.run(scenario)  # the first run starts the process: not timed
        runs = timed(lambda: sim.run(scenario), 3)
        print(f"{label}, sim: median {statistics.median(runs) * 1000:.1f} ms")
    except HarnessError as err:
        print(f"{label}, sim: not run: {str(err).splitlines()[0]}")
    finally:
        sim.close()


if __name__ == "__main__":
    main()
