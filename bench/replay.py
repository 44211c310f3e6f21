"""How long the fit model takes to replay a stream (docs/replay.md), printed as numbers.

    python bench/replay.py                     # all three
    python bench/replay.py --only day          # one: kueue-tas, kueue-tas-1050, day
    python bench/replay.py --sim --only kueue-tas-1050   # also on kueue-sim
    python bench/replay.py --json DIR          # each replay's JSON too (bench/replay_digest.py)

CPU seconds are the process's (time.process_time: user + system) for the fit model, and the
kueue-sim child's added (resource.getrusage RUSAGE_CHILDREN, read once it has exited) for
the sim: the machine is shared, so wall time says little.

- kueue-tas: Kueue's own configs/tas/generator.yaml as written (v0.19.2: 640 nodes,
  5 cohorts x 6 ClusterQueues x 500 workloads = 15,000).
- kueue-tas-1050: the same with 2 cohorts x 3 ClusterQueues x 175 workloads (the size
  issue 30 quotes for configs/tas), the workload sets scaled to 175 per ClusterQueue.
- day: 10,000 jobs on 1,000 8-GPU nodes (10 blocks x 10 racks x 10 hosts), 4 ClusterQueues
  in a cohort, jobs of 1-64 GPUs for 10-60 min (about half the GPUs busy on average),
  required/preferred rack or host, arriving at random over a simulated day.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness import toolchain
from harness.replay.engine import Timeline, replay
from harness.replay.result import timeline_result
from harness.replay.stream import load_stream
from harness.replay.summary import summary
from harness.scenario.loader import scenario_from_data
from harness.scenario.model import Scenario

LEVELS = ("bench.io/block", "bench.io/rack", "kubernetes.io/hostname")
QUEUES = ("team-a", "team-b", "team-c", "team-d")
SIZES = ((1, 1), (2, 1), (4, 1), (8, 1), (8, 2), (8, 4), (8, 8))  # (GPUs a pod, pods)


def kueue_tas(scale_1050: bool = False) -> tuple[Scenario, dict[str, str]]:
    path = toolchain.kueue_module_dir() / "test/performance/scheduler/configs/tas/generator.yaml"
    if not scale_1050:
        stream = load_stream(path)
        return stream.scenario, stream.classes
    text = path.read_text()
    for old, new in (("count: 5\n", "count: 2\n"), ("count: 6\n", "count: 3\n"),
                     ("count: 120\n", "count: 42\n"), ("count: 110\n", "count: 39\n"),
                     ("count: 34\n", "count: 12\n"), ("count: 33\n", "count: 12\n"),
                     ("count: 17\n", "count: 6\n"), ("count: 16\n", "count: 5\n")):  # fmt: skip
        text = text.replace(old, new)
    scaled = Path("/tmp") / "kth-bench-replay" / "tas-1050" / "generator.yaml"
    scaled.parent.mkdir(parents=True, exist_ok=True)
    scaled.write_text(text)
    stream = load_stream(scaled)
    return stream.scenario, stream.classes


def day(jobs: int = 10_000, seed: int = 1) -> Scenario:
    rng = random.Random(seed)
    gpu = {"nvidia.com/gpu": 8, "cpu": "96", "pods": 110}
    nodes = [{"name": f"n{i:04d}", "allocatable": gpu,
              "labels": {LEVELS[0]: f"b{i // 100}", LEVELS[1]: f"r{i // 10}",
                         "bench.io/gpu": "h100"}}
             for i in range(1000)]  # fmt: skip
    resources = [{"name": "nvidia.com/gpu", "nominalQuota": 2000}]
    queues = [{"name": q, "cohortName": "all", "preemption": {"withinClusterQueue":
               "LowerPriority", "reclaimWithinCohort": "Any"}, "resourceGroups": [
               {"coveredResources": ["nvidia.com/gpu"], "flavors": [{"name": "h100",
               "resources": resources}]}]} for q in QUEUES]  # fmt: skip
    workloads: list[dict[str, Any]] = []
    at = 0.0
    for j in range(jobs):
        at += rng.expovariate(jobs / 86_400)
        per_pod, pods = rng.choice(SIZES)
        mode = rng.choice(("required", "preferred"))
        level = LEVELS[2] if per_pod * pods <= 8 else LEVELS[1]
        workloads.append({
            "name": f"job-{j:05d}", "queue": rng.choice(QUEUES),
            "priorityClass": rng.choice(("low", "high")) if j % 5 == 0 else "low",
            "submitAt": round(at), "runFor": rng.randint(600, 3600),
            "podSets": [{"name": "main", "count": pods,
                         "requests": {"nvidia.com/gpu": per_pod},
                         "topology": {"mode": mode, "level": level}}],
        })  # fmt: skip
    data = {
        "name": "bench-day",
        "topologies": [{"name": "t", "levels": list(LEVELS)}],
        "resourceFlavors": [
            {"name": "h100", "nodeLabels": {"bench.io/gpu": "h100"}, "topologyName": "t"}
        ],
        "workloadPriorityClasses": [{"name": "low", "value": 10}, {"name": "high", "value": 100}],
        "clusterQueues": queues,
        "nodes": nodes,
        "workloads": workloads,
    }
    return scenario_from_data(data, "bench-day")


def measure(
    name: str,
    scenario: Scenario,
    classes: dict[str, str] | None = None,
    out: Path | None = None,
    engine: str = "fit",
) -> None:
    start, cpu, children = time.perf_counter(), time.process_time(), _children_cpu()
    timeline = replay(scenario) if engine == "fit" else _on_sim(scenario)
    took = time.perf_counter() - start
    cpu = time.process_time() - cpu + _children_cpu() - children
    s = summary(scenario, timeline, classes)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        payload = timeline_result(scenario, timeline, classes)
        text = json.dumps(payload, indent=1, sort_keys=True, default=str)
        (out / f"anchor-{name}{'' if engine == 'fit' else '-' + engine}.json").write_text(text)
    print(
        f"{name} ({engine}): {len(scenario.workloads)} jobs on {len(scenario.nodes)} nodes "
        f"replayed in {took:.1f} s wall, {cpu:.1f} s CPU ({len(timeline.moments)} moments, "
        f"{s['preemptions']} preemptions, "
        f"{len(s['neverAdmitted'])} never admitted, p90 wait {s['timeToAdmission'].get('p90')})",
        flush=True,
    )
    for c, figures in s["timeToAdmissionByClass"].items():
        print(f"  {c}: mean wait {figures.get('mean')} s, p90 {figures.get('p90')} s")
    perf = s["kueuePerf"]  # Kueue's perf-test summary (harness/replay/perf_summary.py)
    for c, figures in perf["workloadClasses"].items():
        print(f"  {c}: Kueue's averageTimeToAdmissionMs {figures['averageTimeToAdmissionMs']}")
    for c, figures in perf["clusterQueueClasses"].items():
        print(f"  ClusterQueue class {c}: Kueue's usage {figures['usage']} %")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _on_sim(scenario: Scenario) -> Timeline:
    """The stream on kueue-sim (harness.replay.onsim), its process stopped before the
    clock is read so that its CPU time is counted."""
    from harness.backends.sim import SimBackend
    from harness.replay.onsim import replay_on

    backend = SimBackend()
    try:
        return replay_on(scenario, backend.session)
    finally:
        backend.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("kueue-tas", "kueue-tas-1050", "day"))
    parser.add_argument("--sim", action="store_true", help="also replay on kueue-sim")
    parser.add_argument("--json", type=Path, help="write each replay's JSON into this folder")
    args = parser.parse_args()
    engines = ("fit", "sim") if args.sim else ("fit",)
    for name in ("kueue-tas-1050", "day", "kueue-tas"):
        if args.only not in (None, name):
            continue
        if name == "day":
            scenario, classes = day(), None
        else:
            scenario, classes = kueue_tas(scale_1050=name == "kueue-tas-1050")
        for engine in engines:
            measure(name, scenario, classes, args.json, engine)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
