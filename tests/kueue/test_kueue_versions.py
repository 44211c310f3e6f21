"""Kueue versions on the embedded cluster: the version table, per-version feature gates, the
--kueue-version option, grouping scenarios by version, and one guide scenario on v0.18.2.

Only the last test starts a cluster, and only when v0.18.2's binaries are already built:
building them takes ~9 minutes on 2 cores, more than a cold `make test` may spend.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
from pathlib import Path

import pytest
import yaml

from harness import toolchain
from harness.backends.base import (
    BackendError,
    create_backend,
    kueue_version_for,
    select_kueue_version,
)
from harness.install.gates import GateNotRegistered, check_gates, registered_gates
from harness.kueue.gates import KUEUE_V0_19_GATES
from harness.providers.local.cluster import LocalCluster
from harness.results.report import expectation_lines
from harness.runner.backend import ClusterBackend
from harness.scenario.loader import load_scenario
from harness.toolchain import cache, recipes

HAVE_GO = shutil.which("go") is not None
needs_go = pytest.mark.skipif(not HAVE_GO, reason="reads Kueue's Go modules: needs Go on PATH")
SUITES = Path(__file__).resolve().parents[2] / "suites"
GUIDE = SUITES / "guide"


def test_each_version_has_its_jobset_and_the_default_stays_v0_19_2() -> None:
    assert toolchain.pins_for(None) is toolchain.PINS
    assert toolchain.pins_for("v0.19.2") is toolchain.PINS
    assert toolchain.PINS.kueue == "v0.19.2"
    older = toolchain.pins_for("v0.17.1")
    assert (older.kueue, older.jobset) == ("v0.17.1", "v0.11.1")
    assert (older.kubernetes, older.etcd, older.kwok) == (
        toolchain.PINS.kubernetes,
        toolchain.PINS.etcd,
        toolchain.PINS.kwok,
    )
    assert toolchain.pins_for("v0.18.2").jobset == "v0.12.0"


def test_each_version_builds_into_its_own_cache_directory() -> None:
    """Two versions never share (or overwrite) a cached kueue or jobset binary."""
    dirs = {
        v: {n: c.dirname for n, c in recipes.components(toolchain.pins_for(v)).items()}
        for v in toolchain.KUEUE_JOBSET
    }
    kueue_dirs = {d["kueue"] for d in dirs.values()}
    assert kueue_dirs == {"kueue-v0.17.1", "kueue-v0.18.2", "kueue-v0.19.2"}
    assert dirs["v0.17.1"]["jobset"] == "jobset-v0.11.1"
    assert dirs["v0.18.2"]["etcd"] == dirs["v0.19.2"]["etcd"]


def test_an_unsupported_version_is_one_line_naming_the_supported_ones() -> None:
    with pytest.raises(toolchain.KueueVersionError) as err:
        toolchain.pins_for("v0.16.0")
    assert str(err.value) == (
        "Kueue v0.16.0 is not supported by the embedded cluster; supported: "
        "v0.17.1, v0.18.2, v0.19.2"
    )


@needs_go
@pytest.mark.parametrize("version", list(toolchain.KUEUE_JOBSET))
def test_the_jobset_pin_is_what_that_kueue_requires(version: str) -> None:
    """The table against each Kueue's own go.mod (sigs.k8s.io/jobset require)."""
    gomod = (toolchain.kueue_module_dir(toolchain.pins_for(version)) / "go.mod").read_text()
    required = re.search(r"^\s*sigs\.k8s\.io/jobset (v\S+)", gomod, re.MULTILINE)
    assert required is not None
    assert toolchain.KUEUE_JOBSET[version] == required.group(1)


def test_gates_are_read_from_the_map_not_from_comments(tmp_path: Path) -> None:
    go = tmp_path / "pkg" / "features" / "kube_features.go"
    go.parent.mkdir(parents=True)
    go.write_text(
        'const (\n\tNotInMap featuregate.Feature = "NotInMap"\n)\n'
        "var defaultVersionedFeatureGates = map[featuregate.Feature]featuregate.VersionedSpecs{\n"
        '\tPartialAdmission: {\n\t\t{Version: v("0.4"), Default: true},\n\t},\n'
        "\t// Commented: {\n"
        "\tTopologyAwareScheduling: {\n\t},\n}\n"
        "func other() {\n\tAfterMap: {\n}\n"
    )
    assert registered_gates(tmp_path) == {"PartialAdmission", "TopologyAwareScheduling"}


@needs_go
def test_v0_19_2_registers_exactly_the_gates_the_harness_knows() -> None:
    assert registered_gates(toolchain.kueue_module_dir()) == KUEUE_V0_19_GATES


@needs_go
def test_a_gate_the_version_lacks_is_refused_before_any_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TASHandleOverlappingFlavors came in v0.18 (docs/dev/kueue-version-differences.md §1):
    v0.17.1 would refuse to start with it. The refusal comes before the toolchain looks for
    binaries: every binary here is a missing file, which would fail at once otherwise."""
    for comp in recipes.components(toolchain.pins_for("v0.17.1")).values():
        monkeypatch.setenv(comp.env_var, str(tmp_path / "missing" / comp.name))
    monkeypatch.setenv("KTH_RUN_ROOT", str(tmp_path / "runs"))
    cluster = LocalCluster(
        kueue_version="v0.17.1", feature_gates={"TASHandleOverlappingFlavors": True}
    )
    with pytest.raises(GateNotRegistered) as err:
        cluster.start()
    assert str(err.value) == (
        "feature gate TASHandleOverlappingFlavors does not exist in Kueue v0.17.1 (Kueue would "
        "refuse to start); leave it out or choose another --kueue-version"
    )
    # The same gate is registered by v0.18.2: no refusal there.
    check_gates({"TASHandleOverlappingFlavors": True}, "v0.18.2", _gates("v0.18.2"))


def _gates(version: str) -> frozenset[str]:
    return registered_gates(toolchain.kueue_module_dir(toolchain.pins_for(version)))


def test_the_provider_reads_the_version_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(toolchain.KUEUE_VERSION_ENV, "v0.18.2")
    assert LocalCluster().pins.kueue == "v0.18.2"
    assert LocalCluster(kueue_version="v0.17.1").pins.jobset == "v0.11.1"
    monkeypatch.setenv(toolchain.KUEUE_VERSION_ENV, "")
    assert LocalCluster().pins is toolchain.PINS


def test_kind_runs_only_the_pinned_version_local_and_sim_run_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(toolchain.KUEUE_VERSION_ENV, "")
    with pytest.raises(BackendError, match=r"^--kueue-version v0\.18\.2: --cluster=kind runs"):
        select_kueue_version("kind", "v0.18.2")
    select_kueue_version("sim", "v0.18.2")  # the sim builds per version (harness/sim/go/versions)
    with pytest.raises(toolchain.KueueVersionError):
        select_kueue_version("sim", "v0.18.0")
    with pytest.raises(toolchain.KueueVersionError):
        select_kueue_version("local", "v0.18.0")
    select_kueue_version("local", "v0.18.2")
    assert os.environ[toolchain.KUEUE_VERSION_ENV] == ""  # a check, not a side channel
    assert kueue_version_for("local", "v0.17.1") == "v0.17.1"
    assert kueue_version_for("local", "v0.14.0") is None
    assert kueue_version_for("kind", "v0.17.1") is None


def test_the_backend_hands_its_version_to_the_provider(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The version is a parameter from create_backend to the provider, whatever the
    environment says; two backends in one process can run two versions."""
    monkeypatch.setenv(toolchain.KUEUE_VERSION_ENV, "v0.18.2")
    old = create_backend("local", kueue_version="v0.17.1")
    new = create_backend("local", kueue_version="v0.19.2")
    assert isinstance(old, ClusterBackend) and isinstance(new, ClusterBackend)
    assert (old.kueue_version, new.kueue_version) == ("v0.17.1", "v0.19.2")
    providers = [b._provider({}) for b in (old, new)]  # created, not started
    assert [p.kueue_version for p in providers] == ["v0.17.1", "v0.19.2"]
    assert isinstance(providers[0], LocalCluster) and providers[0].pins.jobset == "v0.11.1"
    with pytest.raises(BackendError, match=r"--cluster=kind runs Kueue v0\.19\.2 only"):
        create_backend("kind", kueue_version="v0.17.1")


def _copy(pytester: pytest.Pytester, source: str, name: str, kueue: str | None) -> None:
    data = yaml.safe_load((GUIDE / f"{source}.yaml").read_text())
    data["name"] = name
    if kueue is None:
        data.pop("kueue", None)
    else:
        data["kueue"] = kueue
    path = pytester.path / "suites" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def _collected(pytester: pytest.Pytester, *args: str) -> list[str]:
    result = pytester.runpytest("-p", "no:cacheprovider", "--collect-only", "-q", *args)
    return [line.split("::")[-1] for line in result.outlines if "::" in line]


def test_scenarios_are_grouped_by_the_version_they_run_on(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One Kueue restart per version: the default version's scenarios first, file order kept
    within a version."""
    monkeypatch.setenv(toolchain.KUEUE_VERSION_ENV, "")  # the user's default: none
    for name, kueue in [
        ("a-old", "v0.17.1"),
        ("b-new", "v0.19.2"),
        ("c-mid", "v0.18.2"),
        ("d-old", "v0.17.1"),
        ("e-none", None),
    ]:
        _copy(pytester, "guide-required-host", name, kueue)
    assert _collected(pytester, "--cluster=local") == [
        "b-new",
        "e-none",
        "a-old",
        "d-old",
        "c-mid",
    ]
    # --kueue-version puts them all on one version: file order.
    on_one = _collected(pytester, "--cluster=local", "--kueue-version=v0.18.2")
    assert on_one == ["a-old", "b-new", "c-mid", "d-old", "e-none"]


def test_a_bad_kueue_version_is_a_usage_error(pytester: pytest.Pytester) -> None:
    _copy(pytester, "guide-required-host", "one", None)
    result = pytester.runpytest("-p", "no:cacheprovider", "--kueue-version=v0.16.0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: Kueue v0.16.0 is not supported by the embedded cluster; supported: *"]
    )
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--cluster=kind", "--kueue-version=v0.17.1"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: --kueue-version v0.17.1: --cluster=kind runs Kueue v0.19.2 only*"]
    )


def _built(version: str) -> bool:
    pins = toolchain.pins_for(version)
    comps = recipes.components(pins)
    return all(
        cache.is_current(cache.cache_root() / c.dirname, c.fingerprint(), [c.name])
        for c in comps.values()
    )


@pytest.mark.cluster
@pytest.mark.kueue_versions
def test_v0_18_2_starts_and_admits_a_guide_scenario(monkeypatch: pytest.MonkeyPatch) -> None:
    """The guide's first scenario on real Kueue v0.18.2, started through the backend the way
    --kueue-version starts it: Kueue's log names v0.18.2 and the job lands where the file
    expects (v0.18.2 places required-host jobs as v0.19.2 does, §2.1)."""
    if not _built("v0.18.2"):
        pytest.skip(
            "Kueue v0.18.2 is not built (~9 min on 2 cores): run "
            "`python -m harness build binaries --kueue-version v0.18.2` first"
        )
    monkeypatch.setenv(toolchain.KUEUE_VERSION_ENV, "")  # restored after the test
    scenario = load_scenario(GUIDE / "guide-required-host.yaml")
    backend = create_backend("local", kueue_version="v0.18.2")
    try:
        observed = backend.run(scenario)
        assert isinstance(backend, ClusterBackend) and backend.provider is not None
        log = backend.provider.logs()["kueue"].read_text()
    finally:
        backend.close()
    assert '"msg":"Initializing","gitVersion":"v0.18.2"' in log
    assert observed.kueue == "v0.18.2"  # what `harness run` and the HTML report show
    assert expectation_lines(scenario, observed.outcomes, observed.steps) == []
    assert observed.outcomes["train"].admitted


@pytest.mark.cluster
@pytest.mark.kueue_versions
def test_v0_18_2_counts_a_workload_admitted_before_the_scenario(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A version-2 file's `admitted:` on real Kueue v0.18.2: its ClusterQueue's status must
    count the workload the harness admitted under a held LocalQueue before the scenario
    goes on. v0.18.2 refreshes that status only when told about the ClusterQueue
    (harness/runner/preadmit.py _nudge); without it the setup times out."""
    if not _built("v0.18.2"):
        pytest.skip(
            "Kueue v0.18.2 is not built (~9 min on 2 cores): run "
            "`python -m harness build binaries --kueue-version v0.18.2` first"
        )
    monkeypatch.setenv(toolchain.KUEUE_VERSION_ENV, "")  # restored after the test
    path = SUITES / "v2" / "fuzz-regressions" / "v2-fuzz-refused-admission-restarts-scan.yaml"
    scenario = dataclasses.replace(load_scenario(path), kueue="v0.18.2")
    backend = create_backend("local", kueue_version="v0.18.2")
    try:
        observed = backend.run(scenario)
    finally:
        backend.close()
    assert expectation_lines(scenario, observed.outcomes, observed.steps) == []
    assert observed.outcomes["old-2"].admitted and not observed.outcomes["wl-2"].admitted


def test_the_html_report_names_the_versions_that_ran(tmp_path: Path) -> None:
    """The header says which Kueue produced the observations, not the pinned default: a
    session that ran two versions names both, an existing cluster's is said to be unknown."""
    from harness.html import ScenarioResult
    from harness.plugin.html_report import HtmlReport, Row

    report = HtmlReport(tmp_path / "r.html", "local")
    versions = ["v0.18.2", "v0.17.1", "v0.18.2"]
    rows = [Row(i, ScenarioResult(None), version) for i, version in enumerate(versions)]
    rows.append(Row(3, ScenarioResult(None), None))  # nothing ran (a skip): no version
    assert report._kueue(rows) == "v0.17.1, v0.18.2"
    rows.append(Row(4, ScenarioResult(None), ""))
    assert report._kueue(rows) == "v0.17.1, v0.18.2, version not known (a cluster of yours)"
    assert HtmlReport(tmp_path / "r.html", None)._kueue([]) == "v0.19.2 (modelled)"
    # Fit model only: the versions it predicted for (each scenario's kueue:).
    guide = load_scenario(GUIDE / "guide-required-host.yaml")
    checked = [Row(i, ScenarioResult(dataclasses.replace(guide, kueue=v))) for i, v in
               enumerate(["v0.18.2", "v0.9.0", None])]  # fmt: skip
    assert (
        HtmlReport(tmp_path / "r.html", None)._kueue(checked)
        == "v0.9.0, v0.18.2, v0.19.2 (modelled)"
    )
