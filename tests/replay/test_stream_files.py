"""Stream files (harness/replay/rows.py, kueueperf.py, stream.py): JSONL and CSV rows on a
--world, and Kueue's scheduler-performance generator.yaml read as it is written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness import toolchain
from harness.errors import InputError
from harness.replay.engine import replay
from harness.replay.perf_summary import queue_class_key
from harness.replay.stream import load_stream

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "suites" / "guide" / "guide-required-host.yaml"
HOST = {"mode": "required", "level": "kubernetes.io/hostname"}
CSV = """name,submitAt,runFor,class,podSet,count,requests,topologyMode,topologyLevel
train,0,100,training,main,4,nvidia.com/gpu=1,required,kubernetes.io/hostname
train-2,10,50,training,main,4,nvidia.com/gpu=1,required,kubernetes.io/hostname
small,20,30,,main,2,nvidia.com/gpu=1,,
"""


def _jsonl_rows() -> list[dict[str, object]]:
    four = {"name": "main", "count": 4, "requests": {"nvidia.com/gpu": 1}, "topology": HOST}
    return [
        {"name": "train", "submitAt": 0, "runFor": 100, "class": "training", "podSets": [four]},
        {"name": "train-2", "submitAt": 10, "runFor": 50, "class": "training",
         "podSets": [four]},
        {"name": "small", "submitAt": 20, "runFor": 30,
         "podSets": [{"name": "main", "count": 2, "requests": {"nvidia.com/gpu": 1}}]},
    ]  # fmt: skip


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_jsonl_and_csv_give_the_same_stream_and_timeline(tmp_path: Path) -> None:
    """The three jobs of docs/replay.md's worked example, written both ways: the same
    workloads, so the same timeline (train-2 waits for gpu-node-3 until 100)."""
    jsonl = _write(tmp_path, "s.jsonl", "\n".join(json.dumps(r) for r in _jsonl_rows()) + "\n")
    csv = _write(tmp_path, "s.csv", CSV)
    a, b = load_stream(jsonl, GUIDE), load_stream(csv, GUIDE)
    assert a.scenario.workloads == b.scenario.workloads
    assert a.classes == b.classes == {"train": "training", "train-2": "training",
                                      "small": "default"}  # fmt: skip
    timeline = replay(b.scenario)
    assert [x.at for x in timeline.jobs["train-2"].admissions] == [100.0]


def test_csv_rows_of_one_name_are_its_pod_sets(tmp_path: Path) -> None:
    text = "name,submitAt,runFor,podSet,count,requests\nj,0,5,a,1,cpu=1\nj,,,b,2,cpu=500m\n"
    stream = load_stream(_write(tmp_path, "s.csv", text), GUIDE)
    (job,) = stream.scenario.workloads
    assert [(p.name, p.count) for p in job.pod_sets] == [("a", 1), ("b", 2)]
    assert (job.submit_at, job.run_for) == (0.0, 5.0)


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("s.jsonl", '{"name": "a", "podSets": []}\nnot json\n',
         "s.jsonl: line 2: not JSON: Expecting value"),
        ("s.jsonl", '{"name": "a", "runFor": 0, "podSets": [{"name": "m", "count": 1, '
         '"requests": {"cpu": 1}}]}\n', "s.jsonl: line 1.runFor: must be above 0, got 0"),
        ("s.csv", "name,count,requests,runfor\n", "s.csv: line 1: unknown column 'runfor': "
         "did you mean 'runFor'?"),
        ("s.csv", "name,count,requests\na,1,cpu\n",
         "s.csv: line 2.requests: 'cpu' is not RESOURCE=QUANTITY (e.g. nvidia.com/gpu=8)"),
        ("s.csv", "name,count,requests,submitAt\na,1,cpu=1,0\na,1,cpu=1,5\n",
         "s.csv: line 3.submitAt: '5' differs from the first row of workload 'a'"),
        ("s.csv", "name,count,requests\na,1,cpu=1\nb,x,cpu=1\n",
         "s.csv: line 3.podSets[0].count: must be a whole number, got 'x'"),
        ("s.csv", "name,count,requests,queue\na,1,cpu=1,nope\n",
         "s.csv: line 2.queue: no ClusterQueue named 'nope' in clusterQueues"),
    ],
)  # fmt: skip
def test_bad_rows_are_one_line_naming_file_line_and_key(
    tmp_path: Path, name: str, text: str, message: str
) -> None:
    with pytest.raises(InputError) as err:
        load_stream(_write(tmp_path, name, text), GUIDE)
    assert str(err.value).startswith(str(tmp_path / message)), str(err.value)


def test_a_row_stream_without_a_world_exits_2_in_one_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "s.csv", CSV)
    done = subprocess.run([sys.executable, "-m", "harness", "replay", str(path)],
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"{path}: a JSONL or CSV stream needs --world "
                                                "SCENARIO"]  # fmt: skip


def _kueue_config(name: str) -> Path:
    return toolchain.kueue_module_dir() / "test/performance/scheduler/configs" / name


def test_kueues_tas_generator_config_is_read_as_written() -> None:
    """configs/tas/generator.yaml (v0.19.2): 1 block x 10 racks x 64 nodes; 5 cohorts x 6
    ClusterQueues; per ClusterQueue 120+120+110 small, 34+33+33 medium, 17+17+16 large
    workloads = 500, so 15,000. The first small workload of a set is created after one
    100 ms interval and runs 200 ms; the last large one after 17 x 1,200 ms."""
    stream = load_stream(_kueue_config("tas/generator.yaml"))
    s = stream.scenario
    assert (len(s.nodes), len(s.cluster_queues), len(s.workloads)) == (640, 30, 15_000)
    assert s.topologies[0].levels == ("cloud.provider.com/topology-block",
                                      "cloud.provider.com/topology-rack",
                                      "kubernetes.io/hostname")  # fmt: skip
    node = s.nodes[-1]
    assert node.name == "node-b0-r9-n63"
    assert node.labels["cloud.provider.com/topology-rack"] == "rack-9"
    assert node.allocatable["cpu"] == 96
    cq = s.cluster_queues[0]
    assert (cq.name, cq.cohort) == ("cq-0-0-cohort-0", "cohort-0")
    first = next(w for w in s.workloads if stream.classes[w.name] == "small-required-rack")
    assert (first.submit_at, first.run_for, first.pod_sets[0].count) == (0.1, 0.2, 2)
    assert s.priority(first) == 50
    balanced = next(w for w in s.workloads if stream.classes[w.name] == "large-balanced-rack")
    topology = balanced.pod_sets[0].topology
    assert topology is not None
    assert (topology.slice_level, topology.slice_size) == ("cloud.provider.com/topology-rack", 4)
    assert max(w.submit_at or 0 for w in s.workloads) == pytest.approx(20.4)
    assert sorted({stream.classes[w.name] for w in s.workloads})[:3] == [
        "large-balanced-rack", "large-preferred-rack", "large-required-rack"]  # fmt: skip
    assert stream.classes[queue_class_key("cq-0-0-cohort-0")] == "cq"  # queuesSets className


def test_kueues_baseline_config_has_no_topology_and_one_pod_workloads() -> None:
    stream = load_stream(_kueue_config("baseline/generator.yaml"))
    s = stream.scenario
    assert (len(s.nodes), len(s.workloads)) == (0, 15_000)
    assert s.resource_flavors[0].name == "rf" and s.resource_flavors[0].topology_name is None
    assert {w.pod_sets[0].count for w in s.workloads} == {1}


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("runtimeMs: 200", "runtimeMs: 0"), "runtimeMs: 0 is not replayed"),
        (("tasConstraint: \"required\"", "tasConstraint: \"strict\""),
         "tasConstraint: tasConstraint must be one of required, preferred, balanced"),
        (("creationIntervalMs: 100", "creationIntervalMs: 100\n        bogus: 1"),
         "unknown key 'bogus'"),
    ],
)  # fmt: skip
def test_bad_generator_configs_name_the_key(
    tmp_path: Path, edit: tuple[str, str], message: str
) -> None:
    text = _kueue_config("tas/generator.yaml").read_text().replace(*edit, 1)
    with pytest.raises(InputError) as err:
        load_stream(_write(tmp_path, "generator.yaml", text))
    assert message in str(err.value) and "cohorts[0].queuesSets[0].workloadsSets[0]" in str(
        err.value
    )
