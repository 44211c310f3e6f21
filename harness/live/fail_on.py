"""`simulate --fail-on`: which predictions make the command exit 1, for CI and scripts that
must not submit a job that would wait (issue 32 item 3). Exit codes: 0 none of the named
conditions holds, 1 one does for some submitted job, 2 bad input (one line)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping

from harness.errors import did_you_mean
from harness.live.simulate import Prediction

CONDITIONS: dict[str, Callable[[Prediction], bool]] = {
    "pending": lambda p: not p.outcome.admitted,
    "preempts": lambda p: bool(p.preempts),
    "unschedulable": lambda p: bool(p.outcome.unschedulable),
}
"""pending: not admitted (waits, rejected, or no such LocalQueue); preempts: admitted by
preempting others; unschedulable: admitted, but some pods would never run."""

EXIT_FAILING = 1


def parse(text: str) -> tuple[str, ...]:
    """The comma list of --fail-on (argparse `type`: an unknown one is a usage error)."""
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    for name in names:
        if name not in CONDITIONS:
            hint = did_you_mean(name, CONDITIONS)
            raise argparse.ArgumentTypeError(
                f"unknown condition {name!r} (known: {', '.join(CONDITIONS)})"
                + (f"; {hint}" if hint else "")
            )
    return names


def failing(predictions: Mapping[str, Prediction], conditions: tuple[str, ...]) -> list[str]:
    """`JOB: CONDITION` for each submitted job and named condition that holds."""
    return [
        f"{key}: {name}"
        for key, p in predictions.items()
        for name in conditions
        if CONDITIONS[name](p)
    ]
