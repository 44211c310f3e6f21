"""`replay --engine local` end to end: the stream on the embedded cluster (real Kueue, KWOK
nodes) in real time, its JSON held to the fit model's order and placement.

Marked `cluster` (enable with --cluster-tests or --cluster=local); it starts an embedded
cluster of its own, as the command does.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.replay.agreement import disagreements
from harness.replay.result import replay_result
from harness.replay.stream import load_stream

pytestmark = pytest.mark.cluster
STREAM = (
    Path(__file__).resolve().parents[2]
    / "suites"
    / "streams"
    / "stream-guide-required-rack-six-never-fits.yaml"
)


def test_the_replay_command_on_the_embedded_cluster_agrees_with_the_fit_model(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """At 20x `two` (due at 5 s, a quarter second in) waits for the next whole second: `six`
    of the same priority was created in the first, and Kueue would order the two by UID."""
    code = main(
        ["replay", str(STREAM), "--engine", "local", "--time-scale", "20", "--format", "json"]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    stream = load_stream(STREAM)
    fit = replay_result(stream.scenario, stream.classes)
    assert disagreements(fit["jobs"], out["jobs"]) == []
    planted = copy.deepcopy(fit["jobs"])  # a wrong prediction must show on the same run
    planted["two"]["admissions"][0]["placement"] = {"main": {"gpu-node-9": 2}}
    (line,) = disagreements(planted, out["jobs"])
    assert line.startswith("two: admission 1 placement: fit model {'main': {'gpu-node-9': 2}}")
    assert set(out) == {"jobs", "summary"}
    assert out["summary"]["neverAdmitted"] == ["six"]
    two = out["jobs"]["two"]
    assert two["submittedAt"] >= 20.0
    assert two["admissions"][0]["at"] >= two["submittedAt"]
    assert two["finishedAt"] >= two["admissions"][0]["at"] + 50.0
