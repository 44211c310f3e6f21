"""States Kueue accepts that the loader refused before issue 29: each corpus file loads, with
exactly the warning its first line names for a hand-written file and none for a snapshot."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.errors import ScenarioError
from harness.kueue.cluster_queue_spec import cluster_queue_spec
from harness.kueue.queue_activity import drains, inactive_reason
from harness.scenario.loader import load_scenario, scenario_from_data
from harness.scenario.notices import SNAPSHOT_KEY

CORPUS = sorted((Path(__file__).parents[1] / "data" / "accepted").glob("*.yaml"))


def expected_warning(path: Path) -> str:
    first = path.read_text().splitlines()[0]
    assert first.startswith("# warning: "), f"{path} must start with '# warning: ...'"
    return first.removeprefix("# warning: ")


def test_corpus_covers_levels_usage_and_admitted() -> None:
    assert len(CORPUS) >= 6


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_hand_written_file_loads_with_one_warning(path: Path) -> None:
    (warning,) = load_scenario(path).warnings
    assert warning.startswith(f"{path}: {expected_warning(path)}")
    assert "\n" not in warning


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_snapshot_loads_without_warning(path: Path) -> None:
    data = yaml.safe_load(path.read_text())
    data[SNAPSHOT_KEY] = {"workloads": {}}
    assert scenario_from_data(data, str(path)).warnings == ()


def test_oracle_prints_the_warning_and_exits_0() -> None:
    path = next(p for p in CORPUS if p.stem == "level-in-no-flavor")
    done = subprocess.run(
        [sys.executable, "-m", "harness", "oracle", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [f"warning: {path}: {expected_warning(path)}"]


def test_a_level_must_still_be_a_label_key() -> None:
    path = next(p for p in CORPUS if p.stem == "level-in-no-flavor")
    data = yaml.safe_load(path.read_text())
    data["workloads"][0]["podSets"][0]["topology"]["level"] = "not a key"
    with pytest.raises(ScenarioError, match="'not a key' is not a valid label key"):
        scenario_from_data(data, "f.yaml")


def test_missing_flavor_makes_the_queue_inactive() -> None:
    path = next(p for p in CORPUS if p.stem == "v2-undefined-flavor")
    (cq,) = load_scenario(path).cluster_queues
    assert (cq.missing_flavors, inactive_reason(cq)) == (("a100",), "FlavorNotFound")


@pytest.mark.parametrize("policy", ["None", "Hold", "HoldAndDrain"])
def test_stop_policy_loads_and_reaches_the_spec(policy: str) -> None:
    path = next(p for p in CORPUS if p.stem == "level-only-in-another-queues-flavor")
    data = yaml.safe_load(path.read_text())
    data["clusterQueues"][0]["stopPolicy"] = policy
    cq = scenario_from_data(data, "f.yaml").cluster_queues[0]
    assert cq.stop_policy == policy
    assert cluster_queue_spec(cq).get("stopPolicy", "None") == policy
    assert (inactive_reason(cq) is None) == (policy == "None")
    assert drains(cq) == (policy == "HoldAndDrain")
