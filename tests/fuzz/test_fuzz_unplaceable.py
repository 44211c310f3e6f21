"""Fuzzing against a cluster: admitted-but-unplaceable workloads are Kueue findings, told
apart from disagreements between the fit model and Kueue."""

from __future__ import annotations

from harness.fuzz.runner import Verdict
from harness.results.comparison import against_prediction
from harness.results.outcome import Outcome


def verdict(predicted: dict[str, Outcome], observed: dict[str, Outcome]) -> Verdict:
    return Verdict(predicted, observed, against_prediction(predicted, observed))


PLACED = {"main": {"r1": 2}}


def test_unplaceable_pods_the_model_predicted_are_a_finding_only() -> None:
    both = Outcome(True, PLACED, unschedulable={"main": 1})
    v = verdict({"w": both}, {"w": both})
    assert v.unplaceable == {"w": {"main": 1}}
    assert v.predicted_unplaceable and not v.disagrees


def test_unplaceable_pods_the_model_missed_are_a_finding_not_a_disagreement() -> None:
    v = verdict(
        {"w": Outcome(True, PLACED)}, {"w": Outcome(True, PLACED, unschedulable={"main": 1})}
    )
    assert v.lines == ["w/main: predicted 0 unschedulable pod(s), observed 1"]
    assert v.unplaceable and not v.predicted_unplaceable and not v.disagrees
    assert v.kinds() == []


def test_pods_the_model_wrongly_calls_unplaceable_are_a_disagreement() -> None:
    v = verdict(
        {"w": Outcome(True, PLACED, unschedulable={"main": 1})}, {"w": Outcome(True, PLACED)}
    )
    assert not v.unplaceable and v.disagrees


def test_a_placement_difference_stays_a_disagreement_beside_a_finding() -> None:
    other = {"main": {"r2": 2}}
    v = verdict(
        {"w": Outcome(True, other, unschedulable={"main": 1})},
        {"w": Outcome(True, PLACED, unschedulable={"main": 1})},
    )
    assert v.unplaceable and v.disagrees and v.kinds() == ["placement"]


def test_the_sim_is_never_judged_on_binding() -> None:
    v = verdict(
        {"w": Outcome(True, PLACED, unschedulable={"main": 1})},
        {"w": Outcome(True, PLACED, binding_observed=False)},
    )
    assert v.lines == [] and not v.unplaceable
