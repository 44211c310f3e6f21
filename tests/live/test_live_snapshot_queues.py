"""`snapshot` writes LocalQueues, Namespaces and a ClusterQueue's namespaceSelector and
admissionScope where they change Kueue's decisions (harness/live/queue_objects.py), and the
file loads with the contract's rules."""

from __future__ import annotations

import copy

from harness.live.snapshot import snapshot
from harness.scenario.loader import scenario_from_data
from tests.live.test_live_snapshot import state


def test_a_namespace_selector_brings_the_local_queues_and_namespaces() -> None:
    cluster = state()
    cluster.namespaces = [
        {"metadata": {"name": "ml", "labels": {"team": "b", "kubernetes.io/metadata.name": "ml"}}}
    ]
    cluster.cluster_queues = copy.deepcopy(cluster.cluster_queues)
    cluster.cluster_queues[0]["spec"]["admissionScope"] = {
        "admissionMode": "UsageBasedAdmissionFairSharing"
    }
    data = snapshot(cluster).data
    queues = {q["name"]: q for q in data["clusterQueues"]}
    assert queues["team-b"]["namespaceSelector"] == {"matchLabels": {"team": "b"}}
    assert "namespaceSelector" not in queues["team-a"]  # {}: the contract's default
    assert queues["team-a"]["admissionScope"] == {"admissionMode": "UsageBasedAdmissionFairSharing"}
    assert data["namespaces"] == [{"name": "ml", "labels": {"team": "b"}}]
    assert {"name": "lq-a", "namespace": "ml", "clusterQueue": "team-a"} in data["localQueues"]
    for entry in [*data["admitted"], *data["workloads"]]:
        assert entry["namespace"] == "ml"
    scenario = scenario_from_data(data, "snap.yaml")
    assert scenario.namespace_labels("ml")["team"] == "b"
    assert {w.queue for w in scenario.workloads} <= {"team-a", "team-b"}


def test_a_missing_selector_is_kueues_nothing_selector() -> None:
    cluster = state()
    cluster.cluster_queues = copy.deepcopy(cluster.cluster_queues)
    del cluster.cluster_queues[0]["spec"]["namespaceSelector"]
    (team_a,) = [q for q in snapshot(cluster).data["clusterQueues"] if q["name"] == "team-a"]
    assert team_a["namespaceSelector"] == {
        "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "DoesNotExist"}]
    }


def test_without_selectors_the_plain_form_stays() -> None:
    cluster = state()
    cluster.cluster_queues = [
        q for q in copy.deepcopy(cluster.cluster_queues) if q["metadata"]["name"] == "team-a"
    ]
    data = snapshot(cluster).data
    assert "localQueues" not in data and "namespaces" not in data


def test_simulate_names_the_local_queue_where_the_snapshot_does() -> None:
    from harness.live import manifests
    from harness.live.submissions import Cluster, submissions
    from tests.live.test_live_simulate import job

    cluster = state()
    cluster.namespaces = [{"metadata": {"name": "ml", "labels": {"team": "b"}}}]
    data = snapshot(cluster).data
    (sub,) = submissions(manifests.read([job("train")]), Cluster.of(data), "ml")
    assert sub.workload is not None
    assert (sub.workload["queue"], sub.workload["namespace"]) == ("lq-a", "ml")
    data["workloads"] = [*data["workloads"], sub.workload]
    (train,) = [w for w in scenario_from_data(data, "s.yaml").workloads if w.name == "train"]
    assert (train.queue, train.local_queue, train.namespace) == ("team-a", "lq-a", "ml")


def test_a_local_queue_stop_policy_is_written_and_held_by_the_fit_model() -> None:
    """A held LocalQueue brings `localQueues:` with its stopPolicy (no longer a gap); its
    pending workload then waits on it in the fit model, as on the cluster."""
    from harness.fit import fit

    cluster = state()
    cluster.cluster_queues = [
        q for q in copy.deepcopy(cluster.cluster_queues) if q["metadata"]["name"] == "team-a"
    ]
    cluster.local_queues = copy.deepcopy(cluster.local_queues)
    for lq in cluster.local_queues:
        lq["spec"]["stopPolicy"] = "Hold"
    snap = snapshot(cluster)
    data = snap.data
    assert all(lq["stopPolicy"] == "Hold" for lq in data["localQueues"])
    assert not any("stopPolicy" in line for line in data["x-snapshot"]["notRepresented"])
    scenario = scenario_from_data(data, "snap.yaml")
    outcomes = fit(scenario).outcomes
    assert scenario.workloads
    for w in scenario.workloads:
        assert outcomes[w.name].message == f"LocalQueue {w.queue_name} is inactive"
