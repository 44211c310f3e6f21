"""Benchmark of the embedded cluster: builds, start-up, per-scenario time, memory.

Prints numbers; asserts nothing. `python bench/cluster.py [--sample N] [--all] [--big]`:
  cold build seconds per component (recorded by the toolchain when it built the cache),
  warm cluster-ready seconds, seconds per guide scenario, median/p90 over a sample of the
  suites (or all of them), one 1,000-node GPU scenario (--big), and the control plane's peak RSS.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from big import big_scenario  # noqa: E402  (bench/ is on sys.path)

from harness import progress  # noqa: E402
from harness.loader import load_scenario  # noqa: E402
from harness.providers.local.cluster import LocalCluster  # noqa: E402
from harness.runner.backend import ClusterBackend  # noqa: E402
from harness.toolchain import cache  # noqa: E402


def cold_builds() -> None:
    print("build seconds per cached component (the build that produced it: cold, or a re-link)")
    for record in sorted(cache.cache_root().glob("*/build.json")):
        data = json.loads(record.read_text())
        name = record.parent.name
        print(f"  {name:<34} {data.get('seconds', '?'):>8}")


def warm_start(runs: int = 2) -> None:
    times = []
    for _ in range(runs):
        cluster = LocalCluster()
        started = time.perf_counter()
        cluster.start()
        times.append(time.perf_counter() - started)
        cluster.stop()
    print(f"warm cluster-ready seconds: {', '.join(f'{t:.1f}' for t in times)}")


def timed_runs(backend: ClusterBackend, files: list[Path]) -> list[float]:
    out = []
    for path in files:
        scenario = load_scenario(path)
        started = time.perf_counter()
        backend.run(scenario)
        out.append(time.perf_counter() - started)
    return out


def _gate_key(path: Path) -> tuple[bool, list[tuple[str, bool]]]:
    gates = load_scenario(path).feature_gates
    return bool(gates), sorted(gates.items())


def report(label: str, times: list[float]) -> None:
    if not times:
        return
    p90 = statistics.quantiles(times, n=10)[-1] if len(times) >= 2 else times[0]
    print(
        f"{label}: {len(times)} scenario(s), median {statistics.median(times):.2f} s, "
        f"p90 {p90:.2f} s, total {sum(times):.1f} s"
    )


def main() -> None:
    progress.show_on_stderr()  # cluster starts and scenarios report as they go
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sample", type=int, default=30, help="suite scenarios to time (0: none)")
    parser.add_argument("--all", action="store_true", help="time every suite scenario")
    parser.add_argument("--big", action="store_true", help="also the 1,000-node scenario")
    args = parser.parse_args()
    cold_builds()
    warm_start()
    backend = ClusterBackend(name="local")
    try:
        suite_start = time.perf_counter()
        guide = sorted((ROOT / "suites" / "guide").glob("*.yaml"))
        report("guide scenarios", timed_runs(backend, guide))
        files = sorted(p for p in (ROOT / "suites").rglob("*.yaml") if "guide" not in p.parts)
        if not args.all:
            step = max(1, len(files) // max(1, args.sample))
            files = files[::step][: args.sample]
        # As the pytest plugin does: scenarios needing the same Kueue gates run together.
        files.sort(key=_gate_key)
        if files:
            report("suite scenarios", timed_runs(backend, files))
        print(f"suite wall time including cluster start: {time.perf_counter() - suite_start:.1f} s")
        if args.big:
            started = time.perf_counter()
            backend.run(big_scenario(1000, busy=False))
            print(f"1,000-node GPU scenario settled in {time.perf_counter() - started:.1f} s")
        provider = backend.provider
        if isinstance(provider, LocalCluster):
            rss = provider.peak_rss_kib()
            total = sum(rss.values()) / 1024
            parts = ", ".join(f"{k} {v / 1024:.0f}" for k, v in sorted(rss.items()))
            print(f"control plane peak RSS: {total:.0f} MiB ({parts})")
    finally:
        backend.close()


if __name__ == "__main__":
    main()
