"""CPU seconds spent by the cluster's processes and by the harness during one scenario: which
part of its wall time was work and which was waiting (on Kueue's batch periods and backoffs,
the Job controller's backoff, the settle window). The e2e worker classes are sized from it
(harness/plugin/worker_classes.py)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
HARNESS = "harness"
"""The key of the harness's own process (the runner: polling, lists, its own work)."""


def process_cpu(pid: int) -> float | None:
    """User + system seconds of `pid` and its reaped children; None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            text = stat.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces: the fields after it follow its last ')'.
    fields = text.rsplit(")", 1)[1].split()
    utime, stime, cutime, cstime = (int(f) for f in fields[11:15])
    return (utime + stime + cutime + cstime) / _TICKS


class CpuMeter:
    """CPU seconds per component since `start()`: the cluster's processes by name, plus the
    harness's own process under HARNESS."""

    def __init__(self, pids: Callable[[], Mapping[str, int]]) -> None:
        self.pids = pids
        self.base: dict[str, float] = {}

    def _now(self) -> dict[str, float]:
        found = {HARNESS: time.process_time()}
        for name, pid in self.pids().items():
            seconds = process_cpu(pid)
            if seconds is not None:
                found[name] = seconds
        return found

    def start(self) -> None:
        self.base = self._now()

    def spent(self) -> dict[str, float]:
        """Seconds per component since start(), rounded to 10 ms; a component started
        since counts from zero."""
        now = self._now()
        return {k: round(v - self.base.get(k, 0.0), 2) for k, v in sorted(now.items())}
