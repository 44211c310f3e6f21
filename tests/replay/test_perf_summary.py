"""Kueue's perf-test summary on a replay (harness/replay/perf_summary.py): ClusterQueue usage
per ClusterQueue and per class, time to admission per workload class, as Kueue v0.19.2's
test/performance/scheduler runner/recorder/recorder.go and checker/checker_test.go compute
them. Every figure is worked out by hand in the test's docstring, never copied from a run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.errors import InputError, ScenarioError
from harness.replay.expect import bounds, failures
from harness.replay.perf_csv import COLUMNS
from harness.replay.result import replay_result
from harness.replay.stream import load_stream
from harness.scenario.keypath import KeyPath
from harness.scenario.loader import scenario_from_data

REPO = Path(__file__).resolve().parents[2]
PREEMPT = REPO / "tests" / "data" / "streams" / "preempt-and-requeue.yaml"
STREAMS = REPO / "suites" / "streams"

GENERATOR = {
    "cohorts": [
        {"className": "co", "count": 1, "queuesSets": [
            {"className": "big", "count": 1, "nominalQuota": 4, "workloadsSets": [
                {"count": 2, "creationIntervalMs": 1000, "workloads": [
                    {"className": "long", "runtimeMs": 10000, "request": 4}]}]},
            {"className": "small", "count": 2, "nominalQuota": 2, "workloadsSets": [
                {"count": 1, "creationIntervalMs": 500, "workloads": [
                    {"className": "short", "runtimeMs": 3000, "request": 1}]}]},
        ]},
        {"className": "spare", "count": 1, "queuesSets": [
            {"className": "idle", "count": 1, "nominalQuota": 3}]},
    ],
}  # fmt: skip


def _generator_result(tmp_path: Path) -> dict[str, Any]:
    path = tmp_path / "small" / "generator.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(GENERATOR))
    stream = load_stream(path)
    return replay_result(stream.scenario, stream.classes)


def test_generator_classes_give_kueues_summary_per_class(tmp_path: Path) -> None:
    """Cohort co-0 has big-0-0-co-0 (4 cpu) and small-1-0-co-0, small-1-1-co-0 (2 cpu each):
    8 cpu. Each small queue gets one 1-cpu `short` at 0.5 s (run 3 s: 0.5-3.5); big gets a
    4-cpu `long` at 1.0 (runs 1-11) and another at 2.0, which needs 4 of the cohort's 8 - 6
    used = 2 free, so it waits until the smalls end at 3.5 and then borrows: 3.5-13.5.

    big: 4 cpu x 10 s + 4 cpu x 10 s = 80 cpu-s = 80,000,000 mCPU-ms, watched from its
    creation (0) to its last change (13.5 s): 80,000,000 // 13,500 = 5,925 mCPU on average,
    80,000,000 x 100 / (4,000 x 13,500) = 148.1481 %. small: 2 x 1 cpu x 3 s = 6,000,000
    mCPU-ms of 2 x 2,000 mCPU over 0-3.5 s: 6,000,000 // 3,500 = 1,714; 6e8 / (4,000 x 3,500)
    = 42.8571 %, each queue 3 / (2 x 3.5) = 42.86 %. idle (its own cohort, no workloads) is
    watched for no time: no usage, an average of 0.

    long: admitted after 0 and 1,500 ms, finished 10,000 and 11,500 ms after creation: means
    750 and 10,750. short: 0 and 3,000."""
    summary = _generator_result(tmp_path)["summary"]
    assert summary["clusterQueueUsage"] == {
        "big-0-0-co-0": 148.15, "small-1-0-co-0": 42.86, "small-1-1-co-0": 42.86,
        "idle-0-0-spare-0": None,
    }  # fmt: skip
    perf = summary["kueuePerf"]
    assert perf["clusterQueueClasses"] == {
        "big": {"cpuUsed": 80_000_000, "cpuAverageUsage": 5_925, "nominalQuota": 4_000,
                "firstEventTime": 0.0, "lastEventTime": 13.5, "usage": 148.1481},
        "idle": {"cpuUsed": 0, "cpuAverageUsage": 0, "nominalQuota": 3_000,
                 "firstEventTime": 0.0, "lastEventTime": 0.0, "usage": None},
        "small": {"cpuUsed": 6_000_000, "cpuAverageUsage": 1_714, "nominalQuota": 4_000,
                  "firstEventTime": 0.0, "lastEventTime": 3.5, "usage": 42.8571},
    }  # fmt: skip
    assert perf["workloadClasses"] == {
        "long": {"count": 2, "totalEvictions": 0, "averageTimeToAdmissionMs": 750,
                 "averageTimeToFinishMs": 10_750},
        "short": {"count": 2, "totalEvictions": 0, "averageTimeToAdmissionMs": 0,
                  "averageTimeToFinishMs": 3_000},
    }  # fmt: skip


def test_time_to_admission_counts_the_latest_admission_and_never_admitted_as_zero() -> None:
    """preempt-and-requeue plus `huge` (16 GPUs of an 8-GPU quota, priority low, at 5: never
    admitted). low runs 0-10, is preempted by high (10-30) and runs again 30-130.

    The recorder sets a workload's time to admission at each change to Admitted, so low's is
    its latest admission: 30,000 ms (the summary's own per-class mean counts the first, 0);
    huge, never admitted, keeps 0 and still counts: class low = (30,000 + 0) // 2 = 15,000,
    finish (130,000 + 0) // 2 = 65,000, one eviction. high: 0 and 20,000.
    The ClusterQueue (class default) holds 8 GPUs from 0 to 130 (low, high, low): 1,040
    GPU-s = 1,040,000,000 mGPU-ms of 8,000 mGPU over 130,000 ms: 8,000 on average, 100 %."""
    data = yaml.safe_load(PREEMPT.read_text())
    data["workloads"].append({"name": "huge", "queue": "team", "priorityClass": "low",
                              "submitAt": 5, "runFor": 10, "podSets": [{"name": "main",
                              "count": 16, "requests": {"nvidia.com/gpu": 1}}]})  # fmt: skip
    summary = replay_result(scenario_from_data(data, str(PREEMPT)))["summary"]
    assert summary["neverAdmitted"] == ["huge"]
    assert summary["timeToAdmissionByClass"]["low"]["mean"] == 0.0
    assert summary["kueuePerf"]["workloadClasses"] == {
        "high": {"count": 1, "totalEvictions": 0, "averageTimeToAdmissionMs": 0,
                 "averageTimeToFinishMs": 20_000},
        "low": {"count": 2, "totalEvictions": 1, "averageTimeToAdmissionMs": 15_000,
                "averageTimeToFinishMs": 65_000},
    }  # fmt: skip
    assert summary["kueuePerf"]["clusterQueueClasses"] == {
        "default": {"cpuUsed": 1_040_000_000, "cpuAverageUsage": 8_000, "nominalQuota": 8_000,
                    "firstEventTime": 0.0, "lastEventTime": 130.0, "usage": 100.0},
    }  # fmt: skip
    assert summary["clusterQueueUsage"] == {"team": 100.0}


def _bounds(expect: dict[str, Any]) -> list[Any]:
    return bounds(KeyPath("s.yaml", "replay.expect", expect))


def test_rangespec_keys_are_the_checkers_bounds(tmp_path: Path) -> None:
    """Kueue's checker fails a class below clusterQueueClassesMinUsage or above
    wlClassesMaxAvgTimeToAdmissionMs; the generator stream above gives big 148.1481 %,
    small 42.8571 %, long 750 ms, short 0 ms."""
    result = _generator_result(tmp_path)
    passing = _bounds({"clusterQueueClassesMinUsage": {"big": 148, "small": 42.8571},
                       "wlClassesMaxAvgTimeToAdmissionMs.long": 750})  # fmt: skip
    assert [(b.path[-2:], b.op) for b in passing] == [
        (("big", "usage"), ">="), (("small", "usage"), ">="),
        (("long", "averageTimeToAdmissionMs"), "<="),
    ]  # fmt: skip
    assert failures(passing, result, "s.yaml") == []
    failing = _bounds({"clusterQueueClassesMinUsage.small": 43,
                       "wlClassesMaxAvgTimeToAdmissionMs": {"long": 749},
                       "clusterQueueClassesMinUsage.idle": 0})  # fmt: skip
    assert failures(failing, result, "s.yaml") == [
        "clusterQueueClassesMinUsage.small: expected >= 43, the replay gave 42.8571",
        "wlClassesMaxAvgTimeToAdmissionMs.long: expected <= 749, the replay gave 750",
        "clusterQueueClassesMinUsage.idle: expected >= 0, the replay gave None",
    ]
    own_bound = _bounds({"clusterQueueClassesMinUsage.big": "< 150"})
    assert failures(own_bound, result, "s.yaml") == []
    with pytest.raises(InputError, match=r"replay\.expect\.clusterQueueClassesMinUsage\.nope"):
        failures(_bounds({"clusterQueueClassesMinUsage.nope": 1}), result, "s.yaml")


def test_a_rangespec_bound_must_be_a_number() -> None:
    with pytest.raises(ScenarioError, match=r"clusterQueueClassesMinUsage.*must be a number"):
        _bounds({"clusterQueueClassesMinUsage": {"cq": "most"}})


def test_a_world_without_classes_puts_every_cluster_queue_in_default() -> None:
    """Kueue's recorder groups ClusterQueues without the class label under one (empty) class;
    here `default`."""
    stream = load_stream(PREEMPT)
    assert set(replay_result(stream.scenario, stream.classes)["summary"]["kueuePerf"][
        "clusterQueueClasses"]) == {"default"}  # fmt: skip


def _cli(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "harness", "replay", *args],
                          capture_output=True, text=True, check=False, cwd=REPO)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_csv_and_text_outputs_carry_the_per_class_figures() -> None:
    """stream-kueue-perf-classes (its description works the figures out): workload classes
    high (0 ms, finish 30,000) and low (25,000 ms, finish 145,000, one eviction); the
    ClusterQueue class default 2,320,000,000 mGPU-ms of 16,000 over 0-150 s = 96.6667 %;
    team-a 100 %, team-b 93.33 %."""
    stream = str(STREAMS / "stream-kueue-perf-classes.yaml")
    assert _cli(stream, "--format", "csv").splitlines() == [
        ",".join(COLUMNS),
        "base,workloadClass,high,1,0,0,30000,,,,,,",
        "base,workloadClass,low,2,1,25000,145000,,,,,,",
        "base,clusterQueueClass,default,,,,,2320000000,15466,16000,0.0,150.0,96.6667",
        "base,clusterQueue,team-a,,,,,,,,,,100.0",
        "base,clusterQueue,team-b,,,,,,,,,,93.33",
    ]
    text = _cli(stream).splitlines()
    assert "ClusterQueue usage per class (Kueue's perf test): default 96.6667%" in text
    assert "mean time to admission per class (Kueue's perf test): high 0 ms, low 25000 ms" in text


def test_compare_prints_the_per_class_figures_side_by_side() -> None:
    """stream-cohort-lending-limit (base): b-job 10-60 alone, a-big never admitted: class
    default 8 GPUs x 50 s of 16 over 0-60 s = 41.6667 %, mean wait (0 + 0) // 2 = 0 ms.
    stream-cohort-lending (other): a-big 16 GPUs 0-100, b-job waits 90 s and runs 100-150:
    2,000 GPU-s of 16 x 150 = 83.3333 %, mean wait (0 + 90,000) // 2 = 45,000 ms."""
    out = _cli(str(STREAMS / "stream-cohort-lending-limit.yaml"),
               "--compare", str(STREAMS / "stream-cohort-lending.yaml")).splitlines()  # fmt: skip
    assert [line.split() for line in out if line.startswith(("CQ usage", "mean wait ms"))] == [
        ["CQ", "usage", "%", "default", "41.6667", "83.3333"],
        ["mean", "wait", "ms", "default", "0", "45000"],
    ]
