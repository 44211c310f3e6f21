"""What happened to a workload: the common currency of the oracle and every backend."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.scenario.model import Eviction, Replaced

Placement = Mapping[str, Mapping[str, int]]


@dataclass(frozen=True)
class Outcome:
    """Admitted with a placement (pod set -> lowest-level domain -> pods), or pending/rejected.

    `unschedulable`: per pod set, admitted pods that never run (kube-scheduler cannot bind
    them, or Kueue's ungater cannot release them), only counts above 0, with one line on why
    in `unschedulable_reasons`. `binding_observed` is False where nobody watched the pods
    bind (the sim, a Workload built without pods): `unschedulable` then means nothing.
    `flavors`: pod set -> the ResourceFlavor it was admitted on (empty where the backend does
    not report it); `preempted`: it was evicted by preemption at some point.

    After a fault step (docs/scenario-extensions.md): `replaced`, per pod set, each node Kueue
    replaced during that step -> the nodes that took its pods; `evicted`, an eviction other
    than by preemption during that step (reason and Kueue's message), whether or not it was
    readmitted since; `drift`, per pod set, the workload's running pods on nodes its
    assignment no longer names (only where pods are watched).

    `quota_reserved`: not admitted, but holding quota and its topology assignment while an
    admission check is not Ready (QuotaReserved True, Admitted False): `placement` and
    `flavors` are the reservation's, `message` empty (Kueue writes none).

    `message_race` (a prediction only): the message Kueue may show instead of `message`,
    where which one it writes is a race of its controllers (rules §8), e.g. a workload
    waiting when its ClusterQueue is stopped (harness/fit/cq_stop.py)."""

    admitted: bool
    placement: Placement = field(default_factory=dict)
    message: str = ""
    rejected: bool = False
    unschedulable: Mapping[str, int] = field(default_factory=dict)
    unschedulable_reasons: Mapping[str, str] = field(default_factory=dict)
    binding_observed: bool = True
    flavors: Mapping[str, str] = field(default_factory=dict)
    preempted: bool = False
    replaced: Replaced = field(default_factory=dict)
    evicted: Eviction | None = None
    drift: Placement = field(default_factory=dict)
    quota_reserved: bool = False
    message_race: str | None = None

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
            if self.replaced:
                result["replaced"] = replaced_to_json(self.replaced)
            if self.drift:
                result["drift"] = {ps: dict(sorted(d.items())) for ps, d in self.drift.items()}
            return result | self._eviction_json()
        out: dict[str, Any] = {"admitted": False, "message": self.message}
        if self.message_race is not None:
            out["messageRace"] = self.message_race
        if self.quota_reserved:
            out["quotaReserved"] = True
            out["placement"] = {ps: dict(sorted(d.items())) for ps, d in self.placement.items()}
            if self.flavors:
                out["flavors"] = dict(self.flavors)
        if self.rejected:
            out["rejected"] = True
        if self.preempted:
            out["preempted"] = True
        return out | self._eviction_json()

    def _eviction_json(self) -> dict[str, Any]:
        if self.evicted is None:
            return {}
        return {"evicted": {"reason": self.evicted.reason, "message": self.evicted.message}}

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
            replaced={
                ps: {old: _nodes(new) for old, new in per_node.items()}
                for ps, per_node in (data.get("replaced") or {}).items()
            },
            evicted=_eviction(data.get("evicted")),
            drift={
                ps: {k: int(v) for k, v in d.items()} for ps, d in (data.get("drift") or {}).items()
            },
            quota_reserved=bool(data.get("quotaReserved", False)),
            message_race=None if data.get("messageRace") is None else str(data["messageRace"]),
        )


def replaced_to_json(replaced: Replaced) -> dict[str, dict[str, str | list[str]]]:
    """A node that went to one node is written as its name, to several as a sorted list (the
    form a scenario's `replaced` takes)."""
    return {
        ps: {old: new[0] if len(new) == 1 else sorted(new) for old, new in sorted(d.items())}
        for ps, d in replaced.items()
    }


def _nodes(value: Any) -> tuple[str, ...]:
    return (str(value),) if isinstance(value, str) else tuple(sorted(str(v) for v in value))


def _eviction(data: Any) -> Eviction | None:
    if not data:
        return None
    return Eviction(reason=str(data.get("reason") or ""), message=str(data.get("message") or ""))


Outcomes = dict[str, Outcome]


def outcomes_to_json(outcomes: Mapping[str, Outcome]) -> dict[str, Any]:
    return {name: outcome.to_json() for name, outcome in outcomes.items()}
