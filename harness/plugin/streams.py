"""Stream scenarios become pytest items: a scenario file with a top-level `replay:` (its
workloads carry submitAt/runFor, or `replay.stream` names a .jsonl/.csv beside it) is
replayed on the fit model, and its `replay.expect` figures checked (harness/replay/expect.py).
With --cluster=sim it is replayed on kueue-sim too, which must agree with the fit model job
for job; with --cluster=local (kind, existing) on the cluster in real time at the default
time scale, which must agree on the order and placement of admissions
(harness/replay/agreement.py), and only the figures that do not depend on time are checked
there. Streams longer than CLUSTER_SECONDS of real time are skipped on a cluster.

They are collected here and only here: hooks.pytest_collect_file asks `is_stream_file`
before making a ScenarioFile, and harness/scenario/discover.py does not count them as plain
scenarios, so a stream is never also submitted all at once as a one-moment scenario.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.backends.base import Unsupported
from harness.backends.replay import Replayed, checked, on_a_cluster, replay_on
from harness.errors import HarnessError
from harness.html.section import ScenarioResult
from harness.plugin.collect import BACKEND_KEY, CPU_PROPERTY, PHASES_PROPERTY
from harness.replay.clock import TimeScale, span
from harness.replay.engine import Timeline
from harness.replay.expect import failures
from harness.replay.stream import REPLAY_KEY, Stream, load_stream

_TOP_REPLAY = f"{REPLAY_KEY}:"


def is_stream_file(path: Path) -> bool:
    """A YAML file whose top level has `replay:` (read as text first: most files have not)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if not any(line.startswith(_TOP_REPLAY) for line in text.splitlines()):
        return False
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return True  # the loader reports where it is broken
    return isinstance(data, dict) and REPLAY_KEY in data


class StreamFailed(Exception):
    """The replay broke the file's expectations (one line each)."""


CLUSTER_SECONDS = 15.0
"""The longest a stream may take on a cluster by default (--stream-seconds), in real seconds
at the session's --time-scale (its fit-model span / the scale): at the default 10, 11 of
suites/streams/ fit (55-150 stream seconds, about 3 minutes of cluster time with shaping, as
Kubernetes and Kueue add about 2 s to each finish that frees a waiting job); the longer ones
are skipped there, with their span."""


ENGINE_NAMES = {"fit": "fit model", "sim": "sim (Kueue's scheduler in process)"}
"""How the report names an engine (a cluster: "local cluster", ...)."""


def _on_cluster(item: StreamItem, stream: Stream, fit: Replayed) -> Replayed:
    """The stream replayed on the session's cluster (or the sim), held to the fit model's
    jobs: job for job on the sim, order and placement on a cluster (harness.replay.agreement)."""
    from harness.replay.agreement import disagreements

    cluster = item.config.getoption("--cluster")
    backend = item.config.stash.get(BACKEND_KEY, None)
    fit_jobs = fit.result["jobs"]
    scale = TimeScale(item.config.getoption("--time-scale"))
    if on_a_cluster(cluster):
        real, most = scale.real(span(fit_jobs)), item.config.getoption("--stream-seconds")
        if real > most:
            pytest.skip(
                f"too long to replay in real time: {span(fit_jobs):g} stream seconds take "
                f"{real:g} s at --time-scale {scale.scale:g}, over the {most:g} s a stream "
                "may take on a cluster (--stream-seconds; docs/replay.md)"
            )
    try:
        done = replay_on(stream.scenario, stream.classes, cluster, backend=backend, scale=scale)
    except Unsupported as why:
        pytest.skip(f"{cluster} backend: {why}")
    if done.phases:  # the slowest-scenarios list and the durations record (make durations)
        item.user_properties.append((PHASES_PROPERTY, json.dumps(done.phases)))
        item.user_properties.append((CPU_PROPERTY, json.dumps(done.cpu)))
    jobs = done.result["jobs"]
    if cluster == "sim":
        differ = [n for n, job in jobs.items() if job != fit_jobs.get(n)]
        if differ:
            name = differ[0]
            raise StreamFailed(
                f"the sim and the fit model disagree on {len(differ)} job(s); {name}: "
                f"sim {jobs[name]}, fit model {fit_jobs.get(name)}"
            )
        return done
    lines = disagreements(fit_jobs, jobs, ("fit model", f"{cluster} cluster"))
    if lines:
        raise StreamFailed(
            f"the {cluster} cluster and the fit model disagree on the order or placement of "
            "admissions:\n  " + "\n  ".join(lines)
        )
    return done


class StreamFile(pytest.File):
    def collect(self) -> Iterator[StreamItem]:
        try:
            stream = load_stream(self.path)
        except HarnessError as err:
            yield StreamItem.from_parent(self, name=self.path.stem, problem=str(err))
            return
        yield StreamItem.from_parent(self, name=stream.scenario.name, stream=stream)


class StreamItem(pytest.Item):
    def __init__(self, *, stream: Stream | None = None, problem: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.stream = stream
        self.problem = problem
        self.timeline: Timeline | None = None
        """The replay the expectations were checked on (the HTML report draws it)."""
        self.engine = ""

    def runtest(self) -> None:
        if self.problem or self.stream is None:
            raise StreamFailed(self.problem)
        cluster = self.config.getoption("--cluster")
        stream = self.stream
        done = replay_on(stream.scenario, stream.classes)
        self.timeline, self.engine = done.timeline, ENGINE_NAMES["fit"]
        if cluster is not None:
            done = _on_cluster(self, stream, done)
            self.timeline = done.timeline
            self.engine = ENGINE_NAMES.get(cluster, f"{cluster} cluster")
        expected = checked(stream.expect, cluster or "fit")
        broken = failures(expected, done.result, str(self.path))
        if broken:
            raise StreamFailed("\n".join(f"replay.expect.{line}" for line in broken))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, StreamFailed | HarnessError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"stream {self.name}"


def stream_result(
    item: StreamItem, status: str, text: str, duration: float, folder: str
) -> ScenarioResult:
    """The stream scenario's part of the HTML report: its pytest result and the timeline of
    the replay it was checked on, with the rack map at 12 moments."""
    from harness.html.timeline import timeline_block
    from harness.html.timeline_svg import Track

    stream = item.stream
    if stream is None:
        return ScenarioResult(None, (), item.name, status, text, duration, folder)
    extra = ""
    if item.timeline is not None:
        track = Track(f"replayed on the {item.engine}", stream.scenario, item.timeline,
                      stream.classes)  # fmt: skip
        extra = timeline_block([track], None, f"t{zlib.crc32(item.nodeid.encode())}")
    return ScenarioResult(
        stream.scenario, (), item.name, status, text, duration, folder, extra=extra
    )
