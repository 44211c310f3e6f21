"""The kube adapter's pure parts: waits name what they waited for and what they saw."""

from __future__ import annotations

from typing import Any

import pytest

from harness.kube import (
    KubeError,
    WaitTimeout,
    absent,
    has_condition,
    node_ready,
    poll_until,
    selector,
)


def _node(ready: str | None, taints: list[str]) -> dict[str, Any]:
    conds = [] if ready is None else [{"type": "Ready", "status": ready, "reason": "KubeletReady"}]
    return {
        "spec": {"taints": [{"key": t, "effect": "NoSchedule"} for t in taints]},
        "status": {"conditions": conds},
    }


def test_timeout_names_condition_and_last_seen() -> None:
    with pytest.raises(WaitTimeout) as err:
        poll_until(
            lambda: (False, "Ready=False (KubeletNotReady)"),
            what="Node gpu-1 to be Ready",
            timeout=0.3,
            interval=0.05,
        )
    text = str(err.value)
    assert "Node gpu-1 to be Ready" in text and "last seen: Ready=False (KubeletNotReady)" in text


def test_api_errors_are_retried_until_deadline() -> None:
    calls = []

    def probe() -> tuple[bool, str]:
        calls.append(1)
        if len(calls) < 3:
            raise KubeError("GET /api/v1/nodes/x: 503 'not ready'")
        return True, "ok"

    assert poll_until(probe, what="x", timeout=5, interval=0.01) == "ok"


def test_other_errors_abort_the_wait() -> None:
    def probe() -> tuple[bool, str]:
        raise RuntimeError("process died")

    with pytest.raises(RuntimeError):
        poll_until(probe, what="x", timeout=5, interval=0.01)


def test_node_ready_needs_condition_and_no_not_ready_taint() -> None:
    assert node_ready(_node("True", []))[0]
    assert not node_ready(_node("True", ["node.kubernetes.io/not-ready"]))[0]
    assert not node_ready(_node("False", []))[0]
    assert not node_ready(_node(None, []))[0]
    assert not node_ready(None)[0]
    assert node_ready(_node("True", ["example.com/gpu"]))[0]
    assert (
        "node.kubernetes.io/not-ready"
        in node_ready(_node("True", ["node.kubernetes.io/not-ready"]))[1]
    )


def test_has_condition_describes_what_it_saw() -> None:
    wl = {
        "status": {
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "False",
                    "reason": "Pending",
                    "message": "couldn't assign flavors",
                }
            ]
        }
    }
    ok, seen = has_condition("QuotaReserved")(wl)
    assert not ok and seen == "QuotaReserved=False (Pending: couldn't assign flavors)"
    assert has_condition("Admitted")(wl) == (False, "no Admitted condition")


def test_absent_and_selector() -> None:
    assert absent(None)[0]
    assert absent({"metadata": {"deletionTimestamp": "now"}}) == (False, "being deleted")
    assert selector({"a": "b", "c": "d"}) == "a=b,c=d"
    assert selector(None) is None
