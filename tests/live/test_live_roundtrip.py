"""Snapshot round trip on the embedded cluster: a scenario brought up by the runner (nodes,
usage pods, Kueue objects, its workloads submitted and settled), snapshotted, gives the same
fit-model answers as the scenario itself: every workload admitted or pending as before, on
the same nodes, and a new probe workload placed the same way on both."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.fit import fit
from harness.live.cluster_read import read_cluster
from harness.live.snapshot import snapshot
from harness.results.outcome import Outcome
from harness.runner.backend import ClusterBackend
from harness.scenario.loader import scenario_from_data
from harness.scenario.strict_yaml import parse_yaml

pytestmark = pytest.mark.cluster
REPO = Path(__file__).resolve().parents[2]
PROBE = {
    "name": "probe",
    "podSets": [{"name": "main", "count": 2, "requests": {"nvidia.com/gpu": 1},
                 "topology": {"mode": "required", "level": "kubernetes.io/hostname"}}],
}  # fmt: skip
CASES = [
    "suites/fragmentation/fragmentation-four-gpu-nodes-two-gpu-pods.yaml",
    "suites/guide/guide-required-host-waits-for-freed-node.yaml",
    "suites/required/required-block-pooled-hosts.yaml",
]


def with_probe(data: dict[str, Any], file: str) -> Any:
    data = {k: v for k, v in data.items() if k not in ("expect", "steps")}
    data["workloads"] = [*data["workloads"], PROBE]
    return scenario_from_data(data, file)


def answer(o: Outcome) -> tuple[bool, list[list[tuple[str, int]]]]:
    """Admitted and where (pod set names differ: the runner's Job calls its pod set main)."""
    return o.admitted, [sorted(p.items()) for p in o.placement.values()]


@pytest.mark.parametrize("case", CASES)
def test_a_snapshot_gives_the_scenarios_answers(runner: ClusterBackend, case: str) -> None:
    data = parse_yaml((REPO / case).read_text(), case)
    scenario = scenario_from_data({k: v for k, v in data.items() if k != "steps"}, case)
    observed = runner.run(dataclasses.replace(scenario, steps=())).outcomes
    assert runner.kube is not None
    snap = snapshot(read_cluster(runner.kube), "roundtrip")
    text = yaml.safe_dump(snap.data, sort_keys=False)
    taken = scenario_from_data(parse_yaml(text, "snapshot.yaml"), "snapshot.yaml")
    # Every workload of the scenario is in the snapshot: admitted ones as admitted, with the
    # placement real Kueue gave them, pending ones as workloads still queued.
    assert {a.name for a in taken.admitted} == {n for n, o in observed.items() if o.admitted}
    assert {w.name for w in taken.workloads} == {n for n, o in observed.items() if not o.admitted}
    before = fit(with_probe(dict(data), case)).outcomes
    after = fit(with_probe(dict(snap.data), "snapshot.yaml")).outcomes
    assert {n: answer(o) for n, o in after.items()} == {n: answer(o) for n, o in before.items()}
    assert after["probe"].message == before["probe"].message


def test_the_snapshot_command_writes_a_file_oracle_loads(
    runner: ClusterBackend, tmp_path: Path
) -> None:
    """The commands a user runs: snapshot to a file (gaps on stderr), then oracle on it."""
    case = CASES[0]
    runner.run(scenario_from_data(parse_yaml((REPO / case).read_text(), case), case))
    assert runner.kube is not None
    out = tmp_path / "snap.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "harness", "snapshot", "--kubeconfig", str(runner.kube.kubeconfig),
         "-o", str(out)], capture_output=True, text=True, check=False, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "snapshot: not represented: Kueue's configuration" in done.stderr
    assert f"snapshot: wrote {out}: 2 nodes, 2 usage entries" in done.stderr
    assert out.read_text().startswith("# snapshot of https://127.0.0.1:")
    oracle = subprocess.run(
        [sys.executable, "-m", "harness", "oracle", str(out)],
        capture_output=True, text=True, check=False, cwd=REPO,
    )  # fmt: skip
    assert oracle.returncode == 0, oracle.stderr
    answers = json.loads(oracle.stdout)
    assert answers["two"]["admitted"] is True
    assert answers["two"]["placement"] == {"main": {"gpu-node-1": 1, "gpu-node-2": 1}}
    assert answers["three"]["admitted"] is False
