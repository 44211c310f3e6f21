"""Reading admitted pods that never run from the pod objects the API server returns."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from harness.kube import WaitTimeout
from harness.runner import binding

RACK = "example.com/rack"
ASSIGNMENT = {
    "levels": ["example.com/block", RACK],
    "slices": [
        {
            "domainCount": 2,
            "valuesPerLevel": [
                {"universal": "b1"},
                {"individual": {"prefix": "r", "roots": ["1", "2"]}},
            ],
            "podCounts": {"individual": [1, 2]},
        }
    ],
}


def pod(name: str, **spec: Any) -> dict[str, Any]:
    status = spec.pop("status", {})
    return {"metadata": {"name": name}, "spec": spec, "status": status}


GATED = [{"name": binding.TOPOLOGY_GATE}]
UNSCHEDULABLE = {
    "conditions": [
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
        }
    ]
}


def test_assigned_domains_are_the_labels_the_ungater_adds() -> None:
    assert binding.assigned_domains(ASSIGNMENT) == [
        ({"example.com/block": "b1", RACK: "r1"}, 1),
        ({"example.com/block": "b1", RACK: "r2"}, 2),
    ]


def test_pod_states() -> None:
    assert binding.state_of(pod("a", nodeName="n1")) == "bound"
    assert binding.state_of(pod("a", schedulingGates=GATED)) == "gated"
    assert binding.state_of(pod("a", status=UNSCHEDULABLE)) == "unschedulable"
    assert binding.state_of(pod("a")) == "released"


def test_conflict_names_the_level_the_ungater_may_not_change() -> None:
    domains = binding.assigned_domains(ASSIGNMENT)
    selecting_r1 = pod("a", schedulingGates=GATED, nodeSelector={RACK: "r1"})
    assert (
        binding.conflict(selecting_r1, domains)
        == f"it selects {RACK}=r1, its assigned domain has {RACK}=r2"
    )
    assert binding.conflict(pod("b", nodeSelector={"other": "x"}), domains) == ""


def test_ungate_errors_are_read_from_kueues_json_log() -> None:
    line = {
        "level": "error",
        "msg": "failed ungating pod",
        "pod": {"name": "job-0-abc", "namespace": "ns"},
        "error": 'Pod "job-0-abc" is invalid: spec.nodeSelector: only additions are allowed',
    }
    log = "\n".join(
        [
            "not json ungating job-0-abc",
            json.dumps(line),
            json.dumps({**line, "level": "info"}),
            json.dumps({**line, "msg": "failed to read rank information from pods"}),
        ]
    )
    assert binding.ungate_errors(log, ["job-0-abc"]) == {
        "job-0-abc": 'failed ungating pod: Pod "job-0-abc" is invalid: spec.nodeSelector: only additions are allowed'
    }
    assert binding.ungate_errors(log, ["other-pod"]) == {}


def watch(pods: list[dict[str, Any]], count: int, **kw: Any) -> binding.PodSetPods:
    w = binding.Watch(lambda: pods, count, binding.assigned_domains(ASSIGNMENT), "job", **kw)
    return binding.watch(
        w, deadline=time.monotonic() + 1.0, interval=0.01, quiet=0.05, unreleased=0.2
    )


def test_unschedulable_pods_settle_at_once_with_kube_schedulers_message() -> None:
    started = time.monotonic()
    seen = watch([pod("a", nodeName="n1"), pod("b", status=UNSCHEDULABLE)], 2)
    assert time.monotonic() - started < 0.1
    assert [p["metadata"]["name"] for p in seen.bound] == ["a"]
    assert seen.unschedulable == 1
    assert (
        seen.reason
        == "1 pod(s): kube-scheduler: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu."
    )


def test_explained_gated_pods_settle_after_the_quiet_window() -> None:
    gated = pod("b", schedulingGates=GATED, nodeSelector={RACK: "r1"})
    seen = watch([pod("a", nodeName="n1", nodeSelector={RACK: "r1"}), gated], 2)
    assert seen.unschedulable == 1
    assert "1 pod(s) stay scheduling-gated (it selects example.com/rack=r1" in seen.reason


def test_a_logged_ungate_failure_settles_without_waiting() -> None:
    gated = [pod(n, schedulingGates=GATED, nodeSelector={RACK: "r9"}) for n in "abc"]
    started = time.monotonic()
    seen = watch(
        gated, 3, ungate_errors=lambda names: {n: "failed ungating pod: invalid" for n in names}
    )
    assert time.monotonic() - started < 0.1
    assert seen.unschedulable == 3
    assert seen.reason.endswith("; Kueue's ungater: failed ungating pod: invalid")


def test_a_logged_failure_does_not_settle_a_sibling_it_does_not_name() -> None:
    """Pod a (rack=r1, bound for domain r1) is still gated when b's refusal is logged: the
    watch waits out the quiet window instead of counting a as stuck at once."""
    a = pod("a", schedulingGates=GATED, nodeSelector={RACK: "r1"})
    b = pod("b", schedulingGates=GATED, nodeSelector={RACK: "r1"})
    states = iter([[a, b], [a, b]])
    released_a = pod("a", nodeName="n1", nodeSelector={RACK: "r1"})
    w = binding.Watch(
        lambda: next(states, [released_a, b]),
        2,
        binding.assigned_domains(ASSIGNMENT),
        "job",
        lambda names: {"b": "failed ungating pod: invalid"} if "b" in names else {},
    )
    seen = binding.watch(
        w, deadline=time.monotonic() + 1.0, interval=0.01, quiet=0.05, unreleased=0.5
    )
    assert [p["metadata"]["name"] for p in seen.bound] == ["a"]
    assert seen.unschedulable == 1


def test_unexplained_gated_pods_are_waited_for_until_the_deadline() -> None:
    with pytest.raises(WaitTimeout) as err:
        watch([pod("a", schedulingGates=GATED), pod("b", nodeName="n1")], 2)
    assert "last seen: 2 pods (1 bound, 1 gated)" in str(err.value)


def test_missing_or_released_pods_are_waited_for() -> None:
    with pytest.raises(WaitTimeout, match=r"last seen: 1 pods \(1 released\)"):
        watch([pod("a")], 2)


def indexed(name: str, index: str, created: str, **spec: Any) -> dict[str, Any]:
    p = pod(name, **spec)
    p["metadata"].update(
        labels={binding.JOB_NAME: "picky", binding.JOB_INDEX: index}, creationTimestamp=created
    )
    return p


FAILED_BY_KUEUE = {
    "phase": "Failed",
    "conditions": [
        {
            "type": binding.TERMINATED_BY_KUEUE,
            "status": "True",
            "reason": "UnschedulableOnAssignedNode",
            "message": "Pod terminated by Kueue NodeController due to node taint",
        }
    ],
}
ON_N1 = {binding.HOSTNAME: "n1"}


def test_a_pod_failed_by_kueues_node_controller_counts_as_never_running() -> None:
    """Between two attempts of the Job the slot has no live pod: the latest one, failed by
    Kueue on a node unhealthy for the workload, settles it at once."""
    failed = indexed(
        "p-0-b", "0", "2026-01-01T00:00:10Z", nodeSelector=ON_N1, status=FAILED_BY_KUEUE
    )
    evicted = indexed(
        "p-0-a", "0", "2026-01-01T00:00:00Z", nodeName="n1", status={"phase": "Failed"}
    )
    started = time.monotonic()
    seen = watch([evicted, failed], 1, unhealthy=frozenset({"n1"}))
    assert time.monotonic() - started < 0.1
    assert seen.unschedulable == 1
    assert seen.reason == (
        "1 pod(s) failed by Kueue's node controller on n1, which still bars them: "
        "Pod terminated by Kueue NodeController due to node taint"
    )


def test_a_pod_failed_on_a_node_healthy_again_is_waited_for() -> None:
    """Once Kueue holds the node healthy for the workload the Job's next pod may run there:
    the watch waits for it."""
    failed = indexed(
        "p-0-b", "0", "2026-01-01T00:00:10Z", nodeSelector=ON_N1, status=FAILED_BY_KUEUE
    )
    with pytest.raises(WaitTimeout, match="0 pods \\(none\\), 0 failed by Kueue's node controller"):
        watch([failed], 1, unhealthy=frozenset())


def test_only_the_latest_pod_of_a_slot_counts() -> None:
    """An older pod failed by Kueue does not settle a slot whose latest pod ended otherwise."""
    failed = indexed(
        "p-0-a", "0", "2026-01-01T00:00:00Z", nodeSelector=ON_N1, status=FAILED_BY_KUEUE
    )
    evicted = indexed(
        "p-0-b", "0", "2026-01-01T00:00:10Z", nodeName="n1", status={"phase": "Failed"}
    )
    assert binding.failed_by_node_controller([failed, evicted], frozenset({"n1"})) == []
    live_pod = indexed("p-0-c", "0", "2026-01-01T00:00:20Z", status=UNSCHEDULABLE)
    assert binding.failed_by_node_controller([failed, live_pod], frozenset({"n1"})) == []


def test_a_pod_failed_on_a_node_that_still_bars_it_counts_even_when_kueue_cleared_the_node() -> (
    None
):
    """Kueue may drop the node from `unhealthyNodes` while it goes on failing the pods a
    taint keeps off it: the taint the pod does not tolerate settles the slot."""
    failed = indexed(
        "p-0-b", "0", "2026-01-01T00:00:10Z", nodeSelector=ON_N1, status=FAILED_BY_KUEUE
    )
    seen = watch([failed], 1, barred=lambda pod, node: node == "n1")
    assert seen.unschedulable == 1


def test_a_pod_failed_on_a_barring_node_the_second_pass_left_is_waited_for() -> None:
    """Kueue's second pass moved the pod set off the tainted node (no longer in its
    assignment): the Job's next pod goes to the new domain, so the slot is not lost."""
    failed = indexed(
        "p-0-b", "0", "2026-01-01T00:00:10Z", nodeSelector=ON_N1, status=FAILED_BY_KUEUE
    )
    lost = binding.failed_by_node_controller(
        [failed], frozenset(), lambda pod, node: node == "n1", frozenset({"n2"})
    )
    assert lost == []
    still = binding.failed_by_node_controller(
        [failed], frozenset(), lambda pod, node: node == "n1", frozenset({"n1"})
    )
    assert still == [failed]
