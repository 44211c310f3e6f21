"""The runner's reading of a fault step (no cluster): which nodes Kueue replaced, which
eviction it counted, which pods a step acts on, and Kueue's log lines as evidence."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.runner import faults, repair
from harness.runner.kueuelog import KueueLog
from harness.runner.objects import JOB_INDEX_LABEL
from harness.scenario.model import Eviction, Taint


def test_replaced_maps_each_lost_node_to_the_nodes_that_gained() -> None:
    before = {"main": {"n1": 1, "n2": 1, "n3": 1}}
    after = {"main": {"n2": 1, "n3": 1, "n4": 1}}
    assert repair.replaced(before, after) == {"main": {"n1": ("n4",)}}


def test_replaced_counts_a_node_the_workload_already_used() -> None:
    before = {"main": {"n1": 2, "n2": 1}}
    after = {"main": {"n2": 2, "n3": 1}}
    assert repair.replaced(before, after) == {"main": {"n1": ("n2", "n3")}}


def test_nothing_replaced_when_the_assignment_stays() -> None:
    same = {"main": {"n1": 1}, "other": {"n2": 4}}
    assert repair.replaced(same, same) == {}


def _workload(evictions: list[dict[str, Any]], conditions: list[dict[str, Any]]) -> dict[str, Any]:
    return {"status": {"schedulingStats": {"evictions": evictions}, "conditions": conditions}}


def test_a_new_node_failure_eviction_reads_the_requeued_message() -> None:
    message = "Workload was evicted as there was no replacement for unhealthy node(s): n1"
    wl = _workload(
        [{"reason": "NodeFailures", "count": 1}, {"reason": "Preempted", "count": 2}],
        [
            {"type": "Evicted", "status": "False", "reason": "QuotaReserved", "message": "x"},
            {"type": "Requeued", "status": "True", "reason": "NodeFailures", "message": message},
        ],
    )
    assert repair.new_eviction(wl, {}, []) == Eviction("NodeFailures", message)
    assert repair.new_eviction(wl, {"NodeFailures": 1}, []) is None  # counted before the step


def test_an_eviction_without_conditions_takes_the_event() -> None:
    wl = _workload([{"reason": "NodeFailures", "count": 1}], [])
    event = {"reason": "EvictedDueToNodeFailures", "message": "multiple TAS assigned node failures"}
    assert repair.new_eviction(wl, {}, [event]) == Eviction(
        "NodeFailures", "multiple TAS assigned node failures"
    )


def test_preemption_is_not_a_fault_eviction() -> None:
    wl = _workload([{"reason": "Preempted", "count": 1}], [])
    assert repair.new_eviction(wl, {}, []) is None


def _pod(name: str, node: str, index: int, **extra: Any) -> dict[str, Any]:
    meta = {
        "name": name,
        "labels": {JOB_INDEX_LABEL: str(index)},
        **extra.pop("meta", {}),
    }
    return {"metadata": meta, "spec": {"nodeName": node, **extra}, "status": {"phase": "Running"}}


def test_pods_are_chosen_in_pod_set_order_then_by_index() -> None:
    leader = [_pod("l0", "n1", 0)]
    workers = [_pod("w2", "n1", 2), _pod("w0", "n2", 0), _pod("w1", "n1", 1)]
    gone = _pod("w3", "n1", 3, meta={"deletionTimestamp": "2026-01-01T00:00:00Z"})
    picked = faults.choose([leader, [*workers, gone]], "n1", 3)
    assert [p["metadata"]["name"] for p in picked] == ["l0", "w1", "w2"]
    assert len(faults.choose([leader, workers], None, None)) == 4


def test_toleration_matching() -> None:
    taint = Taint("example.com/gpu-failure", "true", "NoExecute")
    assert faults.tolerates({"spec": {"tolerations": [{"operator": "Exists"}]}}, taint)
    assert faults.tolerates(
        {"spec": {"tolerations": [{"key": taint.key, "value": "true", "effect": "NoExecute"}]}},
        taint,
    )
    assert not faults.tolerates(
        {"spec": {"tolerations": [{"key": taint.key, "value": "no", "effect": "NoExecute"}]}},
        taint,
    )
    assert not faults.tolerates(
        {
            "spec": {
                "tolerations": [{"key": taint.key, "operator": "Exists", "effect": "NoSchedule"}]
            }
        },
        taint,
    )
    assert not faults.tolerates({"spec": {}}, taint)


def test_kueue_log_counts_only_lines_after_the_mark(tmp_path: Path) -> None:
    log = tmp_path / "kueue.log"
    old = {"msg": "Reconcile Node", "name": "n1"}
    log.write_text(json.dumps(old) + "\n")
    cursor = KueueLog(log)
    assert not cursor.reconciled("n1")
    requeued = {
        "msg": "Workload re-queued for second pass",
        "workload": {"name": "job-a-1", "namespace": "ns"},
    }
    with log.open("a") as f:
        f.write("not json\n" + json.dumps({"msg": "Reconcile Node", "name": "n2"}) + "\n")
        f.write(json.dumps(requeued) + "\n")
    assert cursor.reconciled("n2") and not cursor.reconciled("n1")
    assert cursor.second_passes_failed("ns", "job-a-1") == 1
    assert cursor.second_passes_failed("other", "job-a-1") == 0


def _admitted(**status: Any) -> dict[str, Any]:
    conditions = [
        {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "ok"},
        {"type": "Admitted", "status": "True", "reason": "Admitted", "message": "ok"},
    ]
    return {"status": {"conditions": conditions, **status}}


def _watch(fail_fast: bool) -> repair.Watch:
    return repair.Watch(
        read=dict, nodes=(), namespace="ns", fail_fast=fail_fast, node_controller=True
    )


def test_a_workload_awaiting_its_second_pass_is_not_settled(tmp_path: Path) -> None:
    log_file = tmp_path / "kueue.log"
    log_file.write_text("")
    log = KueueLog(log_file)
    waiting = _admitted(unhealthyNodes=[{"name": "n1"}])
    assert repair.problem(_admitted(), "wl", _watch(True), log) is None
    assert "second pass" in str(repair.problem(waiting, "wl", _watch(True), log))
    # Fail-fast off: settled once Kueue logged a failed second pass for it.
    assert "fail-fast off" in str(repair.problem(waiting, "wl", _watch(False), log))
    requeued = {
        "msg": "Workload re-queued for second pass",
        "workload": {"name": "wl", "namespace": "ns"},
    }
    log_file.write_text(json.dumps(requeued) + "\n")
    assert repair.problem(waiting, "wl", _watch(False), log) is None


def test_an_eviction_in_progress_is_not_settled(tmp_path: Path) -> None:
    log = KueueLog(None)
    evicted = _admitted()
    evicted["status"]["conditions"].append(
        {"type": "Evicted", "status": "True", "reason": "NodeFailures", "message": "gone"}
    )
    assert repair.problem(evicted, "wl", _watch(True), log) == "evicted, still holding quota"
    released = {
        "status": {
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "False",
                    "reason": "Pending",
                    "message": "gone",
                },
                {"type": "Evicted", "status": "True", "reason": "NodeFailures", "message": "gone"},
            ]
        }
    }
    assert "not evaluated again" in str(repair.problem(released, "wl", _watch(True), log))


def test_of_two_evictions_in_one_step_the_first_is_reported() -> None:
    """A second pass queued before a multiple-failure eviction runs on its stale copy and
    evicts again; the conditions keep the second message, the events both."""
    multiple = (
        "Workload eviction triggered due to multiple TAS assigned node failures, including: x3, x1"
    )
    stale = "Workload was evicted as there was no replacement for unhealthy node(s): x3"
    wl = _workload(
        [{"reason": "NodeFailures", "count": 2}],
        [{"type": "Requeued", "status": "True", "reason": "NodeFailures", "message": stale}],
    )
    events = [
        {"reason": "QuotaReserved", "message": "Quota reserved"},
        {"reason": "EvictedDueToNodeFailures", "message": multiple},
        {"reason": "EvictedDueToNodeFailures", "message": stale},
    ]
    assert repair.new_eviction(wl, {}, events) == Eviction("NodeFailures", multiple)
