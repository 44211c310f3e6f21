"""`oracle --explain` after fault steps: why a node failed or was kept for a workload, what
Kueue did (replaced, no replacement and why, evicted) and where an evicted workload went.
The words come from the notes the fit model's fault rules record while deciding."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
FAULTS = ROOT / "suites" / "faults"
DATA = Path(__file__).resolve().parents[1] / "data" / "explain-faults"


def why_after(capsys: pytest.CaptureFixture[str], path: Path, step: int) -> str:
    """The `why` block printed for the state after step `step` (1-based)."""
    assert main(["oracle", str(path), "--format", "text", "--explain"]) == 0
    out = capsys.readouterr().out
    blocks = out.split("\nwhy (")
    for block in blocks[1:]:
        if block.startswith(f"after step {step} ("):
            return block
    raise AssertionError(f"no why block after step {step} in:\n{out}")


def explain_json(capsys: pytest.CaptureFixture[str], path: Path) -> dict[str, Any]:
    assert main(["oracle", str(path), "--format", "json", "--explain"]) == 0
    payload: dict[str, Any] = json.loads(capsys.readouterr().out)
    return payload


def test_notready_kept_then_no_room_in_rack_evicted_and_readmitted(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = FAULTS / "faults-notready-rack-no-spare-evicted-other-rack.yaml"
    first = why_after(capsys, path, 1)
    assert "node x3 not failed: NotReady, but 1 of its pods still runs there" in first
    assert "Kueue kept its assignment (worker on x1=1, x3=1)" in first
    second = why_after(capsys, path, 2)
    assert "node x3 failed for it: NotReady and none of its pods still runs there" in second
    assert (
        'pod set "worker": no replacement for x3: only 0 of the 1 lost pod(s) fit within rack '
        "r1 (the required level's domain of its first remaining node, x1)"
    ) in second
    assert (
        "x3: 0 fit (not Ready); x1: 0 fit (no room for one pod: nvidia.com/gpu; held by wl1)"
        in (second)
    )
    assert "Kueue evicted it (NodeFailures)" in second
    assert "requeued at once and admitted again: worker on x2=1, x4=1" in second


def test_replaced_within_the_incomplete_slice(capsys: pytest.CaptureFixture[str]) -> None:
    why = why_after(capsys, FAULTS / "faults-hotswap-delete-node-replaced-in-block.yaml", 1)
    assert "node b1-r1-n1 failed for it: the node was deleted" in why
    assert "Kueue replaced b1-r1-n1 by b1-r2-n2 (1 pod)" in why
    assert "within block b1 (the slice the loss left incomplete, slice size 3)" in why
    assert "choosing the tightest fit there" in why


def test_required_replacement_confined_to_the_first_remaining_nodes_rack(
    capsys: pytest.CaptureFixture[str],
) -> None:
    why = why_after(capsys, FAULTS / "faults-required-replacement-stays-in-rack.yaml", 1)
    assert (
        "Kueue replaced b1-r1-n1 by b1-r1-n3 (1 pod): it placed the 1 lost pod(s) within rack "
        "b1-r1 (the required level's domain of its first remaining node, b1-r1-n2)"
    ) in why


def test_preferred_replacement_looks_anywhere(capsys: pytest.CaptureFixture[str]) -> None:
    why = why_after(capsys, FAULTS / "faults-preferred-replacement-leaves-roomy-rack.yaml", 1)
    assert "anywhere in the topology (its topology is preferred)" in why


def test_stale_domains(capsys: pytest.CaptureFixture[str]) -> None:
    cordoned = why_after(capsys, FAULTS / "faults-cordoned-remaining-node-evicted.yaml", 2)
    assert "a remaining node of the assignment, b1-r1-n2, is cordoned" in cordoned
    notready = why_after(capsys, DATA / "stale-notready.yaml", 2)
    assert "a remaining node of the assignment, n2, is NotReady" in notready
    assert "requeued at once and admitted again: main on n3=1, n4=1" in notready


def test_second_failure_before_the_first_was_replaced(capsys: pytest.CaptureFixture[str]) -> None:
    path = FAULTS / "faults-two-notready-nodes-pods-terminate-together-evicted.yaml"
    why = why_after(capsys, path, 3)
    assert "a second node, x1, failed before x3 was replaced" in why
    assert "multiple TAS assigned node failures" in why


def test_fail_fast_off_waits_then_replaced(capsys: pytest.CaptureFixture[str]) -> None:
    path = FAULTS / "faults-failfast-off-stays-admitted-until-node-added.yaml"
    waits = why_after(capsys, path, 2)
    assert "TASFailedNodeReplacementFailFast is off, so it stays admitted" in waits
    assert "evicted" not in waits
    later = why_after(capsys, path, 3)
    assert "Kueue replaced b1-r1-n1 by b1-r1-n3" in later


def test_taints_tolerated_untolerated_and_gate_off(capsys: pytest.CaptureFixture[str]) -> None:
    why = why_after(capsys, FAULTS / "faults-selective-recovery-by-tolerations.yaml", 1)
    assert (
        'workload "tolerant": node n1 not failed: taint example.com/taint-a=true:NoExecute '
        "tolerated by its pod sets"
    ) in why
    assert (
        'workload "picky": node n1 failed for it: untolerated taint '
        "example.com/taint-a=true:NoExecute and none of its pods still runs there"
    ) in why
    off = why_after(capsys, FAULTS / "faults-taint-gate-off-pod-stuck-unschedulable.yaml", 1)
    assert "ignored: TASReplaceNodeOnNodeTaints is off" in off


def test_evicted_then_pending_with_kueues_message(capsys: pytest.CaptureFixture[str]) -> None:
    why = why_after(capsys, FAULTS / "faults-rack-no-spare-anywhere-evicted-pending.yaml", 1)
    assert (
        'workload "train-a": requeued at once; it is pending. Kueue says: couldn\'t assign '
        "flavors to pod set main"
    ) in why


def test_lowest_level_not_hostname(capsys: pytest.CaptureFixture[str]) -> None:
    why = why_after(capsys, FAULTS / "faults-rack-lowest-node-failure-invisible.yaml", 1)
    assert "lowest level is not kubernetes.io/hostname" in why


def test_json_notes_per_step(capsys: pytest.CaptureFixture[str]) -> None:
    payload = explain_json(capsys, FAULTS / "faults-notready-rack-no-spare-evicted-other-rack.yaml")
    assert "explain" not in payload["wl1"]
    kept = payload["_steps"][0]["wl1"]["explain"]["faults"]["notes"]
    assert [n["kind"] for n in kept] == ["kept"]
    notes = payload["_steps"][1]["wl1"]["explain"]["faults"]["notes"]
    assert [n["kind"] for n in notes] == ["failed", "no-replacement"]
    lost = notes[1]
    assert (lost["podSet"], lost["node"], lost["lost"], lost["fits"]) == ("worker", "x3", 1, 0)
    assert lost["domain"] == ["b1", "r1"]  # level values from the top: block b1, rack r1
    assert [n["node"] for n in lost["nodes"]] == ["x3", "x1"]
    replaced = explain_json(capsys, FAULTS / "faults-hotswap-delete-node-replaced-in-block.yaml")
    note = replaced["_steps"][0]["ranks"]["explain"]["faults"]["notes"][1]
    assert (note["kind"], note["replacedBy"], note["domain"]) == (
        "replaced",
        {"b1-r2-n2": 1},
        ["b1"],
    )


def test_the_getting_started_example_is_what_oracle_prints(
    capsys: pytest.CaptureFixture[str],
) -> None:
    page = (ROOT / "docs" / "getting-started.md").read_text()
    shown = [line.strip() for line in page.splitlines() if line.startswith('    workload "wl1":')]
    assert len(shown) == 4
    path = FAULTS / "faults-notready-rack-no-spare-evicted-other-rack.yaml"
    printed = why_after(capsys, path, 2).splitlines()
    assert printed[1:] == shown
