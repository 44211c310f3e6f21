"""Progress is logging under "kth": pytest shows it with --log-cli-level, and command-line
entry points print it to stderr when nothing else is set up to show it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAY = (
    "from harness import progress; {setup}; progress.show_on_stderr(); "
    "progress.logger('local').info('started etcd (pid 1)')"
)


def _stderr(setup: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", SAY.format(setup=setup)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stderr


def test_command_line_shows_progress_on_stderr() -> None:
    assert _stderr("pass") == "[kth.local] started etcd (pid 1)\n"


def test_logging_set_up_by_the_caller_is_left_alone() -> None:
    setup = "import logging; logging.basicConfig(format='%(levelname)s %(message)s')"
    assert _stderr(setup) == "INFO started etcd (pid 1)\n"


def test_python_m_harness_shows_progress(tmp_path: Path) -> None:
    """`python -m harness` sets the handler up: the run command's progress is visible."""
    probe = (
        "import runpy, sys; from harness import progress; from harness.cli import main; "
        "main.main = lambda: progress.logger('runner').info('step 1') or 0; "
        "runpy.run_module('harness', run_name='__main__')"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.stderr == "[kth.runner] step 1\n"


@pytest.mark.parametrize(
    "module",
    [
        "harness.providers.local.cluster",
        "harness.providers.kind.cluster",
        "harness.providers.existing.cluster",
        "harness.runner.backend",
    ],
)
def test_providers_and_runner_report_through_logging(module: str) -> None:
    source = (REPO / (module.replace(".", "/") + ".py")).read_text()
    assert "progress.logger(" in source
    assert "print(" not in source and "_say(" not in source
