"""A stream replayed on an engine, in the replay's JSON form (docs/replay.md): the fit model
(harness.replay.engine), kueue-sim with a fake clock (harness.replay.onsim), or a real
cluster in real time (harness.runner.streaming, then harness.replay.oncluster). One home for
choosing how: `replay --engine` and stream scenarios under pytest both come here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.backends.base import Backend, create_backend
from harness.replay.agreement import time_robust
from harness.replay.clock import TimeScale
from harness.replay.expect import Bound
from harness.scenario.model import Scenario

if TYPE_CHECKING:
    from harness.replay.engine import Timeline

ENGINES = ("fit", "sim", "local", "kind", "existing")
"""`fit` the fit model; `sim` Kueue's scheduler in process; the others a cluster (`local` the
embedded one) where the stream runs in real time, compressed by the time scale."""


def on_a_cluster(engine: str) -> bool:
    """The engine runs the stream in real time, where moments are known to the second."""
    return engine not in ("fit", "sim")


def checked(expect: list[Bound], engine: str) -> list[Bound]:
    """The `replay.expect` figures an engine's replay is held to: all of them on the fit
    model and the sim; on a cluster only those that do not depend on time
    (harness.replay.agreement.time_robust)."""
    return [b for b in expect if time_robust(b)] if on_a_cluster(engine) else expect


@dataclass(frozen=True)
class Replayed:
    """The replay's JSON form; on a cluster, where its real seconds went (shape, stream) and
    the CPU seconds each component spent meanwhile."""

    result: dict[str, Any]
    timeline: Timeline
    phases: dict[str, float] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)


def replay_on(
    scenario: Scenario,
    classes: Mapping[str, str] | None = None,
    engine: str = "fit",
    *,
    backend: Backend | None = None,
    scale: TimeScale | None = None,
    **options: Any,
) -> Replayed:
    """The stream of `scenario` on `engine`; a backend of that engine is started (with
    `options`, harness.backends.base.backend_options) and stopped unless one is given."""
    from harness.replay.result import timeline_result

    if engine == "fit":
        from harness.replay.engine import replay

        timeline = replay(scenario)
        return Replayed(timeline_result(scenario, timeline, classes), timeline)
    own = backend is None
    used = backend if backend is not None else create_backend(engine, **options)
    try:
        if engine == "sim":
            from harness.backends.sim import SimBackend
            from harness.replay.onsim import replay_on as on_sim

            assert isinstance(used, SimBackend), f"{engine} is not the sim backend"
            timeline = on_sim(scenario, used.session)
            return Replayed(timeline_result(scenario, timeline, classes), timeline)
        from harness.replay.oncluster import timeline_of
        from harness.runner.backend import ClusterBackend
        from harness.runner.streaming import replay_on_cluster

        assert isinstance(used, ClusterBackend), f"{engine} is not a cluster backend"
        done = replay_on_cluster(used, scenario, scale or TimeScale())
        timeline = timeline_of(scenario, done.jobs)
        result = timeline_result(scenario, timeline, classes)
        return Replayed(result, timeline, done.phases, done.cpu)
    finally:
        if own:
            used.close()
