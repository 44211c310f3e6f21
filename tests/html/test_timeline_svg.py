"""The replay's timeline SVG (harness/html/timeline_svg.py) and the rack maps at moments
(harness/html/timeline.py): read back as XML, counted, and the axis checked."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from harness.html.timeline import default_moments, maps_at, running_at
from harness.html.timeline_svg import LEFT, MAX_BARS, RIGHT, WIDTH, Axis, Track, timeline_svg
from harness.replay.engine import Admission, JobRecord, Moment, Timeline, replay
from harness.replay.stream import load_stream
from harness.scenario.model import PodSet, Workload

REPO = Path(__file__).resolve().parents[2]
STREAMS = REPO / "suites" / "streams"
NS = "{http://www.w3.org/2000/svg}"


def _track(name: str, label: str = "base") -> Track:
    stream = load_stream(STREAMS / f"{name}.yaml")
    return Track(label, stream.scenario, replay(stream.scenario), stream.classes)


def _svg(*tracks: Track, moments: tuple[float, ...] = ()) -> ET.Element:
    return ET.fromstring(timeline_svg(tracks, moments))  # well-formed XML, or this raises


def _all(root: ET.Element, tag: str, cls: str) -> list[ET.Element]:
    return [e for e in root.iter(f"{NS}{tag}") if e.get("class") == cls]


def test_one_bar_a_run_and_a_mark_for_the_node_failure_eviction() -> None:
    """train runs 0-1800 (evicted by the node failure) and 5400-9000; serve 10-10010: three
    runs, one eviction mark, no preemption, two job rows."""
    root = _svg(_track("stream-node-fails-evicted-returns"))
    assert len(_all(root, "g", "job")) == 2
    assert len(_all(root, "rect", "run")) == 3
    assert len(_all(root, "line", "evi")) == 1 + 1  # the mark, and the legend's
    assert len(_all(root, "line", "pre")) == 1  # the legend's only
    (chart,) = _all(root, "g", "chart")
    assert chart.get("data-gpus") == "40" and chart.get("data-max-pending") == "1"


def test_the_axis_spans_the_stream_and_every_mark_is_inside_it() -> None:
    root = _svg(_track("stream-node-fails-evicted-returns"), moments=(900.0, 6000.0))
    (axis,) = _all(root, "g", "axis")
    assert (axis.get("data-from"), axis.get("data-to")) == ("0", "10010")
    xs = [float(e.get("x", LEFT)) for e in _all(root, "rect", "run")]
    ends = [
        x + float(e.get("width", 0)) for x, e in zip(xs, _all(root, "rect", "run"), strict=True)
    ]
    assert min(xs) == LEFT and max(ends) <= WIDTH - RIGHT + 0.01
    (moments,) = _all(root, "g", "moments")
    assert moments.get("data-count") == "2"


def test_each_preemption_is_marked_and_each_admission_is_a_run() -> None:
    track = _track("stream-preemption-storm")
    jobs = track.timeline.jobs.values()
    root = _svg(track)
    assert len(_all(root, "line", "pre")) == sum(len(j.preempted_at) for j in jobs) + 1
    assert len(_all(root, "rect", "run")) == sum(len(j.admissions) for j in jobs)
    assert sum(len(j.preempted_at) for j in jobs) > 0


def test_a_repair_is_a_mark_on_the_running_bar_not_a_new_run() -> None:
    root = _svg(_track("stream-node-fails-replaced-in-rack"))
    assert len(_all(root, "rect", "run")) == 3  # serve, train, notebook: one run each
    assert len(_all(root, "path", "rep")) == 1 + 1  # train's repair, and the legend's


def test_compare_stacks_two_tracks_on_one_axis() -> None:
    """The guide's required-host day and its preferred-host twin: one axis to the later end
    of the two, two sets of bars."""
    base = _track("stream-guide-required-host", "base")
    other = _track("stream-guide-preferred-host", "other")
    root = _svg(base, other)
    assert [g.get("data-jobs") for g in _all(root, "g", "bars")] == [
        str(len(base.timeline.jobs)),
        str(len(other.timeline.jobs)),
    ]
    (axis,) = _all(root, "g", "axis")
    ends = [t.timeline.moments[-1].at for t in (base, other)]
    assert float(axis.get("data-to", 0)) == max(ends)
    assert len(_all(root, "g", "chart")) == 2


def test_ticks_are_counted_in_the_unit_of_their_spacing() -> None:
    day = Axis(0, 86400)
    assert day.ticks() == [i * 10800.0 for i in range(9)]
    assert [day.label(t) for t in day.ticks()[:3]] == ["0h", "3h", "6h"]
    short = Axis(0, 100)
    assert short.ticks() == [i * 15.0 for i in range(7)]
    assert short.label(45) == "45s"
    assert short.x(0) == LEFT and short.x(100) == WIDTH - RIGHT


def test_at_most_max_bars_jobs_are_drawn() -> None:
    gpu = PodSet("main", 1, {})
    jobs = {}
    for i in range(MAX_BARS + 5):
        job = JobRecord(Workload(f"j{i}", (gpu,), "q"), float(i))
        job.admissions.append(Admission(float(i), {"main": "f"}, {}))
        job.finished_at = float(i + 1)
        jobs[job.workload.name] = job
    timeline = Timeline(jobs, [Moment(0.0, (), ()), Moment(float(MAX_BARS + 5), (), ())])
    scenario = load_stream(STREAMS / "stream-guide-required-host.yaml").scenario
    root = _svg(Track("many", scenario, timeline))
    (bars,) = _all(root, "g", "bars")
    assert bars.get("data-jobs") == str(MAX_BARS)
    assert len(_all(root, "rect", "run")) == MAX_BARS


def test_the_rack_map_at_a_moment_shows_the_repaired_placement_on_the_nodes_left() -> None:
    """At 2000 s r1-n1 is gone (deleted at 1800) and train runs on r1-n2 and r1-n3."""
    track = _track("stream-node-fails-replaced-in-rack")
    running = running_at(track, 2000.0)
    assert running["train"].placement == {"main": {"r1-n2": 1, "r1-n3": 1}}
    assert set(running) == {"serve", "train"}
    markup = maps_at(track, [900.0, 2000.0], "k")
    before, after = markup.split("2000 s")
    assert "r1-n1" in before and "r1-n1" not in after
    moments = default_moments([track])
    assert len(moments) == 12 and moments[0] == 0.0 and moments[-1] == 7200.0


def _replay_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", "replay", *args],
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip


def test_replay_compare_as_svg_and_html_with_chosen_moments() -> None:
    base, other = (str(STREAMS / f"stream-guide-{m}-host.yaml") for m in ("required", "preferred"))
    svg = _replay_cli(base, "--compare", other, "--format", "svg")
    assert svg.returncode == 0, svg.stderr
    assert len(_all(ET.fromstring(svg.stdout), "g", "bars")) == 2
    page = _replay_cli(base, "--format", "html", "--moments", "15,30")
    assert page.returncode == 0, page.stderr
    assert page.stdout.startswith("<!DOCTYPE html>")
    assert 'data-count="2"' in page.stdout and "the racks at 2 moments" in page.stdout


def test_bad_moments_exit_2() -> None:
    done = _replay_cli(str(STREAMS / "stream-guide-required-host.yaml"), "--moments", "-5")
    assert done.returncode == 2 and "--moments" in done.stderr and "Traceback" not in done.stderr


def test_the_docs_picture_is_what_the_tool_draws() -> None:
    """docs/img/replay-compare-timeline.svg is `make docs-img`'s output (rerun it after
    changing the drawing or the replay)."""
    done = _replay_cli(
        str(STREAMS / "guide-day.jsonl"),
        "--world", str(REPO / "suites" / "guide" / "guide-required-host.yaml"),
        "--compare", str(REPO / "examples" / "streams" / "guide-plus-one-host.yaml"),
        "--format", "svg",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    picture = (REPO / "docs" / "img" / "replay-compare-timeline.svg").read_text()
    assert done.stdout.replace(str(REPO) + "/", "") == picture, "run `make docs-img`"
