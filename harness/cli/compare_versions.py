"""`python -m harness compare-versions --from vA --to vB [PATHS...] [--engine fit|local]`:
the upgrade check. Every scenario runs on both Kueue versions, and per scenario the command
prints what changes: admitted <-> pending or rejected, flavors, placements, messages, fault
repairs, after the submissions and after each step. The files' expectations play no part.

Exit 0 when nothing changes, 1 when anything does, 2 on bad input (a version the engine
does not run, the same version twice, no scenario files, a file that does not load).
A scenario an engine cannot answer on a version (the fit model declines, the cluster
cannot run it) is listed as not compared, with the reason; it is no difference.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.kueue.versions import VersionSpecError, version_key
from harness.results.outcome import Outcome, replaced_to_json
from harness.scenario.discover import scenario_paths
from harness.scenario.model import Scenario

ENGINES = ("fit", "sim", "local")
States = list[dict[str, Outcome]]
"""The outcomes after the submissions, then after each step."""


class CompareError(HarnessError):
    """Bad input to compare-versions (exit 2)."""


@dataclass
class Compared:
    """One scenario on both versions: the changes, or why it was not compared."""

    scenario: Scenario
    changes: list[str] = field(default_factory=list)
    not_compared: str = ""


def register(subparsers: Any) -> None:
    """Add the `compare-versions` command (harness/cli/main.py calls this)."""
    cmd = subparsers.add_parser(
        "compare-versions",
        help="run scenarios on two Kueue versions and print what changes (upgrade check)",
        description=__doc__,
    )
    cmd.add_argument("--from", dest="old", required=True, metavar="VERSION", help="e.g. v0.18.2")
    cmd.add_argument("--to", dest="new", required=True, metavar="VERSION", help="e.g. v0.19.2")
    cmd.add_argument(
        "paths",
        nargs="*",
        type=Path,
        default=[Path("suites")],
        metavar="PATH",
        help="scenario files, or folders to search for them (default: suites)",
    )
    cmd.add_argument(
        "--engine",
        choices=ENGINES,
        default="fit",
        help="fit: the fit model's rules per version (no cluster, seconds); sim: Kueue's "
        "scheduler of each version in process (seconds; built on first use); local: real Kueue "
        "of each version on the embedded cluster (~25 s per version to start, ~3 s a "
        "scenario) (default: fit)",
    )
    cmd.set_defaults(handler=compare_command)


def compare_command(args: argparse.Namespace) -> int:
    _check_versions(args.old, args.new, args.engine)
    scenarios = _load(args.paths)
    with ExitStack() as stack:
        run = _fit_states if args.engine == "fit" else _backend_runner(stack, args.engine)
        results = compare(scenarios, args.old, args.new, run)
    print(render(results, args.old, args.new, args.engine))
    return 1 if any(r.changes for r in results) else 0


def _check_versions(old: str, new: str, engine: str) -> None:
    for option, version in (("--from", old), ("--to", new)):
        try:
            version_key(version)
        except VersionSpecError as err:
            raise CompareError(f"{option}: {err}") from None
        runs = _engine_versions(engine)
        if version not in runs:
            raise CompareError(
                f"{option} {version}: --engine {engine} runs Kueue {', '.join(runs)}"
            )
    if old == new:
        raise CompareError(f"--from and --to are both {old}: nothing to compare")


def _engine_versions(engine: str) -> tuple[str, ...]:
    if engine == "fit":
        from harness.fit import MODELLED_KUEUE_VERSIONS

        return MODELLED_KUEUE_VERSIONS
    from harness.backends.base import kueue_versions

    return kueue_versions(engine)


def _load(paths: Sequence[Path]) -> list[Scenario]:
    from harness.scenario.loader import load_scenario

    found = list(scenario_paths(paths))
    if not found:
        raise CompareError(f"{' '.join(map(str, paths))}: no scenario files found")
    return [load_scenario(path) for path in found]  # ScenarioError: one line, exit 2


Runner = Callable[[Scenario, str], States]


def _fit_states(scenario: Scenario, version: str) -> States:
    from harness.fit import fit

    result = fit(dataclasses.replace(scenario, kueue=version))
    return [result.outcomes, *result.steps]


def _backend_runner(stack: ExitStack, engine: str) -> Runner:
    """Scenarios on a backend (the sim, or the embedded cluster), one backend per version,
    started on first use; one at a time, the last stopped when the command ends."""
    from harness.backends.base import Unsupported, create_backend

    backends: dict[str, Any] = {}

    def close_all() -> None:
        for version in list(backends):
            backends.pop(version).close()

    stack.callback(close_all)

    def run(scenario: Scenario, version: str) -> States:
        if version not in backends:
            close_all()
            backends[version] = create_backend(engine, kueue_version=version)
        try:
            observed = backends[version].run(dataclasses.replace(scenario, kueue=version))
        except Unsupported as why:
            raise HarnessError(str(why)) from None
        return [observed.outcomes, *observed.steps]

    return run


def compare(scenarios: Sequence[Scenario], old: str, new: str, run: Runner) -> list[Compared]:
    """Every scenario on `old`, then every one on `new` (on a cluster: one start per
    version), then the differences; HarnessError from an engine makes one not compared."""
    runs = {version: [_attempt(run, s, version) for s in scenarios] for version in (old, new)}
    results = []
    for scenario, before, after in zip(scenarios, runs[old], runs[new], strict=True):
        result = Compared(scenario)
        for version, got in ((old, before), (new, after)):
            if isinstance(got, str) and not result.not_compared:
                result.not_compared = f"{version}: {got}"
        if not isinstance(before, str) and not isinstance(after, str):
            for index, (a, b) in enumerate(zip(before, after, strict=True)):
                where = "" if index == 0 else f"after step {index} ({_step(scenario, index)}): "
                result.changes += [where + line for line in changes(a, b, (old, new))]
        results.append(result)
    return results


def _attempt(run: Runner, scenario: Scenario, version: str) -> States | str:
    """The states, or why the engine could not answer (first line, without the file)."""
    if undetermined := scenario.undetermined_on(version):
        return undetermined
    if no_upgrade := dataclasses.replace(scenario, kueue=version).no_upgrade():
        return no_upgrade
    try:
        return run(scenario, version)
    except HarnessError as err:
        return _short(str(err), scenario)


def _short(text: str, scenario: Scenario) -> str:
    line = text.splitlines()[0] if text else ""
    return line.removeprefix(f"{scenario.path}: ")


def _step(scenario: Scenario, index: int) -> str:
    step = scenario.steps[index - 1]
    target = step.target if isinstance(step.target, str) else getattr(step.target, "name", "")
    return f"{step.action} {target}".strip()


def changes(
    before: Mapping[str, Outcome], after: Mapping[str, Outcome], labels: tuple[str, str]
) -> list[str]:
    """What differs between the two states, per workload and aspect: a headline, then the
    value on each version (`labels`) on lines of their own."""
    out = []
    for name in dict.fromkeys([*before, *after]):
        old, new = before.get(name), after.get(name)
        if old is None or new is None or _state(old) != _state(new):
            pair = (_summary(old), _summary(new))
            out.append(_change(f"{name}: {_kind(old)} -> {_kind(new)}", labels, pair))
            continue
        for aspect, pair in _aspects(old, new):
            if pair[0] != pair[1]:
                out.append(_change(f"{name}: {aspect}", labels, pair))
    return out


def _change(headline: str, labels: tuple[str, str], values: tuple[str, str]) -> str:
    width = max(map(len, labels))
    return "\n".join(
        [
            headline,
            *(
                f"  {label:<{width}}  {value or '(none)'}"
                for label, value in zip(labels, values, strict=True)
            ),
        ]
    )


def _state(outcome: Outcome) -> str:
    return "admitted" if outcome.admitted else "rejected" if outcome.rejected else "pending"


def _kind(outcome: Outcome | None) -> str:
    return "(not there)" if outcome is None else _state(outcome)


def _summary(outcome: Outcome | None) -> str:
    if outcome is None:
        return "(not there)"
    if outcome.admitted:
        return f"admitted at {_placement(outcome.placement)}"
    return f"{_state(outcome)}: {outcome.message or '(no message)'}"


def _placement(placement: Mapping[str, Mapping[str, int]]) -> str:
    return "; ".join(
        f"{ps}: " + ", ".join(f"{d}={n}" for d, n in sorted(per.items()))
        for ps, per in placement.items()
    )


def _aspects(old: Outcome, new: Outcome) -> Iterator[tuple[str, tuple[str, str]]]:
    """What can differ between two outcomes in the same state, as comparable text."""
    yield "message", (old.message, new.message)
    yield "placement", (_placement(old.placement), _placement(new.placement))
    yield "flavors", (_mapping(old.flavors), _mapping(new.flavors))
    yield "pods that never run", (_mapping(old.unschedulable), _mapping(new.unschedulable))
    yield "replaced", (_replaced(old), _replaced(new))
    yield "drift", (_placement(old.drift), _placement(new.drift))
    yield "evicted", (_evicted(old), _evicted(new))
    yield "preempted", (str(old.preempted).lower(), str(new.preempted).lower())


def _replaced(outcome: Outcome) -> str:
    return str(replaced_to_json(outcome.replaced)) if outcome.replaced else ""


def _mapping(values: Mapping[str, object]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(values.items()))


def _evicted(outcome: Outcome) -> str:
    e = outcome.evicted
    return f"{e.reason}: {e.message}" if e is not None else ""


def render(results: Sequence[Compared], old: str, new: str, engine: str) -> str:
    """Changed scenarios with their changes, then the not compared, then the counts."""
    lines = [f"Kueue {old} -> {new} ({engine}):"]
    changed = [r for r in results if r.changes]
    skipped = [r for r in results if r.not_compared]
    for r in changed:
        lines.append(f"{r.scenario.name} ({r.scenario.path}):")
        lines += ["  " + line.replace("\n", "\n    ") for line in r.changes]
    if skipped:
        lines.append("not compared:")
        lines += [f"  {r.scenario.name}: {r.not_compared}" for r in skipped]
    same = len(results) - len(changed) - len(skipped)
    lines.append(
        f"{len(results)} scenarios: {len(changed)} changed, {same} unchanged, "
        f"{len(skipped)} not compared"
    )
    return "\n".join(lines)
