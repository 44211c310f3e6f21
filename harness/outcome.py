"""What happened to a workload: the common currency of the oracle and every backend."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

Placement = Mapping[str, Mapping[str, int]]


@dataclass(frozen=True)
class Outcome:
    """Admitted with a placement (pod set -> lowest-level domain -> pods), or pending/rejected."""

    admitted: bool
    placement: Placement = field(default_factory=dict)
    message: str = ""
    rejected: bool = False

    def to_json(self) -> dict[str, Any]:
        if self.admitted:
            return {
                "admitted": True,
                "placement": {ps: dict(sorted(d.items())) for ps, d in self.placement.items()},
            }
        out: dict[str, Any] = {"admitted": False, "message": self.message}
        if self.rejected:
            out["rejected"] = True
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Outcome:
        placement = data.get("placement") or {}
        return cls(
            admitted=bool(data.get("admitted")),
            placement={ps: {k: int(v) for k, v in d.items()} for ps, d in placement.items()},
            message=str(data.get("message") or ""),
            rejected=bool(data.get("rejected", False)),
        )


Outcomes = dict[str, Outcome]


def outcomes_to_json(outcomes: Mapping[str, Outcome]) -> dict[str, Any]:
    return {name: outcome.to_json() for name, outcome in outcomes.items()}
