"""`snapshot` writes admission checks and a flavor fungibility preference: AdmissionCheck objects (Active or not), ClusterQueue
admissionChecksStrategy, and the check states of workloads holding quota, which load as
quotaReserved (docs/scenario-format-v2.md, "Admission checks"); Kueue's own check
controllers (ProvisioningRequest) are left out and said."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import yaml

from harness.fit import fit
from harness.live.snapshot import render, snapshot
from harness.scenario.loader import scenario_from_data
from tests.live.test_live_snapshot import admitted_status, meta, state, workload


def check(name: str, controller: str, active: bool = True) -> dict[str, Any]:
    status = "True" if active else "False"
    return {"metadata": meta(name), "spec": {"controllerName": controller},
            "status": {"conditions": [{"type": "Active", "status": status}]}}  # fmt: skip


def reserving(name: str, states: dict[str, str], admitted: bool = False) -> dict[str, Any]:
    """Holding one host each of n1 and n2 (team-a), with these check states."""
    status = copy.deepcopy(admitted_status(["n1", "n2"], [1, 1]))
    if not admitted:
        status["conditions"] = [c for c in status["conditions"] if c["type"] != "Admitted"]
    status["admissionChecks"] = [{"name": n, "state": s} for n, s in states.items()]
    return workload(f"job-{name}", name, "2024-02-01T00:00:00Z", status=status)


def checked_state() -> Any:
    base = state()
    queues = copy.deepcopy(base.cluster_queues)
    queues[0]["spec"]["admissionChecksStrategy"] = {
        "admissionChecks": [{"name": "capacity"}, {"name": "prov"}]
    }
    return dataclasses.replace(
        base,
        cluster_queues=queues,
        admission_checks=[
            check("capacity", "example.com/capacity"),
            check("prov", "kueue.x-k8s.io/provisioning-request"),
            check("idle", "example.com/idle", active=False),
        ],
        workloads=[
            reserving("waits", {"capacity": "Pending", "prov": "Pending"}),
            reserving("runs", {"capacity": "Ready"}, admitted=True),
            reserving("retried", {"capacity": "Retry"}),
            reserving("rejected", {"capacity": "Rejected"}),
        ],
    )


def test_checks_and_a_reserving_workload_are_written_and_load() -> None:
    snap = snapshot(checked_state())
    data = snap.data
    assert data["admissionChecks"] == [
        {"name": "capacity", "controllerName": "example.com/capacity"},
        {"name": "idle", "controllerName": "example.com/idle", "active": False},
    ]
    team_a = next(q for q in data["clusterQueues"] if q["name"] == "team-a")
    assert team_a["admissionChecksStrategy"] == {"admissionChecks": [{"name": "capacity"}]}
    admitted = {a["name"]: a for a in data["admitted"]}
    assert admitted["waits"]["admissionChecks"] == [{"name": "capacity", "state": "Pending"}]
    assert "admissionChecks" not in admitted["runs"]  # admitted: its checks passed
    assert "retried" in {w["name"] for w in data["workloads"]}  # Retry: evicted, requeued
    assert "rejected" not in admitted and "rejected" not in {w["name"] for w in data["workloads"]}
    lines = snap.gaps.lines
    assert any(line.startswith("AdmissionCheck prov: ProvisioningRequests check") for line in lines)
    assert "ClusterQueue team-a: its check prov left out" in lines
    assert not any("admission checks" in line for line in lines)
    scenario = scenario_from_data(yaml.safe_load(render(snap)), "snap.yaml")
    outcomes = fit(scenario).outcomes
    assert (outcomes["waits"].admitted, outcomes["waits"].quota_reserved) == (False, True)
    assert outcomes["runs"].admitted
    assert outcomes["waits"].placement == {"main": {"n1": 1, "n2": 1}}


def test_a_fungibility_preference_is_written_and_loads() -> None:
    base = state()
    queues = copy.deepcopy(base.cluster_queues)
    queues[0]["spec"]["flavorFungibility"] = {
        "whenCanBorrow": "TryNextFlavor",
        "whenCanPreempt": "TryNextFlavor",
        "preference": "PreemptionOverBorrowing",
    }
    snap = snapshot(dataclasses.replace(base, cluster_queues=queues))
    assert not [line for line in snap.gaps.lines if "fungibility" in line]
    scenario = scenario_from_data(yaml.safe_load(render(snap)), "snap.yaml")
    assert scenario.cluster_queue("team-a").fungibility.preference == "PreemptionOverBorrowing"


def test_a_pod_set_admitted_on_two_flavors_is_written_in_group_order() -> None:
    base = state()
    plain = {"metadata": meta("gpu-plain"), "spec": {"nodeLabels": {"example.com/gpu": "h100"}}}
    cpus = {"metadata": meta("cpu-pool"), "spec": {"nodeLabels": {"example.com/gpu": "h100"}}}
    groups = [
        {"coveredResources": ["cpu"], "flavors": [
            {"name": "cpu-pool", "resources": [{"name": "cpu", "nominalQuota": "8"}]}]},
        {"coveredResources": ["nvidia.com/gpu"], "flavors": [
            {"name": "gpu-plain", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "4"}]}]},
    ]  # fmt: skip
    mixed = {"metadata": meta("mixed"), "spec": {"resourceGroups": groups}}
    lq = {"metadata": meta("lq-mixed", "ml"), "spec": {"clusterQueue": "mixed"}}
    wl = workload("job-both", "both", "2024-03-01T00:00:00Z", queue="lq-mixed")
    wl["spec"]["podSets"][0].pop("topologyRequest")
    wl["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"][
        "cpu"
    ] = "1"
    wl["status"] = {
        "conditions": [{"type": "QuotaReserved", "status": "True"},
                       {"type": "Admitted", "status": "True"}],
        "admission": {"clusterQueue": "mixed", "podSetAssignments": [
            {"name": "main", "count": 2, "flavors": {"nvidia.com/gpu": "gpu-plain", "cpu": "cpu-pool"},
             "resourceUsage": {"nvidia.com/gpu": "2", "cpu": "2"}}]},
    }  # fmt: skip
    snap = snapshot(
        dataclasses.replace(
            base,
            resource_flavors=[*base.resource_flavors, plain, cpus],
            cluster_queues=[*base.cluster_queues, mixed],
            local_queues=[*base.local_queues, lq],
            workloads=[wl],
        )
    )
    (both,) = [a for a in snap.data["admitted"] if a["name"] == "both"]
    assert both["podSets"][0]["flavor"] == "cpu-pool,gpu-plain"
    scenario = scenario_from_data(yaml.safe_load(render(snap)), "snap.yaml")
    assert fit(scenario).outcomes["both"].flavors == {"main": "cpu-pool,gpu-plain"}
