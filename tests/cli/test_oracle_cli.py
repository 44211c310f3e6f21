"""The oracle command on the seed guide's situation, as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

GUIDE = """
name: guide
topology: {name: gpu-topology, levels: [example.com/rack, kubernetes.io/hostname]}
nodes:
  - {name: gpu-node-1, labels: {example.com/rack: rack-1}, allocatable: {nvidia.com/gpu: 4, pods: 110}}
  - {name: gpu-node-2, labels: {example.com/rack: rack-1}, allocatable: {nvidia.com/gpu: 4, pods: 110}}
  - name: gpu-node-3
    labels: {example.com/rack: rack-2}
    allocatable: {nvidia.com/gpu: 4, pods: 110}
    taints: TAINTS
  - {name: gpu-node-4, labels: {example.com/rack: rack-2}, allocatable: {nvidia.com/gpu: 8, pods: 110},
     ready: false}
usage:
  - {node: gpu-node-1, requests: {nvidia.com/gpu: 2}}
  - {node: gpu-node-2, requests: {nvidia.com/gpu: 2}}
USAGE3
workloads:
  - name: train
    podSets:
      - name: main
        count: 4
        requests: {nvidia.com/gpu: 1}
        topology: {mode: required, level: kubernetes.io/hostname}
"""


def oracle(tmp_path: Path, text: str, *extra: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "guide.yaml"
    path.write_text(text)
    return subprocess.run(
        [sys.executable, "-m", "harness", "oracle", str(path), *extra],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def scenario(busy_node3: bool, taint: bool = False) -> str:
    usage3 = "  - {node: gpu-node-3, requests: {nvidia.com/gpu: 2}}" if busy_node3 else ""
    taints = "[{key: maintenance, value: 'true', effect: NoSchedule}]" if taint else "[]"
    return GUIDE.replace("USAGE3", usage3).replace("TAINTS", taints)


def test_guide_admits_whole_on_the_free_node(tmp_path: Path) -> None:
    done = oracle(tmp_path, scenario(busy_node3=False))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "train": {
            "admitted": True,
            "placement": {"main": {"gpu-node-3": 4}},
            "flavors": {"main": "gpu-topology"},  # the shorthand's one flavor
        }
    }


def test_guide_stays_pending_with_kueues_message_when_every_node_is_half_busy(
    tmp_path: Path,
) -> None:
    done = oracle(tmp_path, scenario(busy_node3=True))
    result = json.loads(done.stdout)["train"]
    assert result["admitted"] is False
    assert result["message"] == (
        'couldn\'t assign flavors to pod set main: topology "gpu-topology" allows to fit only'
        " 2 out of 4 pod(s)"
    )


def test_explain_names_rejected_and_missing_nodes(tmp_path: Path) -> None:
    done = oracle(
        tmp_path, scenario(busy_node3=False, taint=True), "--format", "text", "--explain-domains"
    )
    assert done.returncode == 0, done.stderr
    assert "train: pending" in done.stdout
    assert 'taint "maintenance=true:NoSchedule": 1' in done.stdout
    assert "REJECTED: untolerated taint maintenance=true:NoSchedule" in done.stdout
    assert "node gpu-node-4: not in the topology: not Ready" in done.stdout


def test_a_reader_that_stops_early_gets_no_traceback() -> None:
    """`python -m harness oracle FILE | head -1`: the reader is gone before the output is
    written; the command ends quietly with 141 (128 + SIGPIPE), as `yes | head -1` does."""
    scenario = Path(__file__).resolve().parents[2] / "suites/guide/guide-preferred-host.yaml"
    with subprocess.Popen(
        [sys.executable, "-m", "harness", "oracle", str(scenario), "--format", "text"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # before the child writes: its first write meets a closed pipe
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=120) == 141, err
    assert err == ""


def test_the_domain_dump_says_placements_as_yaml_not_python(tmp_path: Path) -> None:
    """`--explain-domains` ends with each workload's verdict: a placement reads as YAML
    (`main:` / `gpu-node-3: 4`), not a Python dict (issue 32 item 8)."""
    from harness.fit.explain import Explainer

    explainer = Explainer()
    explainer.trace("train", None, "admitted: {'main': {'gpu-node-3': 4, 'gpu-node-1': 2}}")
    explainer.trace("other", None, "pending: couldn't assign flavors to pod set main")
    assert explainer.render().splitlines() == [
        "== train: admitted",
        "   main:",
        "     gpu-node-1: 2",
        "     gpu-node-3: 4",
        "== other: pending: couldn't assign flavors to pod set main",
    ]
    done = oracle(tmp_path, scenario(busy_node3=False), "--format", "text", "--explain-domains")
    assert done.returncode == 0, done.stderr
    assert "{'" not in done.stdout + done.stderr
