"""The fit model's answers, written to a folder, to show a speed-up changed none of them.

    python bench/replay_digest.py OUT                    # streams, random streams and worlds
    python bench/replay_digest.py OUT --anchors          # plus bench/replay.py's 1,056 and day
    python bench/replay_digest.py OUT --anchors --big    # plus configs/tas as shipped (15,000)
    python bench/replay_digest.py OUT --engine sim       # the streams on kueue-sim instead
    diff -r BEFORE AFTER                                 # byte-identical or not

Each case becomes one JSON file: the replay's JSON form (`replay --format json`) of every
suites/streams/*.yaml and of random streams (bench/replay_vs_sim.py's: the version-2
fuzzer's worlds, submission seconds 0-59, run times of 5-60 s), the fit model's outcomes of
the fuzzer's worlds as one moment, or the error either raises (Nondeterministic, refusals).
With `--engine sim` the streams (suites, random, anchors) are replayed on kueue-sim
(harness/replay/onsim.py) and the worlds are left out.
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

from bench.replay import day, kueue_tas
from harness.errors import HarnessError
from harness.fit import fit
from harness.fuzz.world_v2 import generate_v2
from harness.replay.result import replay_result
from harness.replay.stream import load_stream
from harness.scenario.loader import scenario_from_data

ROOT = Path(__file__).resolve().parents[1]


def _write(out: Path, name: str, compute: Any) -> None:
    try:
        payload = compute()
    except HarnessError as err:  # Nondeterministic and refusals are answers too
        payload = {"error": type(err).__name__, "message": str(err)}
    (out / f"{name}.json").write_text(json.dumps(payload, indent=1, sort_keys=True, default=str))


def _stream_case(seed: int, index: int) -> dict[str, Any] | None:
    data = generate_v2(seed, index)
    for key in ("expect", "steps", "expectByVersion"):
        data.pop(key, None)
    workloads = data.get("workloads") or []
    if not workloads or len(workloads) > 60:
        return None
    rng = random.Random(index)
    for j, (w, second) in enumerate(zip(workloads, rng.sample(range(60), len(workloads)),
                                        strict=False)):  # fmt: skip
        w["submitAt"], w["runFor"] = second, rng.randint(5, 60) + (j + 1) / 1000
    return data


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seeds", type=int, nargs="*", default=[8, 9])
    parser.add_argument("--cases", type=int, default=200, help="random cases per seed")
    parser.add_argument("--anchors", action="store_true")
    parser.add_argument("--big", action="store_true")
    parser.add_argument("--engine", choices=("fit", "sim"), default="fit")
    args = parser.parse_args()
    if args.engine == "sim":
        return _on_sim(args)
    args.out.mkdir(parents=True, exist_ok=True)
    start, counts = time.process_time(), {"streams": 0, "random": 0, "worlds": 0}
    for path in sorted((ROOT / "suites" / "streams").glob("*.yaml")):
        stream = load_stream(path)
        replayed = lambda s=stream: replay_result(s.scenario, s.classes)  # noqa: E731
        _write(args.out, f"suite-{path.stem}", replayed)
        counts["streams"] += 1
    for seed in args.seeds:
        for index in range(args.cases):
            data = _stream_case(seed, index)
            if data is not None:
                scenario = scenario_from_data(data, f"stream-{seed}-{index}")
                _write(args.out, f"random-{seed}-{index}", lambda s=scenario: replay_result(s))
                counts["random"] += 1
            world = scenario_from_data(generate_v2(seed, index), f"world-{seed}-{index}")
            _write(args.out, f"world-{seed}-{index}", lambda w=world: _outcomes(w))
            counts["worlds"] += 1
    if args.anchors:
        scenario, classes = kueue_tas(scale_1050=True)
        _write(args.out, "anchor-kueue-tas-1050", lambda: replay_result(scenario, classes))
        _write(args.out, "anchor-day", lambda: replay_result(day()))
    if args.big:
        scenario, classes = kueue_tas()
        _write(args.out, "anchor-kueue-tas", lambda: replay_result(scenario, classes))
    print(f"{counts} in {time.process_time() - start:.1f} s CPU", flush=True)
    return 0


def _on_sim(args: argparse.Namespace) -> int:
    """The streams on kueue-sim, one process for all; CPU seconds include its own."""
    from harness.backends.replay import replay_on
    from harness.backends.sim import SimBackend

    args.out.mkdir(parents=True, exist_ok=True)
    start, children = time.process_time(), _children_cpu()
    backend, count = SimBackend(), 0
    try:
        cases: list[tuple[str, Any, Any]] = []
        for path in sorted((ROOT / "suites" / "streams").glob("*.yaml")):
            stream = load_stream(path)
            cases.append((f"suite-{path.stem}", stream.scenario, stream.classes))
        for seed in args.seeds:
            for index in range(args.cases):
                if (data := _stream_case(seed, index)) is not None:
                    name = f"stream-{seed}-{index}"
                    cases.append((f"random-{seed}-{index}", scenario_from_data(data, name), None))
        if args.anchors:
            scenario, classes = kueue_tas(scale_1050=True)
            cases.append(("anchor-kueue-tas-1050", scenario, classes))
        for name, scenario, classes in cases:
            run = lambda s=scenario, c=classes: replay_on(s, c, "sim", backend=backend).result  # noqa: E731
            _write(args.out, name, run)
            count += 1
    finally:
        backend.close()
    cpu = time.process_time() - start + _children_cpu() - children
    print(f"{count} streams on kueue-sim in {cpu:.1f} s CPU", flush=True)
    return 0


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _outcomes(world: Any) -> dict[str, Any]:
    result = fit(world)
    return {
        "outcomes": {k: repr(v) for k, v in result.outcomes.items()},
        "steps": [{k: repr(v) for k, v in step.items()} for step in result.steps],
    }


if __name__ == "__main__":
    raise SystemExit(main())
