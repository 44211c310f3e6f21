"""The fuzzer's parts: deterministic generation, loader-valid scenarios, a shrinker that
reaches a minimal case, the command line, and a small real campaign against the sim."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.fuzz.campaign import dump_scenario, run_campaign
from harness.fuzz.generator import generate
from harness.fuzz.shrink import shrink
from harness.scenario.ample_quota import AMPLE
from harness.scenario.loader import load_scenario, scenario_from_data
from harness.scenario.shorthand import ALL_NODES_LABEL

REPO = Path(__file__).resolve().parents[2]


def test_same_seed_and_index_give_the_same_scenario() -> None:
    assert [generate(7, i) for i in range(30)] == [generate(7, i) for i in range(30)]


def test_cases_do_not_depend_on_each_other_or_on_the_seed_being_shared() -> None:
    assert generate(7, 12) == [generate(7, i) for i in range(13)][12]
    assert generate(7, 3) != generate(8, 3)


def test_every_generated_scenario_loads_and_round_trips() -> None:
    """The generated dict is valid, and written as YAML it loads to the same thing."""
    for index in range(300):
        data = generate(3, index)
        scenario = scenario_from_data(data, f"case-{index}")
        text = dump_scenario(data)
        loaded = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        assert scenario_from_data(loaded, f"case-{index}") == scenario


def test_generator_covers_the_shapes_it_promises() -> None:
    seen: Counter[str] = Counter()
    for index in range(400):
        sc = scenario_from_data(generate(5, index))
        (topology,) = sc.topologies
        levels = topology.levels
        seen[f"levels-{len(levels)}"] += 1
        seen["hostname-lowest" if topology.lowest_is_hostname else "other-lowest"] += 1
        quotas = [
            q.nominal for g in sc.cluster_queues[0].resource_groups for q in g.flavors[0].resources
        ]
        seen["tight-quota"] += any(q < AMPLE for q in quotas)
        seen["balanced"] += bool(sc.feature_gates.get("TASBalancedPlacement"))
        seen["mixed-off"] += sc.feature_gates.get("TASProfileMixed") is False
        seen["flavor-labels"] += sc.resource_flavors[0].node_labels != ALL_NODES_LABEL
        seen["usage"] += bool(sc.usage)
        for node in sc.nodes:
            seen["taint-" + (node.taints[0].effect if node.taints else "none")] += 1
            seen["not-ready"] += not node.ready
            seen["cordoned"] += node.unschedulable
            seen["missing-level"] += any(lv not in node.labels for lv in levels)
        for wl in sc.workloads:
            for ps in wl.pod_sets:
                tr = ps.topology
                seen["mode-" + str(tr.mode if tr else "none")] += 1
                seen["tolerations"] += bool(ps.tolerations)
                if tr is not None and tr.slice_size is not None:
                    seen["slice"] += 1
                    seen["slice-too-big"] += tr.slice_size > ps.count
                    seen["slice-not-dividing"] += ps.count % tr.slice_size != 0
                seen["group"] += tr is not None and tr.group is not None
    for shape in (
        *(f"levels-{n}" for n in range(1, 5)),
        "hostname-lowest",
        "other-lowest",
        "tight-quota",
        "balanced",
        "mixed-off",
        "flavor-labels",
        "usage",
        "taint-NoSchedule",
        "taint-NoExecute",
        "taint-PreferNoSchedule",
        "not-ready",
        "cordoned",
        "missing-level",
        "mode-required",
        "mode-preferred",
        "mode-unconstrained",
        "mode-None",
        "mode-none",
        "tolerations",
        "slice",
        "slice-too-big",
        "slice-not-dividing",
        "group",
    ):
        assert seen[shape] > 0, f"no generated scenario has {shape}"


def _fake_disagreement_on_big_gpu_pod_sets(data: dict[str, Any]) -> bool:
    """Test double for "the fit model and Kueue disagree": any pod set of 3+ pods asking
    2+ GPUs each, on a scenario that still has a not-ready node."""
    big = any(
        ps["count"] >= 3 and int(ps["requests"].get("nvidia.com/gpu", 0)) >= 2
        for wl in data["workloads"]
        for ps in wl["podSets"]
    )
    return big and any(n.get("ready") is False for n in data["nodes"])


def test_shrinker_reduces_a_fake_disagreement_to_a_minimal_case() -> None:
    data: dict[str, Any] = {
        "name": "shrink-me",
        "featureGates": {"TASBalancedPlacement": True},
        "topology": {
            "name": "t",
            "levels": ["example.com/block", "example.com/rack", "kubernetes.io/hostname"],
        },
        "nodes": [
            {
                "name": f"n{i}",
                "labels": {"example.com/block": f"b{i % 2}", "example.com/rack": f"r{i % 3}"},
                "allocatable": {"nvidia.com/gpu": 8, "cpu": "32", "pods": 110},
                **({"ready": False} if i == 5 else {}),
                **({"taints": [{"key": "k", "effect": "NoSchedule"}]} if i == 2 else {}),
            }
            for i in range(12)
        ],
        "usage": [{"node": "n1", "requests": {"nvidia.com/gpu": 2}, "count": 2}],
        "workloads": [
            {"name": "a", "podSets": [{"name": "main", "count": 2, "requests": {"cpu": "1"}}]},
            {
                "name": "b",
                "podSets": [
                    {"name": "launcher", "count": 1, "requests": {"cpu": "1"}},
                    {
                        "name": "workers",
                        "count": 16,
                        "requests": {"nvidia.com/gpu": 4, "cpu": "2"},
                        "topology": {"mode": "required", "level": "example.com/rack"},
                    },
                ],
            },
        ],
    }
    assert _fake_disagreement_on_big_gpu_pod_sets(data)
    small, calls = shrink(data, _fake_disagreement_on_big_gpu_pod_sets)
    assert _fake_disagreement_on_big_gpu_pod_sets(small)
    scenario_from_data(small)
    assert len(small["workloads"]) == 1
    (pod_set,) = small["workloads"][0]["podSets"]
    assert pod_set["count"] == 3
    assert pod_set["requests"] == {"nvidia.com/gpu": 2}
    assert "topology" not in pod_set
    assert [n.get("ready") for n in small["nodes"]] == [False]
    assert small["nodes"][0]["allocatable"] == {}
    assert small["topology"]["levels"] == ["kubernetes.io/hostname"]
    assert "usage" not in small and "featureGates" not in small
    assert 0 < calls <= 400


def test_shrinker_stops_at_its_budget() -> None:
    data = generate(1, 0)
    small, calls = shrink(data, lambda d: True, budget=5)
    assert calls == 5
    scenario_from_data(small)


def _fuzz(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", "fuzz", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.parametrize(
    "args",
    [("--cases", "0"), ("--cases", "x"), ("--seed", "-1"), ("--against", "kind"), ("--bogus",)],
)
def test_bad_arguments_are_one_line_and_exit_2(args: tuple[str, ...]) -> None:
    result = _fuzz(*args)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


@pytest.fixture(scope="module")
def sim_ready() -> None:
    if shutil.which("go") is None:
        pytest.skip("the sim backend needs Go on PATH to build sim/")


@pytest.mark.sim
def test_small_real_campaign_against_the_sim(sim_ready: None, tmp_path: Path) -> None:
    summary = run_campaign(1, 50, against="sim", out=tmp_path, shrink_budget=60)
    assert summary.cases == 50 and summary.rate > 0
    assert not summary.errors, [f.verdict.error for f in summary.errors]
    for finding in summary.disagreements:
        assert finding.path is not None and finding.path.exists()
        assert finding.path.with_suffix(".txt").exists()
        scenario = load_scenario(finding.path)
        assert scenario.expect is None
        if finding.shrunk is not None:  # the first ones of each kind
            assert finding.shrunk_verdict is not None and finding.shrunk_verdict.disagrees
            assert len(scenario.nodes) <= len(finding.original["nodes"])


@pytest.mark.sim
def test_cli_summary_and_exit_code(sim_ready: None, tmp_path: Path) -> None:
    result = _fuzz("--seed", "1", "--cases", "20", "--out", str(tmp_path), "--shrink-budget", "0")
    assert result.returncode in (0, 1), result.stderr
    assert "20 cases" in result.stdout and "scenarios/s" in result.stdout
    written = sorted(tmp_path.glob("*.yaml"))
    assert (result.returncode == 1) == bool(written)


@pytest.mark.sim
def test_campaign_finds_shrinks_and_writes_a_planted_model_bug(
    sim_ready: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fit model double that gets one rule wrong (any pod set of 4+ pods is predicted
    pending) must be caught against real Kueue, shrunk to one workload, and written."""
    import harness.fuzz.runner as runner
    from harness.fit import FitResult, fit
    from harness.results.outcome import Outcome

    def wrong_fit_double(scenario: Any) -> FitResult:
        result = fit(scenario)
        for wl in scenario.workloads:
            if any(ps.count >= 4 for ps in wl.pod_sets) and result.outcomes[wl.name].admitted:
                result.outcomes[wl.name] = Outcome(admitted=False, message="planted")
        return result

    monkeypatch.setattr(runner, "fit", wrong_fit_double)
    summary = run_campaign(1, 30, against="sim", out=tmp_path, shrink_budget=300)
    assert summary.disagreements, "the planted bug was not found"
    shrunk = [f for f in summary.disagreements if f.shrunk is not None]
    assert shrunk
    for finding in shrunk:
        assert finding.path is not None
        scenario = load_scenario(finding.path)
        assert len(scenario.workloads) == 1
        assert max(ps.count for ps in scenario.workloads[0].pod_sets) == 4
        assert "planted" in finding.path.with_suffix(".txt").read_text()
