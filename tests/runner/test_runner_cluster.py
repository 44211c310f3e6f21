"""The cluster runner on real Kueue: guide scenarios, webhook refusals, directly built
Workloads, NotReady nodes, every step action, and Ctrl-C in the middle of a scenario.

Marked `cluster` (enable with --cluster=local). Expectations come from the scenario files
(derived by reasoning about TAS) or from the fit model, never from a previous run.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from harness.fit import fit
from harness.results.comparison import against_expectations, against_prediction
from harness.runner.backend import ClusterBackend
from harness.scenario.loader import load_scenario, scenario_from_data
from harness.scenario.model import Scenario
from tests.ctrl_c import restore_ctrl_c

pytestmark = pytest.mark.cluster
REPO = Path(__file__).resolve().parents[2]
GUIDE = sorted((REPO / "suites" / "guide").glob("*.yaml"))
RACK = "example.com/rack"


def _agrees_with_model(scenario: Scenario, runner: ClusterBackend) -> None:
    observed = runner.run(scenario)
    predicted = fit(scenario)
    diffs = against_prediction(predicted.outcomes, observed.outcomes)
    assert len(observed.steps) == len(predicted.steps)
    for want, got in zip(predicted.steps, observed.steps, strict=True):
        diffs += against_prediction(want, got)
    assert not diffs, "\n".join(diffs) + "\n" + observed.details


def _scenario(name: str, **data: Any) -> Scenario:
    base: dict[str, Any] = {
        "name": name,
        "topology": {"name": "runner-topology", "levels": [RACK, "kubernetes.io/hostname"]},
        "nodes": [
            {"name": "n1", "labels": {RACK: "r1"}, "allocatable": {"cpu": 4, "pods": 20}},
            {"name": "n2", "labels": {RACK: "r1"}, "allocatable": {"cpu": 4, "pods": 20}},
        ],
    }
    return scenario_from_data({**base, **data}, f"<{name}>")


@pytest.mark.parametrize("path", GUIDE, ids=[p.stem for p in GUIDE])
def test_guide_scenario_holds_on_real_kueue(path: Path, runner: ClusterBackend) -> None:
    scenario = load_scenario(path)
    observed = runner.run(scenario)
    diffs = against_expectations(scenario.expect or {}, observed.outcomes)
    for index, step in enumerate(scenario.steps):
        diffs += against_expectations(step.expect or {}, observed.steps[index])
    assert not diffs, "\n".join(diffs) + "\n" + observed.details
    assert observed.artifacts is not None and (observed.artifacts / "objects.yaml").is_file()
    assert (observed.artifacts / "logs" / "kueue.log").is_file()


def test_job_refused_by_the_webhook_is_reported_rejected(runner: ClusterBackend) -> None:
    bad = {
        "name": "too-big-slices",
        "podSets": [
            {
                "name": "main",
                "count": 2,
                "requests": {"cpu": 1},
                "topology": {
                    "mode": "required",
                    "level": RACK,
                    "sliceLevel": "kubernetes.io/hostname",
                    "sliceSize": 3,
                },
            }
        ],
    }
    scenario = _scenario("runner-webhook-refusal", workloads=[bad])
    observed = runner.run(scenario)
    outcome = observed.outcomes["too-big-slices"]
    assert outcome.rejected and not outcome.admitted
    assert "podset-slice-size" in outcome.message
    assert fit(scenario).outcomes["too-big-slices"].rejected


def test_workload_with_two_pod_sets_and_a_not_ready_node(runner: ClusterBackend) -> None:
    """A directly built Workload; n3 has room for everything but is NotReady, so Kueue must
    place around it exactly as the fit model does."""
    nodes = [
        {"name": "n1", "labels": {RACK: "r1"}, "allocatable": {"cpu": 3, "pods": 20}},
        {"name": "n2", "labels": {RACK: "r1"}, "allocatable": {"cpu": 2, "pods": 20}},
        {
            "name": "n3",
            "labels": {RACK: "r2"},
            "allocatable": {"cpu": 64, "pods": 99},
            "ready": False,
        },
    ]
    two = {
        "name": "two-sets",
        "podSets": [
            {
                "name": "leader",
                "count": 1,
                "requests": {"cpu": 1},
                "topology": {"mode": "required", "level": RACK},
            },
            {
                "name": "workers",
                "count": 4,
                "requests": {"cpu": 1},
                "topology": {"mode": "required", "level": RACK},
            },
        ],
    }
    scenario = _scenario("runner-two-pod-sets", nodes=nodes, workloads=[two])
    _agrees_with_model(scenario, runner)


def test_every_step_action_agrees_with_the_model(runner: ClusterBackend) -> None:
    host4 = {"mode": "required", "level": "kubernetes.io/hostname"}
    a = {
        "name": "a",
        "podSets": [{"name": "main", "count": 4, "requests": {"cpu": 1}, "topology": host4}],
    }
    b = {
        "name": "b",
        "podSets": [{"name": "main", "count": 4, "requests": {"cpu": 1}, "topology": host4}],
    }
    steps = [
        {"cordon": "n2"},
        {"submit": b},  # n1 is full and n2 cordoned: b waits
        {"uncordon": "n2"},  # b goes to n2
        {"add-node": {"name": "n3", "labels": {RACK: "r2"}, "allocatable": {"cpu": 4, "pods": 9}}},
        {"add-usage": {"name": "n3-busy", "node": "n3", "requests": {"cpu": 1}}},
        {"delete-workload": "a"},
        {"delete-usage": "n3-busy"},
        {"delete-node": "n3"},
    ]
    scenario = _scenario("runner-every-step", workloads=[a], steps=steps)
    _agrees_with_model(scenario, runner)


def _pids_mentioning(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_ctrl_c_mid_scenario_leaves_no_process_behind() -> None:
    """SIGINT while a step is settling: the run command stops etcd, kube-apiserver,
    controller-manager, scheduler, KWOK and Kueue before it exits."""
    scenario = REPO / "suites" / "guide" / "guide-required-host-waits-for-freed-node.yaml"
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "run", str(scenario)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=restore_ctrl_c,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, "")))  # type: ignore[union-attr]
    reader.start()
    try:
        deadline = time.monotonic() + 300
        while not any("step 1 (delete-usage)" in line for line in lines):
            assert proc.poll() is None, "harness run ended early:\n" + "".join(lines)
            assert time.monotonic() < deadline, "no step started in time:\n" + "".join(lines)
            time.sleep(0.2)
        started = {
            m.group(1): int(m.group(2))
            for line in lines
            if (m := re.search(r"started (\S+) \(pid (\d+)\)", line))
        }
        run_dir = next(line.split("run dir ", 1)[1].strip() for line in lines if "run dir " in line)
        assert {"etcd", "kube-apiserver", "kueue", "kwok"} <= set(started)
        assert all(_alive(pid) for pid in started.values())
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=120) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.join(timeout=10)
        if proc.stderr is not None:
            proc.stderr.close()
    survivors = {name: pid for name, pid in started.items() if _alive(pid)}
    assert not survivors, f"still running after Ctrl-C: {survivors}"
    assert not [p for p in _pids_mentioning(run_dir) if _alive(p)]


def test_existing_cluster_runs_a_scenario_and_removes_what_it_made() -> None:
    """`--cluster=existing`: a cluster the runner did not start (here one the local provider
    runs) gets the scenario, and afterwards holds none of the runner's objects."""
    from harness.kube import RUN_LABEL, Kube
    from harness.providers import create_provider

    cluster = create_provider("local")
    handle = cluster.start()
    try:
        backend = ClusterBackend(name="existing", kubeconfig=handle.kubeconfig)
        scenario = load_scenario(REPO / "suites" / "guide" / "guide-required-host.yaml")
        try:
            observed = backend.run(scenario)
        finally:
            backend.close()
        assert not against_expectations(scenario.expect or {}, observed.outcomes)
        kube = Kube(handle.kubeconfig)
        sel = f"{RUN_LABEL}={backend.run_id}"
        assert kube.list("v1", "Node", labels=sel) == []
        assert kube.list("kueue.x-k8s.io/v1beta2", "ClusterQueue", labels=sel) == []
        kube.close()
    finally:
        cluster.stop()
