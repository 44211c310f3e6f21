"""Reading flavors and preemption from Workloads, and when a submission that preempted has
settled (no cluster: Workload objects shaped as Kueue v0.19.2 writes them, rules §6)."""

from __future__ import annotations

import itertools
import time
from dataclasses import replace
from typing import Any

import pytest

from harness.kube import WaitTimeout
from harness.runner.reading import admission_flavors, evictions, preempted
from harness.runner.settling import Submission, problems, settle_submission, victims
from harness.runner.waits import Timeouts

EVICTION = (
    "Preempted to accommodate a workload (UID: u1, JobUID: j1) due to prioritization in the "
    "ClusterQueue; preemptor path: /q; preemptee path: /q"
)
FAST = Timeouts(settle=1.0, pending_window=0.05, interval=0.01, unwritten_window=0.3)


def _cond(kind: str, status: str, reason: str = "", message: str = "") -> dict[str, str]:
    return {"type": kind, "status": status, "reason": reason, "message": message}


def admitted(**status: Any) -> dict[str, Any]:
    conds = [_cond("QuotaReserved", "True", "QuotaReserved"), _cond("Admitted", "True")]
    return {"status": {"conditions": conds + status.pop("extra", []), **status}}


def pending(message: str, **status: Any) -> dict[str, Any]:
    conds = [_cond("QuotaReserved", "False", "Pending", message)]
    return {"status": {"conditions": conds + status.pop("extra", []), **status}}


STATS = {"evictions": [{"reason": "Preempted", "underlyingCause": "", "count": 1}]}
EVICTED_TRUE = [_cond("Evicted", "True", "Preempted", EVICTION)]


def test_flavors_per_pod_set_in_resource_group_order() -> None:
    wl = admitted(
        admission={
            "clusterQueue": "q",
            "podSetAssignments": [
                {
                    "name": "main",
                    "flavors": {"nvidia.com/gpu": "h100", "pods": "h100", "cpu": "plain"},
                },
                {"name": "side", "flavors": {"cpu": "plain"}},
            ],
        }
    )
    groups = [("cpu",), ("nvidia.com/gpu", "pods")]
    assert admission_flavors(wl, {"main": "workers"}, groups) == {
        "workers": "plain,h100",
        "side": "plain",
    }
    assert admission_flavors(wl, {}, [("nvidia.com/gpu", "pods"), ("cpu",)])["main"] == "h100,plain"


def test_preempted_from_eviction_stats_or_conditions() -> None:
    assert not preempted(admitted())
    again = admitted(schedulingStats=STATS, extra=[_cond("Evicted", "False", "QuotaReserved")])
    assert preempted(again) and evictions(again) == 1  # re-admitted: the stats remember
    assert preempted(admitted(extra=EVICTED_TRUE))
    other = {"evictions": [{"reason": "PodsReadyTimeout", "count": 2}]}
    assert not preempted(pending("x", schedulingStats=other)) and evictions(pending("x")) == 0


def test_a_victim_settles_only_once_released_and_evaluated_again() -> None:
    sub = Submission("new", "Workload ns/new", {"old": 0})
    holding = admitted(schedulingStats=STATS, extra=EVICTED_TRUE)
    seen: dict[str, Any] = {
        "new": pending("x. Pending the preemption of 1 workload(s)"),
        "old": holding,
    }
    assert victims(sub, seen) == ["old"]
    assert set(problems(sub, seen)) == {"new", "old"}
    assert "still holding quota" in problems(sub, seen)["old"]
    seen["old"] = pending(EVICTION, schedulingStats=STATS, extra=EVICTED_TRUE)
    assert "not evaluated again" in problems(sub, {"old": seen["old"]})["old"]
    seen = {
        "new": admitted(),
        "old": pending("insufficient quota", schedulingStats=STATS, extra=EVICTED_TRUE),
    }
    assert problems(sub, seen) == {}
    seen["old"] = admitted(schedulingStats=STATS)
    assert problems(sub, seen) == {}


def test_an_earlier_eviction_is_not_this_submissions_victim() -> None:
    sub = Submission("new", "Workload ns/new", {"old": 1})
    seen = {"new": admitted(), "old": pending(EVICTION, schedulingStats=STATS)}
    assert victims(sub, seen) == [] and problems(sub, seen) == {}


def _reads(*snapshots: dict[str, Any]) -> Any:
    frames = itertools.chain(snapshots, itertools.repeat(snapshots[-1]))
    return lambda: next(frames)


def test_settle_waits_through_the_preemption() -> None:
    sub = Submission("new", "Workload ns/new", {"old": 0})
    read = _reads(
        {
            "new": pending("Pending the preemption of 1 workload(s)"),
            "old": admitted(schedulingStats=STATS, extra=EVICTED_TRUE),
        },
        {
            "new": pending("Pending the preemption of 1 workload(s)"),
            "old": pending(EVICTION, schedulingStats=STATS),
        },
        {"new": admitted(), "old": pending(EVICTION, schedulingStats=STATS)},
        {"new": admitted(), "old": pending("insufficient quota", schedulingStats=STATS)},
    )
    assert settle_submission(read, sub, FAST).kind == "admitted"


def test_settle_timeout_names_each_unsettled_workload() -> None:
    sub = Submission("new", "Workload ns/new", {"old": 0})
    stuck = {"new": admitted(), "old": pending(EVICTION, schedulingStats=STATS)}
    with pytest.raises(WaitTimeout) as err:
        settle_submission(_reads(stuck), sub, replace(FAST, unwritten_window=5.0))
    assert "old: released, not evaluated again yet: Preempted to accommodate" in str(err.value)
    assert "new:" not in str(err.value)


def test_a_released_victim_never_evaluated_again_settles_after_the_unwritten_window() -> None:
    """Kueue may park it with an identical pending workload, or keep it behind a StrictFIFO
    head: its eviction message then stays for good."""
    sub = Submission("new", "Workload ns/new", {"old": 0})
    stuck = {"new": admitted(), "old": pending(EVICTION, schedulingStats=STATS)}
    started = time.monotonic()
    assert settle_submission(_reads(stuck), sub, FAST).kind == "admitted"
    assert time.monotonic() - started >= FAST.unwritten_window
    holding = {"new": pending("x"), "old": admitted(schedulingStats=STATS, extra=EVICTED_TRUE)}
    with pytest.raises(WaitTimeout, match="old: evicted, still holding quota"):
        settle_submission(_reads(holding), sub, FAST)  # no window for one holding quota


def test_settle_without_victims_is_the_old_rule() -> None:
    sub = Submission("new", "Workload ns/new", {})
    assert settle_submission(_reads({"new": admitted()}), sub, FAST).kind == "admitted"
    got = settle_submission(_reads({"new": pending("no room")}), sub, FAST)
    assert (got.kind, got.message) == ("pending", "no room")
