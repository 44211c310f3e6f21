"""The wait for Kueue's retry set off by shaping (harness.runner.requeue): how long it lasts,
read from Kueue's own log lines, and the bound used where there is no log."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

from harness.kueue.keys import TAS_POD_ANNOTATIONS
from harness.runner.kueuelog import KueueLog
from harness.runner.requeue import (
    NON_TAS_DRAIN_INTERVAL,
    RECONCILE_TAS_FLAVOR,
    REQUEUE_BATCH_PERIOD,
    UPDATES_BATCH_PERIOD,
    RequeueWave,
    freed_recently,
    retry_window,
)
from harness.runner.steps import tas_pod
from harness.runner.waits import Timeouts

MARGIN = 0.25


def _line(msg: str, at: float) -> str:
    ts = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f") + "123Z"
    return json.dumps({"level": "Level(-2)", "ts": ts, "msg": msg, "name": "h100"}) + "\n"


def test_retry_is_due_a_batch_period_after_the_last_flavor_reconcile(tmp_path: Path) -> None:
    log_file = tmp_path / "kueue.log"
    log_file.write_text(_line(RECONCILE_TAS_FLAVOR, 1000.0))  # before the mark: not counted
    wave = RequeueWave(KueueLog(log_file), MARGIN)
    wave.shaped()
    assert wave.shaped_at is not None
    reconciled = wave.shaped_at + 1.7  # a slow reconcile, later than UpdatesBatchPeriod
    with log_file.open("a") as f:
        f.write(_line("Reconcile Workload", reconciled + 5))
        f.write(_line(RECONCILE_TAS_FLAVOR, reconciled))
    until, seen = wave.due_until()
    assert abs(until - (reconciled + REQUEUE_BATCH_PERIOD + MARGIN)) < 0.01
    assert RECONCILE_TAS_FLAVOR in seen


def test_without_a_reconcile_the_flavor_batch_period_bounds_it(tmp_path: Path) -> None:
    log_file = tmp_path / "kueue.log"
    log_file.write_text("")
    wave = RequeueWave(KueueLog(log_file), MARGIN)
    wave.shaped()
    assert wave.shaped_at is not None
    until, seen = wave.due_until()
    assert abs(until - (wave.shaped_at + UPDATES_BATCH_PERIOD + MARGIN)) < 0.01
    assert "no flavor reconcile" in seen


def test_without_a_log_both_batch_periods_bound_it() -> None:
    wave = RequeueWave(KueueLog(None), MARGIN)
    wave.shaped()
    assert wave.shaped_at is not None
    until, seen = wave.due_until()
    expected = wave.shaped_at + UPDATES_BATCH_PERIOD + REQUEUE_BATCH_PERIOD + MARGIN
    assert abs(until - expected) < 0.01
    assert "no Kueue log" in seen


def test_wait_returns_only_once_the_retry_cannot_be_due_and_then_at_once(tmp_path: Path) -> None:
    log_file = tmp_path / "kueue.log"
    log_file.write_text("")
    wave = RequeueWave(KueueLog(log_file), 0.0)
    wave.shaped()
    assert wave.shaped_at is not None
    with log_file.open("a") as f:
        f.write(_line(RECONCILE_TAS_FLAVOR, wave.shaped_at + 0.2))
    wave.wait(Timeouts(interval=0.02))
    assert time.time() >= wave.shaped_at + 0.2 + REQUEUE_BATCH_PERIOD
    assert wave.passed
    before = time.monotonic()
    wave.wait(Timeouts(interval=0.02))
    assert time.monotonic() - before < 0.5


def test_nothing_to_wait_for_before_shaping_is_done() -> None:
    wave = RequeueWave(KueueLog(None), MARGIN)
    wave.wait(Timeouts())
    assert not wave.passed


def test_usage_freed_on_a_node_of_the_same_name_waits_for_the_non_tas_drainer() -> None:
    wave = RequeueWave(KueueLog(None), MARGIN)
    wave.shaped()
    assert wave.shaped_at is not None
    freed_at = wave.shaped_at - 1.0
    wave.after_usage_freed(freed_at, {"h100-2", "h100-1"})
    until, seen = wave.due_until()
    assert abs(until - (freed_at + NON_TAS_DRAIN_INTERVAL + REQUEUE_BATCH_PERIOD + MARGIN)) < 0.01
    assert "usage pods on h100-1, h100-2 freed" in seen


def test_usage_freed_on_nodes_gone_for_good_adds_nothing() -> None:
    wave = RequeueWave(KueueLog(None), MARGIN)
    wave.shaped()
    wave.after_usage_freed(time.time(), set())
    assert "usage pods" not in wave.due_until()[1]


def test_the_latest_of_several_clears_that_freed_usage_counts() -> None:
    """Seen in make e2e: a scenario's usage pods on gpu-1..gpu-4 were cleared, two short
    scenarios later gpu-1..gpu-4 existed again when the drainer ticked, and a pending
    workload was re-evaluated against usage submitted after it."""
    wave = RequeueWave(KueueLog(None), MARGIN)
    wave.shaped()
    assert wave.shaped_at is not None
    later, earlier = wave.shaped_at - 2.0, wave.shaped_at - 7.0
    wave.after_usage_freed(later, {"gpu-1"})
    wave.after_usage_freed(earlier, {"gpu-3"})
    until, seen = wave.due_until()
    assert abs(until - (later + NON_TAS_DRAIN_INTERVAL + REQUEUE_BATCH_PERIOD + MARGIN)) < 0.01
    assert "usage pods on gpu-1 freed" in seen


def test_freed_usage_is_remembered_for_one_drainer_tick_and_its_batch() -> None:
    now = 1000.0
    window = NON_TAS_DRAIN_INTERVAL + REQUEUE_BATCH_PERIOD + MARGIN
    freed = [
        (now - window - 0.5, frozenset({"gpu-1"})),  # its retry is over
        (now - window + 0.5, frozenset({"gpu-2"})),  # two scenarios back: still due
        (now - 3.0, frozenset()),  # freed nothing
        (now, frozenset({"gpu-4"})),
    ]
    assert freed_recently(freed, now, MARGIN) == [freed[1], freed[3]]


def test_retry_window_covers_both_batch_periods() -> None:
    t = Timeouts(requeue_margin=0.3)
    assert retry_window(t) == UPDATES_BATCH_PERIOD + REQUEUE_BATCH_PERIOD + 0.3


def test_a_pod_is_a_tas_pod_by_kueue_s_topology_annotations() -> None:
    def pod(annotations: dict[str, str]) -> dict[str, object]:
        return {"metadata": {"annotations": annotations}}

    for key in TAS_POD_ANNOTATIONS:
        assert tas_pod(pod({key: "kubernetes.io/hostname"})), key
    assert not tas_pod(pod({"kueue.x-k8s.io/podset-group-name": "g"}))
    assert not tas_pod({"metadata": {}})
    assert "kueue.x-k8s.io/podset-unconstrained-topology" in TAS_POD_ANNOTATIONS
