"""The runner's reading of a fault step (no cluster): which nodes Kueue replaced, which
eviction it counted, which pods a step acts on, and Kueue's log lines as evidence."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.runner import faults, repair
from harness.runner.kueuelog import KueueLog
from harness.scenario import Eviction, Taint


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
        "labels": {faults.COMPLETION_INDEX: str(index)},
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
