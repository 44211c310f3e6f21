"""SIGTERM to a pytest session (a CI job cancelled) ends the session as Ctrl-C does: the
running test is interrupted, no later test starts (each would start a cluster again), and
pytest exits as interrupted, so its fixtures stop what they started."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

WAITS_THEN_MARKS = """
import time
from pathlib import Path


def test_waits_for_the_signal():
    print("waiting for SIGTERM", flush=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        time.sleep(0.05)


def test_after():
    Path("later-test-ran").write_text("yes")
"""


def test_sigterm_interrupts_the_session(tmp_path: Path) -> None:
    (tmp_path / "test_session.py").write_text(WAITS_THEN_MARKS)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "-s",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            ".",
            "test_session.py",
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None
        seen: list[str] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            seen.append(line)
            if "waiting for SIGTERM" in line or not line:
                break
        assert "waiting for SIGTERM" in seen[-1], "".join(seen)
        proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, "".join(seen) + rest
    assert "KeyboardInterrupt" in rest
    assert not (tmp_path / "later-test-ran").exists()
