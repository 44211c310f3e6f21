"""A victim's message names its preemptor's UID and Job UID, which only a cluster (or the
sim) assigns: the fit model writes stand-ins, and comparing its prediction with Kueue must
accept any UID there and nothing else different."""

from __future__ import annotations

from harness.results.comparison import against_prediction
from harness.results.outcome import Outcome

PREDICTED = (
    "Preempted to accommodate a workload (UID: <uid of train>, JobUID: <job uid of train>) "
    "due to prioritization in the ClusterQueue; preemptor path: /team-a; preemptee path: /team-a"
)


def _compare(observed_message: str) -> list[str]:
    predicted = {"old": Outcome(admitted=False, message=PREDICTED, preempted=True)}
    observed = {"old": Outcome(admitted=False, message=observed_message, preempted=True)}
    return against_prediction(predicted, observed)


def test_any_uid_matches_the_stand_ins() -> None:
    real = PREDICTED.replace("<uid of train>", "5f0c-77e1").replace("<job uid of train>", "UNKNOWN")
    assert _compare(real) == []


def test_the_rest_of_the_message_still_counts() -> None:
    real = (
        PREDICTED.replace("<uid of train>", "5f0c-77e1")
        .replace("<job uid of train>", "UNKNOWN")
        .replace("prioritization in the ClusterQueue", "reclamation within the cohort")
    )
    assert len(_compare(real)) == 1


def test_a_preempted_victim_may_end_on_the_skip_of_its_preemptors_cycle() -> None:
    # rules §8: which of the two Kueue writes last depends on when the victim's Job stopped.
    assert _compare("Workload no longer fits after processing another workload") == []


def test_the_skip_message_counts_for_a_workload_never_preempted() -> None:
    skipped = "Workload no longer fits after processing another workload"
    predicted = {"w": Outcome(admitted=False, message=PREDICTED, preempted=False)}
    observed = {"w": Outcome(admitted=False, message=skipped, preempted=False)}
    assert len(against_prediction(predicted, observed)) == 1


def test_another_pending_message_of_a_victim_still_counts() -> None:
    assert len(_compare("couldn't assign flavors to pod set main: insufficient quota")) == 1


def test_a_pods_ready_timeout_message_may_name_any_workload_object() -> None:
    # reconcileNotReadyTimeout: 'Exceeded the PodsReady timeout NS/NAME', the Workload object's
    # name, which only the cluster (or the sim) gives; the fit model predicts the prefix.
    predicted = {"w": Outcome(admitted=False, message="Exceeded the PodsReady timeout")}
    for real in (
        "Exceeded the PodsReady timeout default/w",
        "Exceeded the PodsReady timeout ns/job-w-1a2b3",
    ):
        assert against_prediction(predicted, {"w": Outcome(admitted=False, message=real)}) == []
    other = {"w": Outcome(admitted=False, message="Exceeded the PodsReady timeoutX")}
    assert len(against_prediction(predicted, other)) == 1
