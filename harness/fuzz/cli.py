"""`python -m harness fuzz`: differential fuzzing of the fit model against real Kueue.

Exit 0 when every case agrees; 1 when a disagreement, a backend failure or a flaky answer
remains; 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.fuzz.campaign import Summary, run_campaign
from harness.fuzz.world_features import FEATURES
from harness.plugin.sharding import parse_shard, seed_range


def _whole(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least `minimum`."""
    below = "must not be negative" if minimum == 0 else f"must be at least {minimum}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{below}, got {value}")
        return value

    return parse


_positive = _whole(1)
_natural = _whole(0)


def register(sub: Any) -> None:
    """Add the `fuzz` command to harness.cli.main's subparsers."""
    fuzz = sub.add_parser(
        "fuzz", help="random scenarios on the fit model and on real Kueue, compared"
    )
    fuzz.add_argument("--seed", type=_natural, default=1, help="campaign seed (default: 1)")
    fuzz.add_argument("--cases", type=_positive, default=100, help="scenarios to try")
    fuzz.add_argument(
        "--against",
        choices=("sim", "local"),
        default="sim",
        help="the Kueue to compare with: sim (its scheduler in process) or local "
        "(embedded cluster)",
    )
    fuzz.add_argument(
        "--out",
        type=Path,
        default=None,
        help="where disagreements are written (default: run/fuzz-SEED/)",
    )
    fuzz.add_argument(
        "--world",
        choices=("v1", "v2"),
        default="v1",
        help="v1: one topology, flavor and queue; v2: several flavors, ClusterQueues in a "
        "cohort, priorities, preemption, admitted workloads, fair sharing, Cohort trees, "
        "admission checks with steps, stopPolicy, missing flavors and levels "
        "(harness/fuzz/world_features.py), Kueue's resources transformations and "
        "exclusions, LocalQueue stopPolicy with steps, pods never Ready, blockAdmission, "
        "ClusterQueue stopPolicy steps "
        "(harness/fuzz/world_config_features.py) (default: v1)",
    )
    fuzz.add_argument("--start", type=_natural, default=0, help="index of the first case")
    fuzz.add_argument(
        "--shard",
        default=None,
        metavar="I/N",
        help="run only part I of N (1-based) of the cases [start, start + cases): contiguous "
        "index ranges, so N machines together run the whole campaign (default: every case)",
    )
    fuzz.add_argument(
        "--jobs", type=_positive, default=2, help="backend processes in parallel (sim only)"
    )
    fuzz.add_argument(
        "--shrink-budget",
        type=_natural,
        default=400,
        help="most checks spent shrinking one disagreement (0: do not shrink)",
    )
    fuzz.add_argument(
        "--shrink-per-kind",
        type=_natural,
        default=2,
        help="disagreements shrunk per kind (the rest are written unshrunk)",
    )
    fuzz.add_argument(
        "--sim-binary",
        type=Path,
        default=None,
        help="a built kueue-sim to use (default: build harness/sim/go/ as it is in the work tree)",
    )
    fuzz.add_argument(
        "--kueue-version",
        default=None,
        help="the Kueue version both sides answer for: the fit model's rules and the sim "
        "(or cluster) built for it, e.g. v0.18.2 (default: v0.19.2)",
    )
    fuzz.set_defaults(handler=_fuzz)


def _fuzz(args: argparse.Namespace) -> int:
    out: Path = args.out or Path("run") / f"fuzz-{args.seed}"
    if args.shard is not None:
        shard = parse_shard(args.shard)
        args.start, args.cases = seed_range(args.start, args.cases, shard)
        if args.out is None:
            out = Path("run") / f"fuzz-{args.seed}-shard-{shard.index}-of-{shard.total}"
        if args.cases == 0:
            print(f"fuzz seed {args.seed}: shard {shard} has no cases", file=sys.stderr)
            return 0
    if out.exists() and not out.is_dir():
        raise HarnessError(f"--out {out}: exists and is not a folder")

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    if args.sim_binary is not None and not args.sim_binary.is_file():
        raise HarnessError(f"--sim-binary {args.sim_binary}: no such file")
    summary = run_campaign(
        args.seed,
        args.cases,
        against=args.against,
        out=out,
        jobs=args.jobs,
        shrink_budget=args.shrink_budget,
        shrink_per_kind=args.shrink_per_kind,
        start=args.start,
        sim_binary=args.sim_binary,
        kueue_version=args.kueue_version,
        progress=progress,
        world=args.world,
    )
    print(render(summary))
    return 1 if summary.disagreements or summary.errors or summary.flaky else 0


def render(summary: Summary) -> str:
    lines = [
        f"fuzz seed {summary.seed}: {summary.cases} cases in {summary.check_seconds:.1f} s "
        f"({summary.rate:.1f} scenarios/s), {len(summary.disagreements)} disagreements, "
        f"{len(summary.errors)} backend errors, {len(summary.flaky)} flaky"
    ]
    if summary.features:
        counts = ", ".join(
            f"{name} {summary.features[name]}" for name in FEATURES if name in summary.features
        )
        lines.append(f"compared cases per feature: {counts}")
    if summary.skipped:
        lines.append(f"{sum(summary.skipped.values())} cases not compared:")
        for reason, count in sorted(summary.skipped.items(), key=lambda kv: -kv[1]):
            lines.append(f"  {count} x {reason}")
    if summary.disagreements:
        lines.append(f"shrinking took {summary.shrink_seconds:.1f} s")
    for kind, findings in sorted(summary.by_kind().items(), key=lambda kv: -len(kv[1])):
        lines.append(f"  {len(findings)} x {kind[:140]}")
        for finding in findings:
            if finding.shrunk is not None:
                verdict = finding.shrunk_verdict or finding.verdict
                first = verdict.lines[0] if verdict.lines else ""
                lines.append(f"    shrunk: {finding.path}: {first[:140]}")
        rest = [f.path.stem for f in findings if f.shrunk is None and f.path is not None]
        if rest:
            lines.append(f"    unshrunk: {', '.join(rest[:8])}{' ...' if len(rest) > 8 else ''}")
    if summary.unplaceable:
        predicted = sum(1 for f in summary.unplaceable if f.verdict.predicted_unplaceable)
        lines.append(
            f"{len(summary.unplaceable)} admitted by Kueue with pods that never run (Kueue "
            f"findings, not disagreements); the fit model predicted {predicted} of them:"
        )
        for finding in summary.unplaceable:
            mark = "predicted" if finding.verdict.predicted_unplaceable else "NOT predicted"
            counts = "; ".join(f"{n}: {dict(c)}" for n, c in finding.verdict.unplaceable.items())
            lines.append(f"  {mark}: {finding.path}: {counts}")
    for finding in summary.errors:
        lines.append(f"  backend error: {finding.path}: {finding.verdict.error[:160]}")
    for finding in summary.flaky:
        lines.append(f"  flaky (not the same when checked again): {finding.path}")
    if summary.disagreements or summary.errors or summary.flaky:
        lines.append(f"written to {summary.out}/ (scenario .yaml + outcomes .txt per case)")
    return "\n".join(lines)
