"""`--explain-domains`: free capacity per domain at each level and why candidates were
rejected; the flavors tried per pod set and the victims chosen.

Reads what the model just evaluated; it adds nothing to the decision itself. `--explain`'s
verdicts and what-if options are harness/whatif, which runs the model again on changed
scenarios.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from harness.fit.flavors import FIT, NO_CANDIDATES, NO_FIT, PREEMPT, RECLAIM, Assignment, Mode
from harness.fit.tree import Domain, Tree
from harness.fit.victims import HUMAN_REASONS, Target
from harness.k8s.quantity import format_kueue_units
from harness.scenario.model import Scenario, Workload


@dataclass
class Explainer:
    lines: list[str] = field(default_factory=list)

    def trace(self, label: str, tree: Tree | None, verdict: str) -> None:
        if tree is None:
            self.lines += _verdict_lines(label, verdict)
            return
        self.lines.append(f"-- {label}: {verdict} (pods and slices that fit, per domain)")
        for name, reason in sorted(tree.dropped.items()):
            self.lines.append(f"   node {name}: not in the topology: {reason}")
        levels = tree.topology.levels
        for depth, per_level in enumerate(tree.per_level):
            self.lines.append(f"   level {levels[depth]}:")
            for values, domain in sorted(per_level.items()):
                self.lines.append(f"     {'/'.join(values)}: {_describe(tree, domain)}")

    def render(self) -> str:
        return "\n".join(self.lines)


def _verdict_lines(label: str, verdict: str) -> list[str]:
    """`== NAME: VERDICT`; a placement the model hands over as a Python mapping's text
    (`admitted: {'main': {'n1': 4}}`) is written as YAML beneath it."""
    head, _, rest = verdict.partition(": ")
    try:
        placement = ast.literal_eval(rest) if rest.startswith("{") else None
    except (ValueError, SyntaxError):
        placement = None
    if not isinstance(placement, dict):
        return [f"== {label}: {verdict}"]
    lines = [f"== {label}: {head}"]
    for pod_set, per_domain in placement.items():
        lines.append(f"   {pod_set}:")
        lines += [f"     {domain}: {pods}" for domain, pods in sorted(dict(per_domain).items())]
    return lines


def _describe(tree: Tree, domain: Domain) -> str:
    text = f"{domain.pods} pod(s), {domain.slices} slice(s)"
    if domain.leaders:
        text += f", leader fits ({domain.pods_wl} pod(s) beside it)"
    leaf = domain.leaf
    if leaf is None:
        return text
    free = ", ".join(f"{r}={format_kueue_units(r, v)}" for r, v in sorted(leaf.free().items()))
    text += f"; free {free}"
    if leaf.key in tree.excluded:
        text += f"; REJECTED: {tree.excluded[leaf.key]}"
    return text


_MODES = {
    NO_FIT: "NoFit",
    NO_CANDIDATES: "Preempt (no candidates)",
    PREEMPT: "Preempt",
    RECLAIM: "Preempt (reclaim within the cohort)",
    FIT: "Fit",
}


def describe_mode(mode: Mode) -> str:
    return _MODES[mode.preemption] + (", borrowing" if mode.borrow else "")


def nomination(scenario: Scenario, w: Workload, a: Assignment, targets: list[Target]) -> list[str]:
    """Each flavor looked at for each pod set (its mode, why it was passed over),
    the flavor chosen, and the victims chosen with their reasons."""
    lines = []
    for ps in w.pod_sets:
        for attempt in a.attempts.get(ps.name, []):
            why = f": {'; '.join(attempt.reasons)}" if attempt.reasons else ""
            lines.append(
                f"pod set {ps.name}: flavor {attempt.flavor}: {describe_mode(attempt.mode)}{why}"
            )
        chosen = a.pod_set_flavor(ps.name)
        mode = a.pod_set_mode(ps.name)
        lines.append(
            f"pod set {ps.name}: "
            + (f"chose {chosen} ({describe_mode(mode)})" if chosen else "no flavor")
        )
    if a.error is not None:
        lines.append(f"pod set {a.error[0]}: {a.error[1]}")
    for t in targets:
        held = t.holding
        lines.append(
            f"victim {held.name} (ClusterQueue {held.cq}, priority {held.priority}): "
            f"{HUMAN_REASONS[t.reason]}"
        )
    return lines
