"""Which process owns an embedded cluster, so `leftovers` can tell a cluster another run is
still using from one left behind (issue 32 item 7).

The starter writes `owner` in the run dir at once: its pid and its start time (field 22 of
/proc/PID/stat, so a reused pid is not taken for the owner). Components run as children of
the owner and die with it (PR_SET_PDEATHSIG); a component whose parent is no longer a Python
process was orphaned.
"""

from __future__ import annotations

import os
from pathlib import Path

OWNER = "owner"


def start_time(pid: int) -> str:
    """The process's start time in clock ticks since boot ("" when it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[19]  # after "(comm)": state is field 3, this 22


def write_owner(run_dir: Path) -> None:
    """Record this process as the cluster's owner."""
    pid = os.getpid()
    (run_dir / OWNER).write_text(f"{pid} {start_time(pid)}\n")


def live_owner(run_dir: Path) -> int | None:
    """The pid of the run dir's owner if that process still runs, else None."""
    try:
        pid_text, started = (run_dir / OWNER).read_text().split()
    except (OSError, ValueError):
        return None
    pid = int(pid_text)
    return pid if start_time(pid) == started else None


def parent(pid: int) -> int | None:
    """The parent of a process, if it is a Python process (the harness): its owner."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        exe = Path(os.readlink(f"/proc/{ppid}/exe")).name
    except (OSError, ValueError, IndexError):
        return None
    return ppid if ppid > 1 and exe.startswith("python") else None


def command(pid: int) -> str:
    """A process's command line, for a message ("" when it is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""
