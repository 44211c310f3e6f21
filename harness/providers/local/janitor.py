"""A watcher that removes an embedded cluster's files when the process that started it dies
without stopping it.

The components die with that process (PR_SET_PDEATHSIG), but their etcd data on /dev/shm
(memory) and the run dir would stay. That happens when a process is killed outright: SIGKILL,
or a pytest-xdist worker that execnet kills 10 s after Ctrl-C reached the controller, before
its cluster finished stopping. The watcher is a small process of its own session that blocks
reading a pipe only the starter holds: end of file without the word "stopped" means the
starter is gone, and it removes the paths.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

STOPPED = b"stopped"
_SCRIPT = r"""
import os, shutil, sys, time
if sys.stdin.buffer.read() == b"stopped":
    sys.exit(0)
paths, deadline, gone_since = sys.argv[1:], time.monotonic() + 15, None
while time.monotonic() < deadline:  # etcd may still write while the kernel kills it
    for path in paths:
        shutil.rmtree(path, ignore_errors=True)
    if any(os.path.exists(path) for path in paths):
        gone_since = None
    elif gone_since is None:
        gone_since = time.monotonic()
    elif time.monotonic() - gone_since > 0.5:
        break
    time.sleep(0.1)
"""


class Janitor:
    """Removes `paths` if this process ends before `release()`."""

    def __init__(self, paths: Iterable[Path]) -> None:
        self.proc: subprocess.Popen[bytes] | None = subprocess.Popen(
            [sys.executable, "-c", _SCRIPT, *(str(p) for p in paths)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a terminal's Ctrl-C must not stop it first
        )

    def release(self) -> None:
        """The cluster was stopped in order (its files handled): the watcher exits as is."""
        proc, self.proc = self.proc, None
        if proc is None or proc.stdin is None:
            return
        try:
            proc.stdin.write(STOPPED)
            proc.stdin.close()
        except OSError:
            pass  # it is gone already
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
