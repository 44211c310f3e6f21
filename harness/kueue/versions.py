"""Kueue versions as a scenario names them: one version (v0.19.2), a list, or a range
(">=v0.18.2", ">=v0.17.1 <v0.19.1"). Pure: the fit model and the loader both read it.

A range is comparisons joined by spaces or commas, all of which must hold; a list is the
union of its items (each a version or a range). docs/scenario-extensions.md, "Kueue versions".
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

VersionKey = tuple[int, int, int]

KUEUE_VERSIONS = ("v0.17.1", "v0.18.2", "v0.19.2")
"""The versions the harness runs (the embedded cluster's harness/toolchain/pins.py
KUEUE_JOBSET, which the loader does not import: the toolchain package costs ~0.4 s;
tests/kueue/test_kueue_versions.py checks the two agree)."""
DEFAULT_KUEUE = "v0.19.2"
"""The version a scenario runs on unless it or the command says otherwise (PINS.kueue)."""

_VERSION = re.compile(r"v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)")
_COMPARISON = re.compile(r"(?P<op>[<>=!]*)\s*(?P<version>\S+)")
_OPS: dict[str, Callable[[VersionKey, VersionKey], bool]] = {
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
    "<": operator.lt,
    "==": operator.eq,
}


class VersionSpecError(ValueError):
    """A malformed version, list or range (the message names the bad part, not the file)."""


def version_key(text: str) -> VersionKey:
    """(major, minor, patch) of 'vX.Y.Z'; raises VersionSpecError on anything else."""
    match = _VERSION.fullmatch(text)
    if match is None:
        raise VersionSpecError(
            f"{text!r} is not a Kueue version: write vMAJOR.MINOR.PATCH, e.g. v0.19.2"
        )
    major, minor, patch = (int(g) for g in match.groups())
    return (major, minor, patch)


def before(version: str | None, fixed_in: str) -> bool:
    """Whether `version` predates `fixed_in` (None: the newest, so never before)."""
    return version is not None and version_key(version) < version_key(fixed_in)


@dataclass(frozen=True)
class _Range:
    """Comparisons that must all hold; an exact version is one '=='."""

    checks: tuple[tuple[str, VersionKey], ...]

    def includes(self, key: VersionKey) -> bool:
        return all(_OPS[op](key, bound) for op, bound in self.checks)

    def empty(self) -> bool:
        """No version satisfies it (e.g. '>=v0.19.0 <v0.18.0'): the tightest lower bound
        passes the tightest upper one (at equal versions an exclusive bound is the tighter)."""
        lows = [(b, op != ">") for op, b in self.checks if op in (">=", ">", "==")]
        highs = [(b, op != "<") for op, b in self.checks if op in ("<=", "<", "==")]
        if not lows or not highs:
            return False
        low = max(lows, key=lambda bound: (bound[0], not bound[1]))
        high = min(highs)
        return low[0] > high[0] or (low[0] == high[0] and not (low[1] and high[1]))


@dataclass(frozen=True)
class KueueVersions:
    """The versions a `kueue:` value (or an expectByVersion key) includes."""

    text: str
    ranges: tuple[_Range, ...]
    exact: str | None = None
    """The one version named when the value is a plain version."""

    def includes(self, version: str) -> bool:
        key = version_key(version)
        return any(r.includes(key) for r in self.ranges)

    def named(self) -> tuple[str, ...]:
        """The versions the value spells out (bounds and list items), for overlap checks."""
        found = re.findall(r"v\d+\.\d+\.\d+", self.text)
        return tuple(dict.fromkeys(found))

    def __str__(self) -> str:
        return self.text


def _parse_range(text: str) -> _Range:
    parts = [p for p in re.split(r"[\s,]+", text.strip()) if p]
    # '>= v0.18.2' is one comparison written with a space.
    joined: list[str] = []
    for part in parts:
        if joined and joined[-1] in _OPS:
            joined[-1] += part
        else:
            joined.append(part)
    if not joined:
        raise VersionSpecError("an empty range names no version")
    checks = []
    for part in joined:
        match = _COMPARISON.fullmatch(part)
        assert match is not None  # \S+ after any operator characters always matches
        op = match["op"] or "=="
        if op not in _OPS:
            raise VersionSpecError(
                f"{part!r}: unknown comparison {op!r}; use >=, >, <=, < or == before a version"
            )
        checks.append((op, version_key(match["version"])))
    found = _Range(tuple(checks))
    if found.empty():
        raise VersionSpecError(f"{text!r} includes no version")
    return found


def parse_versions(value: object) -> KueueVersions:
    """A version, a range or a list of them; raises VersionSpecError naming the problem."""
    if isinstance(value, str):
        if _VERSION.fullmatch(value.strip()):
            version = value.strip()
            return KueueVersions(version, (_parse_range(version),), exact=version)
        return KueueVersions(value, (_parse_range(value),))
    if isinstance(value, list):
        if not value:
            raise VersionSpecError("an empty list names no version")
        ranges: list[_Range] = []
        seen: set[str] = set()
        for index, item in enumerate(value):
            if not isinstance(item, str):
                raise VersionSpecError(
                    f"item {index} must be a version or a range, got {type(item).__name__}"
                )
            if item in seen:
                raise VersionSpecError(f"{item!r} is listed twice")
            seen.add(item)
            ranges.extend(parse_versions(item).ranges)
        return KueueVersions(", ".join(value), tuple(ranges))
    raise VersionSpecError(
        "must be a version (v0.19.2), a range ('>=v0.18.2') or a list of them, "
        f"got {type(value).__name__}"
    )


def newest(versions: Iterable[str]) -> str | None:
    """The highest of these versions, or None."""
    return max(versions, key=version_key, default=None)
