"""`kth init`: a starter folder that passes its own checks, never overwriting a file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.cli.main import main

REPO = Path(__file__).resolve().parents[2]
SNAPSHOT = REPO / "tests" / "data" / "explain" / "rack-short.yaml"


def _pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                          cwd=folder, capture_output=True, text=True, timeout=300, check=False)  # fmt: skip


def test_init_writes_a_starter_whose_scenarios_pass_on_the_fit_model(tmp_path: Path) -> None:
    assert main(["init", str(tmp_path)]) == 0
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert written == [".github/workflows/kueue-tas.yml", ".kth/.gitignore", "pytest.ini",
                       "scenarios/example.yaml", "tests/shapes/gpu-racks.yaml",
                       "tests/test_my_jobs.py"]  # fmt: skip
    done = _pytest(tmp_path, "scenarios")
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-2000:]
    assert (tmp_path / ".kth" / "report.html").is_file()  # where pytest.ini says, git-ignored


def test_the_example_is_the_guides_first_scenario() -> None:
    """One example (also `up`'s default shape), kept equal to the suite file it copies."""
    from harness.cli.init import GUIDE_EXAMPLE

    example = yaml.safe_load(GUIDE_EXAMPLE.read_text())
    suite = yaml.safe_load((REPO / "suites" / "guide" / "guide-required-host.yaml").read_text())
    for key in ("topology", "flavor", "nodes", "usage", "workloads", "expect"):
        assert example[key] == suite[key], key


def test_init_never_overwrites(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    assert main(["init", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"{tmp_path}/pytest.ini: exists already; init writes only new files"
    )
    assert (tmp_path / "pytest.ini").read_text() == "[pytest]\n"
    assert not (tmp_path / "scenarios").exists()


def test_from_snapshot_the_example_is_the_cluster_plus_one_job_the_fit_model_predicts(
    tmp_path: Path,
) -> None:
    assert main(["init", str(tmp_path), "--from-snapshot", str(SNAPSHOT)]) == 0
    example = yaml.safe_load((tmp_path / "scenarios" / "example.yaml").read_text())
    source = yaml.safe_load(SNAPSHOT.read_text())
    assert example["nodes"] == source["nodes"]
    assert example["workloads"][-1]["name"] == "example-train"
    assert "example-train" in example["expect"]
    done = _pytest(tmp_path, "scenarios")
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-2000:]
