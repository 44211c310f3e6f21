"""The GitHub Actions workflows: actionlint accepts them, and they do what CI promises."""

from __future__ import annotations

import subprocess
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.plugin.sharding import load_durations
from harness.toolchain import ToolchainError, tools
from harness.toolchain.pins import KUEUE_JOBSET, PINS

REPO = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.y*ml"))
CACHED = {"~/.cache/kueue-tas-harness", "~/go/pkg/mod", "~/.cache/go-build"}


@pytest.fixture(scope="module")
def actionlint() -> Path:
    """actionlint from PATH or the cache, built from its Go module when missing."""
    found = tools.tool_path("actionlint")
    if found is not None:
        return found
    try:
        return tools.ensure_built("actionlint")
    except ToolchainError as err:
        pytest.skip(f"actionlint cannot be built here: {err}")


@pytest.fixture(scope="module")
def ci() -> dict[str, Any]:
    """The parsed ci.yml."""
    data: dict[str, Any] = yaml.safe_load((REPO / ".github/workflows/ci.yml").read_text())
    return data


def test_actionlint_accepts_the_workflows(actionlint: Path) -> None:
    assert WORKFLOWS
    out = subprocess.run(
        [str(actionlint), "-no-color", *map(str, WORKFLOWS)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_actionlint_catches_a_broken_workflow(actionlint: Path, tmp_path: Path) -> None:
    """The check above can fail: a job needing an unknown job is reported."""
    broken = tmp_path / ".github" / "workflows" / "broken.yml"
    broken.parent.mkdir(parents=True)
    broken.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-24.04\n    needs: nope\n"
        "    steps:\n      - run: make unit\n"
    )
    out = subprocess.run([str(actionlint), "-no-color", str(broken)], cwd=tmp_path,
                         capture_output=True, text=True, check=False)  # fmt: skip
    assert out.returncode == 1
    assert "nope" in out.stdout


def _steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = job["steps"]
    return steps


def test_jobs_run_every_tier_of_the_gate(ci: dict[str, Any]) -> None:
    """Nothing runs only on a developer's machine: unit, own tests (sim and the harness's
    cluster tests), e2e on the embedded cluster, the version tests, kind."""
    jobs = ci["jobs"]
    assert set(jobs) == {"lint-unit", "own-tests", "e2e-embedded", "e2e-kueue-versions", "e2e-kind"}
    runs = {name: [s["run"] for s in _steps(job) if "run" in s] for name, job in jobs.items()}
    assert "make lint" in runs["lint-unit"] and any(r.startswith("make unit") for r in
                                                    runs["lint-unit"])  # fmt: skip
    assert any(r.startswith("make e2e CLUSTER=local") for r in runs["e2e-embedded"])
    assert any(r.startswith("make e2e CLUSTER=kind") for r in runs["e2e-kind"])
    assert jobs["e2e-embedded"]["needs"] == "lint-unit" == jobs["e2e-kind"]["needs"]
    assert any(r.startswith("make own-tests") for r in runs["own-tests"])
    assert any(r.startswith("make version-tests") for r in runs["e2e-kueue-versions"])


def test_ci_calls_make_targets_only(ci: dict[str, Any]) -> None:
    for name, job in ci["jobs"].items():
        for step in _steps(job):
            if "run" in step and not step["run"].startswith("sudo install -d"):
                assert step["run"].startswith("make "), f"{name}: {step['run']}"


def test_caches_are_keyed_on_the_pins(ci: dict[str, Any]) -> None:
    for name, job in ci["jobs"].items():
        (cache,) = [s for s in _steps(job) if str(s.get("uses", "")).startswith("actions/cache@")]
        paths = set(cache["with"]["path"].split())
        assert paths == CACHED, name
        assert "harness/toolchain/pins.py" in cache["with"]["key"], name


def _uploads(job: dict[str, Any], when: str) -> list[dict[str, Any]]:
    return [s for s in _steps(job) if str(s.get("uses", "")).startswith(
        "actions/upload-artifact@") and s.get("if") == when]  # fmt: skip


def test_failures_upload_the_run_directory(ci: dict[str, Any]) -> None:
    for name, job in ci["jobs"].items():
        uploads = _uploads(job, "failure()")
        assert len(uploads) == 1, name
        (upload,) = uploads
        assert upload["with"]["path"] == "run/"
        runs = " ".join(s.get("run", "") for s in _steps(job))
        if "make e2e" in runs or "make unit" in runs:
            assert "RUN_DIR=run" in runs, name


def test_every_run_uploads_the_html_report_and_junit(ci: dict[str, Any]) -> None:
    for name, job in ci["jobs"].items():
        (upload,) = _uploads(job, "always()")
        paths = upload["with"]["path"].split()
        for written in ("run/report.html", "run/report-test.html", "run/junit-e2e.xml"):
            assert any(fnmatch(written, path) for path in paths), (name, written)


def test_embedded_e2e_runs_as_a_matrix_of_shards_covering_the_suite(ci: dict[str, Any]) -> None:
    job = ci["jobs"]["e2e-embedded"]
    shards = job["strategy"]["matrix"]["shard"]
    assert shards == list(range(1, len(shards) + 1)) and len(shards) > 1
    (e2e,) = [s["run"] for s in _steps(job) if str(s.get("run", "")).startswith("make e2e")]
    assert f"--shard ${{{{ matrix.shard }}}}/{len(shards)} " in e2e
    # Balanced by the recorded durations (make durations), which must load as --shard reads them.
    assert "--shard-durations bench/durations/e2e.json" in e2e
    assert load_durations(REPO / "bench" / "durations" / "e2e.json")
    assert job["strategy"]["fail-fast"] is False  # one shard's failure must not hide the others'


def test_older_kueue_versions_run_as_a_matrix_each_with_its_own_cache(ci: dict[str, Any]) -> None:
    job = ci["jobs"]["e2e-kueue-versions"]
    versions = job["strategy"]["matrix"]["kueue"]
    assert set(versions) | {PINS.kueue} == set(KUEUE_JOBSET) and PINS.kueue not in versions
    (e2e,) = [s["run"] for s in _steps(job) if str(s.get("run", "")).startswith("make e2e")]
    assert "KUEUE_VERSION=${{ matrix.kueue }}" in e2e and "CLUSTER=local" in e2e
    for folder in ("guide", "required", "preferred", "unconstrained"):
        assert f"suites/{folder}" in e2e
    (cache,) = [s for s in _steps(job) if str(s.get("uses", "")).startswith("actions/cache@")]
    assert "${{ matrix.kueue }}" in cache["with"]["key"]
    assert job["needs"] == "lint-unit" and job["strategy"]["fail-fast"] is False
