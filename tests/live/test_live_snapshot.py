"""Snapshot's pure part: cluster objects (as the API server returns them) -> a version-2
scenario that loads, keeps what Kueue decides with, and names what it cannot represent."""

from __future__ import annotations

import copy
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.errors import InputError
from harness.fit import fit
from harness.kueue.queue_activity import inactive_reason
from harness.live.cluster_read import ClusterState
from harness.live.snapshot import read_file, render, render_json, snapshot
from harness.scenario import json_items
from harness.scenario.loader import scenario_from_data

API = "kueue.x-k8s.io/v1beta2"
GPU = "nvidia.com/gpu"
LEVELS = ["example.com/block", "example.com/rack", "kubernetes.io/hostname"]


def meta(name: str, namespace: str | None = None, **more: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, **more}
    if namespace:
        out["namespace"] = namespace
    return out


def node(
    name: str, rack: str, *, ready: bool = True, gpu: str = "h100", **spec: Any
) -> dict[str, Any]:
    labels = {
        "example.com/block": "b1",
        "example.com/rack": rack,
        "kubernetes.io/hostname": name,
        "example.com/gpu": gpu,
        "kubernetes.io/os": "linux",
        "kwok.x-k8s.io/extra": "x",
    }
    return {
        "apiVersion": "v1", "kind": "Node", "metadata": meta(name, labels=labels), "spec": spec,
        "status": {"allocatable": {GPU: "4", "cpu": "32", "memory": "256Gi", "pods": "110"},
                   "conditions": [{"type": "MemoryPressure", "status": "False"},
                                  {"type": "Ready", "status": "True" if ready else "Unknown"}]},
    }  # fmt: skip


def pod(
    name: str,
    node_name: str,
    requests: dict[str, str],
    *,
    owner: tuple[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    phase: str = "Running",
) -> dict[str, Any]:
    refs = [{"kind": owner[0], "name": owner[1], "controller": True}] if owner else []
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": meta(name, "apps", ownerReferences=refs, annotations=annotations or {}),
        "spec": {"nodeName": node_name, "containers": [{"name": "c", "resources": {"requests": requests}}]},
        "status": {"phase": phase},
    }  # fmt: skip


def template(gpus: int, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"annotations": annotations or {}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {GPU: str(gpus)}}}]}}  # fmt: skip


def workload(
    name: str,
    owner: str,
    created: str,
    *,
    queue: str = "lq-a",
    count: int = 2,
    priority: int | None = None,
    ref: dict[str, str] | None = None,
    status: dict[str, Any] | None = None,
    active: bool | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "queueName": queue,
        "podSets": [
            {
                "name": "main",
                "count": count,
                "template": template(1),
                "topologyRequest": {"required": "example.com/rack"},
            }
        ],
    }
    if priority is not None:
        spec["priority"] = priority
    if ref is not None:
        spec["priorityClassRef"] = ref
    if active is not None:
        spec["active"] = active
    return {"apiVersion": API, "kind": "Workload",
            "metadata": meta(name, "ml", creationTimestamp=created,
                             ownerReferences=[{"kind": "Job", "name": owner, "controller": True}]),
            "spec": spec, "status": status or {}}  # fmt: skip


def admitted_status(nodes: list[str], counts: list[int]) -> dict[str, Any]:
    assignment = {
        "levels": ["kubernetes.io/hostname"],
        "slices": [{"domainCount": len(nodes), "valuesPerLevel": [{"individual": {"roots": nodes}}],
                    "podCounts": {"individual": counts}}],
    }  # fmt: skip
    return {
        "conditions": [{"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "True"}],
        "admission": {"clusterQueue": "team-a", "podSetAssignments": [
            {"name": "main", "count": sum(counts), "flavors": {GPU: "h100"},
             "resourceUsage": {GPU: str(sum(counts))}, "topologyAssignment": assignment}]},
    }  # fmt: skip


def quotas(flavor: str, gpus: str) -> dict[str, Any]:
    return {"name": flavor, "resources": [{"name": GPU, "nominalQuota": gpus}]}


def state() -> ClusterState:
    cq_a = {
        "metadata": meta("team-a"),
        "spec": {
            "cohortName": "research",
            "queueingStrategy": "BestEffortFIFO",
            "preemption": {
                "withinClusterQueue": "Never",
                "reclaimWithinCohort": "Never",
                "borrowWithinCohort": {"policy": "Never"},
            },
            "flavorFungibility": {
                "whenCanBorrow": "MayStopSearch",
                "whenCanPreempt": "TryNextFlavor",
            },
            "namespaceSelector": {},
            "resourceGroups": [{"coveredResources": [GPU], "flavors": [quotas("h100", "8")]}],
        },
        "status": {"conditions": [{"type": "Active", "status": "True"}]},
    }
    cq_b = {
        "metadata": meta("team-b"),
        "spec": {
            "cohortName": "research",
            "fairSharing": {"weight": "2"},
            "namespaceSelector": {"matchLabels": {"team": "b"}},
            "resourceGroups": [
                {
                    "coveredResources": [GPU],
                    "flavors": [
                        {
                            "name": "h100",
                            "resources": [{"name": GPU, "nominalQuota": "4", "lendingLimit": "2"}],
                        }
                    ],
                }
            ],
        },
    }
    cq_gone = {
        "metadata": meta("team-c"),
        "spec": {"resourceGroups": [{"coveredResources": [GPU], "flavors": [quotas("a100", "4")]}]},
    }
    return ClusterState(
        server="https://10.0.0.1:6443", context="prod",
        topologies=[{"metadata": meta("gpu-topology"), "spec": {"levels": [{"nodeLabel": lv} for lv in LEVELS]}}],
        resource_flavors=[{"metadata": meta("h100"), "spec": {
            "nodeLabels": {"example.com/gpu": "h100"}, "topologyName": "gpu-topology",
            "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]}}],
        cluster_queues=[cq_a, cq_b, cq_gone],
        local_queues=[{"metadata": meta("lq-a", "ml"), "spec": {"clusterQueue": "team-a"}},
                      {"metadata": meta("lq-b", "ml"), "spec": {"clusterQueue": "team-b"}}],
        priority_classes=[{"metadata": meta("high"), "value": 1000}],
        nodes=[node("n1", "r1"), node("n2", "r1"),
               node("n3", "r2", taints=[{"key": "gpu", "effect": "NoSchedule", "timeAdded": "2024-01-01T00:00:00Z"}]),
               node("n4", "r2", ready=False, unschedulable=True), node("cpu-1", "r9", gpu="none")],
        pods=[
            pod("ds-a", "n1", {"cpu": "100m"}, owner=("DaemonSet", "agent")),
            pod("rs-1", "n2", {GPU: "1"}, owner=("ReplicaSet", "web-7d9")),
            pod("rs-2", "n2", {GPU: "1"}, owner=("ReplicaSet", "web-7d9")),
            pod("tas-1", "n3", {GPU: "1"}, annotations={"kueue.x-k8s.io/podset-unconstrained-topology": "true"}),
            pod("on-cpu", "cpu-1", {"cpu": "1"}),
            pod("done", "n1", {GPU: "4"}, phase="Succeeded"),
        ],
        workloads=[
            workload("job-old-abc12", "old", "2024-01-01T00:00:00Z", status=admitted_status(["n3", "n1"], [1, 1])),
            workload("job-next-def34", "next", "2024-01-02T00:00:00Z", count=6, priority=1000,
                     ref={"kind": "WorkloadPriorityClass", "name": "high"}),
            workload("job-pc-1", "urgent", "2024-01-03T00:00:00Z", priority=50,
                     ref={"kind": "PriorityClass", "name": "system-ish"}),
            workload("job-gone", "gone", "2024-01-04T00:00:00Z", queue="no-such-lq"),
            workload("job-off", "off", "2024-01-05T00:00:00Z", active=False),
            workload("job-done", "done", "2023-12-01T00:00:00Z",
                     status={"conditions": [{"type": "Finished", "status": "True"}]}),
        ],
        pod_priority_classes=[{"metadata": meta("system-ish"), "value": 50, "globalDefault": True}],
        missing=["Cohort (not served)"],
    )  # fmt: skip


def test_a_cluster_becomes_a_loadable_version2_scenario() -> None:
    snap = snapshot(state(), "prod-now")
    data = snap.data
    scenario = scenario_from_data(yaml.safe_load(render(snap)), "snap.yaml")
    assert [t.levels for t in scenario.topologies] == [tuple(LEVELS)]
    h100 = scenario.resource_flavor("h100")
    assert h100.topology_name == "gpu-topology" and dict(h100.node_labels) == {
        "example.com/gpu": "h100"
    }
    # team-c names a flavor that does not exist: kept, inactive (issue 29)
    assert [cq.name for cq in scenario.cluster_queues] == ["team-a", "team-b", "team-c"]
    team_b = scenario.cluster_queue("team-b")
    assert team_b.cohort == "research"
    assert team_b.resource_groups[0].flavors[0].resources[0].lending_limit == 2
    # Nodes: the flavor's; labels those the topology and flavor use; taints without timeAdded.
    assert [n.name for n in scenario.nodes] == ["n1", "n2", "n3", "n4"]
    assert dict(scenario.node("n1").labels) == {
        "example.com/block": "b1", "example.com/rack": "r1", "example.com/gpu": "h100",
        "kubernetes.io/hostname": "n1"}  # fmt: skip
    assert [(t.key, t.effect) for t in scenario.node("n3").taints] == [("gpu", "NoSchedule")]
    n4 = scenario.node("n4")
    assert (n4.ready, n4.unschedulable) == (False, True)
    assert scenario.node("n1").allocatable[GPU] == 4
    # Usage: non-TAS running pods on kept nodes, per node, owner and requests.
    usage = {(u.name, u.node, u.count): dict(u.requests) for u in scenario.usage}
    assert usage == {
        ("apps.daemonset-agent.n1", "n1", 1): {"cpu": Fraction(1, 10)},
        ("apps.replicaset-web-7d9.n2", "n2", 2): {GPU: 1},
    }
    # Admitted: named after its Job, with Kueue's flavor and placement.
    (old,) = scenario.admitted
    assert (old.name, old.queue) == ("old", "team-a")
    assert [(p.flavor, dict(p.placement or {})) for p in old.pod_sets] == [
        ("h100", {"n1": 1, "n3": 1})
    ]
    # Pending: in creation order, with their priority; a k8s PriorityClass's value becomes a
    # WorkloadPriorityClass named after it.
    assert [(w.name, w.queue, w.priority_class) for w in scenario.workloads] == [
        ("next", "team-a", "high"), ("urgent", "team-a", "priority-50")]  # fmt: skip
    assert scenario.priority(scenario.workloads[1]) == 50
    assert data["x-snapshot"]["workloads"] == {"old": "ml/job-old-abc12", "next": "ml/job-next-def34",
                                               "urgent": "ml/job-pc-1"}  # fmt: skip
    # Which object owns each (issue 32 item 4: simulate tells a name already in use).
    assert data["x-snapshot"]["owners"] == {"ml/Job/old": "old", "ml/Job/next": "next",
                                            "ml/Job/urgent": "urgent"}  # fmt: skip
    assert data["x-snapshot"]["localQueues"][0] == {
        "namespace": "ml",
        "name": "lq-a",
        "clusterQueue": "team-a",
    }
    assert data["x-snapshot"]["globalDefaultPriorityClass"] == "system-ish"


def test_what_cannot_be_represented_is_said() -> None:
    snap = snapshot(state())
    lines = snap.gaps.lines
    expected = [
        "Cohort (not served): not read",
        "Kueue's configuration is not read (no ConfigMap kueue-manager-config with "
        "controller_manager_config.yaml): Kueue v0.19.2's defaults are assumed",
        "Namespaces: not read, their labels are unknown (written without labels)",
        "1 node(s) in no ResourceFlavor left out (Kueue places nothing there)",
        "priority 50 (PriorityClass system-ish) has no WorkloadPriorityClass of that value: written as WorkloadPriorityClass priority-50",
        "1 deactivated Workload(s) left out (spec.active: false)",
        "1 pending Workload(s) of a LocalQueue that does not exist left out",
    ]
    for line in expected:
        assert line in lines
    text = render(snap)
    assert "# Not represented (Kueue may decide differently where these matter):" in text
    assert "#   - Cohort (not served): not read" in text
    assert snap.data["x-snapshot"]["notRepresented"] == lines


def test_the_fit_model_answers_on_the_snapshot() -> None:
    """Hand-worked: 'next' asks 6 pods of 1 GPU in one rack; team-a's 8 GPUs minus old's 2
    leave 6 (quota fits). Rack r1: n1 4 - old's 1, n2 4 - the ReplicaSet's 2 = 5; rack r2:
    n3 4 - old's 1 = 3 (n4 is not Ready). So it waits, able to fit 5: without the usage or
    without old's placement r1 would hold 6 or more."""
    scenario = scenario_from_data(snapshot(state()).data, "snap.yaml")
    outcome = fit(scenario).outcomes["next"]
    assert not outcome.admitted
    assert "allows to fit only 5 out of 6 pod(s)" in outcome.message


def test_an_admitted_placement_outside_the_snapshot_leaves_the_workload_out() -> None:
    cluster = state()
    cluster.workloads[0] = copy.deepcopy(cluster.workloads[0])
    cluster.workloads[0]["status"] = admitted_status(["n3", "cpu-1"], [1, 1])
    snap = snapshot(cluster)
    assert snap.data["admitted"] == []
    assert ("Workload ml/job-old-abc12: left out, pod set main is placed on node cpu-1, not in "
            "the snapshot") in snap.gaps.lines  # fmt: skip


def test_a_json_snapshot_reads_back_and_refuses_a_key_given_twice(tmp_path: Path) -> None:
    snap = snapshot(state())
    path = tmp_path / "snap.json"
    path.write_text(render_json(snap))
    assert read_file(str(path)) == snap.data
    path.write_text('{"name": "a", "name": "b", "clusterQueues": []}')
    with pytest.raises(InputError) as err:
        read_file(str(path))
    assert str(err.value) == f"{path}: name: given twice"
    path.write_text('{"name": ')
    with pytest.raises(InputError, match=r"snap.json: line 1 column 10: Expecting value"):
        read_file(str(path))


def test_a_large_snapshot_file_reads_its_long_lists_as_json(tmp_path: Path) -> None:
    """What keeps a 5,000-node snapshot's parse at 0.2 s instead of 20 s: render() writes
    nodes, usage and admitted one JSON line each, in a form the strict YAML reader hands to
    `json` (harness/scenario/json_items.py). A change to that form would pass every other test."""
    big = state()
    # 200 nodes: the YAML remainder (x-snapshot's names and owners of the 3 workloads, the
    # ClusterQueues) stays a small share of a large file, as it is of a real one.
    big.nodes += [node(f"x{i}", f"r{i // 8}") for i in range(200)]
    big.pods += [pod(f"p{i}", f"x{i}", {GPU: "1"}, owner=("DaemonSet", "d")) for i in range(200)]
    text = render(snapshot(big))
    fast = json_items.substitute(text)
    assert fast is not None
    remainder, runs = fast
    assert sum(len(run.values) for run in runs.values()) >= 400 + 2  # nodes, usage, admitted
    assert len(remainder) < len(text) / 10
    path = tmp_path / "snap.yaml"
    path.write_text(text)
    assert read_file(str(path)) == yaml.safe_load(text)


def test_a_queue_naming_a_missing_flavor_is_kept_inactive() -> None:
    """Issue 29: contract v2 holds it, so the snapshot writes it as it is (no gap) and the
    loaded scenario keeps it inactive, as Kueue does (FlavorNotFound); no warning, since a
    snapshot's states are the cluster's."""
    snap = snapshot(state())
    assert not any("team-c" in line for line in snap.gaps.lines)
    scenario = scenario_from_data(snap.data, "snap.yaml")
    team_c = scenario.cluster_queue("team-c")
    assert (team_c.missing_flavors, inactive_reason(team_c)) == (("a100",), "FlavorNotFound")
    assert scenario.warnings == ()


def test_a_clusterqueue_weight_and_kueues_configuration_are_written() -> None:
    cluster = state()
    config = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "featureGates": {"TASBalancedPlacement": True, "NoSuchGate": True},
        "fairSharing": {"preemptionStrategies": ["LessThanInitialShare"]},
        "waitForPodsReady": {"timeout": "10m", "blockAdmission": False},
        "integrations": {"frameworks": ["batch/job"]},
    }
    cluster.kueue_config_maps = [
        {"metadata": meta("kueue-manager-config", "kueue-system"),
         "data": {"controller_manager_config.yaml": yaml.safe_dump(config)}}
    ]  # fmt: skip
    snap = snapshot(cluster)
    assert snap.data["featureGates"] == {"TASBalancedPlacement": True}
    assert snap.data["kueueConfig"] == {
        "fairSharing": {"preemptionStrategies": ["LessThanInitialShare"]},
        "waitForPodsReady": {"timeout": "10m", "blockAdmission": False},
    }
    assert "Kueue feature gate NoSuchGate: not a v0.19.2 gate, left out" in snap.gaps.lines
    scenario = scenario_from_data(snap.data, "snap.yaml")
    assert scenario.kueue_config.fair_sharing == ("LessThanInitialShare",)
    assert {cq.name: cq.fair_weight for cq in scenario.cluster_queues}["team-b"] == 2


def test_a_configuration_kueue_would_refuse_is_left_out_and_said() -> None:
    cluster = state()
    bad = {"fairSharing": {"preemptionStrategies": ["Nope"]}}
    cluster.kueue_config_maps = [
        {"metadata": meta("kueue-manager-config", "kueue-system"),
         "data": {"controller_manager_config.yaml": yaml.safe_dump(bad)}}
    ]  # fmt: skip
    snap = snapshot(cluster)
    assert "kueueConfig" not in snap.data
    assert any("preemptionStrategies: [Nope] is not supported" in g for g in snap.gaps.lines)


def configured(cluster: ClusterState, config: dict[str, Any]) -> ClusterState:
    cluster.kueue_config_maps = [
        {"metadata": meta("kueue-manager-config", "kueue-system"),
         "data": {"controller_manager_config.yaml": yaml.safe_dump(config)}}
    ]  # fmt: skip
    return cluster


RESOURCES = {
    "excludeResourcePrefixes": ["example.com/"],
    "transformations": [
        {"input": "example.org/mig-1g", "strategy": "Replace", "outputs": {"memory": "5Gi"}}
    ],
    "quotaCheckStrategy": "BlockUndeclared",
}


def test_kueues_resources_section_is_written_and_loads() -> None:
    config = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
              "resources": RESOURCES}  # fmt: skip
    snap = snapshot(configured(state(), config))
    assert snap.data["kueueConfig"] == {"resources": RESOURCES}
    assert not any("resources" in line for line in snap.gaps.lines)
    resources = scenario_from_data(snap.data, "snap.yaml").kueue_config.resources
    assert resources.exclude_prefixes == ("example.com/",)
    (transformation,) = resources.transformations
    assert (transformation.input, transformation.replace) == ("example.org/mig-1g", True)
    assert transformation.outputs == {"memory": Fraction(5 * 2**30)}


def test_a_resources_section_is_judged_with_the_clusters_quota_check_gate() -> None:
    """validation.go validateQuotaCheckStrategy: excludeResourcePrefixes with IgnoreUndeclared
    is refused only while the QuotaCheckStrategy gate is on (on by default in v0.19)."""
    both = {"excludeResourcePrefixes": ["x/"], "quotaCheckStrategy": "IgnoreUndeclared"}
    refused = snapshot(configured(state(), {"resources": both}))
    assert "kueueConfig" not in refused.data
    assert any("must not be set when quotaCheckStrategy" in g for g in refused.gaps.lines)
    gate_off = {"featureGates": {"QuotaCheckStrategy": False}, "resources": both}
    taken = snapshot(configured(state(), gate_off))
    assert taken.data["kueueConfig"] == {"resources": both}
    assert scenario_from_data(taken.data, "snap.yaml").kueue_config.resources.exclude_prefixes
