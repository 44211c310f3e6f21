"""A kept cluster outlives the process that started it; `down` stops it later from its
run dir, using the state file written at start-up."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path
from typing import Any

from harness.kube import Kube, KubeError
from harness.providers.base import ClusterError

STATE = "state.json"


def write_state(run_dir: Path, state: dict[str, Any]) -> None:
    (run_dir / STATE).write_text(json.dumps(state, indent=2) + "\n")


def _ours(pid: int, run_dir: Path) -> bool:
    """True if `pid` still runs one of this cluster's binaries (guards against PID reuse:
    every component's command line names the run dir, etcd's through its data dir name)."""
    try:
        return run_dir.name.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def is_running(run_dir: Path) -> bool:
    """Some process of the kept cluster in `run_dir` still runs."""
    try:
        state = json.loads((run_dir / STATE).read_text())
    except (OSError, json.JSONDecodeError):
        return False
    return any(_ours(int(pid), run_dir) for pid in (state.get("pids") or {}).values())


def _stop_pid(pid: int, run_dir: Path, grace: float) -> None:
    if not _ours(pid, run_dir):
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and _ours(pid, run_dir):
        time.sleep(0.1)
    if _ours(pid, run_dir):
        os.kill(pid, signal.SIGKILL)


def stop_detached(run_dir: Path, *, remove: bool = True, grace: float = 10.0) -> list[str]:
    """Stop a kept cluster: webhooks first, then its processes in reverse start order, by
    PID; returns the names of the components that were still running."""
    run_dir = run_dir.resolve()
    try:
        state = json.loads((run_dir / STATE).read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise ClusterError(f"{run_dir}: not a kept local cluster ({STATE}: {err})") from err
    running = [n for n, pid in state["pids"].items() if _ours(int(pid), run_dir)]
    if "kube-apiserver" in running:
        try:
            kube = Kube(Path(state["kubeconfig"]), timeout=10)
            for api_version, kind, name in state.get("webhooks", []):
                kube.delete(api_version, kind, name)
            kube.close()
        except KubeError as err:
            print(f"could not delete webhook configurations: {err}")
    for name in reversed(list(state["pids"])):
        _stop_pid(int(state["pids"][name]), run_dir, grace)
    shutil.rmtree(state.get("etcd_data", ""), ignore_errors=True)
    if remove:
        shutil.rmtree(run_dir, ignore_errors=True)
    return running
