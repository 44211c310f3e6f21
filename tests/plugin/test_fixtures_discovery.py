"""A cluster shape for the tas_shape fixture (scenario keys, no workloads) is not collected as
a scenario; a scenario whose `workloads` key is misspelt still is, so the loader reports it."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.scenario.discover import why_not_a_scenario

REPO = Path(__file__).resolve().parents[2]
SHAPE = REPO / "examples" / "shapes" / "gpu-racks.yaml"


def test_the_example_shape_is_no_scenario() -> None:
    reason = why_not_a_scenario(SHAPE)
    assert reason is not None and "cluster shape" in reason


def test_a_misspelt_workloads_key_still_makes_a_scenario(tmp_path: Path) -> None:
    typo = tmp_path / "typo.yaml"
    typo.write_text(SHAPE.read_text() + "workload: []\n")
    assert why_not_a_scenario(typo) is None


def test_walking_a_folder_skips_shapes(pytester: pytest.Pytester) -> None:
    (pytester.path / "shapes").mkdir()
    (pytester.path / "shapes" / "racks.yaml").write_text(SHAPE.read_text())
    result = pytester.runpytest("-p", "no:cacheprovider", "--collect-only", "-q", "shapes")
    assert "racks" not in result.stdout.str()
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


TOPOLOGY = "topology: {name: t, levels: [kubernetes.io/hostname]}\n"
GROUP = (
    "nodeGroups:\n  - {name: 'n{index}', count: 2, allocatable: {nvidia.com/gpu: 8, pods: 110}}\n"
)
WORKLOADS = "workloads: [{name: w, podSets: [{name: main, count: 1}]}]\n"


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return path


def test_node_groups_count_as_nodes_when_recognising_a_scenario(tmp_path: Path) -> None:
    """With `topology` misspelt, nodeGroups and workloads still make a scenario for the loader
    to report, as nodes and workloads do; broken YAML likewise."""
    assert why_not_a_scenario(_file(tmp_path, "topolgy: {}\n" + GROUP + WORKLOADS)) is None
    broken = "topolgy: {\n" + GROUP + WORKLOADS
    assert why_not_a_scenario(_file(tmp_path, broken)) is None


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(TOPOLOGY + GROUP, id="nodeGroups"),
        pytest.param(
            "x-host: &host {pods: 110}\n" + TOPOLOGY + "nodes: [{name: a, allocatable: *host}]\n",
            id="x-key",
        ),
    ],
)
def test_shapes_written_with_templates_are_shapes(tmp_path: Path, text: str) -> None:
    reason = why_not_a_scenario(_file(tmp_path, text))
    assert reason is not None and "cluster shape" in reason
