"""`kth summary JUNIT`: the job summary the GitHub Action writes, from a real pytest run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.cli.main import main

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "suites" / "guide"


def test_counts_per_folder_and_the_first_mismatch(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("guide-required-host", "guide-preferred-host"):
        target = pytester.path / "suites" / "team-a" / f"{name}.yaml"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(GUIDE / f"{name}.yaml", target)
    wrong = (
        (GUIDE / "guide-required-host.yaml").read_text().replace("gpu-node-3: 4", "gpu-node-1: 4")
    )
    (pytester.path / "suites" / "team-b").mkdir()
    (pytester.path / "suites" / "team-b" / "wrong.yaml").write_text(
        wrong.replace("name: guide-required-host", "name: wrong-node")
    )
    pytester.makepyfile(test_plain="def test_ok():\n    pass\n")
    pytester.runpytest("-p", "no:cacheprovider", "--junitxml=junit.xml").assert_outcomes(
        passed=3, failed=1
    )
    assert main(["summary", str(pytester.path / "junit.xml")]) == 1
    out = capsys.readouterr().out
    assert "4 items: 3 passed, 1 failed, 0 skipped" in out
    assert "| `suites/team-a` | 2 | 0 | 0 |" in out
    assert "| `suites/team-b` ❌ | 0 | 1 | 0 |" in out
    assert "| `.` | 1 | 0 | 0 |" in out
    assert "### First failure: `suites/team-b` wrong-node" in out
    assert "train/main: expected gpu-node-1=4, got gpu-node-3=4" in out


def test_a_file_that_is_not_junit_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "junit.xml"
    bad.write_text("<testsuites><testcase")
    assert main(["summary", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"{bad}: not a readable JUnit XML file") and "\n" not in err
