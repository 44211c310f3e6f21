"""Every malformed scenario in the corpus is one line on stderr, naming file and key, exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.fit import check_supported
from harness.scenario.loader import load_scenario

CORPUS = sorted((Path(__file__).parents[1] / "data" / "malformed").glob("*.yaml"))


def expected_error(path: Path) -> str:
    first = path.read_text().splitlines()[0]
    assert first.startswith("# error: "), f"{path} must start with '# error: ...'"
    return first.removeprefix("# error: ")


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 30


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_malformed_file_is_one_clear_error(path: Path) -> None:
    with pytest.raises(HarnessError) as raised:
        check_supported(load_scenario(path))
    message = str(raised.value)
    assert message.startswith(f"{path}: ")
    assert expected_error(path) in message
    assert "\n" not in message


@pytest.mark.parametrize("path", CORPUS[:6], ids=[p.stem for p in CORPUS[:6]])
def test_cli_exits_2_with_one_line(path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "harness", "oracle", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert expected_error(path) in lines[0]


def test_missing_file_is_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "harness", "oracle", str(tmp_path / "absent.yaml")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert "cannot read" in done.stderr
