"""Object builders, outcome reading, gates and the settle rule of the cluster runner (no cluster)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.kube import RUN_LABEL, KubeError, WaitTimeout
from harness.kueue import keys as kueue_keys
from harness.runner import objects, world
from harness.runner.backend import namespace_for
from harness.runner.objects import Names
from harness.runner.reading import State, admission_placement, pods_placement, state
from harness.runner.session import api_message
from harness.runner.waits import Timeouts, settle
from harness.scenario.loader import scenario_from_data
from harness.scenario.model import Scenario, Workload
from harness.scenario.shorthand import ALL_NODES_LABEL

NAMES = Names(run_id="r1", namespace="kth-1-demo")


def _scenario(**extra: Any) -> Scenario:
    data: dict[str, Any] = {
        "name": "demo",
        "topology": {"name": "topo", "levels": ["example.com/rack", "kubernetes.io/hostname"]},
        "nodes": [
            {
                "name": "n1",
                "labels": {"example.com/rack": "r1"},
                "allocatable": {"nvidia.com/gpu": 4, "cpu": "500m", "memory": "1Gi", "pods": 8},
            },
            {
                "name": "n2",
                "labels": {"example.com/rack": "r1"},
                "ready": False,
                "unschedulable": True,
                "allocatable": {"cpu": 2},
                "taints": [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}],
            },
        ],
        "usage": [{"node": "n1", "requests": {"nvidia.com/gpu": 2}, "count": 2, "name": "busy"}],
        "workloads": [
            {
                "name": "train",
                "podSets": [
                    {
                        "name": "workers",
                        "count": 3,
                        "requests": {"nvidia.com/gpu": 1, "cpu": "250m"},
                        "topology": {"mode": "required", "level": "kubernetes.io/hostname"},
                        "nodeSelector": {"example.com/rack": "r1"},
                        "tolerations": [
                            {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}
                        ],
                    }
                ],
            },
        ],
        **extra,
    }
    return scenario_from_data(data, "demo.yaml")


def test_ready_node_is_handed_to_kwok_with_exact_allocatable() -> None:
    node = objects.node(_scenario().nodes[0], NAMES)
    meta, status = node["metadata"], node["status"]
    assert meta["annotations"][objects.KWOK_ANNOTATION] == "fake"
    assert meta["labels"]["kubernetes.io/hostname"] == "n1"
    assert meta["labels"]["example.com/rack"] == "r1"
    assert meta["labels"][RUN_LABEL] == "r1"
    want = {"nvidia.com/gpu": "4", "cpu": "500m", "memory": str(2**30), "pods": "8"}
    assert status["allocatable"] == want
    assert status["capacity"] == want
    assert "conditions" not in status  # KWOK adds Ready=True
    assert "unschedulable" not in node["spec"]


def test_not_ready_node_is_not_kwok_managed_and_says_not_ready() -> None:
    node = objects.node(_scenario().nodes[1], NAMES)
    assert objects.KWOK_ANNOTATION not in node["metadata"]["annotations"]
    assert node["status"]["conditions"][0]["type"] == "Ready"
    assert node["status"]["conditions"][0]["status"] == "False"
    assert node["spec"]["unschedulable"] is True
    assert node["spec"]["taints"] == [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]
    assert "pods" not in node["status"]["allocatable"]  # no default: as the scenario says


def test_usage_pods_are_bound_and_carry_no_kueue_marks() -> None:
    usage = _scenario().usage[0]
    pods = objects.usage_pods(usage, 0, NAMES)
    assert [p["metadata"]["name"] for p in pods] == ["busy-0", "busy-1"]
    for pod in pods:
        assert pod["spec"]["nodeName"] == "n1"
        assert not any("kueue.x-k8s.io" in k for k in pod["metadata"]["labels"])
        assert "annotations" not in pod["metadata"]
        (container,) = pod["spec"]["containers"]
        assert container["resources"] == {
            "requests": {"nvidia.com/gpu": "2"},
            "limits": {"nvidia.com/gpu": "2"},
        }
        assert pod["spec"]["tolerations"] == [{"operator": "Exists"}]


def test_job_is_indexed_queued_and_annotated() -> None:
    job = objects.job(_scenario().workloads[0], NAMES)
    spec = job["spec"]
    assert (spec["parallelism"], spec["completions"]) == (3, 3)
    assert spec["completionMode"] == "Indexed"
    assert (
        job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "tas-cq"
    )  # the queue the shorthand names
    template = spec["template"]
    assert template["metadata"]["annotations"] == {
        "kueue.x-k8s.io/podset-required-topology": "kubernetes.io/hostname"
    }
    pod = template["spec"]
    assert pod["nodeSelector"] == {"example.com/rack": "r1"}
    assert pod["tolerations"] == [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]
    resources = pod["containers"][0]["resources"]
    assert resources["requests"] == {"nvidia.com/gpu": "1", "cpu": "250m"}
    assert resources["limits"] == {"nvidia.com/gpu": "1"}  # cpu may overcommit, GPUs may not


# Kueue v0.19.2's own annotation names (apis/kueue/v1beta2/topology_types.go), written out
# here rather than read from harness.kueue.keys, so a wrong constant fails this test.
@pytest.mark.parametrize(
    ("topology", "annotations"),
    [
        (
            {"mode": "preferred", "level": "example.com/rack"},
            {"kueue.x-k8s.io/podset-preferred-topology": "example.com/rack"},
        ),
        (
            {"mode": "unconstrained"},
            {"kueue.x-k8s.io/podset-unconstrained-topology": "true"},
        ),
        (
            {
                "mode": "required",
                "level": "example.com/rack",
                "sliceLevel": "kubernetes.io/hostname",
                "sliceSize": 2,
            },
            {
                "kueue.x-k8s.io/podset-required-topology": "example.com/rack",
                "kueue.x-k8s.io/podset-slice-required-topology": "kubernetes.io/hostname",
                "kueue.x-k8s.io/podset-slice-size": "2",
            },
        ),
        (
            {"mode": "required", "level": "example.com/rack", "podSetGroupName": "lws"},
            {
                "kueue.x-k8s.io/podset-required-topology": "example.com/rack",
                "kueue.x-k8s.io/podset-group-name": "lws",
            },
        ),
    ],
)
def test_topology_annotations(topology: dict[str, Any], annotations: dict[str, str]) -> None:
    data = {
        "name": "w",
        "podSets": [{"name": "main", "count": 2, "requests": {"cpu": 1}, "topology": topology}],
    }
    w = scenario_from_data({**_raw(), "workloads": [data]}, "x.yaml").workloads[0]
    assert objects.job(w, NAMES)["spec"]["template"]["metadata"]["annotations"] == annotations


def _raw() -> dict[str, Any]:
    return {
        "name": "demo",
        "topology": {"name": "topo", "levels": ["example.com/rack", "kubernetes.io/hostname"]},
        "nodes": [
            {
                "name": "n1",
                "labels": {"example.com/rack": "r1"},
                "allocatable": {"cpu": 8, "pods": 8},
            }
        ],
    }


def test_workload_with_several_pod_sets_keeps_order_and_requests() -> None:
    data = {
        "name": "lws",
        "podSets": [
            {
                "name": "leader",
                "count": 1,
                "requests": {"cpu": 1},
                "topology": {
                    "mode": "required",
                    "level": "example.com/rack",
                    "podSetGroupName": "g",
                },
            },
            {
                "name": "workers",
                "count": 4,
                "requests": {"cpu": 1},
                "topology": {
                    "mode": "required",
                    "level": "example.com/rack",
                    "podSetGroupName": "g",
                },
            },
            {
                "name": "side",
                "count": 2,
                "requests": {"cpu": 1},
                "topology": {"sliceLevel": "kubernetes.io/hostname", "sliceSize": 1},
            },
        ],
    }
    w = scenario_from_data({**_raw(), "workloads": [data]}, "x.yaml").workloads[0]
    wl = objects.workload(w, NAMES)
    assert wl["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert wl["spec"]["queueName"] == "tas-cq"  # the queue the shorthand names
    pod_sets = wl["spec"]["podSets"]
    assert [p["name"] for p in pod_sets] == ["leader", "workers", "side"]
    assert [p["count"] for p in pod_sets] == [1, 4, 2]
    assert pod_sets[0]["topologyRequest"] == {
        "podIndexLabel": objects.JOB_INDEX_LABEL,
        "required": "example.com/rack",
        "podSetGroupName": "g",
    }
    assert pod_sets[2]["topologyRequest"] == {
        "podIndexLabel": objects.JOB_INDEX_LABEL,
        "podSetSliceRequiredTopology": "kubernetes.io/hostname",
        "podSetSliceSize": 1,
    }

    js = objects.jobset(w, NAMES)
    assert js["apiVersion"] == "jobset.x-k8s.io/v1alpha2"
    assert js["spec"]["suspend"] is True
    assert (
        js["metadata"]["labels"][kueue_keys.QUEUE_LABEL] == "tas-cq"
    )  # the queue the shorthand names
    jobs = js["spec"]["replicatedJobs"]
    assert [j["name"] for j in jobs] == ["leader", "workers", "side"]  # Kueue's pod set names
    assert [j["replicas"] for j in jobs] == [1, 1, 1]
    specs = [j["template"]["spec"] for j in jobs]
    assert [(s["parallelism"], s["completions"]) for s in specs] == [(1, 1), (4, 4), (2, 2)]
    annotations = specs[1]["template"]["metadata"]["annotations"]
    assert annotations == {kueue_keys.REQUIRED: "example.com/rack", kueue_keys.GROUP: "g"}
    assert specs[2]["template"]["metadata"]["annotations"] == {
        kueue_keys.SLICE_LEVEL: "kubernetes.io/hostname",
        kueue_keys.SLICE_SIZE: "1",
    }


def test_cluster_queue_covers_every_requested_resource() -> None:
    step_workload = {
        "name": "late",
        "podSets": [{"name": "main", "count": 1, "requests": {"example.com/fpga": 1}}],
    }
    scenario = _scenario(
        queue={"nominalQuota": {"nvidia.com/gpu": 6, "pods": 10}},
        steps=[{"submit": step_workload}],
    )
    (queue,) = scenario.cluster_queues
    cq = world.cluster_queue(queue, NAMES)
    (group,) = cq["spec"]["resourceGroups"]
    assert group["coveredResources"] == ["cpu", "example.com/fpga", "nvidia.com/gpu", "pods"]
    (flavor,) = group["flavors"]
    assert flavor["name"] == "topo"  # default flavor name: the topology's
    quota = {r["name"]: r["nominalQuota"] for r in flavor["resources"]}
    assert quota["nvidia.com/gpu"] == "6"
    assert quota["pods"] == "10"
    assert int(quota["cpu"]) >= 10**15  # ample
    assert cq["spec"]["queueingStrategy"] == "BestEffortFIFO"
    assert cq["spec"]["preemption"]["withinClusterQueue"] == "Never"
    assert "cohortName" not in cq["spec"]


def test_flavor_without_node_labels_selects_every_node_of_the_file() -> None:
    """Kueue refuses a TAS flavor without nodeLabels: the shorthand's selects a label the
    loader puts on every node, nodes a step adds included."""
    scenario = _scenario(
        steps=[
            {
                "add-node": {
                    "name": "late",
                    "labels": {"example.com/rack": "r9"},
                    "allocatable": {"nvidia.com/gpu": 1},
                }
            }
        ]
    )
    (flavor,) = scenario.resource_flavors
    rf = world.resource_flavor(flavor, NAMES)
    assert rf["spec"]["nodeLabels"] == ALL_NODES_LABEL
    assert rf["spec"]["topologyName"] == "topo"
    added = [s.target for s in scenario.steps]
    for n in [*scenario.nodes, *added]:
        labels = objects.node(n, NAMES)["metadata"]["labels"]
        assert ALL_NODES_LABEL.items() <= labels.items(), n.name
    with_labels = _scenario(
        flavor={
            "name": "gpu",
            "nodeLabels": {"example.com/rack": "r1"},
            "tolerations": [{"key": "gpu", "operator": "Exists"}],
        }
    )
    rf = world.resource_flavor(with_labels.resource_flavors[0], NAMES)
    assert rf["metadata"]["name"] == "gpu"
    assert rf["spec"]["nodeLabels"] == {"example.com/rack": "r1"}
    assert rf["spec"]["tolerations"] == [{"key": "gpu", "operator": "Exists"}]
    node = objects.node(with_labels.nodes[0], NAMES)
    assert "kueue-tas-harness/node" not in node["metadata"]["labels"]


def test_topology_levels_in_file_order() -> None:
    topo = world.topology(_scenario().topologies[0], NAMES)
    assert topo["spec"]["levels"] == [
        {"nodeLabel": "example.com/rack"},
        {"nodeLabel": "kubernetes.io/hostname"},
    ]


def test_namespace_names_are_dns_labels() -> None:
    ns = namespace_for(12, "A.very_long-Scenario.name" * 5)
    assert len(ns) <= 63 and ns.startswith("kth-12-")
    assert ns.replace("-", "").isalnum() and ns == ns.lower() and not ns.endswith("-")


def _wl(reserved: dict[str, str] | None, admitted: str | None = None, **status: Any) -> Any:
    conditions = []
    if reserved is not None:
        conditions.append({"type": "QuotaReserved", **reserved})
    if admitted is not None:
        conditions.append({"type": "Admitted", "status": admitted})
    return {"status": {"conditions": conditions, **status}}


def test_workload_states() -> None:
    assert state(None).kind == "unsettled"
    assert state(_wl(None)).kind == "unsettled"
    waiting = {"status": "False", "reason": "PendingEvaluation", "message": "not yet"}
    assert state(_wl(waiting)).kind == "unsettled"
    refused = {"status": "False", "reason": "Pending", "message": "couldn't assign flavors"}
    assert state(_wl(refused)) == State("pending", "couldn't assign flavors")
    assert state(_wl({"status": "True"}, "False")).kind == "unsettled"
    assert state(_wl({"status": "True"}, "True")).kind == "admitted"


def test_admission_placement_renames_a_jobs_main_pod_set() -> None:
    ta = {
        "levels": ["kubernetes.io/hostname"],
        "slices": [
            {
                "domainCount": 1,
                "valuesPerLevel": [{"universal": "n1"}],
                "podCounts": {"universal": 3},
            }
        ],
    }
    wl = {
        "status": {"admission": {"podSetAssignments": [{"name": "main", "topologyAssignment": ta}]}}
    }
    assert admission_placement(wl, {"main": "workers"}) == {"workers": {"n1": 3}}


def test_pods_placement_maps_nodes_to_their_lowest_level_value() -> None:
    pods = [{"spec": {"nodeName": n}} for n in ("a", "b", "b", "")]
    assert pods_placement(pods, {"a": "r1", "b": "r1"}) == {"r1": 3}


def test_api_message_drops_our_request_prefix() -> None:
    err = KubeError("POST /apis/batch/v1/namespaces/x/jobs: 403 'admission webhook denied'", 403)
    assert api_message(err) == "admission webhook denied"


def test_pending_must_hold_for_the_window() -> None:
    """A refusal followed by a late admission inside the window is an admission."""
    seen = iter([State("pending", "no"), State("pending", "no"), State("admitted")])
    t = Timeouts(pending_window=0.05, interval=0.02, settle=5)
    assert settle(lambda: next(seen), what="w", t=t).kind == "admitted"
    t = Timeouts(pending_window=0.05, interval=0.01, settle=5)
    assert settle(lambda: State("pending", "no"), what="w", t=t) == State("pending", "no")


def test_settle_times_out_naming_what_it_saw() -> None:
    t = Timeouts(settle=0.05, interval=0.01)
    with pytest.raises(
        WaitTimeout, match=r"Workload ns/x .*last seen: unsettled: no QuotaReserved"
    ):
        settle(lambda: State("unsettled", "no QuotaReserved condition"), what="Workload ns/x", t=t)


def test_all_workloads_includes_those_submitted_by_steps() -> None:
    late = {"name": "late", "podSets": [{"name": "main", "count": 1, "requests": {"cpu": 1}}]}
    scenario = _scenario(steps=[{"submit": late}])
    names = [w.name for w in objects.all_workloads(scenario)]
    assert names == ["train", "late"]
    assert all(isinstance(w, Workload) for w in objects.all_workloads(scenario))


def test_a_parked_twin_counts_as_pending_without_a_message() -> None:
    """SchedulingEquivalenceHashing parks a workload identical to a pending one unevaluated:
    no QuotaReserved condition ever appears. Only then does silence mean pending."""
    silent = State("unsettled", "no QuotaReserved condition")
    t = Timeouts(park_window=0.05, settle=2, interval=0.01)
    assert settle(lambda: silent, what="w", t=t, may_park=True) == State("pending", "")
    with pytest.raises(WaitTimeout):
        settle(lambda: silent, what="w", t=Timeouts(settle=0.1, interval=0.01))


def test_refusals_are_webhook_denials_or_invalid_objects() -> None:
    from harness.runner.session import refused

    assert refused(KubeError('POST /x: 403 admission webhook "vjob.kb.io" denied the request', 403))
    assert refused(KubeError('POST /x: 422 Job.batch "a" is invalid', 422))
    assert not refused(KubeError("POST /x: 500 etcd timeout", 500))


def test_leader_worker_set_group_is_the_set_scaled_to_its_index() -> None:
    from harness.runner.session import lws_selector
    from harness.scenario.model import LeaderWorkerSetGroup, PodSet, TopologyRequest

    rack = TopologyRequest(mode="required", level="example.com/rack", group="g")
    leader = PodSet("leader", 1, {"cpu": 1}, rack)
    worker = PodSet("worker", 3, {"nvidia.com/gpu": 1}, rack)
    w = Workload("serve-1", (leader, worker), lws=LeaderWorkerSetGroup("serve", 1, 2))
    obj = objects.leader_worker_set(w, NAMES)
    assert obj["apiVersion"] == "leaderworkerset.x-k8s.io/v1"
    assert obj["metadata"]["name"] == "serve"
    assert obj["metadata"]["labels"][kueue_keys.QUEUE_LABEL] == w.queue
    assert obj["spec"]["replicas"] == 2
    lwt = obj["spec"]["leaderWorkerTemplate"]
    assert lwt["size"] == 4
    for key, ps in (("leaderTemplate", leader), ("workerTemplate", worker)):
        template = lwt[key]
        assert template["spec"]["restartPolicy"] == "Always"  # StatefulSet pods
        assert template["metadata"]["annotations"] == objects.topology_annotations(ps.topology)
        assert template["metadata"]["labels"][RUN_LABEL] == NAMES.run_id
    assert lws_selector(w, "leader").endswith(
        "group-index=1,leaderworkerset.sigs.k8s.io/worker-index=0"
    )
    assert lws_selector(w, "worker").endswith("worker-index!=0")
    workers_only = Workload(
        "w-0", (PodSet("main", 4, {"cpu": 1}),), lws=LeaderWorkerSetGroup("w", 0, 1)
    )
    lwt = objects.leader_worker_set(workers_only, NAMES)["spec"]["leaderWorkerTemplate"]
    assert "leaderTemplate" not in lwt and lwt["size"] == 4
    assert lws_selector(workers_only, "main") == (
        "leaderworkerset.sigs.k8s.io/name=w,leaderworkerset.sigs.k8s.io/group-index=0"
    )
