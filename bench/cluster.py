"""Benchmark of the embedded cluster: builds, start-up, per-scenario time, memory.

Prints numbers; asserts nothing. `python bench/cluster.py [--sample N] [--all] [--big]`:
  cold build seconds per component (recorded by the toolchain when it built the cache),
  warm cluster-ready seconds, seconds per guide scenario, median/p90 over a sample of the
  suites (or all of them), one 1,000-node GPU scenario (--big), and the control plane's peak RSS.
`python bench/cluster.py --workers 0,2,3 [--paths suites/guide ...]` instead runs
  `pytest PATHS --cluster=local -n N` once per N (0: serial) and prints each run's wall time
  (cluster starts included) and the per-scenario median/p90 from the runner's timings.jsonl.
`python bench/cluster.py --full-runs 5 [--big-first] [--workers 2]` runs the whole suite that
  many times in a row, as `make e2e` does (the flake check of issue 17); with --big-first the
  first run starts with the 1,000- and 2,048-node scenarios of bench/big.py, written as
  suite files without `expect`, so the fit model's answer is what Kueue must do.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402
from big import big_document, big_scenario  # noqa: E402  (bench/ is on sys.path)

from harness import progress  # noqa: E402
from harness.cli import leftovers  # noqa: E402
from harness.providers.local.cluster import LocalCluster  # noqa: E402
from harness.runner.backend import ClusterBackend  # noqa: E402
from harness.scenario.loader import load_scenario  # noqa: E402
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


XDIST_PATHS = [f"suites/{name}" for name in ("guide", "required", "preferred", "unconstrained")]


def xdist_run(
    paths: list[str], workers: int, artifacts: Path, label: str = "", in_order: bool = False
) -> bool:
    """One `pytest PATHS --cluster=local -n WORKERS` (no report files), timed from the outside;
    per-scenario seconds from every worker's timings.jsonl (one run-<id> dir per backend)
    and the count of cluster starts."""
    # Run dirs kept (KTH_KEEP_RUN; etcd data still goes) to count cluster starts, restarts
    # for other gates included; all under `artifacts`, which the caller removes.
    clusters = artifacts / "clusters"
    env = {**os.environ, "KTH_ARTIFACTS": str(artifacts), "KTH_RUN_ROOT": str(clusters)}
    env["KTH_KEEP_RUN"] = "1"
    command = [sys.executable, "-m", "pytest", *paths, "--cluster=local", f"-n{workers}"]
    command += ["-q", "-p", "no:cacheprovider", "--kth-report="]
    if in_order and workers:  # units of work in collection order, not largest group first
        command.append("--no-loadscope-reorder")
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    last = (done.stdout.strip().splitlines() or ["(no output)"])[-1].strip("= ")
    runs = sorted(artifacts.glob("run-*/timings.jsonl"))
    times = [json.loads(line)["total"] for run in runs for line in run.read_text().splitlines()]
    label = label or ("serial" if workers == 0 else f"-n {workers}")
    starts = len(list(clusters.glob("kth-local-*")))
    # Run dirs stay on purpose here (KTH_KEEP_RUN); processes and etcd data must not.
    left = leftovers.find(run_root=clusters)
    etcd = [p for p in left.paths if "kth-etcd-" in p]
    print(f"{label}: wall {wall:.1f} s, {starts} cluster start(s); pytest: {last}", flush=True)
    print(f"  left behind: {len(left.processes)} process(es), {len(etcd)} etcd data dir(s)")
    report(f"  {label} per scenario", times)
    if done.returncode != 0:
        failed = [line for line in done.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))]
        print("\n".join(f"  {line}" for line in failed[:20]), flush=True)
    return done.returncode == 0


def full_runs(runs: int, workers: int, big_first: bool) -> None:
    """The whole suite `runs` times in a row on fresh clusters; the first run, with
    `big_first`, starts with the 1,000-node (idle) and 2,048-node (half busy) scenarios:
    xdist then hands out units of work in collection order (the default group, where these
    two are collected first, before the feature-gate groups) instead of largest first."""
    green = 0
    with tempfile.TemporaryDirectory(prefix="kth-bench-big-") as big_dir:
        big_files = []
        if big_first:
            for nodes, busy in ((1000, False), (2048, True)):
                path = Path(big_dir) / f"bench-{nodes}-nodes.yaml"
                path.write_text(yaml.safe_dump(big_document(nodes, busy=busy), sort_keys=False))
                big_files.append(str(path))
        for run in range(1, runs + 1):
            paths = [*(big_files if run == 1 else []), "suites"]
            first = ", big scenarios first" if len(paths) > 1 else ""
            label = f"full run {run}/{runs} (-n {workers}{first})"
            with tempfile.TemporaryDirectory(prefix="kth-bench-") as artifacts:
                green += xdist_run(paths, workers, Path(artifacts), label, in_order=run == 1)
    print(f"full runs with zero failures: {green} of {runs}")


def main() -> None:
    progress.show_on_stderr()  # cluster starts and scenarios report as they go
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sample", type=int, default=30, help="suite scenarios to time (0: none)")
    parser.add_argument("--all", action="store_true", help="time every suite scenario")
    parser.add_argument("--big", action="store_true", help="also the 1,000-node scenario")
    parser.add_argument(
        "--workers",
        default=None,
        help="comma-separated pytest-xdist worker counts (0: serial) to compare on --paths, "
        "instead of the measurements above",
    )
    parser.add_argument("--paths", nargs="+", default=XDIST_PATHS, help="what --workers runs")
    parser.add_argument(
        "--full-runs", type=int, default=0, help="run every suite this many times in a row"
    )
    parser.add_argument(
        "--big-first",
        action="store_true",
        help="with --full-runs: the first run starts with the 1,000- and 2,048-node scenarios",
    )
    args = parser.parse_args()
    if args.full_runs:
        workers = int(args.workers.split(",")[0]) if args.workers is not None else 2
        full_runs(args.full_runs, workers, args.big_first)
        return
    if args.workers is not None:
        for count in [int(n) for n in args.workers.split(",")]:
            with tempfile.TemporaryDirectory(prefix="kth-bench-") as artifacts:
                xdist_run(args.paths, count, Path(artifacts))
        return
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
