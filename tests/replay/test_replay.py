"""Replaying a stream on the fit model (harness/replay/). Every expectation is worked out by
hand from Kueue's rules in each test's docstring, never copied from a run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.errors import ScenarioError
from harness.replay.engine import replay
from harness.replay.summary import percentile, summary
from harness.scenario.loader import load_scenario, scenario_from_data

REPO = Path(__file__).resolve().parents[2]
STREAMS = REPO / "suites" / "streams"
GUIDE = REPO / "suites" / "guide" / "guide-required-host.yaml"
PREEMPT = REPO / "tests" / "data" / "streams" / "preempt-and-requeue.yaml"


def _guide_stream(level: str = "kubernetes.io/hostname") -> dict[str, Any]:
    """The guide's three 4-GPU hosts, 2 GPUs busy on gpu-node-1 and gpu-node-2 (rack-1)."""
    data = yaml.safe_load(GUIDE.read_text())
    for key in ("expect", "description", "source"):
        data.pop(key, None)
    four = {"name": "main", "count": 4, "requests": {"nvidia.com/gpu": 1},
            "topology": {"mode": "required", "level": level}}  # fmt: skip
    data["workloads"] = [
        {"name": "train", "podSets": [four], "submitAt": 0, "runFor": 100},
        {"name": "train-2", "podSets": [four], "submitAt": 10, "runFor": 50},
        {"name": "small", "submitAt": 20, "runFor": 30,
         "podSets": [{"name": "main", "count": 2, "requests": {"nvidia.com/gpu": 1}}]},
    ]  # fmt: skip
    return data


def test_a_job_waits_for_the_only_host_that_fits_to_be_freed() -> None:
    """Only gpu-node-3 has 4 free GPUs: train takes it at 0; train-2 (same shape) waits until
    train finishes at 100 and runs 100-150; small (2 GPUs, any nodes) starts at once at 20
    on the 2 free GPUs of rack-1."""
    timeline = replay(scenario_from_data(_guide_stream(), "stream.yaml"))
    train, train2, small = (timeline.jobs[n] for n in ("train", "train-2", "small"))
    assert [(a.at, a.placement) for a in train.admissions] == [(0.0, {"main": {"gpu-node-3": 4}})]
    assert train.finished_at == 100.0
    assert [(a.at, a.placement) for a in train2.admissions] == [
        (100.0, {"main": {"gpu-node-3": 4}})
    ]
    assert train2.finished_at == 150.0
    (only,) = small.admissions
    assert only.at == 20.0 and small.finished_at == 50.0
    assert set(only.placement["main"]) <= {"gpu-node-1", "gpu-node-2"}
    assert sum(only.placement["main"].values()) == 2
    assert {m.at: m.pending for m in timeline.moments}[50.0] == ("train-2",)


def test_required_rack_instead_of_host_lets_both_trains_run_at_once() -> None:
    """Rack-1 has 2 + 2 free GPUs: with `required` at rack level train fits there (BestFit
    takes the tightest rack that fits, rack-1 with exactly 4 free), so train-2 gets
    gpu-node-3 at once; small then waits for the first free GPUs: train-2's end at 60."""
    timeline = replay(scenario_from_data(_guide_stream("example.com/rack"), "stream.yaml"))
    train, train2, small = (timeline.jobs[n] for n in ("train", "train-2", "small"))
    assert train.admissions[0].placement == {"main": {"gpu-node-1": 2, "gpu-node-2": 2}}
    assert (train2.admissions[0].at, train2.admissions[0].placement) == (
        10.0, {"main": {"gpu-node-3": 4}}
    )  # fmt: skip
    assert small.admissions[0].at == 60.0


def test_a_preempted_job_is_requeued_and_runs_its_full_duration_again() -> None:
    """See the file's description: low 0-10, preempted; high 10-30; low again 30-130."""
    timeline = replay(load_scenario(PREEMPT))
    low, high = timeline.jobs["low"], timeline.jobs["high"]
    assert [a.at for a in low.admissions] == [0.0, 30.0] and low.preempted_at == [10.0]
    assert low.finished_at == 130.0
    assert [a.at for a in high.admissions] == [10.0] and high.finished_at == 30.0
    figures = summary(load_scenario(PREEMPT), timeline)
    assert figures["preemptions"] == 1 and figures["gpuUtilisation"] == 1.0


def test_the_same_stream_gives_the_same_timeline() -> None:
    scenario = scenario_from_data(_guide_stream(), "stream.yaml")
    first, second = replay(scenario), replay(scenario)
    assert [j.to_json() for j in first.jobs.values()] == [j.to_json() for j in second.jobs.values()]


def test_percentiles_are_nearest_rank() -> None:
    values = [0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0]
    assert percentile(values, 0.5) == 40.0
    assert percentile(values, 0.9) == 80.0
    assert percentile(values, 0.99) == 90.0


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        ("submitAt", -1, "must be at least 0, got -1"),
        ("runFor", 0, "must be above 0, got 0"),
        ("runFor", "1h", "must be a number of seconds, got '1h'"),
    ],
)
def test_bad_stream_times_are_one_line_naming_the_key(key: str, value: Any, problem: str) -> None:
    data = _guide_stream()
    data["workloads"][1][key] = value
    with pytest.raises(ScenarioError) as err:
        scenario_from_data(data, "stream.yaml")
    assert str(err.value) == f"stream.yaml: workloads[1].{key}: {problem}"


def test_replay_command_prints_the_json_contract(tmp_path: Path) -> None:
    path = tmp_path / "stream.yaml"
    path.write_text(yaml.safe_dump(_guide_stream(), sort_keys=False))
    done = subprocess.run([sys.executable, "-m", "harness", "replay", str(path), "--format",
                           "json"], capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert set(payload) == {"jobs", "summary"}
    assert payload["jobs"]["train-2"] == {
        "submittedAt": 10.0,
        "admissions": [{"at": 100.0, "flavors": {"main": "gpu"},
                        "placement": {"main": {"gpu-node-3": 4}}}],
        "preemptedAt": [],
        "finishedAt": 150.0,
    }  # fmt: skip
    assert payload["summary"]["timeToAdmission"]["max"] == 90.0


def _two_racks() -> dict[str, Any]:
    """2 racks x 2 hosts x 4 GPUs, one ClusterQueue with 16 GPUs of quota."""
    hosts = [("h1", "r1"), ("h2", "r1"), ("h3", "r2"), ("h4", "r2")]
    return {
        "name": "two-racks",
        "topologies": [{"name": "t", "levels": ["example.com/rack", "kubernetes.io/hostname"]}],
        "resourceFlavors": [{"name": "gpu", "nodeLabels": {"example.com/pool": "gpu"},
                             "topologyName": "t"}],
        "clusterQueues": [{"name": "a", "resourceGroups": [{"coveredResources":
                           ["nvidia.com/gpu"], "flavors": [{"name": "gpu", "resources": [
                           {"name": "nvidia.com/gpu", "nominalQuota": 16}]}]}]}],
        "nodes": [{"name": h, "labels": {"example.com/pool": "gpu", "example.com/rack": r},
                   "allocatable": {"nvidia.com/gpu": 4, "pods": 110}} for h, r in hosts],
        "workloads": [
            {"name": "one-host", "submitAt": 0, "runFor": 100, "podSets": [{"name": "main",
             "count": 4, "requests": {"nvidia.com/gpu": 1}, "topology": HOST}]},
            {"name": "one-rack", "submitAt": 0, "runFor": 50, "podSets": [{"name": "main",
             "count": 8, "requests": {"nvidia.com/gpu": 1}, "topology": RACK}]},
        ],
    }  # fmt: skip


HOST = {"mode": "required", "level": "kubernetes.io/hostname"}
RACK = {"mode": "required", "level": "example.com/rack"}


def test_cluster_queue_usage_is_kueues_perf_test_figure() -> None:
    """Both start at 0: one-host holds 4 GPUs 0-100, one-rack 8 GPUs 0-50; the stream lasts
    0-100. Used: 12 x 50 + 4 x 50 = 800 GPU-seconds of 16 x 100: 50 %."""
    scenario = scenario_from_data(_two_racks(), "two-racks.yaml")
    figures = summary(scenario, replay(scenario))
    assert figures["clusterQueueUsage"] == {"a": 50.0}


def test_fragmentation_counts_domains_that_could_take_n_gpus() -> None:
    """At 0 one-host fills a host of one rack and one-rack the whole other rack: 4 GPUs free
    in one rack, on one host. After 50 the second rack is free again: racks with 4 and 8
    free, three free hosts."""
    scenario = scenario_from_data(_two_racks(), "two-racks.yaml")
    frag = summary(scenario, replay(scenario))["fragmentation"]["gpu"]
    rack, host = frag["example.com/rack"], frag["kubernetes.io/hostname"]
    assert rack[0] == {"at": 0.0, "largestFree": 4,
                       "domainsWith": {"1": 1, "2": 1, "4": 1, "8": 0}}  # fmt: skip
    assert host[0] == {"at": 0.0, "largestFree": 4, "domainsWith": {"1": 1, "2": 1, "4": 1}}
    later = next(i for i, s in enumerate(rack) if s["at"] > 50)
    assert rack[later]["largestFree"] == 8
    assert rack[later]["domainsWith"] == {"1": 2, "2": 2, "4": 2, "8": 1}
    assert host[later]["domainsWith"] == {"1": 3, "2": 3, "4": 3}


@pytest.mark.parametrize("scale", ["0", "-1", "ten", "nan"])
def test_a_time_scale_is_a_number_above_zero(scale: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "harness", "replay", str(STREAMS / "stream-quota-not-nodes.yaml"),
         "--engine", "local", "--time-scale", scale],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert f"argument --time-scale: {scale!r} is not a number above 0" in done.stderr


def test_node_failure_evictions_and_repairs_are_compared_with_a_cluster() -> None:
    """A stream's node events on a cluster: how often a node failure evicted a job and
    where its repairs put it are differences like a preemption's count."""
    from harness.replay.agreement import disagreements

    admitted = {"at": 0.0, "flavors": {"main": "gpu"}, "placement": {"main": {"n1": 1}}}
    repaired = {"at": 10.0, "flavors": {"main": "gpu"}, "placement": {"main": {"n2": 1}}}
    fit = {"a": {"submittedAt": 0.0, "admissions": [admitted], "preemptedAt": [],
                 "finishedAt": 100.0, "replacements": [repaired]}}  # fmt: skip
    left_alone = {"a": {**fit["a"], "replacements": []}}
    evicted = {"a": {**fit["a"], "evictedAt": [10.0]}}
    assert disagreements(fit, fit) == []
    assert disagreements(fit, left_alone) == [
        "a: repaired in place to at 10 s on n2=1 by the fit model, to never by the cluster"
    ]
    assert disagreements(fit, evicted) == [
        "a: evicted by a node failure 0 time(s) by the fit model, 1 by the cluster"
    ]
