"""Progress of long work (builds, cluster starts, scenarios) as log records under "kth".

Each part logs with `progress.logger("local")` (logger "kth.local"). Under pytest the records
show live with `--log-cli-level=INFO` and under "Captured log" when a test fails; command-line
entry points call `show_on_stderr()`, so a user of `python -m harness run` or `make binaries`
sees them as they happen. Long work shows progress: that is a project rule.
"""

from __future__ import annotations

import logging

ROOT = "kth"


def logger(part: str) -> logging.Logger:
    """The logger of one part of the harness; progress is logged at INFO."""
    logging.getLogger(ROOT).setLevel(logging.INFO)  # INFO records exist; handlers pick
    return logging.getLogger(f"{ROOT}.{part}")


def show_on_stderr() -> None:
    """Print progress to stderr as `[kth.part] message`, unless logging is set up already
    (a handler on the root or "kth" logger, e.g. pytest's or the caller's own)."""
    kth = logging.getLogger(ROOT)
    kth.setLevel(logging.INFO)
    if logging.getLogger().handlers or kth.handlers:
        return
    handler = logging.StreamHandler()  # sys.stderr as it is at each record
    handler.setFormatter(logging.Formatter("[%(name)s] %(message)s"))
    kth.addHandler(handler)
