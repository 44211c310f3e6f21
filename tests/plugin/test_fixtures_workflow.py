"""The examples run where the docs say: `make test` (its own-tests pass), and in GitHub Actions
through `make examples` on the embedded cluster and on kind."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def _recipe(target: str) -> str:
    text = (REPO / "Makefile").read_text()
    found = re.search(rf"^{target}:.*\n((?:\t.*\n|.*\\\n)+)", text, re.MULTILINE)
    assert found, f"no {target} target"
    return found.group(1)


def test_make_test_and_make_examples_run_the_examples() -> None:
    assert "own-tests" in (REPO / "Makefile").read_text().split("\ntest:", 1)[1].splitlines()[0]
    assert re.search(
        r"pytest tests suites examples --cluster=sim --cluster-tests", _recipe("own-tests")
    )
    assert "pytest examples --cluster=$(CLUSTER)" in _recipe("examples")


def test_ci_runs_the_examples_on_the_embedded_cluster_and_on_kind() -> None:
    ci = yaml.safe_load((REPO / ".github/workflows/ci.yml").read_text())
    runs = {name: [s.get("run", "") for s in job["steps"]] for name, job in ci["jobs"].items()}
    assert "make examples CLUSTER=local RUN_DIR=run" in runs["e2e-embedded"]
    assert "make examples CLUSTER=kind RUN_DIR=run" in runs["e2e-kind"]
