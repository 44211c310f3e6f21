"""What happened to a workload: the common currency of the oracle and every backend."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

Placement = Mapping[str, Mapping[str, int]]


@dataclass(frozen=True)
class Outcome:
    """Admitted with a placement (pod set -> lowest-level domain -> pods), or pending/rejected.

    `unschedulable`: per pod set, admitted pods that never run (kube-scheduler cannot bind
    them, or Kueue's ungater cannot release them), only counts above 0, with one line on why
    in `unschedulable_reasons`. `binding_observed` is False where nobody watched the pods
    bind (the sim, a Workload built without pods): `unschedulable` then means nothing.
    `flavors`: pod set -> the ResourceFlavor it was admitted on (empty where the backend does
    not report it); `preempted`: it was evicted by preemption at some point."""

    admitted: bool
    placement: Placement = field(default_factory=dict)
    message: str = ""
    rejected: bool = False
    unschedulable: Mapping[str, int] = field(default_factory=dict)
    unschedulable_reasons: Mapping[str, str] = field(default_factory=dict)
    binding_observed: bool = True
    flavors: Mapping[str, str] = field(default_factory=dict)
    preempted: bool = False

    def to_json(self) -> dict[str, Any]:
        if self.admitted:
            result: dict[str, Any] = {
                "admitted": True,
                "placement": {ps: dict(sorted(d.items())) for ps, d in self.placement.items()},
            }
            if self.unschedulable:
                result["unschedulable"] = dict(self.unschedulable)
                result["unschedulableReasons"] = dict(self.unschedulable_reasons)
            if not self.binding_observed:
                result["bindingObserved"] = False
            if self.flavors:
                result["flavors"] = dict(self.flavors)
            if self.preempted:
                result["preempted"] = True
            return result
        out: dict[str, Any] = {"admitted": False, "message": self.message}
        if self.rejected:
            out["rejected"] = True
        if self.preempted:
            out["preempted"] = True
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Outcome:
        placement = data.get("placement") or {}
        return cls(
            admitted=bool(data.get("admitted")),
            placement={ps: {k: int(v) for k, v in d.items()} for ps, d in placement.items()},
            message=str(data.get("message") or ""),
            rejected=bool(data.get("rejected", False)),
            unschedulable={k: int(v) for k, v in (data.get("unschedulable") or {}).items()},
            unschedulable_reasons={
                k: str(v) for k, v in (data.get("unschedulableReasons") or {}).items()
            },
            binding_observed=bool(data.get("bindingObserved", True)),
            flavors={k: str(v) for k, v in (data.get("flavors") or {}).items()},
            preempted=bool(data.get("preempted", False)),
        )


Outcomes = dict[str, Outcome]


def outcomes_to_json(outcomes: Mapping[str, Outcome]) -> dict[str, Any]:
    return {name: outcome.to_json() for name, outcome in outcomes.items()}
