"""Faults under running workloads (issue 13): the steps and expectation keys load into typed
targets, every refusal is one line with exit 2, outcomes carry `replaced`, `evicted` and
`drift` through JSON, the verdict compares them, and every engine that does not model them
yet refuses by name, so pytest reports such a scenario as skipped rather than passed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.fit import check_supported, fit
from harness.results.comparison import against_expectations, against_prediction
from harness.results.outcome import Outcome
from harness.scenario.loader import scenario_from_data
from harness.scenario.model import Eviction, Expectation, PodFault, Scenario, Taint, TaintChange

MALFORMED = Path(__file__).parents[1] / "data" / "malformed"
FAULT_CORPUS = sorted(MALFORMED.glob("fault-*.yaml"))
ON_THE_COMMAND_LINE = [
    MALFORMED / f"fault-{name}.yaml"
    for name in ("not-ready-twice", "untaint-absent", "pods-count-too-large", "evicted-true")
]
"""One refusal of each kind through the CLI; test_loader_errors checks every file's message."""
HOST = "kubernetes.io/hostname"


def _world(steps: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    gpu8 = {"nvidia.com/gpu": 8, "pods": 110}
    return {
        "name": "faults",
        "topology": {"name": "t", "levels": ["example.com/rack", HOST]},
        "nodes": [
            {"name": f"n{i}", "labels": {"example.com/rack": "r1"}, "allocatable": gpu8}
            for i in (1, 2, 3)
        ],
        "usage": [{"name": "busy", "node": "n3", "requests": {"nvidia.com/gpu": 4}}],
        "workloads": [
            {
                "name": "w",
                "podSets": [
                    {
                        "name": "main",
                        "count": 2,
                        "requests": {"nvidia.com/gpu": 8},
                        "topology": {"mode": "required", "level": "example.com/rack"},
                    }
                ],
            }
        ],
        "steps": steps,
        **extra,
    }


def _load(steps: list[dict[str, Any]], **extra: Any) -> Scenario:
    return scenario_from_data(_world(steps, **extra), "faults.yaml")


def test_every_fault_action_loads_as_its_target() -> None:
    scenario = _load(
        [
            {"node-not-ready": "n1"},
            {"terminate-pods": {"workload": "w", "node": "n1"}},
            {"node-ready": "n1"},
            {"taint-node": {"node": "n2", "key": "gpu", "value": "xid", "effect": "NoExecute"}},
            {"untaint-node": {"node": "n2", "key": "gpu", "effect": "NoExecute"}},
            {"fail-pods": {"workload": "w", "count": 1}},
            {"terminate-pods": {"usage": "busy"}},
        ]
    )
    assert [s.target for s in scenario.steps] == [
        "n1",
        PodFault(workload="w", node="n1"),
        "n1",
        TaintChange("n2", Taint("gpu", "xid", "NoExecute")),
        TaintChange("n2", Taint("gpu", "", "NoExecute")),
        PodFault(workload="w", count=1),
        PodFault(usage="busy"),
    ]


def test_steps_follow_what_earlier_steps_did() -> None:
    """A node added by a step can fail; a node made NotReady can come back; a taint added
    can go; a deleted usage entry can no longer terminate."""
    new = {"name": "n4", "labels": {"example.com/rack": "r1"}, "allocatable": {"pods": 1}}
    _load(
        [
            {"add-node": new},
            {"node-not-ready": "n4"},
            {"node-ready": "n4"},
            {"taint-node": {"node": "n4", "key": "k", "effect": "NoSchedule"}},
            {"untaint-node": {"node": "n4", "key": "k", "effect": "NoSchedule"}},
            {"taint-node": {"node": "n4", "key": "k", "effect": "NoSchedule"}},
        ]
    )
    with pytest.raises(Exception, match=r"steps\[1\]\.terminate-pods\.usage: no usage named"):
        _load([{"delete-usage": "busy"}, {"terminate-pods": {"usage": "busy"}}])


def test_fault_expectations_load() -> None:
    expect = {
        "w": {
            "admitted": True,
            "placement": {"main": {"n2": 1, "n3": 1}},
            "replaced": {"main": {"n1": ["n3", "n2"]}},
            "evicted": False,
            "drift": {"main": {"n1": 1}},
        }
    }
    step = _load([{"delete-node": "n1", "expect": expect}]).steps[0]
    assert step.expect is not None
    want = step.expect["w"]
    assert want.replaced == {"main": {"n1": ("n2", "n3")}}
    assert want.evicted is False and want.drift == {"main": {"n1": 1}}
    evicted = {"w": {"admitted": False, "evicted": {"reason": "NodeFailures"}}}
    step = _load([{"delete-node": "n1", "expect": evicted}]).steps[0]
    assert step.expect is not None and step.expect["w"].evicted == Eviction("NodeFailures")


@pytest.mark.parametrize("path", ON_THE_COMMAND_LINE, ids=[p.stem for p in ON_THE_COMMAND_LINE])
def test_fault_refusals_are_one_line_and_exit_2(path: Path) -> None:
    expected = path.read_text().splitlines()[0].removeprefix("# error: ")
    done = subprocess.run(
        [sys.executable, "-m", "harness", "check", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.splitlines() == [f"{path}: {expected}"]


def test_the_corpus_covers_every_fault_refusal() -> None:
    assert len(FAULT_CORPUS) >= 20


# ---- engines refuse by name ----------------------------------------------------------------

FAULTY: list[dict[str, Any]] = [
    {"node-not-ready": "n1"},
    {"terminate-pods": {"workload": "w", "node": "n1"}},
]
NAMED = "steps node-not-ready, terminate-pods"


def test_fit_model_runs_faults_of_every_scenario() -> None:
    """harness/fit/faults.py runs on the one engine: a version-2 scenario with a fault
    (delete-node with `replaced` is one) is modelled as its version-1 form is."""
    check_supported(_load(FAULTY))
    expect = {"w": {"admitted": True, "replaced": {"main": {"n1": "n3"}}}}
    got = fit(_load([{"delete-node": "n1", "expect": expect}]))
    assert "n1" in got.outcomes["w"].placement["main"]
    assert "n1" not in got.steps[0]["w"].placement.get("main", {})


def test_a_scenario_without_faults_has_none() -> None:
    assert _load([{"cordon": "n1"}, {"delete-node": "n2"}]).fault_features() == ()


# ---- outcomes and the verdict ----------------------------------------------------------------

REPLACED = Outcome(
    admitted=True,
    placement={"main": {"n2": 1, "n3": 1}},
    replaced={"main": {"n1": ("n3",)}},
    evicted=Eviction("NodeFailures", "Workload was evicted as there was no replacement"),
    drift={"main": {"n1": 1}},
)


def test_outcome_json_round_trip() -> None:
    data = REPLACED.to_json()
    assert data["replaced"] == {"main": {"n1": "n3"}}
    assert data["evicted"]["reason"] == "NodeFailures"
    assert Outcome.from_json(data) == REPLACED
    spread = Outcome(admitted=True, replaced={"main": {"n1": ("n2", "n3")}})
    assert spread.to_json()["replaced"] == {"main": {"n1": ["n2", "n3"]}}
    assert Outcome.from_json(spread.to_json()) == spread
    pending = Outcome(admitted=False, message="m", evicted=Eviction("NodeFailures", "x"))
    assert Outcome.from_json(pending.to_json()) == pending
    plain = Outcome(admitted=True, placement={"main": {"n1": 2}}).to_json()
    assert not {"replaced", "evicted", "drift"} & set(plain)


def _lines(want: Expectation, got: Outcome) -> list[str]:
    return against_expectations({"w": want}, {"w": got})


def test_verdict_compares_replaced_only_when_expected() -> None:
    assert _lines(Expectation(admitted=True), REPLACED) == []
    assert _lines(Expectation(admitted=True, replaced={"main": {"n1": ("n3",)}}), REPLACED) == []
    wrong = _lines(Expectation(admitted=True, replaced={"main": {"n1": ("n2",)}}), REPLACED)
    assert wrong == ["w/main: expected replaced {'n1': 'n2'}, got {'n1': 'n3'}"]
    none = _lines(Expectation(admitted=True, replaced={}), REPLACED)
    assert none == ["w/main: expected replaced (none), got {'n1': 'n3'}"]


def test_verdict_compares_evictions() -> None:
    by_part = Eviction("NodeFailures", "no replacement")
    assert _lines(Expectation(admitted=True, evicted=by_part), REPLACED) == []
    assert _lines(Expectation(admitted=True, evicted=False), REPLACED) == [
        "w: expected no eviction, got reason NodeFailures, message "
        "'Workload was evicted as there was no replacement'"
    ]
    other = _lines(
        Expectation(admitted=True, evicted=Eviction("NodeFailures", "multiple")), REPLACED
    )
    assert other and "message containing 'multiple'" in other[0]
    missing = _lines(
        Expectation(admitted=False, evicted=Eviction("NodeFailures")), Outcome(admitted=False)
    )
    assert missing[0] == "w: expected an eviction (reason NodeFailures), got none"


def test_verdict_compares_drift_only_where_pods_are_watched() -> None:
    want = Expectation(admitted=True, drift={})
    assert _lines(want, REPLACED) == [
        "w/main: expected pods running outside the assignment (nothing), got n1=1"
    ]
    unwatched = Outcome(admitted=True, drift={"main": {"n1": 1}}, binding_observed=False)
    assert _lines(want, unwatched) == []


def test_prediction_and_observation_must_agree_on_faults() -> None:
    kept = Outcome(admitted=True, placement={"main": {"n2": 1, "n3": 1}})
    lines = against_prediction({"w": REPLACED}, {"w": kept})
    assert "w: predicted eviction reason NodeFailures" in lines[0]
    assert "w/main: predicted replaced {'n1': 'n3'}, observed (none)" in lines
    assert "w/main: predicted pods running outside the assignment n1=1, observed (nothing)" in lines


# ---- pytest collection -----------------------------------------------------------------------


def test_pytest_checks_a_fault_scenario_on_the_fit_model(pytester: pytest.Pytester) -> None:
    """Checked, not skipped: a wrong expectation after a fault step fails."""
    suite = pytester.path / "suites"
    suite.mkdir()
    wrong = {"w": {"admitted": True, "placement": {"main": {"n1": 2}}}}
    data = _world(
        FAULTY, expect={"w": {"admitted": True, "placement": {"main": {"n1": 1, "n2": 1}}}}
    )
    data["steps"][-1]["expect"] = wrong
    (suite / "faults.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    result = pytester.runpytest("-p", "no:cacheprovider", "-rs", "--kth-report=")
    result.assert_outcomes(failed=1)
