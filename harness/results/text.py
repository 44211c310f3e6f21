"""Outcomes as text, one line a workload and one a pod set: what `oracle --format text`, `run`
and `up` print."""

from __future__ import annotations

from harness.results.outcome import Outcome, replaced_to_json


def render_text(outcomes: dict[str, Outcome]) -> str:
    lines = []
    for name, outcome in outcomes.items():
        if outcome.admitted:
            lines.append(f"{name}: admitted")
            for pod_set, per_domain in outcome.placement.items():
                spread = ", ".join(f"{d}={n}" for d, n in sorted(per_domain.items()))
                lines.append(f"  {pod_set}: {spread}")
            for pod_set, count in outcome.unschedulable.items():
                why = outcome.unschedulable_reasons.get(pod_set, "")
                lines.append(f"  {pod_set}: {count} pod(s) can never run: {why}")
            for pod_set, per_node in replaced_to_json(outcome.replaced).items():
                moved = ", ".join(
                    f"{old} -> {new if isinstance(new, str) else ' + '.join(new)}"
                    for old, new in per_node.items()
                )
                lines.append(f"  {pod_set}: replaced {moved}")
            for pod_set, drifted in outcome.drift.items():
                spread = ", ".join(f"{d}={n}" for d, n in sorted(drifted.items()))
                lines.append(f"  {pod_set}: drift (running outside the assignment) {spread}")
        else:
            state = "rejected" if outcome.rejected else "pending"
            lines.append(f"{name}: {state}: {outcome.message}")
        if outcome.evicted is not None:
            lines.append(f"  evicted: {outcome.evicted.reason}: {outcome.evicted.message}")
    return "\n".join(lines)
