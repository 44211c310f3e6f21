"""`quotaReserved`: quota reserved and waiting for admission checks is neither admitted nor
pending, against a file's expect and against the fit model."""

from __future__ import annotations

from harness.results.comparison import against_expectations, against_prediction
from harness.results.outcome import Outcome
from harness.scenario.model import Expectation

RESERVED = Outcome(admitted=False, placement={"main": {"n1": 4}}, quota_reserved=True)
PENDING = Outcome(admitted=False, message="couldn't assign flavors")


def test_pending_expectation_refuses_a_reservation() -> None:
    lines = against_expectations({"w": Expectation(admitted=False)}, {"w": RESERVED})
    assert lines == [
        "w: expected pending, got quota reserved, waiting for admission checks (main: n1=4)"
    ]


def test_reserved_expectation_checks_the_reserved_placement() -> None:
    want = Expectation(admitted=False, quota_reserved=True, placement={"main": {"n2": 4}})
    assert against_expectations({"w": want}, {"w": RESERVED}) == ["w/main: expected n2=4, got n1=4"]
    assert against_expectations({"w": want}, {"w": PENDING})[0].startswith(
        "w: expected quota reserved (waiting for admission checks), got pending"
    )


def test_prediction_compares_reservation_and_its_placement() -> None:
    moved = Outcome(admitted=False, placement={"main": {"n2": 4}}, quota_reserved=True)
    assert against_prediction({"w": RESERVED}, {"w": moved}) == ["w/main: expected n1=4, got n2=4"]
    assert against_prediction({"w": RESERVED}, {"w": PENDING})[0].startswith(
        "w: predicted quota reserved"
    )


def test_json_round_trip() -> None:
    assert Outcome.from_json(RESERVED.to_json()) == RESERVED
