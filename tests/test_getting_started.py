"""docs/getting-started.md stays true: its scenario, the commands that need no cluster, and
the output it quotes are run here as the page shows them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.fit import fit
from harness.scenario.loader import load_scenario

PAGE = (Path(__file__).resolve().parents[1] / "docs" / "getting-started.md").read_text()
BLOCKS = [textwrap.dedent(text) for text in re.findall(r"```\w*\n(.*?)```", PAGE, re.DOTALL)]


def _block(start: str) -> str:
    """The first fenced block whose text starts with `start`."""
    return next(text for text in BLOCKS if text.startswith(start))


def _harness(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        cwd=cwd, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


@pytest.fixture
def first_job(tmp_path: Path) -> Path:
    """The page's scenario, saved where the page says."""
    (tmp_path / "my-scenarios").mkdir()
    (tmp_path / "my-scenarios" / "first-job.yaml").write_text(_block("name: first-job"))
    return tmp_path


def test_check_write_expect_and_the_report_are_as_the_page_shows(first_job: Path) -> None:
    file = "my-scenarios/first-job.yaml"
    first = _harness(first_job, "check", file)
    assert first.returncode == 1 and "no expect to check" in first.stdout
    written = _harness(first_job, "check", "--write-expect", file)
    assert written.returncode == 0
    assert written.stdout == _block("my-scenarios/first-job.yaml: wrote expect")
    text = (first_job / file).read_text()
    assert text.endswith(_block("expect:\n  train:"))
    (first_job / file).write_text(text.replace("main: {host-3: 4}", "main: {host-1: 4}"))
    wrong = _harness(first_job, "check", file)
    assert wrong.returncode == 1
    assert wrong.stdout == _block("scenario first-job: the fit model disagrees")


def test_explain_goes_where_the_page_says(first_job: Path) -> None:
    text = _harness(first_job, "oracle", "my-scenarios/first-job.yaml", "--format", "text",
                    "--explain-domains")  # fmt: skip
    assert text.stdout.startswith("train: admitted\n") and "free capacity" in text.stdout
    assert text.stderr == ""
    why = _harness(first_job, "oracle", "my-scenarios/first-job.yaml", "--format", "text",
                   "--explain")  # fmt: skip
    assert why.stdout.endswith("explain: nothing to explain: every workload is admitted, none "
                               "spread over several domains of a preferred level\n")  # fmt: skip
    as_json = _harness(first_job, "oracle", "my-scenarios/first-job.yaml", "--explain-domains")
    assert set(json.loads(as_json.stdout)) == {"train", "eval"}
    assert "free capacity" in as_json.stderr


def test_pytest_collects_the_folder_and_selects_by_name(first_job: Path) -> None:
    _harness(first_job, "check", "--write-expect", "my-scenarios/first-job.yaml")
    (first_job / "pyproject.toml").write_text(_block("[tool.pytest.ini_options]"))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-k", "first-job", "-v"],
        cwd=first_job, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout
    assert "my-scenarios/first-job.yaml::first-job PASSED" in done.stdout


def _scenario_with(workloads: list[dict[str, Any]], busy_gpus: int) -> dict[str, Any]:
    """The page's cluster (its first two hosts), with the given workloads and usage."""
    data: dict[str, Any] = yaml.safe_load(_block("name: first-job"))
    data["nodes"] = [dict(n, allocatable={**n["allocatable"], "cpu": "64"}) for n in data["nodes"]]
    data["usage"] = [{"node": "host-1", "requests": {"nvidia.com/gpu": busy_gpus}}]
    data["workloads"] = workloads
    return data


def test_the_group_example_is_admitted_and_breaking_a_rule_is_rejected(tmp_path: Path) -> None:
    group = yaml.safe_load(_block("- name: leader-workers"))
    loose = json.loads(json.dumps(group))
    loose[0]["name"] = "loose"
    loose[0]["podSets"][0]["count"] = 2
    path = tmp_path / "groups.yaml"
    path.write_text(yaml.safe_dump(_scenario_with(group + loose, busy_gpus=0)))
    outcomes = fit(load_scenario(path)).outcomes
    assert outcomes["leader-workers"].admitted
    assert outcomes["loose"].rejected
    assert "at least one pod set has only 1 replica" in outcomes["loose"].message


def test_the_parked_twin_has_no_message(tmp_path: Path) -> None:
    job = {"count": 4, "requests": {"nvidia.com/gpu": 1},
           "topology": {"mode": "required", "level": "kubernetes.io/hostname"}}  # fmt: skip
    twins = [{"name": n, "podSets": [{"name": "main", **job}]} for n in ("twin-a", "twin-b")]
    data = _scenario_with(twins, busy_gpus=6)
    data["nodes"] = data["nodes"][:1]
    path = tmp_path / "twins.yaml"
    path.write_text(yaml.safe_dump(data))
    outcomes = fit(load_scenario(path)).outcomes
    assert "allows to fit only 2 out of 4 pod(s)" in outcomes["twin-a"].message
    assert not outcomes["twin-b"].admitted and outcomes["twin-b"].message == ""
