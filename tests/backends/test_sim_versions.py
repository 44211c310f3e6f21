"""The sim built against an older Kueue (v0.18.2) runs that version's scheduler, not v0.19.2's.

Building the v0.18.2 binary takes ~30 s once the v0.19.2 sim is built (only Kueue's own
packages and the link differ: harness/sim/go/versions/go.v0.18.2.mod changes nothing but the Kueue
module), so these tests build it rather than skip when it is not cached.
"""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from harness.backends.base import Unsupported, kueue_version_for, select_kueue_version
from harness.backends.sim import SimBackend
from harness.cli.main import main
from harness.fit import fit
from harness.fuzz.campaign import run_campaign
from harness.fuzz.generator import generate
from harness.fuzz.runner import Checker, Observed
from harness.scenario.loader import load_scenario
from harness.scenario.model import Scenario
from harness.sim.build import SimVersionError, build_sim, sim_versions
from harness.sim.contract import scenario_to_dict
from harness.sim.process import run_sim

OLD = "v0.18.2"
SUITES = Path(__file__).resolve().parents[2] / "suites"
FREED_NODE = SUITES / "guide" / "guide-required-host-waits-for-freed-node.yaml"
TIED_RACKS = (
    SUITES / "kueue-findings" / "findings-rack-leaf-selector-names-other-rack-balanced.yaml"
)


@pytest.fixture(scope="module")
def old_sim_binary() -> Path:
    """kueue-sim built against Kueue v0.18.2 (cached after the first build)."""
    if shutil.which("go") is None:
        pytest.skip("the sim backend needs Go >= 1.26 on PATH to build sim/")
    return build_sim(version=OLD)


@pytest.fixture
def old_backend(old_sim_binary: Path) -> Iterator[SimBackend]:
    """The sim backend on Kueue v0.18.2, closed after the test."""
    backend = SimBackend(kueue_version=OLD)
    yield backend
    backend.close()


def on(version: str, path: Path) -> Scenario:
    """The scenario as run on `version` (its expectByVersion applied), like --kueue-version."""
    return dataclasses.replace(load_scenario(path), kueue=version)


@pytest.mark.sim
def test_freed_node_admits_only_from_v0_19_1(old_backend: SimBackend, sim_binary: Path) -> None:
    # kueue#13772 (v0.19.1): the non-TAS usage controller retries the flavor's pending
    # workloads when a usage pod goes. Before it nothing retries them, so the required-host
    # job stays pending after delete-usage although the host is now free.
    old = old_backend.run(on(OLD, FREED_NODE))
    new = SimBackend(kueue_version="v0.19.2")
    try:
        current = new.run(on("v0.19.2", FREED_NODE))
    finally:
        new.close()
    assert old.kueue == OLD and current.kueue == "v0.19.2"
    [name] = old.steps[0]
    assert not old.outcomes[name].admitted and not current.outcomes[name].admitted
    assert not old.steps[0][name].admitted
    assert current.steps[0][name].admitted


@pytest.mark.sim
def test_both_versions_place_a_plain_scenario_alike(
    old_backend: SimBackend, sim_binary: Path
) -> None:
    # Nothing in this file touches a rule that moved between v0.18 and v0.19, so both
    # schedulers must place it the same (and as the file expects).
    path = SUITES / "guide" / "guide-preferred-host-falls-back-to-rack.yaml"
    old = old_backend.run(on(OLD, path))
    [current] = run_sim([scenario_to_dict(on("v0.19.2", path))], sim_binary)
    assert current["error"] is None
    assert {n: o.placement for n, o in old.outcomes.items()} == {
        n: o.get("placement") for n, o in current["outcome"].items()
    }
    assert any(o.admitted for o in old.outcomes.values())


@pytest.mark.sim
def test_gate_the_version_lacks_is_refused_not_run(old_backend: SimBackend) -> None:
    # VectorizedResourceRequests is new in v0.19: a scenario setting it cannot run on v0.18.2
    # (Kueue would refuse the gate), which is a skip with the reason, not a failure.
    path = SUITES / "kueue-cases" / "sched-one-byte-memory-request.yaml"
    with pytest.raises(
        Unsupported, match=r"VectorizedResourceRequests does not exist in Kueue v0\.18\.2"
    ):
        old_backend.run(on(OLD, path))


@pytest.mark.sim
def test_unknown_gate_does_not_poison_later_scenarios(old_sim_binary: Path) -> None:
    # The binary itself refuses a gate its Kueue lacks before setting any: k8s's SetFromMap
    # keeps an unknown name and refuses it again on every later call.
    scenario = scenario_to_dict(on(OLD, FREED_NODE))
    bad = {**scenario, "featureGates": {"VectorizedResourceRequests": False}}
    gated = {**scenario, "featureGates": {"TASBalancedPlacement": False}}
    answers = run_sim([bad, gated], old_sim_binary)
    assert "does not exist in Kueue v0.18.2" in (answers[0]["error"] or "")
    assert answers[1]["error"] is None


def test_sim_runs_the_versions_it_builds_for() -> None:
    assert sim_versions() == ("v0.19.2", "v0.18.2", "v0.17.1")
    assert SimBackend.kueue_versions == sim_versions()
    assert kueue_version_for("sim", OLD) == OLD
    select_kueue_version("sim", "v0.17.1")  # no error: the sim builds it
    with pytest.raises(SimVersionError, match=r"no harness/sim/go/versions/go\.v0\.18\.1\.mod"):
        build_sim(version="v0.18.1")


@pytest.mark.sim
def test_fuzz_compares_both_sides_on_the_version(old_sim_binary: Path, tmp_path: Path) -> None:
    # The fit model predicts for v0.18.2 and the observer gets the scenario with that version
    # too; what the model cannot answer on v0.18.2 (tied balanced racks, Go map order before
    # v0.19, kueue#12052) is skipped with that version's reason, not compared.
    seen: list[str | None] = []

    def observe(scenario: Scenario) -> Observed:
        seen.append(scenario.kueue)
        result = fit(scenario)
        return result.outcomes, result.steps

    tied = yaml.safe_load(TIED_RACKS.read_text())
    del tied["undeterminedOn"]  # the model has to find the tie itself
    with Checker(observe, kueue_version=OLD) as checker:
        verdicts = [checker.check(generate(1, index)) for index in range(20)]
        refused = checker.check(tied)
    assert seen and set(seen) == {OLD}
    assert [v.lines for v in verdicts if v.lines] == []
    assert refused.skipped.startswith("balanced placement of pod set main depends on the Go map")
    summary = run_campaign(1, 20, out=tmp_path, jobs=1, shrink_budget=0, kueue_version=OLD)
    assert summary.errors == [] and summary.disagreements == []


@pytest.mark.sim
def test_compare_versions_on_the_sim_finds_the_freed_node_change(
    old_sim_binary: Path, sim_binary: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # suites/guide on each version's own scheduler: only the #13772 file changes.
    args = ["--engine", "sim", "--from", OLD, "--to", "v0.19.2", str(SUITES / "guide")]
    code = main(["compare-versions", *args])
    out = capsys.readouterr().out
    assert code == 1
    assert out.startswith(f"Kueue {OLD} -> v0.19.2 (sim):")
    assert f"{FREED_NODE.stem} (" in out and "pending -> admitted" in out
    assert out.rstrip().endswith("6 scenarios: 1 changed, 5 unchanged, 0 not compared")
