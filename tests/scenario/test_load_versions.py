"""`kueue:` as one version, a list or a range, and `expectByVersion` (top level and in steps):
what each means, which version a file runs on, how --kueue-version re-derives the
expectations, and every refusal in one line naming file, key and problem."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness import toolchain
from harness.errors import ScenarioError
from harness.kueue.versions import DEFAULT_KUEUE, KUEUE_VERSIONS, before, parse_versions
from harness.scenario.loader import load_scenario, scenario_from_data

ROOT = Path(__file__).resolve().parents[2]
FREED = ROOT / "suites" / "guide" / "guide-required-host-waits-for-freed-node.yaml"
PENDING = {"admitted": False}
ON_N1 = {"admitted": True, "placement": {"main": {"n1": 2}}}


def base(**changes: Any) -> dict[str, Any]:
    """One 4-GPU node, one 2-pod workload that fits on it, and a step deleting the usage."""
    data: dict[str, Any] = {
        "name": "x",
        "topology": {"name": "t", "levels": ["example.com/rack", "kubernetes.io/hostname"]},
        "nodes": [
            {
                "name": "n1",
                "labels": {"example.com/rack": "r1"},
                "allocatable": {"nvidia.com/gpu": 4, "cpu": "8", "pods": 10},
            }
        ],
        "usage": [{"name": "busy", "node": "n1", "requests": {"nvidia.com/gpu": 1}}],
        "workloads": [
            {"name": "w", "podSets": [{"name": "main", "count": 2, "requests": {"cpu": "1"}}]}
        ],
        "expect": {"w": ON_N1},
    }
    data.update(changes)
    return data


def refusal(data: dict[str, Any]) -> str:
    with pytest.raises(ScenarioError) as err:
        scenario_from_data(data, "f.yaml")
    return str(err.value)


def test_the_harness_runs_the_versions_the_toolchain_pins() -> None:
    """kueue_versions mirrors pins (the loader does not import the toolchain package)."""
    assert tuple(toolchain.KUEUE_JOBSET) == KUEUE_VERSIONS
    assert toolchain.PINS.kueue == DEFAULT_KUEUE


@pytest.mark.parametrize(
    ("value", "runs_on", "includes"),
    [
        ("v0.18.2", "v0.18.2", ["v0.18.2"]),
        ("v0.1.0", "v0.1.0", []),  # any well-formed version: the fit model says what it models
        (">=v0.18.2", "v0.19.2", ["v0.18.2", "v0.19.2"]),
        (">= v0.17.1, <v0.19.1", "v0.18.2", ["v0.17.1", "v0.18.2"]),
        (["v0.17.1", "v0.19.2"], "v0.19.2", ["v0.17.1", "v0.19.2"]),
        (["v0.17.1", ">v0.17.1 <v0.19.0"], "v0.18.2", ["v0.17.1", "v0.18.2"]),
    ],
)
def test_kueue_names_versions_and_picks_the_one_it_runs_on(
    value: object, runs_on: str, includes: list[str]
) -> None:
    """One version runs on it; a list or range on the default when included, else on the
    newest version the harness runs that it includes."""
    scenario = scenario_from_data(base(kueue=value))
    assert scenario.kueue == runs_on
    assert scenario.kueue_versions is not None
    assert [v for v in KUEUE_VERSIONS if scenario.kueue_versions.includes(v)] == includes


def test_before_compares_versions_not_text() -> None:
    assert before("v0.9.9", "v0.19.1") and before("v0.19.0", "v0.19.1")
    assert not before("v0.19.1", "v0.19.1") and not before("v0.100.0", "v0.19.1")
    assert not before(None, "v0.19.1")
    assert parse_versions("<v0.19.10").includes("v0.19.9")


def test_expect_by_version_replaces_the_workloads_it_names_on_its_versions() -> None:
    data = base(
        kueue=">=v0.17.1",
        workloads=[
            *base()["workloads"],
            {"name": "v", "podSets": [{"name": "main", "count": 1, "requests": {"cpu": "1"}}]},
        ],
        expect={"w": ON_N1, "v": {"admitted": True}},
        expectByVersion={"<v0.19.1": {"w": PENDING}, "v0.19.2": {"v": PENDING}},
    )
    scenario = scenario_from_data(data)
    assert scenario.kueue == "v0.19.2"
    assert scenario.expect is not None
    assert scenario.expect["w"].placement == {"main": {"n1": 2}}
    assert scenario.expect["v"].admitted is False
    for version in ("v0.17.1", "v0.18.2"):
        on = dataclasses.replace(scenario, kueue=version)  # what --kueue-version does
        assert on.expect is not None
        assert (on.expect["w"].admitted, on.expect["v"].admitted) == (False, True)
    # Replacing expect alone (whatif's variants) leaves it as given.
    assert dataclasses.replace(scenario, expect=None).expect is None


def test_a_step_has_expectations_per_version_too() -> None:
    """The guide's freed-node file: Kueue before v0.19.1 does not retry the pending job when
    the non-TAS pod goes away (kueue#13772), seen on the embedded cluster (§8)."""
    scenario = load_scenario(FREED)
    assert scenario.kueue == "v0.19.2"
    assert scenario.steps[0].expect is not None and scenario.steps[0].expect["train"].admitted
    for version in ("v0.17.1", "v0.18.2"):
        step = dataclasses.replace(scenario, kueue=version).steps[0]
        assert step.expect is not None and not step.expect["train"].admitted
        assert "allows to fit only 2 out of 4" in (step.expect["train"].message or "")
    again = dataclasses.replace(dataclasses.replace(scenario, kueue="v0.17.1"), kueue="v0.19.2")
    assert again.steps[0].expect == scenario.steps[0].expect


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"kueue": "0.19.2"}, "kueue: '0.19.2' is not a Kueue version: write vMAJOR.MINOR.PATCH, e.g. v0.19.2"),
        ({"kueue": "v0.19"}, "kueue: 'v0.19' is not a Kueue version: write vMAJOR.MINOR.PATCH, e.g. v0.19.2"),
        ({"kueue": 0.19}, "kueue: must be a version (v0.19.2), a range ('>=v0.18.2') or a list of them, got 0.19"),
        ({"kueue": "=>v0.18.2"}, "kueue: '=>v0.18.2': unknown comparison '=>'; use >=, >, <=, < or == before a version"),
        ({"kueue": ">=v0.19.0 <v0.18.0"}, "kueue: '>=v0.19.0 <v0.18.0' includes no version"),
        ({"kueue": []}, "kueue: an empty list names no version"),
        ({"kueue": ["v0.18.2", "v0.18.2"]}, "kueue: 'v0.18.2' is listed twice"),
        ({"kueue": ["v0.18.2", {"v": 1}]}, "kueue: item 1 must be a version or a range, got a mapping"),
        ({"kueue": ">=v0.20.0"}, "kueue: >=v0.20.0 includes none of the Kueue versions the harness runs (v0.17.1, v0.18.2, v0.19.2)"),
        ({"expectByVersion": []}, "expectByVersion: must be a non-empty mapping of a Kueue version or range to expectations (as in expect), got a list"),
        ({"expectByVersion": {"v0.18": {"w": PENDING}}}, "expectByVersion.v0.18: 'v0.18' is not a Kueue version: write vMAJOR.MINOR.PATCH, e.g. v0.19.2"),
        ({"expectByVersion": {"v0.18.2": {"nope": PENDING}}}, "expectByVersion.v0.18.2: unknown key 'nope' (allowed: w)"),
        ({"kueue": ">=v0.18.2", "expectByVersion": {"v0.17.1": {"w": PENDING}}}, "expectByVersion.v0.17.1: includes none of the versions the file's kueue: names (>=v0.18.2)"),
        ({"expectByVersion": {"<v0.19.1": {"w": PENDING}, "v0.18.2": {"w": PENDING}}}, "expectByVersion.v0.18.2: v0.18.2 is also in '<v0.19.1'; give each version at most one entry"),
        ({"expectByVersion": {"<v0.18.5": {"w": PENDING}, ">v0.18.3": {"w": PENDING}}}, "expectByVersion.>v0.18.3: v0.18.4 is also in '<v0.18.5'; give each version at most one entry"),
        ({"steps": [{"delete-usage": "busy", "expectByVersion": {"v0.18.2": {"w": "yes"}}}]}, "steps[0].expectByVersion.v0.18.2.w: must be a mapping, got 'yes'"),
        ({"kueue": "v0.19.2", "steps": [{"delete-usage": "busy", "expectByVersion": {"<v0.19.1": {"w": PENDING}}}]}, "steps[0].expectByVersion.<v0.19.1: includes none of the versions the file's kueue: names (v0.19.2)"),
    ],
)  # fmt: skip
def test_malformed_versions_are_refused_in_one_line(changes: dict[str, Any], error: str) -> None:
    assert refusal(base(**changes)) == f"f.yaml: {error}"


def test_the_command_line_exits_2_with_the_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(base(kueue=">=v0.20.0")))
    done = subprocess.run(
        [sys.executable, "-m", "harness", "check", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"{path}: kueue: >=v0.20.0 includes none of the Kueue versions the harness runs "
        "(v0.17.1, v0.18.2, v0.19.2)"
    ]


WHY = "a map-order tie"


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"undeterminedOn": []}, "undeterminedOn: must be a non-empty mapping of a Kueue version or range to the reason Kueue gives no single answer there, got a list"),
        ({"undeterminedOn": {"v0.18": WHY}}, "undeterminedOn.v0.18: 'v0.18' is not a Kueue version: write vMAJOR.MINOR.PATCH, e.g. v0.19.2"),
        ({"undeterminedOn": {"v0.18.2": ""}}, "undeterminedOn.v0.18.2: must say why Kueue gives no single answer there, got ''"),
        ({"undeterminedOn": {"<v0.20.0": WHY}}, "undeterminedOn.<v0.20.0: includes v0.19.2, the version the file runs on: a file must hold expectations for the version it runs on"),
        ({"kueue": "v0.18.2", "undeterminedOn": {"v0.18.2": WHY}}, "undeterminedOn.v0.18.2: includes v0.18.2, the version the file runs on: a file must hold expectations for the version it runs on"),
        ({"kueue": ">=v0.18.2", "undeterminedOn": {"v0.17.1": WHY}}, "undeterminedOn.v0.17.1: includes none of the versions the file's kueue: names (>=v0.18.2)"),
        ({"undeterminedOn": {"<v0.19.1": WHY, "v0.18.2": WHY}}, "undeterminedOn.v0.18.2: v0.18.2 is also in '<v0.19.1'; give each version one entry"),
        ({"expectByVersion": {"v0.18.2": {"w": PENDING}}, "undeterminedOn": {"<v0.19.0": WHY}}, "undeterminedOn.<v0.19.0: v0.18.2 also has expectations under expectByVersion v0.18.2"),
    ],
)  # fmt: skip
def test_malformed_undetermined_on_is_refused_in_one_line(
    changes: dict[str, Any], error: str
) -> None:
    assert refusal(base(**changes)) == f"f.yaml: {error}"


def test_undetermined_on_names_the_versions_without_one_answer() -> None:
    """On a version `undeterminedOn` includes the scenario says why no expectation holds;
    on the version it runs on, and on the others, it says nothing."""
    scenario = scenario_from_data(base(kueue=">=v0.17.1", undeterminedOn={"<v0.19.0": WHY}))
    assert scenario.undetermined_on() is None
    assert scenario.undetermined_on("v0.19.2") is None
    assert scenario.undetermined_on("v0.18.2") == (
        f"Kueue v0.18.2 gives no single answer here: {WHY} (undeterminedOn)"
    )
    forced = dataclasses.replace(scenario, kueue="v0.17.1")
    assert forced.undetermined_on() == (
        f"Kueue v0.17.1 gives no single answer here: {WHY} (undeterminedOn)"
    )


def test_pytest_skips_a_version_without_one_answer_and_checks_the_rest(
    tmp_path: Path,
) -> None:
    """The skip names the reason; the same file is still checked on the version it runs on,
    where a wrong expectation fails."""
    wrong = base(kueue=">=v0.17.1", undeterminedOn={"<v0.19.0": WHY}, expect={"w": PENDING})
    path = tmp_path / "x.yaml"
    path.write_text(yaml.safe_dump(wrong))
    runs = {}
    for version in ("v0.18.2", "v0.19.2"):
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", str(path),
             f"--kueue-version={version}", "--kth-report=", f"--rootdir={tmp_path}"],
            capture_output=True, text=True, cwd=ROOT, check=False,
        )  # fmt: skip
        runs[version] = done
    assert runs["v0.18.2"].returncode == 0, runs["v0.18.2"].stdout
    assert f"Kueue v0.18.2 gives no single answer here: {WHY}" in runs["v0.18.2"].stdout
    assert runs["v0.19.2"].returncode == 1, runs["v0.19.2"].stdout
