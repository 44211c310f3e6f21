"""A prediction may name the message Kueue writes instead of its own where which one it
writes is a race of Kueue's controllers (Outcome.message_race): comparing it with Kueue
accepts either, and nothing else."""

from __future__ import annotations

from harness.results.comparison import against_prediction
from harness.results.outcome import Outcome

INACTIVE = "ClusterQueue gpus is inactive"
OLD = "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu"


def _compare(observed_message: str, race: str | None = OLD) -> list[str]:
    predicted = {"two": Outcome(admitted=False, message=INACTIVE, message_race=race)}
    return against_prediction(predicted, {"two": Outcome(admitted=False, message=observed_message)})


def test_either_message_agrees() -> None:
    assert _compare(INACTIVE) == []
    assert _compare(OLD) == []


def test_a_workload_never_evaluated_may_keep_no_message() -> None:
    assert _compare("", race="") == []
    assert len(_compare("")) == 1


def test_a_third_message_disagrees_and_names_both() -> None:
    [line] = _compare("LocalQueue gpus is inactive")
    assert INACTIVE in line and OLD in line


def test_the_race_survives_json() -> None:
    outcome = Outcome(admitted=False, message=INACTIVE, message_race="")
    assert Outcome.from_json(outcome.to_json()) == outcome
    assert "messageRace" not in Outcome(admitted=False, message=INACTIVE).to_json()
