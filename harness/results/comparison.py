"""Compare outcomes: observed vs a file's `expect`, and observed vs the fit model's prediction.

Each difference is one readable line naming the workload and pod set. For leader/worker
groups Kueue names whichever member its map iteration meets first, so the pod set named in
"couldn't assign flavors to pod set X: " is not compared for those.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from harness.kueue.pods_ready import TIMEOUT_MESSAGE
from harness.results.outcome import Outcome, replaced_to_json
from harness.scenario.model import Eviction, Expectation, Replaced

_POD_SET_PREFIX = re.compile(r"couldn't assign flavors to pod set [^:]+: ")
_EXPECTED = ("expected", "got")
_PREDICTED = ("predicted", "observed")


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
        if want.preempted is not None and want.preempted != got.preempted:
            lines.append(f"{name}: expected preempted={want.preempted}, got {got.preempted}")
        if want.evicted is not None:
            lines += _eviction_lines(name, want.evicted, got.evicted)
        if want.admitted != got.admitted:
            lines.append(
                f"{name}: expected {'admitted' if want.admitted else 'pending'}, got {_state(got)}"
            )
            continue
        if not want.admitted and bool(want.quota_reserved) != got.quota_reserved:
            said = (
                "quota reserved (waiting for admission checks)"
                if want.quota_reserved
                else "pending"
            )
            lines.append(f"{name}: expected {said}, got {_state(got)}")
            continue
        if want.replaced is not None:
            lines += _replaced_lines(name, _EXPECTED, want.replaced, got.replaced)
        if want.drift is not None and got.binding_observed:
            lines += _drift_lines(name, _EXPECTED, want.drift, got.drift)
        if want.flavors is not None and dict(want.flavors) != dict(got.flavors):
            lines.append(f"{name}: expected flavors {dict(want.flavors)}, got {dict(got.flavors)}")
        if want.placement is not None:
            lines += _placement_lines(name, want.placement, got.placement)
        if want.message is not None and not message_matches(want.message, got.message):
            lines.append(
                f"{name}: expected message containing {want.message!r}, got {got.message!r}"
            )
        if got.admitted and got.binding_observed:
            lines += _unschedulable_lines(name, want.unschedulable, got)
    return lines


def _eviction_lines(name: str, want: Eviction | bool, got: Eviction | None) -> list[str]:
    """`evicted: false` expects none; otherwise the reason exactly, the message as a part."""
    if not isinstance(want, Eviction):
        return [] if got is None else [f"{name}: expected no eviction, got {_evicted(got)}"]
    if got is None or got.reason != want.reason or want.message not in got.message:
        shown = f"reason {want.reason}" + (
            f", message containing {want.message!r}" * bool(want.message)
        )
        return [f"{name}: expected an eviction ({shown}), got {_evicted(got)}"]
    return []


def _same_eviction(predicted: Eviction | None, observed: Eviction | None) -> bool:
    """The same reason, the predicted message a part of the observed one (Kueue's PodsReady
    timeout message names the Workload object: 'Exceeded the PodsReady timeout NS/NAME')."""
    if predicted is None or observed is None:
        return predicted is observed
    return predicted.reason == observed.reason and message_matches(
        predicted.message, observed.message
    )


def _evicted(eviction: Eviction | None) -> str:
    if eviction is None:
        return "none"
    return f"reason {eviction.reason}, message {eviction.message!r}"


def _replaced_lines(name: str, verbs: tuple[str, str], want: Replaced, got: Replaced) -> list[str]:
    """Per pod set: which failed node went to which nodes ({} and absent both mean none)."""
    w, g = replaced_to_json(want), replaced_to_json(got)
    return [
        f"{name}/{ps}: {verbs[0]} replaced {w.get(ps) or '(none)'}, "
        f"{verbs[1]} {g.get(ps) or '(none)'}"
        for ps in sorted(set(w) | set(g))
        if (w.get(ps) or {}) != (g.get(ps) or {})
    ]


def _drift_lines(
    name: str,
    verbs: tuple[str, str],
    want: Mapping[str, Mapping[str, int]],
    got: Mapping[str, Mapping[str, int]],
) -> list[str]:
    """Running pods on nodes the assignment no longer names (kueue#12735)."""
    return [
        f"{name}/{ps}: {verbs[0]} pods running outside the assignment "
        f"{_spread(want.get(ps, {}))}, {verbs[1]} {_spread(got.get(ps, {}))}"
        for ps in sorted(set(want) | set(got))
        if dict(want.get(ps, {})) != dict(got.get(ps, {}))
    ]


def _unschedulable_lines(name: str, want: Mapping[str, int] | None, got: Outcome) -> list[str]:
    """Admitted pods that never run, against the file's `unschedulable` (absent: none)."""
    expected = {ps: n for ps, n in (want or {}).items() if n}
    if expected == dict(got.unschedulable):
        return []
    if want is None:
        total = sum(got.unschedulable.values())
        counts = ", ".join(f"{ps}: {n}" for ps, n in got.unschedulable.items())
        return [
            f"{name}: admitted by Kueue, but {total} pod(s) can never run ({_why(got)}); "
            f"the file expects none: if that is what should happen, add "
            f"`unschedulable: {{{counts}}}` to its expect"
        ]
    return [
        f"{name}/{ps}: expected {expected.get(ps, 0)} unschedulable pod(s), got "
        f"{got.unschedulable.get(ps, 0)}" + _reason_of(got, ps)
        for ps in sorted(set(expected) | set(got.unschedulable))
        if expected.get(ps, 0) != got.unschedulable.get(ps, 0)
    ]


def _why(outcome: Outcome) -> str:
    return "; ".join(
        f"{ps}: {n} — {outcome.unschedulable_reasons.get(ps, 'no reason recorded')}"
        for ps, n in outcome.unschedulable.items()
    )


def _reason_of(outcome: Outcome, pod_set: str) -> str:
    reason = outcome.unschedulable_reasons.get(pod_set)
    return f" ({reason})" if reason else ""


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
        if want.preempted != got.preempted:
            lines.append(f"{name}: predicted preempted={want.preempted}, observed {got.preempted}")
        if not _same_eviction(want.evicted, got.evicted):
            lines.append(
                f"{name}: predicted eviction {_evicted(want.evicted)}, "
                f"observed {_evicted(got.evicted)}"
            )
        if want.admitted != got.admitted or want.quota_reserved != got.quota_reserved:
            lines.append(f"{name}: predicted {_state(want)}, observed {_state(got)}")
        elif want.quota_reserved:
            lines += _placement_lines(name, want.placement, got.placement)
            if want.flavors and got.flavors and dict(want.flavors) != dict(got.flavors):
                lines.append(
                    f"{name}: predicted flavors {dict(want.flavors)}, observed {dict(got.flavors)}"
                )
        elif want.admitted:
            lines += _placement_lines(name, want.placement, got.placement)
            lines += _replaced_lines(name, _PREDICTED, want.replaced, got.replaced)
            if want.binding_observed and got.binding_observed:
                lines += _drift_lines(name, _PREDICTED, want.drift, got.drift)
            if want.flavors and got.flavors and dict(want.flavors) != dict(got.flavors):
                lines.append(
                    f"{name}: predicted flavors {dict(want.flavors)}, observed {dict(got.flavors)}"
                )
            if want.binding_observed and got.binding_observed:
                lines += [
                    f"{name}/{ps}: predicted {want.unschedulable.get(ps, 0)} unschedulable "
                    f"pod(s), observed {got.unschedulable.get(ps, 0)}"
                    + (_reason_of(got, ps) or _reason_of(want, ps))
                    for ps in sorted(set(want.unschedulable) | set(got.unschedulable))
                    if want.unschedulable.get(ps, 0) != got.unschedulable.get(ps, 0)
                ]
        elif (
            not _same_message(want.message, got.message)
            and not _victim_race(want, got)
            and (want.message_race is None or not _same_message(want.message_race, got.message))
        ):
            lines.append(f"{name}: predicted message {_predicted(want)}, observed {got.message!r}")
    return lines


SKIPPED_AFTER_ANOTHER = "Workload no longer fits after processing another workload"
PREEMPTED_PREFIX = "Preempted to accommodate a workload"


def _predicted(want: Outcome) -> str:
    """The predicted message, and the one Kueue may write instead where that is a race."""
    if want.message_race is None:
        return repr(want.message)
    return f"{want.message!r} (or, a race, {want.message_race!r})"


def _victim_race(want: Outcome, got: Outcome) -> bool:
    """A pending victim's last message is either its preemption message or the skip of the
    cycle its preemptor took the room in: which one Kueue writes last depends on when its
    Job stopped (requeueAndUpdate patches from a stale copy; docs/dev/kueue-v0.19.2-rules-v2.md
    §8), so either stands for the other when both say the workload was preempted."""
    pair = {want.message == SKIPPED_AFTER_ANOTHER, got.message == SKIPPED_AFTER_ANOTHER}
    preemption = want.message if got.message == SKIPPED_AFTER_ANOTHER else got.message
    return (
        want.preempted
        and got.preempted
        and pair == {True, False}
        and preemption.startswith(PREEMPTED_PREFIX)
    )


def _same_message(predicted: str, observed: str) -> bool:
    if predicted == observed:
        return True
    if predicted == TIMEOUT_MESSAGE and observed.startswith(f"{TIMEOUT_MESSAGE} "):
        # reconcileNotReadyTimeout names the Workload object (NS/NAME), which only the
        # cluster names; a workload evicted so and never evaluated since keeps that message.
        return True
    a, b = _POD_SET_PREFIX.sub("", predicted), _POD_SET_PREFIX.sub("", observed)
    if a == b:
        return True
    return _IDENTITY.search(a) is not None and _identity_pattern(a).fullmatch(b) is not None


_IDENTITY = re.compile(r"<(?:job )?uid of [^<>]+>")
"""The fit model's stand-ins for a workload's UID and its Job's UID, which only a cluster
assigns (victim messages: `Preempted to accommodate a workload (UID: <uid of train>, ...`)."""


def _identity_pattern(predicted: str) -> re.Pattern[str]:
    """The predicted message with each stand-in matching any UID text."""
    pieces = _IDENTITY.split(predicted)
    return re.compile(r"[^\s,()]+".join(re.escape(piece) for piece in pieces))


def _state(outcome: Outcome | None) -> str:
    if outcome is None:
        return "no outcome"
    if outcome.admitted:
        parts = "; ".join(f"{ps}: {_spread(d)}" for ps, d in outcome.placement.items())
        return f"admitted ({parts})"
    if outcome.rejected:
        return f"rejected ({outcome.message})"
    if outcome.quota_reserved:
        parts = "; ".join(f"{ps}: {_spread(d)}" for ps, d in outcome.placement.items())
        return f"quota reserved, waiting for admission checks ({parts})"
    return f"pending ({outcome.message})"


def differing_workloads(
    expect: Mapping[str, Expectation],
    predicted: Mapping[str, Outcome] | None,
    observed: Mapping[str, Outcome],
) -> set[str]:
    """The workloads whose outcome differs from the file's expect or the fit model's
    prediction: each compared on its own by the same rules as the report's lines."""
    names = {
        name
        for name, want in expect.items()
        if against_expectations({name: want}, {n: o for n, o in observed.items() if n == name})
    }
    if predicted is not None:
        for name in {*predicted, *observed}:
            one_predicted = {name: predicted[name]} if name in predicted else {}
            one_observed = {name: observed[name]} if name in observed else {}
            if against_prediction(one_predicted, one_observed):
                names.add(name)
    return names
