"""`upgrade-kueue: VERSION` steps (issue 14 item 5): Kueue replaced under running and waiting
TAS workloads.

The loader refuses what Kueue could not do (a downgrade, a version the harness does not run),
the fit model switches to the new version's rules at the step, the sim runs the old and the new
version's scheduler on either side of it (tests/backends/test_sim_upgrade.py), and on the embedded cluster Kueue v0.18.2 is really replaced by v0.19.2 with the scenario's
workloads in place (marked `cluster`; it needs Kueue v0.18.2 built, ~9 min on 2 cores).
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from harness import toolchain
from harness.backends.base import create_backend
from harness.cli.main import main
from harness.errors import HarnessError
from harness.fit import fit
from harness.results.report import expectation_lines
from harness.runner.backend import ClusterBackend
from harness.scenario.loader import load_scenario
from harness.toolchain import cache, recipes

UPGRADE = (
    Path(__file__).resolve().parents[2]
    / "suites"
    / "upgrade"
    / "upgrade-v0.18.2-to-v0.19.2-running-job-kept-pending-job-admitted.yaml"
)


def with_upgrade_to(tmp_path: Path, value: str) -> Path:
    path = tmp_path / UPGRADE.name
    path.write_text(
        UPGRADE.read_text().replace("upgrade-kueue: v0.19.2", f"upgrade-kueue: {value}")
    )
    return path


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("v0.18.2", "steps[1].upgrade-kueue: v0.18.2 is not newer than v0.18.2, the version "
                    "running at this step"),
        ("v0.17.1", "steps[1].upgrade-kueue: v0.17.1 is not newer than v0.18.2"),
        ("v0.19.1", "steps[1].upgrade-kueue: 'v0.19.1' is not a Kueue version the harness runs"),
        ("[v0.19.2]", "steps[1].upgrade-kueue: must be a non-empty string, got a list"),
    ],
)  # fmt: skip
def test_the_loader_refuses_an_upgrade_kueue_could_not_do(
    tmp_path: Path, value: str, problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = with_upgrade_to(tmp_path, value)
    assert main(["oracle", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"{path}: {problem}"), err


def test_the_fit_model_decides_pending_workloads_by_the_new_versions_rules() -> None:
    """The file's expectations hold on the fit model; without the upgrade step the job freed
    by delete-usage stays pending (v0.18.2 requeues nothing then, kueue#13772), so it is the
    upgrade that admits it."""
    scenario = load_scenario(UPGRADE)
    predicted = fit(scenario)
    assert expectation_lines(scenario, predicted.outcomes, predicted.steps) == []
    stays = dataclasses.replace(scenario, steps=scenario.steps[:1])
    after_delete = fit(stays).steps[0]
    assert not after_delete["train"].admitted
    assert predicted.steps[1]["train"].placement == {"main": {"gpu-node-3": 4}}


def test_an_upgrade_to_the_version_already_running_is_refused_by_the_fit_model() -> None:
    scenario = dataclasses.replace(load_scenario(UPGRADE), kueue="v0.19.2")  # --kueue-version
    with pytest.raises(HarnessError, match=r"upgrade-kueue: v0\.19\.2 is not newer than v0\.19\.2"):
        fit(scenario)


def _built(version: str) -> bool:
    comps = recipes.components(toolchain.pins_for(version))
    return all(
        cache.is_current(cache.cache_root() / c.dirname, c.fingerprint(), [c.name])
        for c in comps.values()
    )


@pytest.mark.cluster
@pytest.mark.kueue_versions
def test_kueue_v0_18_2_replaced_by_v0_19_2_under_the_scenarios_workloads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On the embedded cluster: the running job keeps its placement, the job v0.18.2 left
    pending is admitted by v0.19.2, Kueue's log shows both versions starting, and the
    upgraded cluster is stopped so the next scenario gets the backend's version."""
    if not _built("v0.18.2"):
        pytest.skip(
            "Kueue v0.18.2 is not built (~9 min on 2 cores): run "
            "`python -m harness build binaries --kueue-version v0.18.2` first"
        )
    monkeypatch.setenv(toolchain.KUEUE_VERSION_ENV, "")
    monkeypatch.setenv("KTH_KEEP_RUN", "1")  # the run dir outlives the stop: read Kueue's log
    scenario = load_scenario(UPGRADE)
    backend = create_backend("local", kueue_version="v0.18.2")
    assert isinstance(backend, ClusterBackend)
    run_dir = None
    try:
        backend.cluster(scenario.feature_gates)
        provider = backend.provider
        assert provider is not None and provider.kueue_version == "v0.18.2"
        run_dir = provider.handle.run_dir  # type: ignore[attr-defined]
        observed = backend.run(scenario)
        log = provider.logs()["kueue"].read_text()
        assert backend.provider is None, "the upgraded cluster was kept for the next scenario"
    finally:
        backend.close()
        if run_dir is not None:
            shutil.rmtree(run_dir, ignore_errors=True)
    lines = expectation_lines(scenario, observed.outcomes, observed.steps)
    assert not lines, "\n".join([*lines, observed.details])
    first = log.index('"msg":"Initializing","gitVersion":"v0.18.2"')
    assert log.index('"msg":"Initializing","gitVersion":"v0.19.2"') > first
    assert observed.kueue == "v0.18.2"  # the version the scenario started on


def test_on_the_sim_the_file_passes_and_a_wrong_expectation_after_the_step_fails(
    pytester: pytest.Pytester,
) -> None:
    """pytest --cluster=sim runs v0.18.2 before the step and v0.19.2 after it: the file passes,
    and the same file expecting the wrong node for the job admitted after the upgrade fails."""
    suites = pytester.path / "suites"
    suites.mkdir()
    (suites / UPGRADE.name).write_text(UPGRADE.read_text())
    wrong = UPGRADE.read_text().replace("main: {gpu-node-3: 4}", "main: {gpu-node-2: 4}", 1)
    name = "upgrade-wrong-expect"
    wrong = wrong.replace(f"name: {UPGRADE.stem}", f"name: {name}")
    (suites / f"{name}.yaml").write_text(wrong)
    result = pytester.runpytest("-p", "no:cacheprovider", "--cluster=sim", "-rs")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*train/main: expected gpu-node-2=4, got gpu-node-3=4*"])
