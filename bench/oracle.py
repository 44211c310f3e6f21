"""Benchmark of the fit model: one 256-pod workload on 1,000 and 10,000 nodes, and a suite.

Prints numbers; asserts nothing. Run with `make bench` or `python bench/oracle.py`.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from big import LEVELS, big_scenario

from harness.fit import fit
from harness.loader import load_scenario


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
