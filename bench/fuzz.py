"""Benchmark of differential fuzzing: generator, fit model, sim and the campaign end to end.

Prints numbers; asserts nothing. `python bench/fuzz.py [CASES]` (default 1000; seed 1).
Needs Go to build harness/sim/go/ the first time.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness import progress
from harness.fit import fit
from harness.fuzz.campaign import run_campaign
from harness.fuzz.generator import generate
from harness.scenario.loader import scenario_from_data
from harness.sim.build import build_sim
from harness.sim.contract import scenario_to_dict
from harness.sim.process import SimProcess


def rate(count: int, seconds: float) -> str:
    return f"{count / seconds:8.1f}/s" if seconds else "     inf"


def main() -> None:
    progress.show_on_stderr()  # a first run builds kueue-sim: say so while it does
    cases = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    binary = build_sim()

    began = time.perf_counter()
    data = [generate(1, i) for i in range(cases)]
    scenarios = [scenario_from_data(d) for d in data]
    print(f"generate + load   {rate(cases, time.perf_counter() - began)}  ({cases} scenarios)")

    began = time.perf_counter()
    for scenario in scenarios:
        fit(scenario)
    print(f"fit model alone   {rate(cases, time.perf_counter() - began)}")

    dicts = [scenario_to_dict(s) for s in scenarios]
    with SimProcess(binary) as sim:
        sim.run(dicts[0])  # process start-up is not part of the rate
        began = time.perf_counter()
        for d in dicts:
            sim.run(d)
        print(f"sim alone, 1 proc {rate(cases, time.perf_counter() - began)}")

    for jobs in (1, 2):
        with tempfile.TemporaryDirectory() as out:
            began = time.perf_counter()
            summary = run_campaign(1, cases, out=Path(out), jobs=jobs, sim_binary=binary)
            total = time.perf_counter() - began
        print(
            f"fuzz, {jobs} job(s)   {rate(cases, summary.check_seconds)} checking, "
            f"{rate(cases, total)} end to end (shrinking {summary.shrink_seconds:.1f} s); "
            f"{len(summary.disagreements)} disagreements, {len(summary.flaky)} flaky"
        )


if __name__ == "__main__":
    main()
