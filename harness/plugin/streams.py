"""Stream scenarios become pytest items: a scenario file with a top-level `replay:` (its
workloads carry submitAt/runFor, or `replay.stream` names a .jsonl/.csv beside it) is
replayed on the fit model (and with --cluster=sim on kueue-sim too, which must agree with
it job for job) and its `replay.expect` figures checked (harness/replay/expect.py).

They are collected here and only here: hooks.pytest_collect_file asks `is_stream_file`
before making a ScenarioFile, and harness/scenario/discover.py does not count them as plain
scenarios, so a stream is never also submitted all at once as a one-moment scenario.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.errors import HarnessError
from harness.html.section import ScenarioResult
from harness.replay.engine import Timeline, replay
from harness.replay.expect import failures
from harness.replay.result import timeline_result
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


def _on_sim(stream: Stream) -> Timeline:
    """The stream replayed on kueue-sim (harness/replay/onsim.py)."""
    from harness.backends.sim import SimBackend
    from harness.replay.onsim import replay_on

    backend = SimBackend()
    try:
        return replay_on(stream.scenario, lambda sc: backend.run(sc).steps)
    finally:
        backend.close()


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
        if cluster not in (None, "sim"):  # no backend is started for it
            pytest.skip("stream scenarios replay on the fit model and the sim (docs/replay.md)")
        stream = self.stream
        self.timeline, self.engine = replay(stream.scenario), "fit model"
        result = timeline_result(stream.scenario, self.timeline, stream.classes)
        if cluster == "sim":
            fit_jobs = result["jobs"]
            self.timeline, self.engine = _on_sim(stream), "sim (Kueue's scheduler in process)"
            result = timeline_result(stream.scenario, self.timeline, stream.classes)
            differ = [n for n, job in result["jobs"].items() if job != fit_jobs.get(n)]
            if differ:
                name = differ[0]
                raise StreamFailed(
                    f"the sim and the fit model disagree on {len(differ)} job(s); {name}: "
                    f"sim {result['jobs'][name]}, fit model {fit_jobs.get(name)}"
                )
        broken = failures(stream.expect, result, str(self.path))
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
