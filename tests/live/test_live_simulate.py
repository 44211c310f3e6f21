"""simulate's pure parts: manifests -> the Workloads Kueue would make of them on a snapshot
(queue through the LocalQueue, priority as Kueue extracts it, one Workload per LWS group),
and predictions per manifest, with the preemptions each causes. Outcomes are worked out by
hand from the scenario, not copied from a run."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.backends.base import Unsupported
from harness.live import manifests, simulate
from harness.live.manifests import UserManifestError
from harness.live.submissions import Cluster, submissions

REPO = Path(__file__).resolve().parents[2]
HOST = "kubernetes.io/hostname"


def snapshot() -> dict[str, Any]:
    """One host x1 of 5 CPUs running old (4 CPUs, priority low); team-a preempts lower
    priority. LocalQueue ml/lq-a -> team-a, ml/lq-gone -> a ClusterQueue left out."""
    return {
        "name": "snap",
        "topologies": [{"name": "hosts", "levels": [HOST]}],
        "resourceFlavors": [{"name": "tas", "nodeLabels": {"tas": "true"}, "topologyName": "hosts"}],
        "workloadPriorityClasses": [{"name": "high", "value": 100}, {"name": "low", "value": 1}],
        "clusterQueues": [{"name": "team-a", "preemption": {"withinClusterQueue": "LowerPriority"},
                           "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                               {"name": "tas", "resources": [{"name": "cpu", "nominalQuota": "50"}]}]}]}],
        "nodes": [{"name": "x1", "labels": {"tas": "true"}, "allocatable": {"cpu": "5", "pods": "10"}}],
        "admitted": [{"name": "old", "queue": "team-a", "priorityClass": "low", "podSets": [
            {"name": "main", "count": 1, "requests": {"cpu": "4"}, "flavor": "tas", "placement": {"x1": 1}}]}],
        "workloads": [],
        "x-snapshot": {
            "localQueues": [{"namespace": "ml", "name": "lq-a", "clusterQueue": "team-a"},
                            {"namespace": "ml", "name": "lq-gone", "clusterQueue": "team-z"}],
            "podPriorityClasses": {"critical": 100, "batch": 5},
            "globalDefaultPriorityClass": None,
            "workloads": {"old": "ml/job-old-x1y2z"},
            "owners": {"ml/Job/old": "old"},
        },
    }  # fmt: skip


def job(
    name: str, cpus: str = "1", count: int = 2, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": "ml",
                     "labels": {"kueue.x-k8s.io/queue-name": "lq-a", **(labels or {})}},
        "spec": {"parallelism": count, "template": {
            "metadata": {"annotations": {"kueue.x-k8s.io/podset-required-topology": HOST}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpus}}}]}}},
    }  # fmt: skip


def subs_of(
    *docs: dict[str, Any], data: dict[str, Any] | None = None, namespace: str = "ml"
) -> Any:
    return submissions(manifests.read(list(docs)), Cluster.of(data or snapshot()), namespace)


def test_a_job_goes_to_its_local_queues_cluster_queue_with_its_class() -> None:
    (sub,) = subs_of(job("train", labels={"kueue.x-k8s.io/priority-class": "high"}))
    assert sub.workload == {
        "name": "train", "queue": "team-a", "priorityClass": "high",
        "podSets": [{"name": "main", "count": 2, "requests": {"cpu": "1"},
                     "topology": {"mode": "required", "level": HOST}}],
    }  # fmt: skip


def test_a_name_the_snapshot_uses_is_kept_apart() -> None:
    (sub,) = subs_of(job("old"))
    assert sub.key == "old" and sub.workload is not None and sub.workload["name"] == "old-2"


EXISTING = (
    "<manifest>[0]: Job ml/old is already on the cluster (its Workload ml/job-old-x1y2z is "
    "admitted): `kubectl apply` would not create a new workload, it would update that Job "
    "(or be refused: a Job's pod template cannot change); predicted here as a new one, 'old-2'"
)


def test_a_job_already_on_the_cluster_is_a_warning() -> None:
    """Issue 32 item 4: the answer is for a new workload; applied, the name is taken."""
    (sub,) = subs_of(job("old"))
    assert sub.warnings == [EXISTING]
    other_namespace = job("old")
    other_namespace["metadata"]["namespace"] = "other"
    other_namespace["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "team-a"
    data = snapshot()
    data["x-snapshot"]["localQueues"].append(
        {"namespace": "other", "name": "team-a", "clusterQueue": "team-a"}
    )
    (sub,) = subs_of(other_namespace, data=data)
    assert sub.warnings == []  # another namespace: another Job


def test_a_hand_written_scenario_warns_on_its_own_workload_names() -> None:
    data = snapshot()
    del data["x-snapshot"]
    doc = job("old")
    doc["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "team-a"
    (sub,) = subs_of(doc, data=data)
    assert sub.warnings == [
        "<manifest>[0]: the scenario already has a workload named 'old' (admitted): on a "
        "cluster `kubectl apply` would update that object, not create a new workload; "
        "predicted here as a new one, 'old-2'"
    ]


def test_the_json_and_html_carry_the_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "snap.yaml").write_text(yaml.safe_dump(snapshot()))
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job("old", count=1)))
    argv = ["simulate", str(tmp_path / "job.yaml"), "--from", str(tmp_path / "snap.yaml")]
    warning = EXISTING.replace("<manifest>[0]", str(tmp_path / "job.yaml"))
    code, out, err = run_cli(capsys, *argv, "--format", "json")
    assert code == 0 and json.loads(out)["old"]["warnings"] == [warning]
    assert f"simulate: warning: {warning}" in err.splitlines()
    code, out, err = run_cli(capsys, *argv, "--format", "html")
    assert code == 0 and "is already on the cluster" in out and "predicted here as a new one" in out


def test_priority_from_the_pod_priority_class_or_the_global_default() -> None:
    """Kueue's ExtractPriority: no WorkloadPriorityClass label -> the first pod template's
    priorityClassName (a PriorityClass) -> the globalDefault one."""
    doc = job("a")
    doc["spec"]["template"]["spec"]["priorityClassName"] = "batch"
    data = snapshot()
    (sub,) = subs_of(doc, data=data)
    assert sub.workload is not None and sub.workload["priorityClass"] == "priority-5"
    assert sub.notes == []  # priorityClassName is read, not ignored
    data["x-snapshot"]["globalDefaultPriorityClass"] = "critical"
    (sub,) = subs_of(job("b"), data=data)
    assert sub.workload is not None and sub.workload["priorityClass"] == "priority-100"


def test_a_leader_worker_set_is_one_workload_per_group() -> None:
    lws = {
        "apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
        "metadata": {"name": "serve", "namespace": "ml", "labels": {"kueue.x-k8s.io/queue-name": "lq-a"}},
        "spec": {"replicas": 2, "leaderWorkerTemplate": {
            "size": 4,
            "leaderTemplate": {"spec": {"containers": [{"name": "l", "resources": {"requests": {"cpu": "2"}}}]}},
            "workerTemplate": {"spec": {"containers": [{"name": "w", "resources": {"requests": {"cpu": "1"}}}]}}}},
    }  # fmt: skip
    subs = subs_of(lws)
    assert [s.key for s in subs] == ["serve/0", "serve/1"]
    assert [s.workload["name"] for s in subs if s.workload] == ["serve", "serve-2"]
    pod_sets = subs[0].workload["podSets"] if subs[0].workload else []
    assert [(p["name"], p["count"], p["requests"]) for p in pod_sets] == [
        ("leader", 1, {"cpu": "2"}), ("worker", 3, {"cpu": "1"})]  # fmt: skip


def test_a_workload_manifest_keeps_its_topology_request() -> None:
    wl = {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": "raw", "namespace": "ml"},
        "spec": {"queueName": "lq-a", "priorityClassRef": {"group": "kueue.x-k8s.io",
                 "kind": "WorkloadPriorityClass", "name": "low"},
                 "podSets": [{"name": "w", "count": 3, "topologyRequest": {"preferred": HOST},
                              "template": {"spec": {"containers": [{"name": "c"}]}}}]},
    }  # fmt: skip
    (sub,) = subs_of(wl)
    assert sub.workload is not None and sub.workload["priorityClass"] == "low"
    assert sub.workload["podSets"][0]["topology"] == {"mode": "preferred", "level": HOST}


def test_a_missing_local_queue_is_what_kueue_reports() -> None:
    doc = job("lost")
    doc["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "nope"
    gone = job("gone")
    gone["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "lq-gone"
    lost, left = subs_of(doc, gone)
    assert lost.workload is None and lost.outcome is not None
    assert lost.outcome.message == "LocalQueue nope doesn't exist"
    assert lost.notes == ["LocalQueues in namespace ml: lq-a, lq-gone"]
    assert left.outcome is not None and left.outcome.message.startswith("ClusterQueue team-z ")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"kueue.x-k8s.io/queue-name": None},
         "<manifest>[0]: metadata.labels.kueue.x-k8s.io/queue-name: missing: Kueue manages only "
         "workloads with a queue (manageJobsWithoutQueueName is off by default); applied as it "
         "is, it would run outside Kueue, its pods taking capacity Kueue counts on; LocalQueues "
         "in namespace ml: lq-a, lq-gone"),
        ({"kueue.x-k8s.io/priority-class": "urgent"},
         "<manifest>[0]: metadata.labels.kueue.x-k8s.io/priority-class: no WorkloadPriorityClass "
         "'urgent' on the cluster (known: high, low)"),
    ],
)  # fmt: skip
def test_what_kueue_would_not_take_is_one_line(change: dict[str, Any], message: str) -> None:
    doc = job("x")
    for key, value in change.items():
        if value is None:
            del doc["metadata"]["labels"][key]
        else:
            doc["metadata"]["labels"][key] = value
    with pytest.raises(UserManifestError) as err:
        subs_of(doc)
    assert str(err.value) == message


def test_a_plain_scenario_has_a_local_queue_per_cluster_queue() -> None:
    data = {k: v for k, v in snapshot().items() if k != "x-snapshot"}
    doc = job("t")
    doc["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "team-a"
    (sub,) = subs_of(doc, data=data, namespace="anywhere")
    assert sub.workload is not None and sub.workload["queue"] == "team-a"


def test_predictions_say_where_and_whom_each_manifest_preempts() -> None:
    """x1 has 1 CPU free. 'small' (1 pod of 1 CPU) fits there. 'urgent' (high, 2 x 1 CPU on
    one host) does not fit beside old (low, 4 CPUs) and small: team-a preempts lower
    priority, so old is evicted and urgent takes x1; small (priority 0) is lower too but one
    victim suffices. 'huge' (6 CPUs) never fits a 5-CPU host."""
    subs = subs_of(job("small", count=1), job("urgent", labels={"kueue.x-k8s.io/priority-class": "high"}),
                   job("huge", cpus="6", count=1))  # fmt: skip
    got = simulate.to_json(simulate.predict(snapshot(), subs, "fit", "snap.yaml"))
    assert got["small"] == {"admitted": True, "flavors": {"main": "tas"},
                            "placement": {"main": {"x1": 1}}, "preempts": [], "message": ""}  # fmt: skip
    assert got["urgent"]["admitted"] is True
    assert got["urgent"]["placement"] == {"main": {"x1": 2}}
    assert got["urgent"]["preempts"] == ["ml/job-old-x1y2z"]
    assert got["huge"]["admitted"] is False and got["huge"]["preempts"] == []
    assert got["huge"]["message"].endswith(
        'doesn\'t allow to fit any of 1 pod(s). Total nodes: 1; excluded: resource "cpu": 1'
    )
    text = simulate.render_text(simulate.predict(snapshot(), subs, "fit", "snap.yaml"))
    assert "urgent: admitted on tas\n  main: x1=2\n  preempts: ml/job-old-x1y2z" in text


def test_the_command_reads_manifest_files_and_a_snapshot_file(tmp_path: Path) -> None:
    (tmp_path / "snap.yaml").write_text(yaml.safe_dump(snapshot()))
    (tmp_path / "jobs.yaml").write_text(
        yaml.safe_dump_all([job("small", count=1), job("b", count=1)])
    )
    done = subprocess.run(
        [sys.executable, "-m", "harness", "simulate", str(tmp_path / "jobs.yaml"),
         "--from", str(tmp_path / "snap.yaml"), "--format", "json"],
        capture_output=True, text=True, check=False, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert list(got) == ["small", "b"]
    assert set(got["b"]) == {"admitted", "flavors", "placement", "preempts", "message"}
    assert got["b"]["admitted"] is False  # x1's one free CPU went to small
    bad = copy.deepcopy(job("c"))
    del bad["metadata"]["labels"]
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(bad))
    done = subprocess.run(
        [sys.executable, "-m", "harness", "simulate", str(tmp_path / "bad.yaml"),
         "--from", str(tmp_path / "snap.yaml")],
        capture_output=True, text=True, check=False, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"{tmp_path / 'bad.yaml'}: metadata.labels.kueue.x-k8s.io/queue-name: missing: Kueue "
        "manages only workloads with a queue (manageJobsWithoutQueueName is off by default); "
        "applied as it is, it would run outside Kueue, its pods taking capacity Kueue counts "
        "on; LocalQueues in namespace ml: lq-a, lq-gone"
    ]


def test_html_draws_the_snapshot_after_each_submission(tmp_path: Path) -> None:
    """`--format html`: one self-contained page whose maps name the snapshot's nodes and the
    submitted job (issue 15: the same map as `oracle --format html`, for a live cluster)."""
    (tmp_path / "snap.yaml").write_text(yaml.safe_dump(snapshot()))
    (tmp_path / "jobs.yaml").write_text(yaml.safe_dump(job("small", count=1)))
    done = subprocess.run(
        [sys.executable, "-m", "harness", "simulate", str(tmp_path / "jobs.yaml"),
         "--from", str(tmp_path / "snap.yaml"), "--format", "html"],
        capture_output=True, text=True, check=False, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    page = done.stdout
    assert page.lstrip().lower().startswith("<!doctype html")
    assert "<svg" in page and "x1" in page and "small" in page
    assert "http://" not in page.replace("http://www.w3.org", "")


@pytest.mark.sim
def test_the_sim_engine_answers_as_the_fit_model() -> None:
    subs = subs_of(
        job("small", count=1), job("urgent", labels={"kueue.x-k8s.io/priority-class": "high"})
    )
    try:
        sim = simulate.to_json(simulate.predict(snapshot(), subs, "sim", "snap.yaml"))
    except Unsupported as why:
        pytest.skip(f"the sim cannot run this yet: {why}")
    fit = simulate.to_json(simulate.predict(snapshot(), subs, "fit", "snap.yaml"))
    assert sim == fit
    assert sim["urgent"]["preempts"] == ["ml/job-old-x1y2z"]


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    from harness.cli.main import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_misspelt_kueue_annotation_is_a_warning_not_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Kueue ignores `podset-requierd-topology` (so the prediction is unconstrained), but the
    user hears of it: on stderr and in the JSON, and the exit code stays 0 (issue 32 item 2)."""
    (tmp_path / "snap.yaml").write_text(yaml.safe_dump(snapshot()))
    doc = job("typo", count=1)
    doc["spec"]["template"]["metadata"]["annotations"] = {
        "kueue.x-k8s.io/podset-requierd-topology": HOST
    }
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(doc))
    argv = ["simulate", str(tmp_path / "job.yaml"), "--from", str(tmp_path / "snap.yaml")]
    code, out, err = run_cli(capsys, *argv, "--format", "json")
    assert code == 0
    warning = (
        f"{tmp_path / 'job.yaml'}: spec.template.metadata.annotations."
        "kueue.x-k8s.io/podset-requierd-topology: not a Kueue key, Kueue ignores it; "
        "did you mean 'kueue.x-k8s.io/podset-required-topology'?"
    )
    assert f"simulate: warning: {warning}" in err.splitlines()
    got = json.loads(out)
    assert got["typo"]["admitted"] is True and got["typo"]["warnings"] == [warning]
    code, out, err = run_cli(capsys, *argv)
    assert code == 0 and f"simulate: warning: {warning}" in err.splitlines()


@pytest.mark.parametrize(
    ("docs", "fail_on", "code"),
    [
        ([job("small", count=1)], "pending,preempts,unschedulable", 0),
        ([job("huge", cpus="6", count=1)], "pending", 1),
        ([job("huge", cpus="6", count=1)], "preempts,unschedulable", 0),
        ([job("urgent", labels={"kueue.x-k8s.io/priority-class": "high"})], "preempts", 1),
        ([job("urgent", labels={"kueue.x-k8s.io/priority-class": "high"})], "pending", 0),
    ],
)  # fmt: skip
def test_fail_on_turns_a_condition_into_exit_1(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    docs: list[dict[str, Any]],
    fail_on: str,
    code: int,
) -> None:
    """`--fail-on` (issue 32 item 3): exit 1 when a named condition holds for any submitted
    job, 0 otherwise; without it a waiting job is exit 0 as before."""
    (tmp_path / "snap.yaml").write_text(yaml.safe_dump(snapshot()))
    (tmp_path / "jobs.yaml").write_text(yaml.safe_dump_all(docs))
    argv = ["simulate", str(tmp_path / "jobs.yaml"), "--from", str(tmp_path / "snap.yaml")]
    assert run_cli(capsys, *argv)[0] == 0
    got, _, err = run_cli(capsys, *argv, "--fail-on", fail_on)
    assert got == code
    if code:
        assert "simulate: failing (--fail-on " in err


def test_fail_on_refuses_an_unknown_condition(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        run_cli(capsys, "simulate", "x.yaml", "--fail-on", "pending,pendng")
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert "--fail-on: unknown condition 'pendng'" in err and "did you mean 'pending'?" in err


def test_help_documents_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        run_cli(capsys, "simulate", "--help")
    text = " ".join(capsys.readouterr().out.split())
    assert "exit codes: 0" in text and "1 when a --fail-on condition holds" in text
    assert "2 bad input" in text


def test_unschedulable_pods_are_shown_and_fail_on_them() -> None:
    """Admitted, but a pod never runs (docs/scenario-extensions.md): said in text and JSON,
    and `--fail-on unschedulable` holds."""
    from harness.live import fail_on
    from harness.results.outcome import Outcome

    wide = simulate.Prediction(Outcome(
        admitted=True, placement={"main": {"r1": 1}}, unschedulable={"main": 1},
        unschedulable_reasons={"main": "kube-scheduler: 0/2 nodes are available"}))  # fmt: skip
    assert wide.to_json()["unschedulable"] == {"main": 1}
    assert simulate.render_text({"wide": wide}).splitlines()[-1] == (
        "  unschedulable: main: 1 pod(s) would never run (kube-scheduler: 0/2 nodes are available)"
    )
    assert fail_on.failing({"wide": wide}, ("pending", "unschedulable")) == ["wide: unschedulable"]
