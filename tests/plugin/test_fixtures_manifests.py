"""A user's manifests, read the way Kueue's integrations read them (no cluster needed).

The round trip holds the reader against the runner's own builders: every workload of every
suite, built as the Job or JobSet the cluster runner submits, reads back as the same pod sets.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.errors import HarnessError
from harness.fixtures.manifests import MAIN, UserManifestError, read, tagged, workload_data
from harness.fixtures.model import FitModel
from harness.k8s.quantity import parse_quantity
from harness.runner import objects, world
from harness.runner.objects import Names
from harness.scenario import ample_quota
from harness.scenario.loader import load_scenario
from harness.scenario.model import Workload

REPO = Path(__file__).resolve().parents[2]
SHAPE = REPO / "examples" / "shapes" / "gpu-racks.yaml"
NAMES = Names("run1", "ns1")


def _suite_workloads() -> list[Workload]:
    found = []
    for path in sorted((REPO / "suites").rglob("*.yaml")):
        try:
            scenario = load_scenario(path)
        except HarnessError:
            continue
        found += objects.all_workloads(scenario)
    return found


def _as_submitted(w: Workload) -> dict[str, Any]:
    """The runner's manifest, sent to a LocalQueue named team-a."""
    w = dataclasses.replace(w, queue="team-a")
    return objects.job(w, NAMES) if len(w.pod_sets) == 1 else objects.jobset(w, NAMES)


def test_every_suite_workload_reads_back_as_its_pod_sets() -> None:
    workloads = _suite_workloads()
    assert len(workloads) > 200
    for w in workloads:
        (manifest,) = read(_as_submitted(w))
        data = workload_data(manifest)
        assert data["name"] == w.name
        assert len(data["podSets"]) == len(w.pod_sets), w.name
        for got, want in zip(data["podSets"], w.pod_sets, strict=True):
            assert got["name"] == (MAIN if len(w.pod_sets) == 1 else want.name)
            assert got["count"] == want.count, w.name
            assert {k: parse_quantity(v) for k, v in got["requests"].items()} == want.requests
            assert got.get("nodeSelector", {}) == dict(want.node_selector)
            assert got.get("tolerations", []) == [objects.toleration(t) for t in want.tolerations]
            tr = want.topology
            topology = got.get("topology", {})
            assert topology.get("mode") == (tr.mode if tr else None), w.name
            assert topology.get("level") == (tr.level if tr else None), w.name
            assert topology.get("sliceLevel") == (tr.slice_level if tr else None), w.name
            assert topology.get("sliceSize") == (tr.slice_size if tr else None), w.name
            assert topology.get("podSetGroupName") == (tr.group if tr else None), w.name


JOB = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "train", "labels": {"kueue.x-k8s.io/queue-name": "team-a"}},
    "spec": {
        "parallelism": 4,
        "completions": 3,
        "template": {
            "spec": {
                "containers": [
                    {"name": "a", "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "2"}}},
                    {"name": "b", "resources": {"limits": {"nvidia.com/gpu": 1}}},
                ],
                "initContainers": [
                    {"name": "init", "resources": {"requests": {"cpu": "3"}}},
                    {"name": "side", "restartPolicy": "Always",
                     "resources": {"requests": {"memory": "1Gi"}}},
                ],
            }
        },
    },
}  # fmt: skip


def test_a_jobs_pods_and_requests_follow_kubernetes() -> None:
    """Count: parallelism capped by completions. Requests: limits fill absent requests,
    sidecars add, other init containers are a floor."""
    (pod_set,) = workload_data(read(JOB)[0])["podSets"]
    assert pod_set == {
        "name": "main",
        "count": 3,
        "requests": {"cpu": "3", "memory": str(2**30), "nvidia.com/gpu": "1"},
    }


def test_tagging_labels_the_object_its_child_jobs_and_pods() -> None:
    w = load_scenario(REPO / "suites/groups/groups-leader-beside-workers-required-rack.yaml")
    jobset = _as_submitted(w.workloads[0])
    del jobset["metadata"]["namespace"]
    out = tagged(read(jobset)[0], "kth-7-x", {"run": "abc"}, ["team-a"])
    assert out["metadata"]["namespace"] == "kth-7-x"
    assert out["metadata"]["labels"]["run"] == "abc"
    for rj in out["spec"]["replicatedJobs"]:
        assert rj["template"]["metadata"]["labels"]["run"] == "abc"
        assert rj["template"]["spec"]["template"]["metadata"]["labels"]["run"] == "abc"
    assert "namespace" not in jobset["metadata"]  # the caller's object is left alone


LWS_SUITE = sorted((REPO / "suites" / "lws").glob("*.yaml"))


@pytest.mark.parametrize("path", LWS_SUITE, ids=[p.stem for p in LWS_SUITE])
def test_a_leader_worker_set_manifest_predicts_what_its_suite_expects(path: Path) -> None:
    """Each suites/lws file's LeaderWorkerSets, written as the manifests the runner applies
    (all groups at once) and tagged, are predicted group by group as the file expects."""
    suite = load_scenario(path)
    last = {w.lws.set_name: w for w in suite.workloads if w.lws is not None}
    data = yaml.safe_load(path.read_text())
    for key in ("workloads", "expect", "steps"):
        data.pop(key, None)
    manifests = []
    for w in last.values():
        obj = objects.leader_worker_set(w, NAMES)
        del obj["metadata"]["namespace"]
        (m,) = read(obj)
        tagged_obj = tagged(m, "kth-7-x", {"run": "abc"}, [w.queue])
        lwt = tagged_obj["spec"]["leaderWorkerTemplate"]
        assert all(
            t["metadata"]["labels"]["run"] == "abc" for t in lwt.values() if isinstance(t, dict)
        )
        manifests.append(obj)
    predicted = FitModel({}).predict(data, *manifests).outcomes
    assert suite.expect is not None
    assert sorted(predicted) == sorted(suite.expect)
    for name, want in suite.expect.items():
        assert predicted[name].admitted == want.admitted, name
        if want.placement is not None:
            assert predicted[name].placement == want.placement, name


def _broken(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(yaml.safe_dump(JOB))
    for path, value in changes.items():
        *parents, leaf = path.split("__")
        target = doc
        for key in parents:
            target = target[key]
        if value is None:
            del target[leaf]
        else:
            target[leaf] = value
    return doc


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (
            {"apiVersion": "leaderworkerset.x-k8s.io/v2", "kind": "LeaderWorkerSet"},
            "<manifest>: apiVersion: 'leaderworkerset.x-k8s.io/v2': a LeaderWorkerSet is "
            "leaderworkerset.x-k8s.io/v1",
        ),
        (
            {"apiVersion": "v1", "kind": "ConfigMap"},
            "<manifest>: kind: 'ConfigMap': the fixtures apply batch/v1 Job, "
            "jobset.x-k8s.io/v1alpha2 JobSet, leaderworkerset.x-k8s.io/v1 LeaderWorkerSet",
        ),
        (_broken(apiVersion="batch/v2"), "<manifest>: apiVersion: 'batch/v2': a Job is batch/v1"),
        (
            _broken(metadata__name="Train_1"),
            "<manifest>: metadata.name: 'Train_1' is not a valid DNS label",
        ),
        (
            _broken(spec__template__spec__containers=None),
            "<manifest>: spec.template.spec.containers: missing",
        ),
        (
            _broken(spec__parallelism=0),
            "<manifest>: spec.parallelism: must be at least 1, got 0",
        ),
    ],
)
def test_bad_manifests_are_one_line_naming_the_key(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(UserManifestError) as err:
        read(doc)
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_a_bad_document_of_a_file_is_named_by_its_position(tmp_path: Path) -> None:
    path = tmp_path / "two.yaml"
    path.write_text(yaml.safe_dump(JOB) + "---\n" + yaml.safe_dump(_broken(kind="Pod")))
    with pytest.raises(UserManifestError, match=r"two.yaml \(document 2\): kind: 'Pod'"):
        read(path)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"metadata": {"name": "train", "namespace": "prod"}},
            "<manifest>: metadata.namespace: 'prod': objects go into the test's namespace "
            "'kth-1-x'; leave it out",
        ),
        (
            {"metadata": {"name": "train"}},
            "<manifest>: metadata.labels.kueue.x-k8s.io/queue-name: missing; the shape's "
            "LocalQueues: team-a",
        ),
    ],
)
def test_apply_refuses_another_namespace_or_no_queue(change: dict[str, Any], message: str) -> None:
    with pytest.raises(UserManifestError) as err:
        tagged(read({**JOB, **change})[0], "kth-1-x", {}, ["team-a"])
    assert str(err.value) == message


def test_the_fit_model_refuses_what_it_does_not_model() -> None:
    doc = _broken(spec__template__spec__affinity={"nodeAffinity": {}})
    with pytest.raises(UserManifestError, match=r"spec.template.spec.affinity: the fit model"):
        workload_data(read(doc)[0])


def test_fit_model_predicts_a_shape_plus_a_manifest_as_the_suite_expects() -> None:
    """The example shape is the cluster of groups-leader-beside-workers-required-rack; the
    example JobSet is that scenario's workload, so the prediction is the file's expect."""
    suite = load_scenario(REPO / "suites/groups/groups-leader-beside-workers-required-rack.yaml")
    (w,) = suite.workloads
    manifest = objects.jobset(w, NAMES)
    predicted = FitModel({}).predict(SHAPE, manifest).outcomes[w.name]
    assert suite.expect is not None
    assert predicted.admitted
    assert predicted.placement == suite.expect[w.name].placement


def test_a_shapes_cluster_queue_covers_what_its_nodes_offer() -> None:
    """A shape has no workloads, so without `cover` its ClusterQueue would cover nothing a
    manifest requests and Kueue would refuse every one."""
    shape = load_scenario(REPO / "suites/guide/guide-required-host.yaml")
    plain = world.cluster_queue(shape.cluster_queues[0], NAMES)["spec"]["resourceGroups"][0]
    assert plain["coveredResources"] == ["nvidia.com/gpu"]
    wide = ample_quota.covering(shape, ["cpu", "memory", "nvidia.com/gpu"])
    group = world.cluster_queue(wide.cluster_queues[0], NAMES)["spec"]["resourceGroups"][0]
    assert group["coveredResources"] == ["cpu", "memory", "nvidia.com/gpu"]
    quota = {r["name"]: r["nominalQuota"] for r in group["flavors"][0]["resources"]}
    assert quota["cpu"] == quota["memory"] == str(10**15)


def test_a_misspelt_kueue_key_is_a_warning_in_the_fixtures() -> None:
    """apply and fit_model read manifests here: a key Kueue would ignore is a pytest warning
    naming the closest known one (issue 32 item 2); the manifest is still read."""
    from harness.fixtures import KueueKeyWarning

    doc = {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "t", "labels": {"kueue.x-k8s.io/queue-name": "team-a"}},
        "spec": {"template": {"metadata": {"annotations": {
            "kueue.x-k8s.io/podset-requierd-topology": "example.com/rack"}},
            "spec": {"containers": [{"name": "c"}]}}},
    }  # fmt: skip
    with pytest.warns(
        KueueKeyWarning, match="did you mean 'kueue.x-k8s.io/podset-required-topology'"
    ):
        (m,) = read(doc)
    assert m.name == "t"
