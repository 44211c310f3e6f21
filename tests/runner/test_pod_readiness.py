"""The status the runner writes as the kubelet for `pods-not-ready` / `pods-ready`: the Ready
and ContainersReady conditions and each container's `ready`, the rest of a container's
status kept (the Job controller counts pods by their Ready condition)."""

from __future__ import annotations

from harness.runner.pod_readiness import _status

POD = {
    "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    "status": {
        "phase": "Running",
        "containerStatuses": [
            {"name": "main", "image": "busybox", "ready": True, "state": {"running": {}}}
        ],
    },
}


def test_not_ready_sets_both_conditions_false_and_keeps_the_container_running() -> None:
    status = _status(POD, ready=False)
    assert {c["type"]: c["status"] for c in status["conditions"]} == {
        "Ready": "False",
        "ContainersReady": "False",
    }
    (container,) = status["containerStatuses"]
    assert container["ready"] is False and container["state"] == {"running": {}}


def test_ready_again() -> None:
    status = _status(POD, ready=True)
    assert all(c["status"] == "True" for c in status["conditions"])
    assert status["containerStatuses"][0]["ready"] is True
