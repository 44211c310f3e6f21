"""Stream scenarios (a top-level `replay:`) are pytest items of their own: replayed on the
fit model, their `replay.expect` figures checked, and never collected as plain scenarios."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
STREAM = REPO / "suites" / "streams" / "stream-priority-order-when-capacity-frees.yaml"


def _copy(pytester: pytest.Pytester, replace: tuple[str, str] | None = None) -> Path:
    folder = pytester.path / "suites" / "streams"
    folder.mkdir(parents=True)
    path = folder / STREAM.name
    text = STREAM.read_text()
    path.write_text(text.replace(*replace) if replace else text)
    return path


def test_a_stream_scenario_is_one_stream_item_that_passes(pytester: pytest.Pytester) -> None:
    _copy(pytester)
    result = pytester.runpytest("-p", "no:cacheprovider", "suites", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*::stream-priority-order-when-capacity-frees PASSED*"])


def test_a_broken_expectation_fails_with_one_line(pytester: pytest.Pytester) -> None:
    _copy(pytester, ("jobs.low.admissions.0.at: 150.0", "jobs.low.admissions.0.at: 149.0"))
    result = pytester.runpytest("-p", "no:cacheprovider", "suites")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["replay.expect.jobs.low.admissions.0.at: expected == 149.0, the replay gave 150.0"]
    )


def test_a_figure_the_replay_has_not_is_the_files_error(pytester: pytest.Pytester) -> None:
    _copy(pytester, ("lastFinish: 200.0", "lastFinsh: 200.0"))
    result = pytester.runpytest("-p", "no:cacheprovider", "suites")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*: replay.expect.lastFinsh: names no figure of the replay*"])


def test_the_html_report_shows_the_streams_timeline(pytester: pytest.Pytester) -> None:
    """A stream scenario's section holds its timeline (one bar per job of the stream) and
    the rack map at the 12 default moments."""
    _copy(pytester)
    report = pytester.path / "report.html"
    result = pytester.runpytest("-p", "no:cacheprovider", "suites", f"--kth-report={report}")
    result.assert_outcomes(passed=1)
    page = report.read_text()
    assert page.count('<svg xmlns="http://www.w3.org/2000/svg" class="tl"') == 1
    jobs = len(yaml.safe_load(STREAM.read_text())["workloads"])
    assert f'<g class="bars" data-jobs="{jobs}">' in page
    assert page.count('class="job"') == jobs
    assert "replayed on the fit model: the racks at 12 moments" in page
