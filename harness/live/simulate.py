"""`python -m harness simulate`: what Kueue would do with a user's manifests on a snapshotted
cluster, without creating anything.

The snapshot's pending Workloads stay queued ahead; each manifest's Workload is then
submitted in order as a `submit` step (contract v2: each settles before the next), so the
preemptions a manifest causes are told apart from the next one's. The answer per manifest
is its state once all have settled: admitted or pending, flavor and placement per pod set,
Kueue's pending message, and the admitted Workloads it preempted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.live.submissions import Submission
from harness.results.outcome import Outcome
from harness.scenario.loader import scenario_from_data
from harness.scenario.model import Scenario

if TYPE_CHECKING:
    from harness.whatif import Whys

ENGINES = ("fit", "sim")
NOT_SEEN = Outcome(admitted=False)


@dataclass
class Prediction:
    outcome: Outcome
    preempts: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        o = self.outcome
        out: dict[str, Any] = {
            "admitted": o.admitted,
            "flavors": dict(o.flavors),
            "placement": {ps: dict(sorted(d.items())) for ps, d in o.placement.items()},
            "preempts": list(self.preempts),
            "message": o.message,
        }
        if o.quota_reserved:  # holds quota and placement, waits for its admission checks
            out["quotaReserved"] = True
        if o.unschedulable:
            out["unschedulable"] = dict(o.unschedulable)
        if self.notes:
            out["notes"] = list(self.notes)
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out


def scenario(snapshot: Mapping[str, Any], subs: Sequence[Submission], file: str) -> Scenario:
    """The snapshot with every submission as a `submit` step, in order."""
    data = {k: v for k, v in snapshot.items() if k not in ("expect", "steps")}  # read, not changed
    data["steps"] = [{"submit": s.workload} for s in subs if s.workload is not None]
    return scenario_from_data(data, file)


def run_engine(s: Scenario, engine: str) -> list[dict[str, Outcome]]:
    """Outcomes after the snapshot settled, then after each step."""
    if engine == "sim":
        from harness.backends.sim import SimBackend

        backend = SimBackend()
        try:
            seen = backend.run(s)
        finally:
            backend.close()
        return [seen.outcomes, *seen.steps]
    from harness.fit import fit

    result = fit(s)
    return [result.outcomes, *result.steps]


def predict(
    snapshot: Mapping[str, Any], subs: Sequence[Submission], engine: str, file: str
) -> dict[str, Prediction]:
    """Each submission's prediction, keyed by manifest name (NAME/GROUP for LWS groups)."""
    return predictions_of(run_engine(scenario(snapshot, subs, file), engine), snapshot, subs)


def predictions_of(
    states: Sequence[Mapping[str, Outcome]], snapshot: Mapping[str, Any], subs: Sequence[Submission]
) -> dict[str, Prediction]:
    """The predictions read off an engine's states (after the snapshot, then each submission)."""
    shown = shown_names(snapshot, subs)
    out: dict[str, Prediction] = {}
    step = 0
    for sub in subs:
        if sub.workload is None:
            assert sub.outcome is not None
            out[sub.key] = Prediction(sub.outcome, notes=list(sub.notes), warnings=sub.warnings)
            continue
        step += 1
        before, after = states[step - 1], states[step]
        victims = [
            shown.get(n, n)
            for n, o in after.items()
            if o.preempted and not before.get(n, NOT_SEEN).preempted
        ]
        final = states[-1].get(sub.workload["name"], NOT_SEEN)
        out[sub.key] = Prediction(final, sorted(victims), list(sub.notes), list(sub.warnings))
    return out


def shown_names(snapshot: Mapping[str, Any], subs: Sequence[Submission]) -> dict[str, str]:
    """Scenario workload name -> the name the user knows (the cluster's namespace/name for a
    snapshot's workloads, the manifest's for a submission)."""
    cluster_names = dict((snapshot.get("x-snapshot") or {}).get("workloads") or {})
    return {**cluster_names, **{s.workload["name"]: s.key for s in subs if s.workload}}


def explain(
    world: Scenario,
    states: Sequence[Mapping[str, Outcome]],
    snapshot: Mapping[str, Any],
    subs: Sequence[Submission],
    engine: str,
) -> Whys:
    """--explain: the fit model's verdicts and checked options for each submission in the
    final state (the fit model's own, also when another engine predicted)."""
    from harness.whatif import Whys

    final = states[-1] if engine == "fit" else run_engine(world, "fit")[-1]
    mine = [s.workload["name"] for s in subs if s.workload is not None]
    return Whys.of(world, final, mine, shown_names(snapshot, subs))


def notes_by_workload(subs: Sequence[Submission], whys: Whys | None) -> dict[str, list[str]]:
    """Scenario workload name -> what the page says under it: warnings, notes, and with
    --explain the verdict and the checked options."""
    explained = whys.json() if whys is not None else {}
    out: dict[str, list[str]] = {}
    for sub in subs:
        if sub.workload is not None:
            lines = (explained.get(sub.key) or {}).get("lines") or []
            out[sub.workload["name"]] = [*sub.warnings, *sub.notes, *lines]
    return out


def to_json(predictions: Mapping[str, Prediction], whys: Whys | None = None) -> dict[str, Any]:
    out = {key: p.to_json() for key, p in predictions.items()}
    for key, explained in (whys.json() if whys is not None else {}).items():
        if key in out:
            out[key]["explain"] = explained
    return out


def render_text(predictions: Mapping[str, Prediction]) -> str:
    lines = []
    for key, p in predictions.items():
        o = p.outcome
        if o.admitted:
            flavors = sorted(set(o.flavors.values()))
            lines.append(f"{key}: admitted" + (f" on {', '.join(flavors)}" if flavors else ""))
            for pod_set, per_domain in o.placement.items():
                spread = ", ".join(f"{d}={n}" for d, n in sorted(per_domain.items()))
                lines.append(f"  {pod_set}: {spread}")
            for pod_set, pods in o.unschedulable.items():
                why = o.unschedulable_reasons.get(pod_set, "")
                lines.append(
                    f"  unschedulable: {pod_set}: {pods} pod(s) would never run"
                    + (f" ({why})" if why else "")
                )
        elif o.quota_reserved:
            flavors = sorted(set(o.flavors.values()))
            lines.append(
                f"{key}: quota reserved on {', '.join(flavors)}, waits for its admission checks"
            )
            for pod_set, per_domain in o.placement.items():
                spread = ", ".join(f"{d}={n}" for d, n in sorted(per_domain.items()))
                lines.append(f"  {pod_set}: {spread}")
        else:
            lines.append(f"{key}: pending: {o.message or '(no message: not evaluated yet)'}")
        if p.preempts:
            lines.append(f"  preempts: {', '.join(p.preempts)}")
        lines += [f"  note: {n}" for n in p.notes]
    return "\n".join(lines)
