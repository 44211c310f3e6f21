"""Stream time on a real cluster: `--time-scale S` runs S stream seconds in one real second.

The default is 10. Kueue stamps creation and conditions to the second and orders workloads
created in the same second by their random UID (docs/dev/kueue-v0.19.2-rules-v2.md §8), so
events the fit model orders must reach the cluster in different real seconds: at 10x, the
10 s between the submissions of the suites' streams is one real second, and the 0.2-1 s
Kueue takes here to admit a new Job (Job -> Workload -> scheduling cycle -> pods Running,
on 2 shared cores) is 2-10 stream seconds, under that spacing. A 100 s job then takes 10 s:
at 100x it would take 1 s, shorter than Kueue's own reaction, and the cluster would decide
what the stream never asked.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from harness.scenario.model import Workload

DEFAULT_SCALE = 10.0


def scale_arg(text: str) -> float:
    """`--time-scale S` (replay's and pytest's): a number above 0."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number above 0 (e.g. 10)")
    return value


@dataclass(frozen=True)
class TimeScale:
    """Stream seconds <-> real seconds after the stream's start."""

    scale: float = DEFAULT_SCALE

    def __post_init__(self) -> None:
        if not self.scale > 0:
            raise ValueError(f"a time scale is above 0, got {self.scale}")

    def real(self, at: float) -> float:
        return at / self.scale

    def stream(self, seconds: float) -> float:
        """Real seconds after the start as stream seconds, to the microsecond (as the fit
        model keeps them)."""
        return round(seconds * self.scale, 6)

    def stamp(self, stamp: datetime, start: datetime) -> float:
        """A Kubernetes timestamp (whole seconds) as a stream moment."""
        return self.stream((stamp - start).total_seconds())


@dataclass(frozen=True)
class Submission:
    """When one workload goes to the cluster: `at` its stream moment, `real` seconds after
    the stream's start (later than at/scale when it had to wait for a new second)."""

    workload: Workload
    at: float
    real: float


def submissions(
    workloads: Iterable[Workload], priority: Callable[[Workload], int], scale: TimeScale
) -> list[Submission]:
    """The stream's submissions in creation order (submitAt, then stream order: the order
    the fit model's queues take them in), each at submitAt/scale real seconds, but in a
    later whole second than the previous one of equal priority (Kueue orders equal
    priorities by creation second, then by random UID) and never before the one ahead of it
    (which may have waited for its second). The stream starts on a whole
    second of the API server's clock, so real second k is creation second k."""
    order = sorted(enumerate(workloads), key=lambda iw: (iw[1].submit_at or 0.0, iw[0]))
    last: dict[int, int] = {}
    out: list[Submission] = []
    for _, w in order:
        at = w.submit_at or 0.0
        real = max(scale.real(at), out[-1].real if out else 0.0)  # never before an earlier one
        second = math.floor(real)
        taken = last.get(priority(w))
        if taken is not None and second <= taken:
            second = taken + 1
            real = float(second)
        last[priority(w)] = second
        out.append(Submission(w, at, real))
    return out


def span(jobs: Mapping[str, Mapping[str, Any]]) -> float:
    """The latest moment of a replay's jobs (docs/replay.md): how long the stream lasts."""
    moments = [0.0]
    for job in jobs.values():
        moments += [job["submittedAt"], *(a["at"] for a in job["admissions"]), *job["preemptedAt"]]
        if job["finishedAt"] is not None:
            moments.append(job["finishedAt"])
    return float(max(moments))
