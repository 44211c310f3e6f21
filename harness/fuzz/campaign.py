"""One fuzz campaign: generate, compare, shrink disagreements and write them out.

Disagreements are grouped by kind (what differs and Kueue's reason); the first
`shrink_per_kind` of each kind are shrunk, the rest are written as generated: one kind is
usually one root cause, and shrinking costs hundreds of checks.

`jobs` checkers (each with its own backend process) work in parallel threads: the sim
spends most of its time waiting on Kueue's scheduler loop, so two processes on two cores
nearly double the rate. Results are kept in case order whatever the thread timing.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from harness.fuzz.generator import generate
from harness.fuzz.runner import Checker, Verdict, make_observer
from harness.fuzz.shrink import shrink
from harness.fuzz.world_features import features
from harness.fuzz.world_v2 import generate_v2
from harness.scenario.loader import scenario_from_data
from harness.sim.build import build_sim

Data = dict[str, Any]
T = TypeVar("T")


@dataclass
class Finding:
    """A case where the fit model and Kueue disagree (or the backend failed)."""

    index: int
    original: Data
    verdict: Verdict
    shrunk: Data | None = None
    shrunk_verdict: Verdict | None = None
    shrink_checks: int = 0
    path: Path | None = None
    recheck: Verdict | None = None

    @property
    def kind(self) -> str:
        """The first difference and Kueue's reason: findings of one kind usually share a cause."""
        kinds = self.verdict.kinds()
        return kinds[0] if kinds else self.verdict.error[:80]


@dataclass
class Summary:
    seed: int
    cases: int
    check_seconds: float = 0.0
    shrink_seconds: float = 0.0
    disagreements: list[Finding] = field(default_factory=list)
    errors: list[Finding] = field(default_factory=list)
    flaky: list[Finding] = field(default_factory=list)
    # Admitted by Kueue with pods kube-scheduler (or the ungater) never runs: Kueue findings.
    unplaceable: list[Finding] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    """Why cases were not compared (the fit model's reason, first words) -> how many."""
    features: dict[str, int] = field(default_factory=dict)
    """Compared cases holding each of world_features.FEATURES (version-2 worlds)."""
    out: Path | None = None

    @property
    def rate(self) -> float:
        return self.cases / self.check_seconds if self.check_seconds else 0.0

    def by_kind(self) -> dict[str, list[Finding]]:
        groups: dict[str, list[Finding]] = {}
        for finding in self.disagreements:
            groups.setdefault(finding.kind, []).append(finding)
        return groups


class _Checkers:
    """A pool of checkers, each owning one backend process, lent out one thread at a time."""

    def __init__(
        self, against: str, jobs: int, sim_binary: Path | None, kueue_version: str | None
    ) -> None:
        self.free: queue.SimpleQueue[Checker] = queue.SimpleQueue()
        self.all: list[tuple[Checker, Any]] = []
        for _ in range(jobs):
            observer = make_observer(against, sim_binary, kueue_version)
            checker = Checker(observer, kueue_version)
            self.all.append((checker, observer))
            self.free.put(checker)

    @contextmanager
    def lend(self) -> Iterator[Checker]:
        checker = self.free.get()
        try:
            yield checker
        finally:
            self.free.put(checker)

    def close(self) -> None:
        for checker, observer in self.all:
            checker.__exit__()
            observer.close()


def run_campaign(
    seed: int,
    cases: int,
    against: str = "sim",
    out: Path | None = None,
    jobs: int = 2,
    shrink_budget: int = 400,
    shrink_per_kind: int = 2,
    start: int = 0,
    sim_binary: Path | None = None,
    kueue_version: str | None = None,
    progress: Callable[[str], None] | None = None,
    world: str = "v1",
) -> Summary:
    out_dir = out or Path("run") / f"fuzz-{seed}"
    summary = Summary(seed=seed, cases=cases, out=out_dir)
    jobs = jobs if against == "sim" else 1
    if against == "sim" and sim_binary is None:
        # once, before the worker threads start their processes
        sim_binary = build_sim(version=kueue_version)
    checkers = _Checkers(against, jobs, sim_binary, kueue_version)
    try:
        with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="fuzz") as pool:
            began = time.monotonic()

            def check(index: int) -> tuple[int, Data, Verdict]:
                data = GENERATORS[world](seed, index)
                with checkers.lend() as checker:
                    return index, data, checker.check(data)

            for done, (index, data, verdict) in enumerate(
                pool.map(check, range(start, start + cases)), 1
            ):
                if not verdict.skipped:
                    for name in features(data):
                        summary.features[name] = summary.features.get(name, 0) + 1
                if verdict.skipped:
                    reason = verdict.skipped.split(": ", 1)[-1][:90]
                    summary.skipped[reason] = summary.skipped.get(reason, 0) + 1
                elif verdict.error:
                    summary.errors.append(Finding(index, data, verdict))
                elif verdict.disagrees:
                    summary.disagreements.append(Finding(index, data, verdict))
                if verdict.unplaceable and not verdict.error:
                    summary.unplaceable.append(Finding(index, data, verdict))
                if progress and done % 500 == 0:
                    progress(f"  {done}/{cases} cases, {len(summary.disagreements)} disagreements")
            summary.check_seconds = time.monotonic() - began

            began = time.monotonic()

            def recheck(finding: Finding) -> Finding:
                with checkers.lend() as checker:
                    finding.recheck = checker.check(finding.original)
                return finding

            # A disagreement that does not come back on the same input is a flaky backend.
            list(pool.map(recheck, summary.disagreements))
            summary.flaky = [f for f in summary.disagreements if not _same(f.verdict, f.recheck)]
            summary.disagreements = [f for f in summary.disagreements if f not in summary.flaky]

            def reduce(finding: Finding) -> Finding:
                with checkers.lend() as checker:
                    _shrink_finding(checker, finding, shrink_budget)
                return finding

            chosen = [f for group in summary.by_kind().values() for f in group[:shrink_per_kind]]
            if shrink_budget > 0:
                list(pool.map(reduce, chosen))
            summary.shrink_seconds = time.monotonic() - began
    finally:
        checkers.close()
    for finding in summary.disagreements + summary.errors + summary.flaky:
        finding.path = write_finding(out_dir, seed, finding)
    for finding in summary.unplaceable:
        if finding.path is None:
            finding.path = write_finding(out_dir / "unplaceable", seed, finding)
    return summary


GENERATORS = {"v1": generate, "v2": generate_v2}
"""`--world`: the version-1 generator (one topology, flavor and queue) or version 2."""


def _same(first: Verdict, again: Verdict | None) -> bool:
    return again is not None and first.lines == again.lines and not again.error


def _shrink_finding(checker: Checker, finding: Finding, budget: int) -> None:
    kind = finding.kind

    def interesting(candidate: Data) -> bool:
        verdict = checker.check(candidate)
        return verdict.disagrees and kind in verdict.kinds()

    finding.shrunk, finding.shrink_checks = shrink(finding.original, interesting, budget)
    finding.shrunk_verdict = checker.check(finding.shrunk)


def write_finding(out: Path, seed: int, finding: Finding) -> Path:
    """`<name>.yaml` (loader-valid, no expect) and `<name>.txt` (both outcomes)."""
    out.mkdir(parents=True, exist_ok=True)
    data = finding.shrunk or finding.original
    verdict = finding.shrunk_verdict or finding.verdict
    name = str(data["name"])
    path = out / f"{name}.yaml"
    text = dump_scenario(data)
    scenario_from_data(yaml.load(text, Loader=_LOADER), str(path))  # what we write must load
    path.write_text(text, encoding="utf-8")
    nodes, workloads = len(finding.original["nodes"]), len(finding.original["workloads"])
    notes = [
        f"case {finding.index} of seed {seed} "
        f"({_generator_call(finding.original, seed, finding.index)})",
        f"original: {nodes} nodes, {workloads} workloads; "
        f"shrunk: {len(data['nodes'])} nodes, {len(data['workloads'])} workloads "
        f"in {finding.shrink_checks} checks",
        verdict.report(),
    ]
    if finding.recheck is not None and not _same(finding.verdict, finding.recheck):
        notes += ["", "FLAKY: the same scenario checked again gave:", finding.recheck.report()]
    path.with_suffix(".txt").write_text("\n".join(notes) + "\n", encoding="utf-8")
    return path


def _generator_call(original: Data, seed: int, index: int) -> str:
    """The call that regenerates a case, whichever generator made it."""
    if str(original.get("name", "")).startswith("fuzz2-"):
        return f"harness.fuzz.world_v2.generate_v2({seed}, {index})"
    return f"harness.fuzz.generator.generate({seed}, {index})"


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def dump_scenario(data: Data) -> str:
    """Scenario YAML in file order, leaf mappings inline (libyaml when present: fast)."""
    return yaml.dump(data, Dumper=_DUMPER, sort_keys=False, default_flow_style=None, width=100)
