"""Running the Go toolchain: one clear error when Go is missing, progress while it works."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from harness import progress
from harness.errors import HarnessError
from harness.logtail import quoted_tail

PROGRESS_EVERY_S = 15.0
logger = progress.logger("toolchain")


class ToolchainError(HarnessError):
    """A binary could not be found or built; the message says which and how to fix it."""


def go_binary(component: str, env_var: str | None = None) -> str:
    """Path of `go`, or a ToolchainError naming what needs it and the way around it."""
    go = shutil.which("go")
    if go is None:
        hint = f", or set {env_var} to a prebuilt {component} binary" if env_var else ""
        raise ToolchainError(
            f"Go toolchain not found on PATH: building {component} needs Go >= 1.26 "
            f"(https://go.dev/dl/){hint}"
        )
    return go


def go_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment for go commands: static binaries, no stray go.work, module mode."""
    env = dict(os.environ)
    env.update({"CGO_ENABLED": "0", "GOWORK": "off", "GO111MODULE": "on"})
    env.update(extra or {})
    return env


def module_info(module: str, version: str, component: str = "module download") -> dict[str, str]:
    """`go mod download -json module@version`: gives Dir (extracted tree) and GoMod paths."""
    go = go_binary(component)
    proc = subprocess.run(
        [go, "mod", "download", "-json", f"{module}@{version}"],
        capture_output=True,
        text=True,
        env=go_env(),
        cwd=Path.home() if Path.home().is_dir() else None,
        check=False,
    )
    try:
        info: dict[str, str] = json.loads(proc.stdout) if proc.stdout.strip() else {}
    except json.JSONDecodeError:
        info = {}
    if proc.returncode != 0 or "Error" in info or "Dir" not in info:
        detail = info.get("Error") or proc.stderr.strip() or proc.stdout.strip()
        raise ToolchainError(f"go mod download {module}@{version} failed: {detail}")
    return info


def module_dir(module: str, version: str) -> Path:
    """Read-only extracted source tree of a module version from the Go module cache."""
    return Path(module_info(module, version)["Dir"])


def run_go(
    args: Sequence[str],
    *,
    label: str,
    cwd: Path,
    log: Path,
    env: Mapping[str, str] | None = None,
    every_s: float = PROGRESS_EVERY_S,
) -> None:
    """Run a go command with output to `log`, logging "label... 2m15s" while it runs.

    Raises ToolchainError with the log tail when the command fails.
    """
    go = go_binary(label)
    start = time.monotonic()
    done = threading.Event()

    def tick() -> None:
        while not done.wait(every_s):
            logger.info(f"{label}... {_fmt(time.monotonic() - start)}")

    ticker = threading.Thread(target=tick, name=f"progress {label}", daemon=True)
    with log.open("ab") as out:
        out.write(f"$ go {' '.join(args)}  (in {cwd})\n".encode())
        out.flush()
        ticker.start()
        try:
            rc = subprocess.run(
                [go, *args],
                cwd=cwd,
                env=go_env(env),
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                check=False,
            ).returncode
        finally:
            done.set()
            ticker.join()
    if rc != 0:
        raise ToolchainError(f"{label} failed (go {args[0]} exit {rc}); {quoted_tail(log)}")


def _fmt(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    return f"{m}m{s:02d}s" if m else f"{s}s"
