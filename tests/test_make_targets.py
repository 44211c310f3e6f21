"""`make test` builds what the tests drive, so a fresh machine skips only Docker-only tests.

Checked with `make -n` (print the commands, run nothing): the CLI tools (kind, helm, kubectl,
actionlint) are built, or found in the cache, before pytest starts.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def _dry_run(target: str) -> list[str]:
    done = subprocess.run(
        ["make", "-n", target], cwd=REPO, capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.splitlines()


def test_make_test_builds_the_tools_before_pytest() -> None:
    lines = _dry_run("test")
    build = next(i for i, line in enumerate(lines) if "-m harness build tools" in line)
    pytest_run = next(i for i, line in enumerate(lines) if "-m pytest" in line)
    assert build < pytest_run
    assert lines[build].split("build", 1)[1].split() == ["tools"]  # no TOOLS given: every tool
