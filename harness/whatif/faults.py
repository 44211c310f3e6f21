"""`--explain` after a fault step: what the fit model's fault rules decided for each workload
and why (the notes harness.fit.faults recorded while deciding), then where an evicted
workload went."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.fit.faultnotes import Note
from harness.fit.faults import StepReport
from harness.results.outcome import Outcome


@dataclass
class FaultStory:
    """One workload's notes of one step and its outcome after the step."""

    notes: list[Note]
    outcome: Outcome | None

    def lines(self, shown: str) -> list[str]:
        who = f'workload "{shown}"'
        out = [f"{who}: {_line(n)}" for n in self.notes]
        o = self.outcome
        if o is None or o.evicted is None:
            if o is not None and o.admitted and not any(n.kind == "replaced" for n in self.notes):
                out.append(f"{who}: Kueue kept its assignment ({_where(o)}).")
            return out
        out.append(f"{who}: Kueue evicted it ({o.evicted.reason}): {o.evicted.message}.")
        if o.admitted:
            out.append(f"{who}: requeued at once and admitted again: {_where(o)}.")
        else:
            out.append(f"{who}: requeued at once; it is pending. Kueue says: {o.message}")
        return out

    def json(self, shown: str) -> dict[str, Any]:
        return {"notes": [n.json() for n in self.notes], "lines": self.lines(shown)}


def _line(n: Note) -> str:
    if n.kind == "failed":
        return f"node {n.node} failed for it: {n.text}."
    if n.kind in ("kept", "recovered"):
        return f"node {n.node} {'is ' if n.kind == 'recovered' else ''}{n.text}."
    if n.pod_set is not None:
        return f'pod set "{n.pod_set}": {n.text}.'
    return f"{n.text}."


def _where(o: Outcome) -> str:
    return "; ".join(
        f"{ps} on {', '.join(f'{d}={n}' for d, n in sorted(spread.items()))}"
        for ps, spread in o.placement.items()
    )


def stories(report: StepReport | None, state: Mapping[str, Outcome]) -> dict[str, FaultStory]:
    """Per workload the step's notes (in the order decided) with its outcome after it."""
    if report is None:
        return {}
    return {name: FaultStory(notes, state.get(name)) for name, notes in report.notes.items()}
