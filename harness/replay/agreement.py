"""Does a replay on a real cluster agree with the fit model's? On the ORDER and PLACEMENT of
admissions, not on their times: real Kueue stamps conditions to the second and acts in 1 s
batches (requeues after a finish, the TAS ungater), so at `--time-scale 10` a cluster's
moment is only known to about 10 stream seconds.

Compared, job by job: how often it was admitted, the flavors and placement of each
admission, how often it was preempted, how often a node failure evicted it and where a node
failure's repair put it (a stream's node events), whether it finished; then the order of all
admissions: when the fit model admits one before another (strictly earlier), the cluster
must not admit it later. Admissions the fit model makes at the same moment may come in any
order, and admissions a cluster stamps with the same second count as simultaneous.

`expect` figures of a stream scenario are checked on a cluster only where they do not
depend on time (`time_robust`): placements, flavors, counts of jobs, admissions and
preemptions, and `neverAdmitted`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.replay.expect import Bound

Jobs = Mapping[str, Mapping[str, Any]]
"""The replay's `jobs` (docs/replay.md): name -> {submittedAt, admissions, ...}."""

ROBUST_SUMMARY = ("jobs", "preemptions", "neverAdmitted")
"""Figures of `summary` that count rather than time."""


def disagreements(
    expected: Jobs, observed: Jobs, names: tuple[str, str] = ("fit model", "cluster")
) -> list[str]:
    """One readable line per difference between the two replays' jobs (empty: they agree)."""
    want, got = names
    lines = []
    for job in sorted(set(observed) - set(expected)):
        lines.append(f"{job}: only the {got} has it")
    for job, exp in expected.items():
        obs = observed.get(job)
        if obs is None:
            lines.append(f"{job}: the {got} has no record of it")
            continue
        lines += [f"{job}: {line}" for line in _job_lines(exp, obs, want, got)]
    lines += _order_lines(expected, observed, want, got)
    return lines


def _job_lines(exp: Mapping[str, Any], obs: Mapping[str, Any], want: str, got: str) -> list[str]:
    lines = []
    ea, oa = exp["admissions"], obs["admissions"]
    if len(ea) != len(oa):
        lines.append(
            f"admitted {len(ea)} time(s) by the {want} ({_admissions(ea)}), "
            f"{len(oa)} by the {got} ({_admissions(oa)})"
        )
    for i, (e, o) in enumerate(zip(ea, oa, strict=False)):
        for key in ("placement", "flavors"):
            if e[key] != o[key]:
                lines.append(f"admission {i + 1} {key}: {want} {e[key]}, {got} {o[key]}")
    ep, op = len(exp["preemptedAt"]), len(obs["preemptedAt"])
    if ep != op:
        lines.append(f"preempted {ep} time(s) by the {want}, {op} by the {got}")
    ee, oe = len(exp.get("evictedAt", [])), len(obs.get("evictedAt", []))
    if ee != oe:
        lines.append(f"evicted by a node failure {ee} time(s) by the {want}, {oe} by the {got}")
    er, orr = exp.get("replacements", []), obs.get("replacements", [])
    if [r["placement"] for r in er] != [r["placement"] for r in orr]:
        lines.append(
            f"repaired in place to {_admissions(er)} by the {want}, "
            f"to {_admissions(orr)} by the {got}"
        )
    ef, of = exp["finishedAt"] is not None, obs["finishedAt"] is not None
    if ef != of:
        lines.append(
            f"{'finished' if ef else 'never finished'} on the {want}, "
            f"{'finished' if of else 'never finished'} on the {got}"
        )
    return lines


def _admissions(admissions: Sequence[Mapping[str, Any]]) -> str:
    if not admissions:
        return "never"
    return "; ".join(
        f"at {a['at']:g} s on " + ", ".join(f"{n}={c}" for ps in a["placement"].values()
                                            for n, c in ps.items())
        for a in admissions
    )  # fmt: skip


def _order_lines(expected: Jobs, observed: Jobs, want: str, got: str) -> list[str]:
    """The first pair of admissions the cluster took in the other order, with both orders."""
    both = [
        (name, i)
        for name, job in expected.items()
        if name in observed
        for i in range(min(len(job["admissions"]), len(observed[name]["admissions"])))
    ]

    def at(jobs: Jobs, event: tuple[str, int]) -> float:
        return float(jobs[event[0]]["admissions"][event[1]]["at"])

    for first in both:
        for then in both:
            if at(expected, first) >= at(expected, then):
                continue
            if at(observed, first) > at(observed, then):
                return [
                    f"admission order: the {want} admits {_event(first)} at "
                    f"{at(expected, first):g} s before {_event(then)} at {at(expected, then):g} s; "
                    f"the {got} admitted {_event(then)} at {at(observed, then):g} s, "
                    f"{_event(first)} at {at(observed, first):g} s",
                    f"  {want}: {_sequence(both, lambda e: at(expected, e))}",
                    f"  {got}: {_sequence(both, lambda e: at(observed, e))}",
                ]
    return []


def _event(event: tuple[str, int]) -> str:
    name, i = event
    return name if i == 0 else f"{name} (admission {i + 1})"


def _sequence(events: list[tuple[str, int]], at: Any) -> str:
    return ", ".join(f"{_event(e)} {at(e):g}" for e in sorted(events, key=lambda e: (at(e), e)))


def time_robust(bound: Bound) -> bool:
    """The figure does not depend on when things happened: a placement or flavor, a count
    of jobs, admissions or preemptions (evictions), a quota, or `neverAdmitted` (checked on a
    cluster too)."""
    path = bound.path
    if "placement" in path or "flavors" in path:
        return True
    if path[0] != "summary" or len(path) < 2:
        return False
    counted = path[1].startswith("timeToAdmission") and path[-1] == "admitted"
    counted |= path[1] == "kueuePerf" and path[-1] in ("count", "totalEvictions", "nominalQuota")
    return path[1] in ROBUST_SUMMARY or counted
