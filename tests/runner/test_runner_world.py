"""The cluster runner's version-2 objects (no cluster): every Kueue object under the
scenario's names, queues and priorities on Jobs, JobSets and Workloads, and the status
apply that pre-admits a workload."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any

import pytest

from harness import toolchain
from harness.kueue import keys as kueue_keys
from harness.kueue.admission_status import ADMISSION_FIELD_MANAGER
from harness.runner import objects, preadmit, world
from harness.runner.objects import Names
from harness.scenario.loader import scenario_from_data
from harness.scenario.model import Scenario

NAMES = Names(run_id="r1", namespace="kth-1-demo")
HOST = "kubernetes.io/hostname"
RACK = "example.com/rack"


def _world(**extra: Any) -> Scenario:
    data: dict[str, Any] = {
        "name": "demo",
        "topologies": [
            {"name": "racks", "levels": [RACK, HOST]},
            {"name": "hosts", "levels": [HOST]},
        ],
        "resourceFlavors": [
            {
                "name": "h100",
                "nodeLabels": {"example.com/gpu": "h100"},
                "nodeTaints": [{"key": "gpu", "value": "h100", "effect": "NoSchedule"}],
                "tolerations": [{"key": "gpu", "operator": "Exists"}],
                "topologyName": "racks",
            },
            {"name": "a100", "nodeLabels": {"example.com/gpu": "a100"}, "topologyName": "hosts"},
            {"name": "plain"},
        ],
        "workloadPriorityClasses": [{"name": "high", "value": 1000}, {"name": "low", "value": -5}],
        "clusterQueues": [
            {
                "name": "team-a",
                "cohortName": "research",
                "queueingStrategy": "StrictFIFO",
                "preemption": {
                    "withinClusterQueue": "LowerPriority",
                    "reclaimWithinCohort": "Any",
                    "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 10},
                },
                "flavorFungibility": {"whenCanBorrow": "TryNextFlavor"},
                "resourceGroups": [
                    {
                        "coveredResources": ["nvidia.com/gpu", "pods"],
                        "flavors": [
                            {
                                "name": "h100",
                                "resources": [
                                    {
                                        "name": "nvidia.com/gpu",
                                        "nominalQuota": 8,
                                        "borrowingLimit": 2,
                                    },
                                    {"name": "pods", "nominalQuota": 100},
                                ],
                            },
                            {
                                "name": "a100",
                                "resources": [
                                    {
                                        "name": "nvidia.com/gpu",
                                        "nominalQuota": 4,
                                        "lendingLimit": 1,
                                    },
                                    {"name": "pods", "nominalQuota": 100},
                                ],
                            },
                        ],
                    },
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [
                            {
                                "name": "plain",
                                "resources": [{"name": "cpu", "nominalQuota": "1500m"}],
                            }
                        ],
                    },
                ],
            },
            {
                "name": "team-b",
                "cohortName": "research",
                "resourceGroups": [
                    {
                        "coveredResources": ["nvidia.com/gpu"],
                        "flavors": [
                            {
                                "name": "h100",
                                "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}],
                            }
                        ],
                    }
                ],
            },
        ],
        "nodes": [
            {
                "name": "h1",
                "labels": {"example.com/gpu": "h100", RACK: "r1"},
                "allocatable": {"nvidia.com/gpu": 8, "cpu": 8, "pods": 110},
                "taints": [{"key": "gpu", "value": "h100", "effect": "NoSchedule"}],
            },
            {
                "name": "h2",
                "labels": {"example.com/gpu": "h100", RACK: "r2"},
                "allocatable": {"nvidia.com/gpu": 8, "cpu": 8, "pods": 110},
                "taints": [{"key": "gpu", "value": "h100", "effect": "NoSchedule"}],
            },
            {
                "name": "a1",
                "labels": {"example.com/gpu": "a100"},
                "allocatable": {"nvidia.com/gpu": 8, "cpu": 8, "pods": 110},
            },
        ],
        "admitted": [
            {
                "name": "old",
                "queue": "team-a",
                "priorityClass": "low",
                "podSets": [
                    {
                        "name": "workers",
                        "count": 3,
                        "requests": {"nvidia.com/gpu": 2},
                        "flavor": "h100",
                        "placement": {"h2": 2, "h1": 1},
                    }
                ],
            }
        ],
        "workloads": [
            {
                "name": "train",
                "queue": "team-b",
                "priorityClass": "high",
                "podSets": [{"name": "main", "count": 2, "requests": {"nvidia.com/gpu": 1}}],
            },
            {
                "name": "plain",
                "queue": "team-a",
                "podSets": [{"name": "main", "count": 1, "requests": {"cpu": 1}}],
            },
        ],
        **extra,
    }
    return scenario_from_data(data, "<demo>")


def _by_kind(scenario: Scenario) -> dict[tuple[str, str], dict[str, Any]]:
    return {(o["kind"], o["metadata"]["name"]): o for o in world.cluster_objects(scenario, NAMES)}


def test_every_kueue_object_under_the_scenarios_names_in_creation_order() -> None:
    objs = world.cluster_objects(_world(), NAMES)
    assert [(o["kind"], o["metadata"]["name"]) for o in objs] == [
        ("Topology", "racks"),
        ("Topology", "hosts"),
        ("ResourceFlavor", "h100"),
        ("ResourceFlavor", "a100"),
        ("ResourceFlavor", "plain"),
        ("WorkloadPriorityClass", "high"),
        ("WorkloadPriorityClass", "low"),
        ("ClusterQueue", "team-a"),
        ("ClusterQueue", "team-b"),
    ]
    assert all(o["metadata"]["labels"] == NAMES.labels for o in objs)


def test_flavors_keep_taints_tolerations_and_an_optional_topology() -> None:
    got = _by_kind(_world())
    assert got["ResourceFlavor", "h100"]["spec"] == {
        "nodeLabels": {"example.com/gpu": "h100"},
        "nodeTaints": [{"key": "gpu", "value": "h100", "effect": "NoSchedule"}],
        "tolerations": [{"key": "gpu", "operator": "Exists"}],
        "topologyName": "racks",
    }
    # No ALL_NODES_LABEL workaround in version 2: a flavor without TAS may select nothing.
    assert got["ResourceFlavor", "plain"]["spec"] == {}
    assert got["WorkloadPriorityClass", "low"]["value"] == -5


def test_cluster_queue_spec_spells_out_every_field_and_default() -> None:
    got = _by_kind(_world())
    a = got["ClusterQueue", "team-a"]["spec"]
    assert a["cohortName"] == "research"
    assert a["queueingStrategy"] == "StrictFIFO"
    assert a["preemption"] == {
        "withinClusterQueue": "LowerPriority",
        "reclaimWithinCohort": "Any",
        "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 10},
    }
    assert a["flavorFungibility"] == {
        "whenCanBorrow": "TryNextFlavor",
        "whenCanPreempt": "TryNextFlavor",
    }
    gpu, cpu = a["resourceGroups"]
    assert gpu["coveredResources"] == ["nvidia.com/gpu", "pods"]
    assert gpu["flavors"][0]["resources"][0] == {
        "name": "nvidia.com/gpu",
        "nominalQuota": "8",
        "borrowingLimit": "2",
    }
    assert gpu["flavors"][1]["resources"][0] == {
        "name": "nvidia.com/gpu",
        "nominalQuota": "4",
        "lendingLimit": "1",
    }
    assert cpu["flavors"] == [
        {"name": "plain", "resources": [{"name": "cpu", "nominalQuota": "1500m"}]}
    ]
    b = got["ClusterQueue", "team-b"]["spec"]
    # Kueue's CRD defaults, written out so the object read back equals the one built.
    assert b["queueingStrategy"] == "BestEffortFIFO" and b["stopPolicy"] == "None"
    assert b["preemption"] == {
        "withinClusterQueue": "Never",
        "reclaimWithinCohort": "Never",
        "borrowWithinCohort": {"policy": "Never"},
    }
    assert b["flavorFungibility"] == {
        "whenCanBorrow": "MayStopSearch",
        "whenCanPreempt": "TryNextFlavor",
    }
    assert b["namespaceSelector"] == {}


def test_local_queue_of_each_cluster_queue_is_held_only_while_admissions_are_written() -> None:
    scenario = _world()
    assert world.held_queues(scenario) == {"team-a"}
    held = world.local_queue("team-a", NAMES, hold=True)
    assert held["metadata"]["name"] == "team-a" and held["metadata"]["namespace"] == NAMES.namespace
    assert held["spec"] == {"clusterQueue": "team-a", "stopPolicy": "Hold"}
    assert world.local_queue("team-b", NAMES)["spec"]["stopPolicy"] == "None"


def test_jobs_and_jobsets_go_to_their_own_queue_with_their_priority_class() -> None:
    scenario = _world()
    train, plain = scenario.workloads
    labels = objects.job(train, NAMES)["metadata"]["labels"]
    assert labels[kueue_keys.QUEUE_LABEL] == "team-b"
    assert labels[kueue_keys.PRIORITY_CLASS_LABEL] == "high"
    labels = objects.jobset(plain, NAMES)["metadata"]["labels"]
    assert labels[kueue_keys.QUEUE_LABEL] == "team-a"
    assert kueue_keys.PRIORITY_CLASS_LABEL not in labels


def test_workload_built_directly_carries_priority_as_kueues_job_reconciler_writes_it() -> None:
    scenario = _world()
    train, plain = scenario.workloads
    spec = objects.workload(train, NAMES, scenario.priority(train))["spec"]
    assert spec["queueName"] == "team-b"
    assert spec["priorityClassRef"] == {
        "group": "kueue.x-k8s.io",
        "kind": "WorkloadPriorityClass",
        "name": "high",
    }
    assert spec["priority"] == 1000
    spec = objects.workload(plain, NAMES, scenario.priority(plain))["spec"]
    assert "priorityClassRef" not in spec and "priority" not in spec


def test_admitted_entry_becomes_its_workload() -> None:
    (old,) = _world().admitted
    w = objects.as_workload(old)
    assert (w.name, w.queue, w.priority_class) == ("old", "team-a", "low")
    assert [ps.name for ps in w.pod_sets] == ["workers"] and w.pod_sets[0].count == 3


def test_pre_admission_patch_uses_the_shared_admission_and_a_jobs_pod_set_name() -> None:
    scenario = _world()
    (old,) = scenario.admitted
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    patch = preadmit.status_patch(scenario, old, "job-old-x", NAMES, at, {"workers": "main"})
    assert patch["metadata"] == {"name": "job-old-x", "namespace": NAMES.namespace}
    admission = patch["status"]["admission"]
    assert admission["clusterQueue"] == "team-a"
    (psa,) = admission["podSetAssignments"]
    assert psa["name"] == "main"
    assert psa["flavors"] == {"nvidia.com/gpu": "h100", "pods": "h100"}
    assert psa["resourceUsage"] == {"nvidia.com/gpu": "6", "pods": "3"}
    reserved = {c["type"]: c for c in patch["status"]["conditions"]}
    assert reserved["QuotaReserved"]["status"] == reserved["Admitted"]["status"] == "True"
    assert reserved["QuotaReserved"]["lastTransitionTime"] == "2026-01-02T03:04:05Z"
    totals = preadmit.reservation_totals([patch])
    assert totals == {
        "team-a": {("h100", "nvidia.com/gpu"): Fraction(6), ("h100", "pods"): Fraction(3)}
    }


def test_admission_read_back_compares_quantities_by_value() -> None:
    written = {
        "clusterQueue": "q",
        "podSetAssignments": [{"name": "main", "resourceUsage": {"cpu": "1500m"}}],
    }
    stored = {
        "clusterQueue": "q",
        "podSetAssignments": [{"name": "main", "resourceUsage": {"cpu": "1.5"}}],
    }
    assert preadmit.comparable(written) == preadmit.comparable(stored)
    stored["podSetAssignments"][0]["resourceUsage"]["cpu"] = "2"
    assert preadmit.comparable(written) != preadmit.comparable(stored)


def test_pods_must_sit_on_the_admitted_nodes() -> None:
    pods = [{"spec": {"nodeName": n}} for n in ("h1", "h2", "h2")] + [{"spec": {}}]
    assert preadmit.check_bound("w", {"h2": 2, "h1": 1}, pods)[0]
    ok, seen = preadmit.check_bound("w", {"h2": 3}, pods)
    assert not ok and "admitted on {'h2': 3}" in seen
    assert preadmit.check_bound("w", None, pods)[0]  # no TAS: any node of the flavor


@pytest.mark.sim  # reads Kueue's module from the Go module cache (the sim's build fetches it)
def test_admission_field_manager_is_kueues_own() -> None:
    """Kueue's eviction clears only the admission fields its own manager owns, so the harness
    must apply pre-admissions under Kueue's name (pkg/constants/constants.go: AdmissionName =
    KueueName + "-admission"), read here from Kueue's source rather than restated."""
    source = (toolchain.kueue_module_dir() / "pkg" / "constants" / "constants.go").read_text()
    kueue_name = re.search(r'\bKueueName\s*=\s*"([^"]+)"', source)
    suffix = re.search(r'\bAdmissionName\s*=\s*KueueName\s*\+\s*"([^"]+)"', source)
    assert kueue_name and suffix, "Kueue's constants.go no longer defines AdmissionName so"
    assert kueue_name.group(1) + suffix.group(1) == ADMISSION_FIELD_MANAGER
