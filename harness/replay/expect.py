"""A stream scenario's `replay.expect`: figures of the replay's JSON (docs/replay.md) held to
bounds, so "this job mix still fits our cluster" is a test.

    replay:
      expect:
        p90TimeToAdmission: "<= 600"                  # the issue's short names, see ALIASES
        timeToAdmissionByClusterQueue.team-a.max: "<= 1200"   # a dotted path into "summary"
        jobs.train-2.admissions.0.at: 100                      # or into "jobs"
        neverAdmitted: []
        clusterQueueClassesMinUsage.cq: 57                     # Kueue's rangespec.yaml keys
        wlClassesMaxAvgTimeToAdmissionMs: {small-required-rack: 297000}

A value is a bound (`<= 600`, `< 600`, `>= 50`, `> 50`, `== 3`, `!= 0`) or a plain value the
figure must equal; under a key of Kueue's perf-test rangespec.yaml (RANGESPEC) a plain
number is the bound its checker applies. A path that names no figure of the replay's result
is an error.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from harness.errors import InputError
from harness.scenario.keypath import KeyPath

ALIASES = {
    f"{p}TimeToAdmission": f"timeToAdmission.{p}" for p in ("p50", "p90", "p99", "max", "mean")
}
RANGESPEC = {
    "clusterQueueClassesMinUsage": ("kueuePerf.clusterQueueClasses", "usage", ">="),
    "wlClassesMaxAvgTimeToAdmissionMs": (
        "kueuePerf.workloadClasses", "averageTimeToAdmissionMs", "<="),
}  # fmt: skip
"""Kueue's test/performance/scheduler/checker/checker_test.go RangeSpec: per class, the figure
of the summary it reads (harness/replay/perf_summary.py) and how it compares: usage below
the minimum and a mean time to admission above the maximum fail."""
OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "<=": operator.le, ">=": operator.ge, "==": operator.eq, "!=": operator.ne,
    "<": operator.lt, ">": operator.gt,
}  # fmt: skip
_BOUND = re.compile(r"^\s*(<=|>=|==|!=|<|>)\s*(-?[0-9.]+(?:[eE][-+]?[0-9]+)?)\s*$")


@dataclass(frozen=True)
class Bound:
    """One expectation: the figure at `path` compared with `value` by `op`."""

    key: str
    path: tuple[str, ...]
    op: str
    value: Any

    def check(self, result: Mapping[str, Any]) -> str | None:
        """None when it holds, else one line: what was expected and what the replay gave."""
        found, actual = _lookup(result, self.path)
        if not found:
            return f"{self.key}: the replay has no such figure"
        try:
            holds = OPERATORS[self.op](actual, self.value)
        except TypeError:
            holds = False
        if holds:
            return None
        return f"{self.key}: expected {self.op} {self.value!r}, the replay gave {actual!r}"


def bounds(at: KeyPath) -> list[Bound]:
    """`replay.expect` of a stream scenario, validated (paths are checked when the replay
    ran: which ClusterQueues, classes and jobs exist is the stream's)."""
    out = []
    for key, value_at in at.mapping(tuple(at.value) if isinstance(at.value, dict) else ()).items():
        if not isinstance(key, str) or not key:
            at.fail("keys must be figure names (e.g. p90TimeToAdmission)")
        if key in RANGESPEC and isinstance(value_at.value, dict):
            out += [_bound(f"{key}.{c}", c_at) for c, c_at in value_at.mapping(
                tuple(value_at.value)).items()]  # fmt: skip
        else:
            out.append(_bound(key, value_at))
    if not out:
        at.fail("lists no figures (e.g. p90TimeToAdmission: '<= 600')")
    return out


def _bound(key: str, value_at: KeyPath) -> Bound:
    head, _, rest = key.partition(".")
    op = "=="
    if head in RANGESPEC and rest:
        under, figure, op = RANGESPEC[head]
        key_path = f"{under}.{rest}.{figure}"
    else:
        key_path = ALIASES.get(key, key)
    path = tuple(key_path.split("."))
    if path[0] != "jobs":
        path = ("summary", *path)
    value = value_at.value
    if isinstance(value, str) and (match := _BOUND.match(value)):
        op, number = match.group(1), float(match.group(2))
        value = int(number) if number.is_integer() else number
    elif isinstance(value, str) and value.strip()[:1] in "<>=!":
        value_at.fail(f"{value!r} is not a bound such as '<= 600' or '>= 50'")
    elif op != "==" and (isinstance(value, bool) or not isinstance(value, int | float)):
        value_at.fail(f"must be a number (the {op} bound Kueue's checker applies), got {value!r}")
    return Bound(key, path, op, value)


def unknown_paths(found: list[Bound], result: Mapping[str, Any]) -> list[str]:
    return [b.key for b in found if not _lookup(result, b.path)[0]]


def _lookup(result: Mapping[str, Any], path: tuple[str, ...]) -> tuple[bool, Any]:
    value: Any = result
    for part in path:
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return False, None
    return True, value


def failures(expected: list[Bound], result: Mapping[str, Any], file: str) -> list[str]:
    """The expectations the replay's result breaks, one line each; a path naming no figure
    is the file's error (InputError), not a failed expectation."""
    unknown = unknown_paths(expected, result)
    if unknown:
        raise InputError(
            file, f"replay.expect.{unknown[0]}",
            "names no figure of the replay (see docs/replay.md: summary keys such as "
            "timeToAdmission.p90, or jobs.<name>.finishedAt)",
        )  # fmt: skip
    return [line for b in expected if (line := b.check(result)) is not None]
