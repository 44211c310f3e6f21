"""Process supervision without a cluster: crash reports, group stop, SIGKILL fallback."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from harness.providers.base import ComponentCrashed
from harness.providers.process import Process


def _proc(tmp_path: Path, script: str) -> Process:
    return Process(
        "thing", ["sh", "-c", script], tmp_path / "thing.log", dict(os.environ), tmp_path
    )


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_crash_is_reported_with_log_tail(tmp_path: Path) -> None:
    proc = _proc(tmp_path, "echo 'flag provided but not defined: -foo' >&2; exit 3")
    proc.start()
    assert proc.popen is not None
    proc.popen.wait(5)
    with pytest.raises(ComponentCrashed) as err:
        proc.check()
    assert "thing exited with code 3" in str(err.value)
    assert "flag provided but not defined: -foo" in str(err.value)


def test_stop_takes_the_whole_process_group(tmp_path: Path) -> None:
    proc = _proc(tmp_path, "sleep 300 & echo $! > child.pid; wait")
    proc.start()
    pidfile = tmp_path / "child.pid"
    deadline = time.monotonic() + 5
    while not pidfile.exists() or not pidfile.read_text().strip():
        assert time.monotonic() < deadline, "child never started"
        time.sleep(0.05)
    child = int(pidfile.read_text())
    assert _alive(child)
    proc.stop(grace=5)
    assert not proc.running()
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def test_sigterm_ignored_leads_to_sigkill(tmp_path: Path) -> None:
    proc = _proc(tmp_path, "trap '' TERM; echo ready; while :; do sleep 0.1; done")
    proc.start()
    deadline = time.monotonic() + 5
    while "ready" not in proc.log.read_text().splitlines():  # line 1 echoes the command
        assert time.monotonic() < deadline
        time.sleep(0.05)
    started = time.monotonic()
    proc.stop(grace=0.5)
    assert not proc.running()
    assert proc.popen is not None and proc.popen.returncode == -9
    assert time.monotonic() - started < 5


def test_peak_rss_is_sampled(tmp_path: Path) -> None:
    proc = _proc(tmp_path, "sleep 30")
    proc.start()
    time.sleep(0.2)
    proc.stop()
    assert proc.peak_rss_kib is not None and proc.peak_rss_kib > 0
