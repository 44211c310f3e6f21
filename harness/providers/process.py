"""One supervised child process: own process group, log file, crash report, clean stop.

Children get their own session so a terminal Ctrl-C reaches only the harness, which then
stops them in order (webhooks first). PR_SET_PDEATHSIG is a last resort: if the harness is
killed outright, the kernel kills the children too.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from harness.logtail import quoted_tail
from harness.providers.base import ComponentCrashed

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass


class Process:
    """A named child process writing stdout and stderr to one log file."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log: Path,
        env: Mapping[str, str],
        cwd: Path,
        *,
        die_with_parent: bool = True,
    ) -> None:
        self.name = name
        self.die_with_parent = die_with_parent
        self.argv = list(argv)
        self.log = log
        self.env = dict(env)
        self.cwd = cwd
        self.popen: subprocess.Popen[bytes] | None = None
        self.peak_rss_kib: int | None = None

    @property
    def pid(self) -> int | None:
        return self.popen.pid if self.popen else None

    def start(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            out.write(f"$ {' '.join(self.argv)}\n".encode())
            out.flush()
            self.popen = subprocess.Popen(
                self.argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,
                preexec_fn=_die_with_parent if self.die_with_parent else None,
            )

    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def check(self) -> None:
        """Raise ComponentCrashed, with the log tail, if the process has exited."""
        if self.popen is None or self.popen.poll() is None:
            return
        raise ComponentCrashed(
            f"{self.name} exited with code {self.popen.returncode}; {quoted_tail(self.log)}"
        )

    def sample_rss(self) -> None:
        """Record the kernel's high-water RSS mark (VmHWM) while the process is alive."""
        if not self.running() or self.pid is None:
            return
        try:
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    self.peak_rss_kib = int(line.split()[1])
        except (OSError, ValueError):
            pass

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM the process group, SIGKILL it after `grace` seconds; always reaps."""
        if self.popen is None:
            return
        self.sample_rss()
        pgid = self.popen.pid  # start_new_session: the child leads its own group
        if self.popen.poll() is None:
            self._signal(pgid, signal.SIGTERM)
            try:
                self.popen.wait(grace)
            except subprocess.TimeoutExpired:
                self._signal(pgid, signal.SIGKILL)
                self.popen.wait(5)
        # Anything the component forked into its group goes too.
        self._signal(pgid, signal.SIGKILL)

    @staticmethod
    def _signal(pgid: int, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)
