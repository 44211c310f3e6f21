"""Random streams replayed on the fit model and on kueue-sim: how many agree job for job.

    python bench/replay_vs_sim.py --seed 8 --cases 500

Worlds come from the version-2 fuzzer (harness/fuzz/world_v2.py: cohorts, priorities,
preemption, admitted workloads); each workload gets its own submission second (0-59: Kueue
orders same-second creations by UID) and a run time of 5-60 s plus a unique millisecond
(the sim settles after every step, the fit model once per moment: no two events share one).
Cases either engine calls Nondeterministic, or does not model, or cannot decide (any other
HarnessError, e.g. Kueue never came to rest) are counted apart as "not compared", never as
agreements (`--why` says why); `--repeat N` replays each stream N times on the sim and counts
a stream whose timelines differ as "sim flaky".

`--node-events` adds one or two node events to each stream (a node deleted, tainted
NoExecute and untainted, NotReady and Ready again, or cordoned and uncordoned, at a second
of the stream plus half a millisecond so no event shares a moment): Kueue's node-failure
handling during a stream (docs/replay.md, "Node faults in a stream").
"""

from __future__ import annotations

import argparse
import collections
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.backends.base import Unsupported
from harness.backends.sim import SimBackend
from harness.errors import HarnessError, Nondeterministic, UnsupportedVersionError
from harness.fuzz.world_v2 import generate_v2
from harness.replay.engine import Timeline, replay
from harness.replay.onsim import replay_on
from harness.replay.timed_steps import split_times, with_times
from harness.scenario.loader import scenario_from_data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--node-events", action="store_true", help="add node events")
    parser.add_argument("--only", type=int, nargs="*", help="these case indexes alone")
    parser.add_argument("--show", action="store_true", help="print each difference's lines")
    parser.add_argument("--why", action="store_true", help="print why each case is not compared")
    parser.add_argument(
        "--repeat", type=int, default=1, help="replay each stream this many times on the sim"
    )
    args = parser.parse_args()
    counts: collections.Counter[str] = collections.Counter()
    differing: list[str] = []
    flaky: list[str] = []
    errors: list[str] = []
    backend, start = SimBackend(), time.perf_counter()
    try:
        for index in args.only if args.only is not None else range(args.cases):
            data = generate_v2(args.seed, index)
            for key in ("expect", "steps", "expectByVersion"):
                data.pop(key, None)
            workloads = data.get("workloads") or []
            if not workloads or len(workloads) > 60:
                counts["no stream"] += 1
                continue
            rng = random.Random(index)
            for j, (w, second) in enumerate(zip(workloads, rng.sample(range(60), len(workloads)),
                                                strict=False)):  # fmt: skip
                w["submitAt"], w["runFor"] = second, rng.randint(5, 60) + (j + 1) / 1000
            name = f"stream-{args.seed}-{index}"
            if args.node_events:
                data["steps"] = node_events(data, rng)
            plain, times = split_times(data, name)
            scenario = with_times(scenario_from_data(plain, name), times)
            engine = "sim"
            try:
                sim = replay_on(scenario, backend.session)
                again = [replay_on(scenario, backend.session) for _ in range(args.repeat - 1)]
                if any(_jobs(a) != _jobs(sim) for a in again):
                    counts["sim flaky"] += 1
                    flaky.append(scenario.name)
                engine = "fit model"
                fit = _jobs(replay(scenario))
            except Nondeterministic as why:
                counts["not compared (Nondeterministic)"] += 1
                if args.why:
                    print(f"{scenario.name}: not compared ({engine}): {why}", flush=True)
                continue
            except (UnsupportedVersionError, Unsupported) as why:  # a rule not modelled
                counts["not compared (not modelled)"] += 1
                if args.why:
                    print(f"{scenario.name}: not modelled ({engine}): {why}", flush=True)
                continue
            except HarnessError as why:  # an engine could not decide it (e.g. never at rest)
                counts[f"not compared ({engine} error)"] += 1
                errors.append(f"{scenario.name} ({engine})")
                if args.why:
                    print(f"{scenario.name}: not compared ({engine}): {why}", flush=True)
                continue
            same = fit == _jobs(sim)
            counts["agree" if same else "differ"] += 1
            if not same:
                differing.append(scenario.name)
                if args.show:
                    show(scenario.name, fit, [j.to_json() for j in sim.jobs.values()])
    finally:
        backend.close()
    took = time.perf_counter() - start
    print(f"seed {args.seed}: {dict(counts)} in {took:.1f} s")
    if differing:
        print("differ:", ", ".join(differing[:20]))
    if flaky:
        print("sim flaky:", ", ".join(flaky[:20]))
    if errors:
        print("engine error:", ", ".join(errors[:20]))
    return 1 if differing or flaky else 0


def _jobs(timeline: Timeline) -> list[dict[str, object]]:
    return [j.to_json() for j in timeline.jobs.values()]


def show(name: str, fit: list[dict[str, object]], sim: list[dict[str, object]]) -> None:
    """The first job whose record differs, on both engines."""
    for f, s in zip(fit, sim, strict=True):
        if f != s:
            print(f"{name}:\n  fit {f}\n  sim {s}")
            return


PAIRS = (
    ("node-not-ready", "node-ready"),
    ("cordon", "uncordon"),
    ("taint-node", "untaint-node"),
    ("delete-node", None),
)
TAINT = {"key": "example.com/gpu-failure", "effect": "NoExecute"}


def node_events(data: dict[str, object], rng: random.Random) -> list[dict[str, object]]:
    """One or two nodes fail at a random second and (but a deleted one) come back later."""
    listed = [n for n in data.get("nodes") or [] if isinstance(n, dict)]
    nodes = [n["name"] for n in listed if n.get("ready", True) and not n.get("unschedulable")]
    events: list[tuple[float, dict[str, object]]] = []
    for node in rng.sample(nodes, min(len(nodes), rng.randint(1, 2))):
        down, up = rng.choice(PAIRS)
        at = rng.randint(1, 80) + 0.0005
        target: object = {"node": node, **TAINT, "value": "true"} if down == "taint-node" else node
        events.append((at, {down: target, "at": at}))
        if up is not None:
            back = at + rng.randint(5, 60)
            target = {"node": node, **TAINT} if up == "untaint-node" else node
            events.append((back, {up: target, "at": back}))
    return [e for _, e in sorted(events, key=lambda e: e[0])]


if __name__ == "__main__":
    raise SystemExit(main())
