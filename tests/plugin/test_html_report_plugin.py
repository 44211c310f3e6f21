"""The pytest run's HTML report (--kth-report), end to end with pytester: written when
scenarios ran, with the summary per suite folder and a map per scenario; a failure open,
with the expected and the fit model's maps side by side."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import yaml

GUIDE = Path(__file__).resolve().parents[2] / "suites" / "guide"
REAL_HOME = os.environ.get("HOME", str(Path.home()))


def copy(
    pytester: pytest.Pytester, source: str, name: str, folder: str, expect: object = None
) -> None:
    data = yaml.safe_load((GUIDE / f"{source}.yaml").read_text())
    data["name"] = name
    if expect is not None:
        data["expect"] = expect
    path = pytester.path / "suites" / folder / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def sections(page: str) -> dict[str, str]:
    """Scenario name -> its <details> element."""
    found = re.findall(r'(<details class="sc [^"]*".*?</details>)', page, re.S)
    return {re.search(r"<b>([^<]+)</b>", s).group(1): s for s in found}  # type: ignore[union-attr]


def test_the_run_writes_a_report_with_a_summary_and_a_map_per_scenario(
    pytester: pytest.Pytester,
) -> None:
    copy(pytester, "guide-required-host", "right-expect", "alpha")
    copy(pytester, "guide-required-host", "wrong-expect", "beta",
         {"train": {"admitted": True, "placement": {"main": {"gpu-node-1": 4}}}})  # fmt: skip
    copy(pytester, "guide-required-host-waits-for-freed-node", "waits", "beta")
    result = pytester.runpytest("-p", "no:cacheprovider", "--kth-report=run/report.html")
    result.assert_outcomes(passed=2, failed=1)
    report = pytester.path / "run" / "report.html"
    result.stdout.fnmatch_lines([f"HTML report: {report} (3 scenarios, * KiB)"])
    page = report.read_text()
    assert "3 scenarios: 2 passed, 1 failed · backend: <b>fit model only (no cluster)</b>" in page
    assert "<td>suites/alpha</td><td>1</td><td></td>" in page
    assert "<td>suites/beta</td><td>1</td><td>1</td>" in page
    found = sections(page)
    assert list(found) == ["right-expect", "waits", "wrong-expect"]
    passed, failed = found["right-expect"], found["wrong-expect"]
    assert '<details class="sc passed" id="s0">' in passed  # closed
    assert passed.count("<h4>") == 1 and ">gpu-node-3</text>" in passed
    assert '<details class="sc failed" id="s2" open>' in failed
    assert ">expected</h4>" in failed and ">fit model</h4>" in failed
    assert "train/main: expected gpu-node-1=4, got gpu-node-3=4" in failed  # the text diff
    assert failed.count('class="d"') == 4  # gpu-node-1 and gpu-node-3 outlined in both maps
    assert "after step 1: delete-usage node-3-busy" in found["waits"]


def test_the_path_is_an_option_and_empty_writes_none(pytester: pytest.Pytester) -> None:
    copy(pytester, "guide-required-host", "one", "alpha")
    pytester.runpytest("-p", "no:cacheprovider", "--kth-report=out/mine.html")
    assert (pytester.path / "out" / "mine.html").is_file()
    assert not (pytester.path / "run").exists()
    pytester.runpytest("-p", "no:cacheprovider", "--kth-report=")
    assert not (pytester.path / "run").exists()


def test_a_users_project_gets_no_report_unless_it_asks(pytester: pytest.Pytester) -> None:
    """Scenarios in someone else's repository: nothing written into their tree by default;
    `kth_report` in their pytest configuration asks for one, --kth-report overrides it."""
    copy(pytester, "guide-required-host", "one", "alpha")
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert sorted(p.name for p in pytester.path.iterdir()) == ["suites"]
    pytester.makeini("[pytest]\nkth_report = reports/kth.html\n")
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert (pytester.path / "reports" / "kth.html").is_file()
    pytester.runpytest("-p", "no:cacheprovider", "--kth-report=").assert_outcomes(passed=1)


def test_no_report_without_scenarios(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--kth-report=run/report.html")
    result.assert_outcomes(passed=1)
    assert not (pytester.path / "run").exists()
    result.stdout.no_fnmatch_line("HTML report*")


def test_a_file_that_does_not_load_is_listed_with_the_loaders_error(
    pytester: pytest.Pytester,
) -> None:
    bad = pytester.path / "suites" / "broken.yaml"
    bad.parent.mkdir(parents=True)
    bad.write_text("name: broken\ntopology: {name: t, levels: []}\nnodes: []\nworkloads: []\n")
    pytester.runpytest("-p", "no:cacheprovider", "--kth-report=run/report.html").assert_outcomes(
        failed=1
    )
    page = (pytester.path / "run" / "report.html").read_text()
    section = sections(page)["broken"]
    assert 'class="sc failed"' in section and "levels" in section and "<svg" not in section


@pytest.mark.sim
def test_on_the_sim_the_report_shows_kueues_column(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy(pytester, "guide-required-host", "on-sim", "alpha")
    monkeypatch.setenv("HOME", REAL_HOME)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--cluster=sim", "--kth-report=run/report.html", timeout=900
    )
    result.assert_outcomes(passed=1)
    page = (pytester.path / "run" / "report.html").read_text()
    assert "backend: <b>sim</b> · Kueue v0.19.2" in page
    assert ">Kueue (sim)</h4>" in sections(page)["on-sim"]
