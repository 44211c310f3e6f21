"""Waiting with a deadline: on timeout say what was awaited and what was last seen."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from typing import Any, TypeVar

from harness.kube.client import Kube, Obj, lagging_reads
from harness.kube.errors import KubeError, WaitTimeout

Check = Callable[[Obj | None], tuple[bool, str]]
"""Inspects an object (None when absent): (satisfied?, short description of what is seen)."""

T = TypeVar("T")

NOT_READY_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")

_WATCHDOG: ContextVar[Callable[[], None] | None] = ContextVar("kth_watchdog", default=None)
_SLEEP: ContextVar[Callable[[float], None]] = ContextVar("kth_sleep", default=time.sleep)

LONG_WAIT_S = 2.0
"""A wait still unmet after this long waits on a timer of Kueue's or Kubernetes' (Kueue's
1 s batch periods run late, the Job controller's 10 s pod backoff, Kueue's 30 s second
pass): from then on it polls every LONG_WAIT_INTERVAL_S."""
LONG_WAIT_INTERVAL_S = 0.4
"""Polling at 10 Hz through such timers made 2,519 GETs of one Workload in 14 waiting
scenarios (suites/pods-ready and two faults, 2026-12-07): each poll costs the API server
and the runner CPU that the other clusters of `make e2e` need."""


def interval_after(interval: float, waited: float) -> float:
    """The pause before the next poll of a wait that has lasted `waited` seconds."""
    return interval if waited < LONG_WAIT_S else max(interval, LONG_WAIT_INTERVAL_S)


@contextlib.contextmanager
def watchdog(check: Callable[[], None]) -> Iterator[None]:
    """Within the block every wait calls `check` between polls; it raises to end the wait
    early (a cluster component that died makes a wait for pods or Kueue hopeless)."""
    token = _WATCHDOG.set(check)
    try:
        yield
    finally:
        _WATCHDOG.reset(token)


@contextlib.contextmanager
def waking(sleep: Callable[[float], None]) -> Iterator[None]:
    """Within the block a wait's pause is `sleep`, which may end early: when a watched
    object changed (harness.kube.informer), so the wait sees the change at once."""
    token = _SLEEP.set(sleep)
    try:
        yield
    finally:
        _SLEEP.reset(token)


def pause(seconds: float, *, wake: bool = False) -> None:
    """Sleep between polls of a wait, after asking the watchdog (if any) whether to go on;
    with `wake`, a change of a watched object ends the sleep (see `waking`)."""
    check = _WATCHDOG.get()
    if check is not None:
        check()
    (_SLEEP.get() if wake else time.sleep)(seconds)


def poll_for(
    probe: Callable[[], T | None],
    *,
    timeout: float,
    interval: float,
    gave_up: Callable[[float], str],
) -> T:
    """Call `probe` until it returns a value (not None), pausing `interval` between calls;
    past the deadline raise WaitTimeout(gave_up(seconds waited)), which says what was last
    seen. The one deadline loop: a stateful wait keeps its state in the probe's closure.
    Its reads may come from watch-fed copies; a value found that way counts only when a
    second call, reading from the API server, returns one too."""
    started = time.monotonic()
    deadline = started + timeout
    while True:
        with lagging_reads() as served:
            found = probe()
        if found is not None and served.count:
            # A watch-fed copy answered: the API server confirms, since a watch stalled on a
            # loaded machine looks like a quiet cluster to a wait that asks for stillness.
            found = probe()
        if found is not None:
            return found
        now = time.monotonic()
        if now >= deadline:
            raise WaitTimeout(gave_up(now - started))
        seconds = min(interval_after(interval, now - started), max(deadline - now, 0.0) + 0.01)
        pause(seconds, wake=served.count > 0)


def poll_until(
    probe: Callable[[], tuple[bool, str]], *, what: str, timeout: float, interval: float = 0.25
) -> str:
    """Call `probe` until it reports success or the deadline passes (WaitTimeout).

    `probe` returns (done, seen); exceptions other than KubeError propagate, so a probe can
    abort early (e.g. a process that crashed).
    """
    seen = "nothing yet"

    def attempt() -> str | None:
        nonlocal seen
        try:
            done, seen = probe()
        except KubeError as err:
            done, seen = False, f"error: {err}"
        return seen if done else None

    return poll_for(
        attempt,
        timeout=timeout,
        interval=interval,
        gave_up=lambda _: f"waited {timeout:.0f}s for {what}; last seen: {seen}",
    )


def wait_for(
    kube: Kube,
    api_version: str,
    kind: str,
    name: str,
    check: Check,
    *,
    namespace: str | None = None,
    what: str,
    timeout: float = 60.0,
    interval: float = 0.25,
) -> Obj:
    """Poll one object until `check` holds; returns the object that satisfied it (an empty
    mapping when what was awaited is its absence)."""
    found: list[Obj] = []

    def probe() -> tuple[bool, str]:
        obj = kube.get_or_none(api_version, kind, name, namespace)
        done, seen = check(obj)
        if done:
            found.append(obj if obj is not None else {})
        return done, seen

    ref = f"{kind} {namespace + '/' if namespace else ''}{name}"
    poll_until(probe, what=f"{ref} to be {what}", timeout=timeout, interval=interval)
    return found[-1]


def wait_for_all(
    kube: Kube,
    api_version: str,
    kind: str,
    names: Iterable[str],
    check: Check,
    *,
    labels: str,
    namespace: str | None = None,
    what: str,
    timeout: float = 60.0,
    interval: float = 0.1,
) -> None:
    """Poll many objects with one list call per round (by `labels`) until `check` holds for
    each named one: a 1,000-node scenario would otherwise make 1,000 GETs per round."""
    wanted = sorted(set(names))
    if not wanted:
        return

    def probe() -> tuple[bool, str]:
        listed = kube.list(api_version, kind, namespace, labels)
        by_name = {o["metadata"]["name"]: o for o in listed}
        waiting = []
        for name in wanted:
            done, seen = check(by_name.get(name))
            if not done:
                waiting.append(f"{name}: {seen}")
        left = f"{len(waiting)} of {len(wanted)} not yet; first: {waiting[0]}" if waiting else ""
        return not waiting, left

    where = f" in {namespace}" if namespace else ""
    poll_until(probe, what=f"{kind}s{where} to be {what}", timeout=timeout, interval=interval)


def condition(obj: Obj | None, kind: str) -> dict[str, Any] | None:
    """The status condition of the given type, or None."""
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return dict(cond)
    return None


def _describe(cond: dict[str, Any] | None, kind: str) -> str:
    if cond is None:
        return f"no {kind} condition"
    detail = cond.get("reason") or ""
    if cond.get("message"):
        detail += f": {cond['message']}"
    return f"{kind}={cond.get('status')}" + (f" ({detail})" if detail else "")


def has_condition(kind: str, status: str = "True") -> Check:
    """Check: the object has condition `kind` with `status`."""

    def check(obj: Obj | None) -> tuple[bool, str]:
        if obj is None:
            return False, "object absent"
        cond = condition(obj, kind)
        return cond is not None and cond.get("status") == status, _describe(cond, kind)

    return check


def node_ready(obj: Obj | None) -> tuple[bool, str]:
    """Check: Ready=True and the not-ready/unreachable taints are gone, as TAS needs."""
    if obj is None:
        return False, "node absent"
    cond = condition(obj, "Ready")
    taints = [t.get("key") for t in (obj.get("spec") or {}).get("taints") or []]
    blocking = [t for t in taints if t in NOT_READY_TAINTS]
    ready = cond is not None and cond.get("status") == "True"
    return ready and not blocking, f"{_describe(cond, 'Ready')}, taints {taints}"


def absent(obj: Obj | None) -> tuple[bool, str]:
    """Check: the object is gone."""
    if obj is None:
        return True, "absent"
    deleting = (obj.get("metadata") or {}).get("deletionTimestamp")
    return False, "being deleted" if deleting else "still present"
