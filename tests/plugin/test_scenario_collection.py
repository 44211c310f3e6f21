"""Which YAML files pytest collects as scenarios (docs/getting-started.md, "Add it to a suite").

Every rule is run end to end with pytester: files and folders named on the command line,
folders configured with `kth_suites`, folders named `suites`, and YAML that is no scenario.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "suites" / "guide" / "guide-required-host.yaml"
# A kind cluster config: YAML with `nodes`, but no scenario.
KIND_CONFIG = "kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes:\n  - role: control-plane\n"


def _scenario(folder: Path, file_name: str, name: str, expect_node: str = "gpu-node-3") -> Path:
    """The guide scenario under another file name and scenario name."""
    data = yaml.safe_load(GUIDE.read_text())
    data["name"] = name
    data["expect"]["train"]["placement"]["main"] = {expect_node: 4}
    path = folder / file_name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _ids(result: pytest.RunResult) -> list[str]:
    return [line for line in result.outlines if "::" in line]


def test_a_folder_named_on_the_command_line_is_collected(pytester: pytest.Pytester) -> None:
    """Not under suites/, file name differs from the scenario name: collected by its name;
    other YAML in the folder is left alone."""
    _scenario(pytester.path / "my-scenarios", "first.yaml", "one-host-for-train")
    (pytester.path / "my-scenarios" / "kind.yaml").write_text(KIND_CONFIG)
    result = pytester.runpytest("-p", "no:cacheprovider", "my-scenarios", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["my-scenarios/first.yaml::one-host-for-train PASSED*"])


def test_a_file_named_on_the_command_line_is_collected(pytester: pytest.Pytester) -> None:
    path = _scenario(pytester.path / "elsewhere", "mine.yml", "mine", expect_node="gpu-node-1")
    result = pytester.runpytest("-p", "no:cacheprovider", str(path))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*train/main: expected gpu-node-1=4, got gpu-node-3=4"])


def test_k_selects_by_scenario_name(pytester: pytest.Pytester) -> None:
    _scenario(pytester.path / "s", "a.yaml", "alpha")
    _scenario(pytester.path / "s", "b.yaml", "beta")
    result = pytester.runpytest("-p", "no:cacheprovider", "s", "-k", "beta", "-v")
    result.assert_outcomes(passed=1, deselected=1)
    result.stdout.fnmatch_lines(["s/b.yaml::beta PASSED*"])


def test_a_named_file_that_is_no_scenario_says_why_in_one_line(pytester: pytest.Pytester) -> None:
    (pytester.path / "kind.yaml").write_text(KIND_CONFIG)
    result = pytester.runpytest("-p", "no:cacheprovider", "kind.yaml")
    assert result.ret == pytest.ExitCode.INTERRUPTED  # a collection error, as pytest reports them
    result.stdout.fnmatch_lines(
        [
            "*kind.yaml: not a scenario: it has nodes but not topology or workloads "
            "(a scenario needs at least two of topology, nodes, workloads)"
        ]
    )
    result.stdout.no_fnmatch_line("*Traceback*")


def test_walking_a_folder_skips_yaml_that_is_no_scenario(pytester: pytest.Pytester) -> None:
    (pytester.path / "data").mkdir()
    (pytester.path / "data" / "kind.yaml").write_text(KIND_CONFIG)
    (pytester.path / "data" / "list.yaml").write_text("- a\n- b\n")
    (pytester.path / "data" / "broken.yaml").write_text("key: [unclosed\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_kth_suites_folders_collect_every_yaml_file(pytester: pytest.Pytester) -> None:
    """In a configured suite folder a file that lost its topology and nodes still fails
    loudly; the same file elsewhere is not a scenario and is skipped."""
    broken = "name: half\nworkloads: []\n"
    (pytester.path / "scen").mkdir()
    (pytester.path / "scen" / "half.yaml").write_text(broken)
    (pytester.path / "other").mkdir()
    (pytester.path / "other" / "half.yaml").write_text(broken)
    pytester.makeini("[pytest]\nkth_suites = scen\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*scen/half.yaml: (top level): missing required key*"])
    result.stdout.no_fnmatch_line("*other/half.yaml*")


def test_a_folder_named_suites_collects_every_yaml_file(pytester: pytest.Pytester) -> None:
    (pytester.path / "suites").mkdir()
    (pytester.path / "suites" / "half.yaml").write_text("name: half\nworkloads: []\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)


def test_two_scenarios_with_one_name_fail_in_one_line(pytester: pytest.Pytester) -> None:
    _scenario(pytester.path / "s", "a.yaml", "same")
    _scenario(pytester.path / "s", "b.yaml", "same")
    result = pytester.runpytest("-p", "no:cacheprovider", "s")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*s/b.yaml: name: 'same' is also the name of *s/a.yaml (scenario names are unique*"]
    )


def test_the_repository_collects_no_test_data_or_cluster_shapes() -> None:
    """`pytest` walks tests/ and suites/ (testpaths): tests/data holds scenarios that are wrong
    on purpose and harness/providers/kind/shapes/ holds kind shapes; neither may become a test."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "tests", "harness/providers/kind/shapes", "suites/guide"],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    ids = [line for line in done.stdout.splitlines() if "::" in line]
    assert done.returncode == 0, done.stdout[-2000:]
    assert not [i for i in ids if i.startswith(("tests/data", "harness/"))]
    assert "suites/guide/guide-required-host.yaml::guide-required-host" in ids
