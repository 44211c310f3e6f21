"""Compare outcomes: observed vs a file's `expect`, and observed vs the fit model's prediction.

Each difference is one readable line naming the workload and pod set. For leader/worker
groups Kueue names whichever member its map iteration meets first, so the pod set named in
"couldn't assign flavors to pod set X: " is not compared for those.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from harness.outcome import Outcome
from harness.scenario import Expectation

_POD_SET_PREFIX = re.compile(r"couldn't assign flavors to pod set [^:]+: ")


def _placement_lines(
    name: str, want: Mapping[str, Mapping[str, int]], got: Mapping[str, Mapping[str, int]]
) -> list[str]:
    lines = []
    for pod_set in sorted(set(want) | set(got)):
        w, g = dict(want.get(pod_set, {})), dict(got.get(pod_set, {}))
        if w != g:
            lines.append(f"{name}/{pod_set}: expected {_spread(w)}, got {_spread(g)}")
    return lines


def _spread(per_domain: Mapping[str, int]) -> str:
    if not per_domain:
        return "(nothing)"
    return ", ".join(f"{d}={n}" for d, n in sorted(per_domain.items()))


def message_matches(expected: str, actual: str) -> bool:
    if expected in actual:
        return True
    return _POD_SET_PREFIX.sub("", expected) in _POD_SET_PREFIX.sub("", actual)


def against_expectations(
    expect: Mapping[str, Expectation], observed: Mapping[str, Outcome]
) -> list[str]:
    """Differences between what a scenario file expects and what happened."""
    lines = []
    for name, want in expect.items():
        got = observed.get(name)
        if got is None:
            lines.append(f"{name}: expected an outcome, got none")
            continue
        if want.rejected is not None and want.rejected != got.rejected:
            lines.append(f"{name}: expected rejected={want.rejected}, got {_state(got)}")
            continue
        if want.admitted != got.admitted:
            lines.append(
                f"{name}: expected {'admitted' if want.admitted else 'pending'}, got {_state(got)}"
            )
            continue
        if want.placement is not None:
            lines += _placement_lines(name, want.placement, got.placement)
        if want.message is not None and not message_matches(want.message, got.message):
            lines.append(
                f"{name}: expected message containing {want.message!r}, got {got.message!r}"
            )
    return lines


def against_prediction(
    predicted: Mapping[str, Outcome], observed: Mapping[str, Outcome]
) -> list[str]:
    """Differences between the fit model's prediction and what the backend did."""
    lines = []
    for name in list(predicted) + [n for n in observed if n not in predicted]:
        want, got = predicted.get(name), observed.get(name)
        if want is None or got is None:
            lines.append(f"{name}: predicted {_state(want)}, observed {_state(got)}")
            continue
        if want.rejected or got.rejected:
            if want.rejected != got.rejected:
                lines.append(f"{name}: predicted {_state(want)}, observed {_state(got)}")
            continue
        if want.admitted != got.admitted:
            lines.append(f"{name}: predicted {_state(want)}, observed {_state(got)}")
        elif want.admitted:
            lines += _placement_lines(name, want.placement, got.placement)
        elif not _same_message(want.message, got.message):
            lines.append(f"{name}: predicted message {want.message!r}, observed {got.message!r}")
    return lines


def _same_message(a: str, b: str) -> bool:
    return a == b or _POD_SET_PREFIX.sub("", a) == _POD_SET_PREFIX.sub("", b)


def _state(outcome: Outcome | None) -> str:
    if outcome is None:
        return "no outcome"
    if outcome.admitted:
        parts = "; ".join(f"{ps}: {_spread(d)}" for ps, d in outcome.placement.items())
        return f"admitted ({parts})"
    if outcome.rejected:
        return f"rejected ({outcome.message})"
    return f"pending ({outcome.message})"
