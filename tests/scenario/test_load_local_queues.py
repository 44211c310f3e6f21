"""`localQueues:`, `namespaces:`, a ClusterQueue's namespaceSelector and admissionScope
(docs/scenario-format-v2.md, "LocalQueues and namespaces"): they load into the model, a
workload's `queue` names a LocalQueue of its namespace, and what Kubernetes or Kueue would
refuse is one line naming the key."""

from __future__ import annotations

from typing import Any

import pytest

from harness.errors import ScenarioError
from harness.k8s.selector import LabelSelector, Requirement
from harness.kueue.cluster_queue_spec import cluster_queue_spec
from harness.scenario.loader import scenario_from_data
from harness.scenario.model import LocalQueue, Scenario, StopPolicyChange
from harness.sim.contract import scenario_to_dict

FILE = "lq.yaml"


def data(**extra: Any) -> dict[str, Any]:
    group = {
        "coveredResources": ["cpu"],
        "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": 4}]}],
    }
    out: dict[str, Any] = {
        "name": "lq",
        "resourceFlavors": [{"name": "f"}],
        "clusterQueues": [
            {"name": "a", "resourceGroups": [group]},
            {"name": "b", "resourceGroups": [group]},
        ],
        "nodes": [{"name": "n1", "allocatable": {"cpu": 8}}],
        "workloads": [
            {
                "name": "w",
                "queue": "a",
                "podSets": [{"name": "main", "count": 1, "requests": {"cpu": 1}}],
            }
        ],
    }
    out.update(extra)
    return out


def load(**extra: Any) -> Scenario:
    return scenario_from_data(data(**extra), FILE)


def test_without_local_queues_each_cluster_queue_has_one_of_its_name() -> None:
    scenario = load()
    assert scenario.queues() == (LocalQueue("a", "a"), LocalQueue("b", "b"))
    (w,) = scenario.workloads
    assert (w.queue, w.queue_name, w.namespace) == ("a", "a", "")


def test_queue_names_a_local_queue_of_the_workload_namespace() -> None:
    scenario = load(
        namespaces=[{"name": "team", "labels": {"x.io/team": "t"}}],
        localQueues=[
            {"name": "jobs", "clusterQueue": "a"},
            {
                "name": "jobs",
                "namespace": "team",
                "clusterQueue": "b",
                "fairSharing": {"weight": "0"},
            },
        ],
        workloads=[
            {
                "name": "w1",
                "queue": "jobs",
                "podSets": [{"name": "main", "count": 1, "requests": {"cpu": 1}}],
            },
            {
                "name": "w2",
                "queue": "jobs",
                "namespace": "team",
                "podSets": [{"name": "main", "count": 1, "requests": {"cpu": 1}}],
            },
        ],
    )
    w1, w2 = scenario.workloads
    assert (w1.queue, w1.local_queue, w1.namespace) == ("a", "jobs", "")
    assert (w2.queue, w2.local_queue, w2.namespace) == ("b", "jobs", "team")
    assert scenario.local_queue_of(w2).fair_weight == 0
    assert scenario.namespace_labels("team") == {
        "x.io/team": "t",
        "kubernetes.io/metadata.name": "team",
    }
    sent = scenario_to_dict(scenario)
    assert sent["localQueues"][1] == {
        "name": "jobs",
        "clusterQueue": "b",
        "namespace": "team",
        "fairSharing": {"weight": "0"},
    }
    assert sent["workloads"][1]["namespace"] == "team"


def test_selector_and_scope_reach_the_spec() -> None:
    cq = {
        "name": "a",
        "namespaceSelector": {
            "matchLabels": {"x.io/t": "r"},
            "matchExpressions": [
                {"key": "x.io/tier", "operator": "NotIn", "values": ["restricted"]}
            ],
        },
        "admissionScope": {"admissionMode": "UsageBasedAdmissionFairSharing"},
        "resourceGroups": data()["clusterQueues"][0]["resourceGroups"],
    }
    scenario = load(clusterQueues=[cq])
    (queue,) = scenario.cluster_queues
    assert queue.namespace_selector == LabelSelector(
        {"x.io/t": "r"}, (Requirement("x.io/tier", "NotIn", ("restricted",)),)
    )
    spec = cluster_queue_spec(queue)
    assert spec["namespaceSelector"] == cq["namespaceSelector"]
    assert spec["admissionScope"] == cq["admissionScope"]
    assert queue.namespace_selector.matches({"x.io/t": "r"})
    assert not queue.namespace_selector.matches({"x.io/t": "r", "x.io/tier": "restricted"})


@pytest.mark.parametrize(
    ("extra", "error"),
    [
        ({"localQueues": [{"name": "q", "clusterQueue": "zz"}]}, "localQueues[0].clusterQueue: no ClusterQueue named 'zz'"),
        ({"localQueues": [{"name": "q", "clusterQueue": "a", "namespace": "nowhere"}]}, 'localQueues[0].namespace: namespaces "nowhere" not found'),
        ({"localQueues": [{"name": "q", "clusterQueue": "a"}, {"name": "q", "clusterQueue": "b"}]}, "localQueues[1].name: duplicate LocalQueue 'q'"),
        ({"localQueues": [{"name": "q", "clusterQueue": "a", "stopPolicy": "Paused"}]}, "localQueues[0].stopPolicy: Unsupported value: 'Paused': supported values: None, Hold, HoldAndDrain"),
        ({"namespaces": [{"name": "default"}]}, "namespaces[0].name: 'default' exists in every cluster"),
        ({"namespaces": [{"name": "Team"}]}, "namespaces[0].name: 'Team' is not a valid namespace name"),
        ({"namespaces": [{"name": "t", "labels": {"bad key!": "v"}}]}, "namespaces[0].labels.bad key!: 'bad key!' is not a valid label key"),
        ({"localQueues": [{"name": "q", "clusterQueue": "a"}]}, "workloads[0].queue: no LocalQueue named 'a' in the scenario's namespace"),
    ],
)  # fmt: skip
def test_refused_in_one_line(extra: dict[str, Any], error: str) -> None:
    with pytest.raises(ScenarioError) as raised:
        load(**extra)
    assert error in str(raised.value)
    assert "\n" not in str(raised.value)


def test_stop_policy_loads_and_a_step_names_a_local_queue() -> None:
    """A LocalQueue's stopPolicy is taken; `set-stop-policy` names a LocalQueue of the file."""
    queues = [{"name": "q", "clusterQueue": "a", "stopPolicy": "HoldAndDrain"}]
    steps = [{"set-stop-policy": {"localQueue": "q", "stopPolicy": "None"}}]
    scenario = load(localQueues=queues, steps=steps, workloads=[])
    assert scenario.local_queues[0].stop_policy == "HoldAndDrain"
    assert scenario.steps[0].target == StopPolicyChange("q", "", "None")
    steps = [{"set-stop-policy": {"localQueue": "nope", "stopPolicy": "Hold"}}]
    with pytest.raises(
        ScenarioError,
        match=r"steps\[0\]\.set-stop-policy\.localQueue: localqueues \"nope\" not found",
    ):
        load(localQueues=queues, steps=steps, workloads=[])
