"""A workload Kueue keeps without any status (harness.runner.kueuelog.UnwrittenLoop): the
settle ends once Kueue's log shows the loop, instead of waiting out the unwritten window.
The log lines have the shape Kueue v0.19.2 writes at --zap-log-level=2 (keys as in
pkg/scheduler/scheduler.go and pkg/controller/core/workload_controller.go)."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

from harness.runner.kueuelog import (
    ATTEMPTED,
    CREATED,
    CYCLE_STARTS,
    REQUEUED,
    KueueLog,
    UnwrittenLoop,
)
from harness.runner.reading import state
from harness.runner.settling import Submission, settle_submission
from harness.runner.waits import Timeouts, settle

NS = "kth-1-loop"
FAST = Timeouts(settle=5.0, pending_window=0.05, interval=0.01, unwritten_window=4.0)


def _line(msg: str, workload: str | None = None, ns: str = NS) -> str:
    entry: dict[str, object] = {"level": "Level(-2)", "logger": "scheduler", "msg": msg}
    if workload is not None:
        entry["workload"] = {"name": workload, "namespace": ns}
    return json.dumps(entry, separators=(",", ":")) + "\n"  # compact, as zap writes it


def _cycles(n: int, *, attempt: str | None = None, requeue: bool = True) -> str:
    out = []
    for _ in range(n):
        out.append(_line(CYCLE_STARTS))
        if attempt is not None:
            out.append(_line(ATTEMPTED, attempt))
            if requeue:
                out.append(_line(REQUEUED, attempt))
    return "".join(out)


def _tracker(tmp_path: Path, name: str, cycles: int = 5) -> tuple[Path, UnwrittenLoop]:
    log_file = tmp_path / "kueue.log"
    log_file.write_text(_cycles(3, attempt="old"))  # before the mark: not counted
    return log_file, UnwrittenLoop(KueueLog(log_file), NS, name, cycles)


def _append(path: Path, text: str) -> None:
    with path.open("a") as f:
        f.write(text)


def test_requeued_again_and_again_without_a_status_is_a_loop(tmp_path: Path) -> None:
    log_file, loop = _tracker(tmp_path, "nic-first")
    _append(log_file, _line(CREATED, "nic-first") + _cycles(4, attempt="nic-first"))
    assert not loop()
    _append(log_file, _cycles(1, attempt="nic-first"))
    assert loop()


def test_never_attempted_while_kueue_cycles_for_another_head_is_a_loop(tmp_path: Path) -> None:
    log_file, loop = _tracker(tmp_path, "later")
    _append(log_file, _cycles(10, attempt="group"))  # before it arrived: not counted
    _append(log_file, _line(CREATED, "later") + _cycles(4, attempt="group"))
    assert not loop()
    _append(log_file, _cycles(1, attempt="group"))
    assert loop()


def test_attempted_and_admitted_while_another_loops_is_not(tmp_path: Path) -> None:
    """gpu-job is assumed and its admission written while nic-first loops: the write may land
    many cycles later, so cycles alone never end its wait."""
    log_file, loop = _tracker(tmp_path, "gpu-job")
    _append(log_file, _line(CREATED, "gpu-job") + _cycles(1, attempt="gpu-job", requeue=False))
    _append(log_file, _cycles(20, attempt="nic-first"))
    assert not loop()


def test_the_same_name_in_another_namespace_does_not_count(tmp_path: Path) -> None:
    log_file, loop = _tracker(tmp_path, "nic-first")
    other = "".join(_line(REQUEUED, "nic-first", ns="kth-2-other") for _ in range(10))
    _append(log_file, _line(CREATED, "nic-first") + _line(ATTEMPTED, "nic-first") + other)
    assert not loop()


def test_a_line_still_being_written_is_read_once_it_is_whole(tmp_path: Path) -> None:
    log_file, loop = _tracker(tmp_path, "nic-first", cycles=1)
    line = _line(REQUEUED, "nic-first")
    _append(log_file, _line(ATTEMPTED, "nic-first") + line[:20])
    assert not loop()
    _append(log_file, line[20:])
    assert loop()


def test_without_a_log_nothing_is_read(tmp_path: Path) -> None:
    assert not UnwrittenLoop(KueueLog(None), NS, "w", 1)()
    assert not UnwrittenLoop(KueueLog(tmp_path / "absent.log"), NS, "w", 1)()


def test_the_settle_ends_at_the_loop_not_at_the_unwritten_window() -> None:
    sub = Submission("w", "Workload ns/w", {}, unwritten=lambda: True)
    started = time.monotonic()
    got = settle_submission(lambda: {"w": {"status": {}}}, sub, FAST)
    assert (got.kind, got.message) == ("pending", "")
    assert FAST.pending_window <= time.monotonic() - started < FAST.unwritten_window
    got = settle(lambda: state({"status": {}}), what="w", t=FAST, unwritten=lambda: True)
    assert (got.kind, got.message) == ("pending", "")


def test_without_the_loop_the_unwritten_window_still_holds() -> None:
    t = replace(FAST, unwritten_window=0.3)
    sub = Submission("w", "Workload ns/w", {}, unwritten=lambda: False)
    started = time.monotonic()
    assert settle_submission(lambda: {"w": {"status": {}}}, sub, t).kind == "pending"
    assert time.monotonic() - started >= t.unwritten_window


def test_a_written_status_is_never_overruled_by_the_loop() -> None:
    cond = {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "no"}
    sub = Submission("w", "Workload ns/w", {}, unwritten=lambda: True)
    got = settle_submission(lambda: {"w": {"status": {"conditions": [cond]}}}, sub, FAST)
    assert (got.kind, got.message) == ("pending", "no")
