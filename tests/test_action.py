"""The GitHub Action (action.yml) and the workflow `kth init` writes for it.

GitHub's own steps (setup-python, setup-go, cache, upload-artifact) cannot run here; every
`run` step of the action does, in order, as GitHub would run it: in a `kth init` folder, with
the step's `env` (inputs substituted), GITHUB_ENV / GITHUB_OUTPUT / GITHUB_STEP_SUMMARY
files, and a fresh virtualenv standing in for setup-python's Python."""

from __future__ import annotations

import os
import re
import subprocess
import venv
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.cli.init import starter_files
from harness.toolchain import tools

REPO = Path(__file__).resolve().parents[1]
ACTION = yaml.safe_load((REPO / "action.yml").read_text())
INPUTS = {"scenarios": "scenarios", "python-tests": "tests", "cluster": "local",
          "kueue-version": "", "feature-gates": "", "python-version": "3.11",
          "go-version": "1.26"}  # fmt: skip


def _steps() -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = ACTION["runs"]["steps"]
    return steps


def test_inputs_cover_paths_cluster_version_gates_and_python_tests() -> None:
    assert set(INPUTS) == set(ACTION["inputs"])
    assert ACTION["inputs"]["cluster"]["default"] == "local"
    uses = [s["uses"].split("@")[0] for s in _steps() if "uses" in s]
    assert uses == ["actions/setup-python", "actions/setup-go", "actions/cache",
                    "actions/upload-artifact"]  # fmt: skip


def test_run_scripts_read_inputs_from_env_only() -> None:
    """`${{ inputs.x }}` inside a script is a shell injection; env is not."""
    for step in _steps():
        assert "${{" not in step.get("run", ""), step["name"]


def _expand(text: str, action_path: Path) -> str:
    def value(m: re.Match[str]) -> str:
        expr = m.group(1).strip()
        if expr.startswith("inputs."):
            return INPUTS[expr.removeprefix("inputs.")]
        if expr == "github.action_path":
            return str(action_path)
        raise AssertionError(f"the test does not know ${{{{ {expr} }}}}")

    return re.sub(r"\$\{\{(.*?)\}\}", value, text)


@pytest.mark.cluster
def test_the_actions_run_steps_check_a_kth_init_folder_on_real_kueue(tmp_path: Path) -> None:
    project = tmp_path / "project"
    for relative, text in starter_files(None).items():
        (project / relative).parent.mkdir(parents=True, exist_ok=True)
        (project / relative).write_text(text)
    python = tmp_path / "python"  # what actions/setup-python provides
    venv.create(python, with_pip=True)
    files = {name: tmp_path / name for name in ("env", "output", "summary")}
    for path in files.values():
        path.touch()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON"))}
    base |= {"PATH": f"{python / 'bin'}:{os.environ['PATH']}", "GITHUB_ENV": str(files["env"]),
             "GITHUB_OUTPUT": str(files["output"]),
             "GITHUB_STEP_SUMMARY": str(files["summary"])}  # fmt: skip
    for step in [s for s in _steps() if "run" in s]:
        env = base | {k: _expand(str(v), REPO) for k, v in step.get("env", {}).items()}
        env |= dict(line.split("=", 1) for line in files["env"].read_text().splitlines())
        done = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=project, env=env,
                              capture_output=True, text=True, timeout=1800, check=False)  # fmt: skip
        assert done.returncode == 0, f"{step['name']}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    summary = files["summary"].read_text()
    assert "| `scenarios` | 1 | 0 | 0 |" in summary and "| `tests` | 1 | 0 | 0 |" in summary
    assert "report=kth-results/report.html" in files["output"].read_text()
    assert (project / "kth-results" / "report.html").is_file()


def test_the_init_workflow_passes_actionlint(tmp_path: Path) -> None:
    actionlint = tools.tool_path("actionlint")
    if actionlint is None:
        pytest.skip("actionlint is not built: run `make tools` (python -m harness build tools)")
    workflow = tmp_path / ".github" / "workflows" / "kueue-tas.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text(starter_files(None)[Path(".github/workflows/kueue-tas.yml")])
    done = subprocess.run([str(actionlint), str(workflow)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout
