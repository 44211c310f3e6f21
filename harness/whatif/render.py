"""Explanations as plain words for platform engineers (text) and as JSON (`"explain"`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from harness.fit.faults import StepReport
from harness.k8s.quantity import format_kueue_units
from harness.results.outcome import Outcome
from harness.scenario.model import Scenario
from harness.whatif.faults import FaultStory, stories
from harness.whatif.ledger import per_pod
from harness.whatif.options import Option
from harness.whatif.verdict import Short, Verdict, best_text, level_word, need_text
from harness.whatif.workloads import Explanation, explain


@dataclass
class Whys:
    """The explanations of one state, with each workload's name as the user knows it."""

    explanations: dict[str, Explanation]
    shown: Mapping[str, str] = field(default_factory=dict)
    flavors: bool = False
    faults: dict[str, FaultStory] = field(default_factory=dict)
    """What a fault step's rules decided per workload, and why (version 1)."""

    @classmethod
    def of(
        cls,
        scenario: Scenario,
        final: Mapping[str, Outcome],
        names: Sequence[str] | None = None,
        shown: Mapping[str, str] | None = None,
    ) -> Whys:
        several = len([f for f in scenario.resource_flavors if f.topology_name]) > 1
        return cls(explain(scenario, final, names, shown), shown or {}, several)

    @classmethod
    def per_state(
        cls,
        scenario: Scenario,
        states: Sequence[Mapping[str, Outcome]],
        shown: Mapping[str, str] | None = None,
        reports: Sequence[StepReport] = (),
    ) -> list[Whys]:
        """One Whys per state (after the submissions, after each step), each on the scenario
        up to that step; a workload is explained where its outcome changed, and a waiting one
        again in the last state (the world around it changed since). `reports`: the fit
        model's fault decisions per step, told for each workload they concern."""
        out = []
        for index, state in enumerate(states):
            before = states[index - 1] if index else {}
            last = index == len(states) - 1
            names = [
                n
                for n, o in state.items()
                if before.get(n) != o or (last and not o.admitted and index)
            ]
            upto = replace(scenario, steps=scenario.steps[:index])
            whys = cls.of(upto, state, names, shown)
            report = reports[index - 1] if 0 < index <= len(reports) else None
            whys.faults = stories(report, state)
            out.append(whys)
        return out

    def text(self) -> str:
        lines = [
            line
            for name, story in self.faults.items()
            for line in story.lines(self.shown.get(name, name))
        ]
        explained = render_text(self.explanations, self.shown, self.flavors)
        return "\n".join([*lines, explained] if explained else lines)

    def json(self) -> dict[str, dict[str, Any]]:
        """Shown name -> the `"explain"` object; after a fault step, `"faults"` in it."""
        out: dict[str, dict[str, Any]] = {}
        for name, e in self.explanations.items():
            key = self.shown.get(name, name)
            out[key] = to_json(e, key, self.flavors, self.shown)
        for name, story in self.faults.items():
            key = self.shown.get(name, name)
            out.setdefault(key, {})["faults"] = story.json(key)
        return out


def lines_of(
    e: Explanation, shown: str, flavors: bool, shown_names: Mapping[str, str] | None = None
) -> list[str]:
    """The explanation of one workload; `shown`: its name as the user knows it
    (`shown_names`: every workload's)."""
    shown_names = shown_names or {}
    who = f'workload "{shown}"'
    if e.state == "rejected":
        return [f"{who} is rejected by Kueue's webhook: {e.message}"]
    out: list[str] = []
    for v in e.verdicts:
        need = need_text(v, flavors)
        if e.state == "spread":
            word = level_word(v.level)
            out.append(
                f'{who} pod set "{v.pod_set.name}" was admitted over {len(v.spans)} {word}s '
                f"({', '.join(v.spans)}), not one: {need}."
            )
            out.append("  " + best_text(v).replace(" fits ", " would have held ", 1))
        elif v.fits >= v.count and e.quota_held_by:
            out.append(f'{who} pod set "{v.pod_set.name}" is pending on quota: {need}.')
            out.append("  " + best_text(v))
        elif v.fits >= v.count:
            out.append(f'{who} pod set "{v.pod_set.name}" would fit on its own: {need}.')
        else:
            out.append(f'{who} pod set "{v.pod_set.name}" is pending: {need}.')
            out.append("  " + best_text(v))
    if e.state == "pending" and e.message:
        out.append(f"  Kueue says: {e.message}")
    elif e.state == "pending":
        out.append(
            "  Kueue has not evaluated it (no message): it waits behind a workload queued "
            "ahead of it (StrictFIFO, or parked beside an identical one)."
        )
    alone = [v for v in e.verdicts if v.fits >= v.count]
    if e.state == "pending" and len(e.verdicts) > 1 and len(alone) == len(e.verdicts):
        out.append(
            "  Each pod set fits alone, not all together: Kueue places them one after "
            "another, each on what the earlier ones left."
        )
    if e.quota_held_by:
        held = ", ".join(h.text() for h in e.quota_held_by[:5])
        out.append(f"  ClusterQueue {e.queue}'s quota is held by {held}.")
    head = "Would fit if" if e.state == "pending" else _one_domain(e)
    runs = f"{e.runs} fit-model run{'s' if e.runs != 1 else ''}"
    if e.options:
        numbered = "; ".join(
            f"({i}) {option_text(o, shown_names)}" for i, o in enumerate(e.options, 1)
        )
        out.append(f"  {head}: {numbered}.")
        out.append(f"  (each option checked: {runs}, at most {e.limit})")
    else:
        out.append(
            f"  No change tried makes it fit ({runs}: freeing what holds its nodes or quota, "
            "preferred topology, fewer pods, another flavor)."
        )
    return out


def option_text(o: Option, shown: Mapping[str, str]) -> str:
    """The option in words, with the workloads the model preempts to admit it that way."""
    if not o.preempts:
        return o.text
    names = ", ".join(f'"{shown.get(n, n)}"' for n in o.preempts[:3])
    more = f" and {len(o.preempts) - 3} more" if len(o.preempts) > 3 else ""
    return f"{o.text} (preempting {names}{more})"


def _one_domain(e: Explanation) -> str:
    return f"Would have fit in one {level_word(e.verdicts[0].level)} if"


def render_text(
    explanations: Mapping[str, Explanation], shown: Mapping[str, str], flavors: bool
) -> str:
    """All explanations; `flavors`: name the flavor in verdicts (several flavors exist)."""
    lines: list[str] = []
    for name, e in explanations.items():
        lines += lines_of(e, shown.get(name, name), flavors, shown)
    return "\n".join(lines)


def to_json(
    e: Explanation, shown: str, flavors: bool, shown_names: Mapping[str, str] | None = None
) -> dict[str, Any]:
    return {
        "state": e.state,
        "podSets": [_verdict_json(v) for v in e.verdicts],
        "options": [_option_json(o, shown_names or {}) for o in e.options],
        "quotaHeldBy": [h.shown or h.name for h in e.quota_held_by],
        "runs": e.runs,
        "maxRuns": e.limit,
        "lines": lines_of(e, shown, flavors, shown_names),
    }


def _verdict_json(v: Verdict) -> dict[str, Any]:
    units = per_pod(v.pod_set)
    units.pop("pods", None)
    out: dict[str, Any] = {
        "podSet": v.pod_set.name,
        "count": v.count,
        "perPod": {r: format_kueue_units(r, n) for r, n in sorted(units.items())},
        "mode": v.mode,
        "level": v.level,
        "flavor": v.flavor,
        "bestDomain": v.domain[-1] if v.domain else None,
        "fits": v.fits,
        "short": [_short_json(s) for s in v.short],
    }
    if v.spans:
        out["spans"] = list(v.spans)
    return out


def _short_json(s: Short) -> dict[str, Any]:
    where = {"node": s.node} if s.level is None else {"domain": s.node, "level": s.level}
    if s.why:
        return {**where, "leftOut": s.why}
    r = s.resource
    return {
        **where,
        "resource": r,
        "free": format_kueue_units(r, s.free),
        "capacity": format_kueue_units(r, s.capacity),
        "heldBy": [
            {"kind": h.kind, "name": h.shown or h.name, "amount": format_kueue_units(r, n)}
            for h, n in s.holders
        ],
    }


def _option_json(o: Option, shown: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": o.kind, "text": option_text(o, shown)}
    if o.pod_set is not None:
        out["podSet"] = o.pod_set
    if o.free:
        out["free"] = [{"kind": h.kind, "name": h.shown or h.name} for h in o.free]
    if o.count is not None:
        out["count"] = o.count
        out["largest"] = o.largest
    if o.flavor is not None:
        out["flavor"] = o.flavor
    if o.spans:
        out["spans"] = list(o.spans)
    out["placement"] = {ps: dict(sorted(d.items())) for ps, d in o.placement.items()}
    out["preempts"] = [shown.get(n, n) for n in o.preempts]
    return out
