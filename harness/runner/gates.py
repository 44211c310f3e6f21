"""Kueue feature gates: parsing `--feature-gates A=true,B=false` and what a scenario needs."""

from __future__ import annotations

from collections.abc import Mapping

from harness.errors import HarnessError
from harness.kueue_gates import KUEUE_V0_19_GATES


class GateError(HarnessError):
    """A malformed or unknown feature gate on the command line."""


def parse(text: str | Mapping[str, bool] | None) -> dict[str, bool]:
    """`A=true,B=false` -> {"A": True, "B": False}; a mapping passes through."""
    if not text:
        return {}
    if isinstance(text, Mapping):
        return {str(k): bool(v) for k, v in text.items()}
    out: dict[str, bool] = {}
    for item in (p.strip() for p in text.split(",")):
        if not item:
            continue
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip().lower()
        if not sep or value not in ("true", "false"):
            raise GateError(f"--feature-gates: {item!r}: expected NAME=true or NAME=false")
        if name not in KUEUE_V0_19_GATES:
            raise GateError(f"--feature-gates: {name!r} is not a Kueue v0.19 feature gate")
        out[name] = value == "true"
    return out


def needed(cli: Mapping[str, bool], scenario: Mapping[str, bool]) -> dict[str, bool]:
    """Command-line gates apply to every scenario; a scenario's own value wins on conflict,
    because its expectations were written for that value."""
    return dict(sorted({**cli, **scenario}.items()))
