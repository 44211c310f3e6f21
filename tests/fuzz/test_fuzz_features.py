"""The version-2 fuzz world grows issue 29's features (harness/fuzz/world_features.py), every
case still loads, and the fuzzer compares the outcomes after each step too."""

from __future__ import annotations

from collections import Counter

from harness.fuzz.runner import Verdict
from harness.fuzz.world_features import FEATURES, features
from harness.fuzz.world_v2 import generate_v2
from harness.results.outcome import Outcome
from harness.scenario.loader import scenario_from_data


def test_each_feature_appears_in_a_good_share_of_loadable_cases() -> None:
    seen: Counter[str] = Counter()
    for index in range(400):
        data = generate_v2(3, index)
        scenario_from_data(data, f"case {index}")  # raises if the loader refuses it
        seen.update(features(data))
    assert set(seen) == set(FEATURES)
    assert min(seen.values()) >= 30, seen  # each in at least 7.5 % of the cases


def test_a_difference_after_a_step_is_a_disagreement_of_its_own_kind() -> None:
    same = {"w": Outcome(admitted=False, message="waits")}
    verdict = Verdict(
        predicted=same,
        observed=same,
        predicted_steps=[{"w": Outcome(admitted=False, message="Evicted due to X")}],
        observed_steps=[{"w": Outcome(admitted=False, message="ClusterQueue q is inactive")}],
    )
    verdict.lines = verdict.step_lines()
    assert verdict.disagrees
    assert verdict.lines[0].startswith("after steps[0]: w: predicted message")
    assert verdict.kinds() == ["step:pending->pending:ClusterQueue q is inactive"]


def test_the_shrinker_cuts_cohort_trees_checks_and_their_steps() -> None:
    """A fake disagreement that needs only a running workload: the Cohort objects, the
    AdmissionChecks and the steps that set their state go."""
    from harness.fuzz.shrink import shrink

    data = next(
        d
        for d in (generate_v2(4, i) for i in range(400))
        if {"cohort-tree", "check-steps"} <= set(features(d)) and d.get("admitted")
    )

    def interesting(candidate: dict[str, object]) -> bool:
        return bool(candidate.get("admitted"))

    small, _calls = shrink(data, interesting, budget=400)
    assert not {"cohort-tree", "cohort-quota", "admission-checks", "check-steps"} & set(
        features(small)
    ), features(small)
    assert "cohorts" not in small and "admissionChecks" not in small
    scenario_from_data(small, "shrunk")
