"""CPU seconds per component, read from /proc: the basis of the e2e worker classes."""

from __future__ import annotations

import subprocess
import sys

from harness.kube.wait import poll_until
from harness.providers.cpu import HARNESS, CpuMeter, process_cpu


def test_a_busy_child_shows_its_cpu_seconds_and_an_idle_one_none() -> None:
    busy = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time\nt=time.process_time()\nwhile time.process_time()-t<0.5: pass\ninput()",
        ],
        stdin=subprocess.PIPE,
    )
    idle = subprocess.Popen([sys.executable, "-c", "input()"], stdin=subprocess.PIPE)
    meter = CpuMeter(lambda: {"busy": busy.pid, "idle": idle.pid})
    meter.start()
    try:
        poll_until(
            lambda: ((process_cpu(busy.pid) or 0) >= 0.45, f"{process_cpu(busy.pid)} s"),
            what="the busy child's CPU seconds",
            timeout=60,
            interval=0.05,
        )
        spent = meter.spent()
    finally:
        for p in (busy, idle):
            p.communicate(b"\n", timeout=30)
    assert spent["busy"] >= 0.3
    assert spent["idle"] < 0.2
    assert HARNESS in spent


def test_a_process_gone_counts_no_more() -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(timeout=30)
    assert process_cpu(gone.pid) is None
