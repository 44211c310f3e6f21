"""`python -m harness run`: output, exit codes and one-line errors (the backend is stubbed;
the cluster itself is exercised in test_runner_cluster.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.backends.base import BackendError
from harness.cli import run as runcli
from harness.cli.main import main
from harness.results.observation import Observation
from harness.results.outcome import Outcome
from harness.scenario.model import Scenario

GUIDE = Path(__file__).resolve().parents[2] / "suites" / "guide"


class _Stub:
    """Reports fixed outcomes and records whether it was closed."""

    closed = False

    def __init__(
        self, outcomes: dict[str, Outcome], steps: list[dict[str, Outcome]], fail: bool = False
    ) -> None:
        self.name = "stub"
        self.outcomes, self.steps, self.fail = outcomes, steps, fail

    def run(self, scenario: Scenario) -> Observation:
        if self.fail:
            raise BackendError("kube-apiserver exited with code 1")
        return Observation(self.outcomes, self.steps, details="evidence here", kueue="v0.18.2")

    def close(self) -> None:
        _Stub.closed = True


def _use(monkeypatch: pytest.MonkeyPatch, stub: _Stub) -> None:
    _Stub.closed = False
    monkeypatch.setattr(runcli, "create_backend", lambda name, **_: stub)


ON_NODE_3 = Outcome(admitted=True, placement={"main": {"gpu-node-3": 4}})


def test_agreement_prints_json_and_exits_0(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _use(monkeypatch, _Stub({"train": ON_NODE_3}, []))
    code = main(["run", str(GUIDE / "guide-required-host.yaml")])
    out = capsys.readouterr().out
    assert code == 0
    payload = json.loads(out[: out.index("\n}\n") + 2])
    assert payload == {"train": {"admitted": True, "placement": {"main": {"gpu-node-3": 4}}}}
    assert "scenario guide-required-host: Kueue, expect and the fit model agree" in out
    assert _Stub.closed


def test_disagreement_lists_both_diffs_and_exits_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    wrong = Outcome(admitted=True, placement={"main": {"gpu-node-1": 4}})
    _use(monkeypatch, _Stub({"train": wrong}, []))
    code = main(["run", str(GUIDE / "guide-required-host.yaml")])
    out = capsys.readouterr().out
    assert code == 1
    report = out[out.index("\n}\n") + 3 :].splitlines()
    assert report == [
        "ran on Kueue v0.18.2 (--cluster=local)",  # the backend's, not the pinned default
        f"scenario guide-required-host ({GUIDE / 'guide-required-host.yaml'}): "
        "Kueue, expect and the fit model disagree",
        "Kueue vs the file's expect:",
        "  train/main: expected gpu-node-3=4, got gpu-node-1=4",
        "Kueue vs the fit model:",
        "  train/main: expected gpu-node-3=4, got gpu-node-1=4",
        "evidence here",
    ]
    assert _Stub.closed


def test_steps_are_printed_and_checked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pending = Outcome(
        admitted=False,
        message="couldn't assign flavors to pod set main: "
        'topology "guide-topology" allows to fit only 2 out of 4 pod(s)',
    )
    _use(monkeypatch, _Stub({"train": pending}, [{"train": pending}]))
    code = main(["run", str(GUIDE / "guide-required-host-waits-for-freed-node.yaml")])
    out = capsys.readouterr().out
    assert code == 1
    assert '"_steps"' in out
    assert "after step 1 (delete-usage): train: expected admitted, got pending" in out


def test_backend_failure_exits_1_and_still_closes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _use(monkeypatch, _Stub({}, [], fail=True))
    assert main(["run", str(GUIDE / "guide-required-host.yaml")]) == 1
    assert "kube-apiserver exited with code 1" in capsys.readouterr().err
    assert _Stub.closed


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["run", "no-such-file.yaml"], "no-such-file.yaml"),
        (
            ["run", str(GUIDE / "guide-required-host.yaml"), "--feature-gates", "Nope=true"],
            "not a Kueue v0.19 feature gate",
        ),
        (
            ["run", str(GUIDE / "guide-required-host.yaml"), "--cluster", "existing"],
            "--cluster=existing needs --kubeconfig",
        ),
        (
            ["run", str(GUIDE / "guide-required-host.yaml"), "--cluster", "nowhere"],
            "invalid choice",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    argv: list[str], problem: str, capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    with pytest.raises(SystemExit) as exited:
        raise SystemExit(main(argv))
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert problem in err
    assert len(err.strip().splitlines()) == 1
