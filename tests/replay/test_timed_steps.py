"""Node events in a stream (harness/replay/timed_steps.py): steps with `at:` on the fit
model's replay. The suites/streams/stream-node-* scenarios check Kueue's reaction on the fit
model and the sim; here: validation, and that the events really act on the timeline."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.errors import InputError
from harness.replay.result import replay_result
from harness.replay.stream import load_stream

REPO = Path(__file__).resolve().parents[2]
MALFORMED = sorted((REPO / "tests" / "data" / "malformed-streams").glob("*.yaml"))
REPLACED = REPO / "suites" / "streams" / "stream-node-fails-replaced-in-rack.yaml"
EVICTED = REPO / "suites" / "streams" / "stream-node-fails-evicted-returns.yaml"


def _expected_error(path: Path) -> str:
    first = path.read_text().splitlines()[0]
    assert first.startswith("# error: "), f"{path} must start with '# error: ...'"
    return first.removeprefix("# error: ")


@pytest.mark.parametrize("path", MALFORMED, ids=[p.stem for p in MALFORMED])
def test_a_bad_step_is_one_line_naming_file_and_key(path: Path) -> None:
    with pytest.raises(InputError) as raised:
        load_stream(path)
    message = str(raised.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    assert _expected_error(path) in message


def test_the_malformed_corpus_covers_the_rules() -> None:
    assert len(MALFORMED) >= 8


def test_replay_exits_2_with_one_line_on_a_bad_step() -> None:
    path = MALFORMED[0]
    done = subprocess.run([sys.executable, "-m", "harness", "replay", str(path)],
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"{path}: ") and _expected_error(path) in line


def _without_steps(path: Path, tmp_path: Path) -> Path:
    data = yaml.safe_load(path.read_text())
    data.pop("steps")
    out = tmp_path / path.name
    out.write_text(yaml.safe_dump(data))
    return out


def test_the_steps_carry_their_seconds() -> None:
    steps = load_stream(EVICTED).scenario.steps
    assert [(s.action, s.at) for s in steps] == [("taint-node", 1800.0), ("untaint-node", 5400.0)]


def test_a_deleted_node_changes_who_waits(tmp_path: Path) -> None:
    """Without the failure, notebook (8 GPUs, one host) at 2000 finds r1-n3 free at once;
    with r1-n1 deleted at 1800 and train repaired onto r1-n3, it waits for train's end at
    3610. The repair is not an admission: train keeps one admission and its finish."""
    calm = replay_result(load_stream(_without_steps(REPLACED, tmp_path)).scenario)
    assert calm["jobs"]["notebook"]["admissions"][0]["at"] == 2000.0
    assert "replacements" not in calm["jobs"]["train"]
    stream = load_stream(REPLACED)
    faulty = replay_result(stream.scenario, stream.classes)
    train = faulty["jobs"]["train"]
    assert len(train["admissions"]) == 1 and train["finishedAt"] == 3610.0
    assert [r["at"] for r in train["replacements"]] == [1800.0]
    assert faulty["jobs"]["notebook"]["admissions"][0]["at"] == 3610.0


def test_a_node_failure_eviction_is_not_a_preemption(tmp_path: Path) -> None:
    """train is evicted (NodeFailures) at 1800 and admitted again at 5400 when the taint
    goes: an eviction, never counted with the preemptions; its run starts over."""
    stream = load_stream(EVICTED)
    result = replay_result(stream.scenario, stream.classes)
    train = result["jobs"]["train"]
    assert train["evictedAt"] == [1800.0] and train["preemptedAt"] == []
    assert [a["at"] for a in train["admissions"]] == [0.0, 5400.0]
    assert result["summary"]["preemptions"] == 0
    calm = replay_result(load_stream(_without_steps(EVICTED, tmp_path)).scenario)
    assert calm["jobs"]["train"]["finishedAt"] == 3600.0
    assert "evictedAt" not in calm["jobs"]["train"]
