"""The built package used as a user would: `python -m build`, the wheel installed into a fresh
virtualenv, a scenario and a fixtures test in an empty folder outside this repository, run
on each engine (the fit model, the sim, the embedded cluster). Nothing here imports the
harness from the work tree: every command runs the installed `kth` and `pytest`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
GUIDE = REPO / "suites" / "guide" / "guide-required-host.yaml"
SHAPE = REPO / "examples" / "shapes" / "gpu-racks.yaml"
SNAPSHOT = REPO / "tests" / "data" / "explain" / "rack-short.yaml"
JOB = REPO / "tests" / "data" / "explain" / "train-job.yaml"

EXAMPLE_TEST = REPO / "examples" / "test_against_fit_model.py"
"""A fixtures test from the examples, run as a user's own (it reads shapes/gpu-racks.yaml)."""


def _run(args: list[str], cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    return subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and wheel `python -m build` makes of this work tree."""
    out = tmp_path_factory.mktemp("dist")
    done = _run([sys.executable, "-m", "build", "--outdir", str(out), str(REPO)], REPO)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def installed(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh virtualenv with the wheel installed (dependencies from the package index)."""
    env_dir = tmp_path_factory.mktemp("venv")
    venv.create(env_dir, with_pip=True)
    (wheel,) = dist.glob("*.whl")
    done = _run([str(env_dir / "bin" / "pip"), "install", "--quiet", str(wheel)], env_dir)
    assert done.returncode == 0, done.stderr[-3000:]
    yield env_dir / "bin"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's folder: one scenario, one fixtures test and its cluster shape, no config."""
    shutil.copy(GUIDE, tmp_path / "my-job.yaml")
    (tmp_path / "shapes").mkdir()
    shutil.copy(SHAPE, tmp_path / "shapes" / "gpu-racks.yaml")
    shutil.copy(EXAMPLE_TEST, tmp_path / "test_my_jobs.py")
    return tmp_path


def test_the_wheel_carries_the_sim_sources_and_the_cluster_shapes(dist: Path) -> None:
    import zipfile

    (wheel,) = dist.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"harness/sim/go/go.mod", "harness/sim/go/main.go"} <= names
    assert "harness/providers/kind/shapes/gpu-2blocks-4racks.yaml" in names
    assert {"harness/cli/starter/dot-github/workflows/kueue-tas.yml",
            "harness/cli/starter/tests/test_my_jobs.py.tmpl"} <= names  # fmt: skip
    assert not [n for n in names if n.startswith(("tests/", "suites/"))]
    assert len(list(dist.glob("*.tar.gz"))) == 1


def test_kth_checks_a_scenario_on_the_fit_model(installed: Path, project: Path) -> None:
    version = _run([str(installed / "kth"), "--version"], project)
    assert version.returncode == 0 and version.stdout.startswith("kueue-tas-harness ")
    done = _run([str(installed / "kth"), "check", "my-job.yaml"], project)
    assert done.returncode == 0, done.stdout + done.stderr
    tests = _run([str(installed / "pytest"), "my-job.yaml", "-p", "no:cacheprovider"], project)
    assert tests.returncode == 0, tests.stdout[-3000:]
    assert "1 passed" in tests.stdout
    assert sorted(p.name for p in project.iterdir()) == [
        "my-job.yaml", "shapes", "test_my_jobs.py"
    ]  # fmt: skip  # nothing written into the user's tree


def test_kth_simulates_a_job_on_a_snapshot_and_replays_a_stream(
    installed: Path, project: Path
) -> None:
    shutil.copy(SNAPSHOT, project / "now.yaml")
    shutil.copy(JOB, project / "train.yaml")
    done = _run([str(installed / "kth"), "simulate", "train.yaml", "--from", "now.yaml"], project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "train-job" in done.stdout
    stream = project / "stream.yaml"
    stream.write_text(
        GUIDE.read_text().replace("  - name: train\n", "  - name: train\n    runFor: 60\n")
    )
    done = _run([str(installed / "kth"), "replay", "stream.yaml", "--format", "json"], project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert '"finishedAt": 60.0' in done.stdout


@pytest.mark.sim
def test_the_installed_package_builds_and_runs_the_sim(installed: Path, project: Path) -> None:
    done = _run(
        [str(installed / "pytest"), "my-job.yaml", "--cluster=sim", "-p", "no:cacheprovider"],
        project,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "1 passed" in done.stdout


@pytest.mark.cluster
def test_the_installed_package_runs_scenario_and_fixtures_on_real_kueue(
    installed: Path, project: Path
) -> None:
    done = _run(
        [str(installed / "pytest"), "my-job.yaml", "test_my_jobs.py", "--cluster=local",
         "-p", "no:cacheprovider"],
        project,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-3000:]
    assert "2 passed" in done.stdout
