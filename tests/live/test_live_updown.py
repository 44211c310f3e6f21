"""`down` without a cluster: it stops what `up` recorded and forgets each record, also one
whose cluster is gone (the cluster tests run up and down for real: test_live_cluster.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.kube.wait import poll_until
from harness.live import updown

REPO = Path(__file__).resolve().parents[2]


def test_down_forgets_what_it_cannot_stop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KTH_RUN_ROOT", str(tmp_path))
    assert updown.down() == []
    gone = tmp_path / "kth-local-gone"
    updown.registry().mkdir()
    (updown.registry() / gone.name).write_text(f"{gone}\n")
    (line,) = updown.down()
    assert line.startswith(f"{gone}: {gone.resolve()}: not a kept local cluster")
    assert list(updown.registry().iterdir()) == []


def test_a_state_without_workloads_loads() -> None:
    """Issue 32 item 6: nodes and usage with nothing queued is what a user brings `up`; an
    absent `workloads` is an empty list, everywhere the loader reads one."""
    import yaml

    from harness.scenario.loader import scenario_from_data

    data = yaml.safe_load((REPO / "suites/guide/guide-required-host.yaml").read_text())
    del data["workloads"], data["expect"]
    scenario = scenario_from_data(data, "state.yaml")
    assert scenario.workloads == () and len(scenario.usage) == 2


def test_up_without_a_scenario_has_the_guide_shape_with_queues_for_any_job() -> None:
    """The default shape: the guide's three 4-GPU nodes in two racks, its usage, no
    workloads; its ClusterQueue covers every resource the nodes offer, so a user's Job of
    GPUs, CPU and memory can be admitted."""
    scenario, said = updown.default_scenario()
    assert [n.name for n in scenario.nodes] == ["gpu-node-1", "gpu-node-2", "gpu-node-3"]
    assert scenario.workloads == () and scenario.expect is None
    assert "suites/guide/guide-required-host" in said and "without its workloads" in said
    (cq,) = scenario.cluster_queues
    assert set(cq.resource_groups[0].covered) == {"cpu", "memory", "nvidia.com/gpu", "pods"}


def test_a_second_up_refuses_unless_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cluster `up` started still runs: a second `up` names its KUBECONFIG and stops with
    exit 2 (one line); `--another` starts a second one."""
    import json
    import subprocess

    from harness.cli.main import main

    monkeypatch.setenv("KTH_RUN_ROOT", str(tmp_path))
    run_dir = tmp_path / "kth-local-first"
    run_dir.mkdir()
    # A process standing for its kube-apiserver: its command line names the run dir.
    sleep = subprocess.Popen(["kube-apiserver-of-kth-local-first", "30"], executable="/bin/sleep")
    cmdline = Path(f"/proc/{sleep.pid}/cmdline")
    poll_until(  # Popen returns before the exec: until then the command line is ours
        lambda: (b"kth-local-first" in cmdline.read_bytes(), "not exec'd yet"),
        what="the stand-in process to run",
        timeout=10,
        interval=0.01,
    )
    try:
        (run_dir / "state.json").write_text(json.dumps(
            {"kubeconfig": str(run_dir / "kubeconfig"), "pids": {"kube-apiserver": sleep.pid}}))  # fmt: skip
        updown.registry().mkdir()
        (updown.registry() / run_dir.name).write_text(f"{run_dir}\n")
        assert [p.name for p in updown.running()] == [run_dir.name]
        started: list[object] = []
        monkeypatch.setattr(updown, "_up_scenario", lambda *a: started.append(a) or run_dir)
        with pytest.raises(
            updown.AlreadyUp, match=rf"KUBECONFIG={run_dir / 'kubeconfig'}.*--another"
        ):
            updown.up(None, "")
        assert started == []
        assert main(["up"]) == 2
        updown.up(None, "", another=True)
        assert len(started) == 1
    finally:
        sleep.kill()
        sleep.wait()
    assert updown.running() == []  # its processes are gone: not running any more


@pytest.mark.cluster
def test_up_alone_brings_up_the_default_shape_once(tmp_path: Path) -> None:
    """On the embedded cluster: `up` without a scenario has the guide's nodes and a
    LocalQueue a Job can use (simulate admits one), a second `up` is refused, `down` stops it."""
    import json
    import os
    import re
    import subprocess
    import sys

    import yaml

    env = {**os.environ, "KTH_RUN_ROOT": str(tmp_path)}

    def harness(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True,
                              text=True, check=False, cwd=REPO, env=env, timeout=900)  # fmt: skip

    done = harness("up")
    try:
        assert done.returncode == 0, done.stderr
        assert (
            "up: no scenario given: the guide's example cluster (suites/guide/guide-required-host)"
            in done.stderr
        )
        queue = re.search(r"^up: LocalQueue default/(\S+) -> ClusterQueue \1$", done.stderr, re.M)
        assert queue is not None, done.stderr
        kubeconfig = done.stdout.strip().removeprefix("KUBECONFIG=")
        job = {"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": "try", "labels": {"kueue.x-k8s.io/queue-name": queue.group(1)}},
               "spec": {"parallelism": 2, "template": {"spec": {"containers": [
                   {"name": "c", "resources": {"requests": {"nvidia.com/gpu": "1", "cpu": "1"}}}]}}}}  # fmt: skip
        (tmp_path / "job.yaml").write_text(yaml.safe_dump(job))
        simulated = harness("simulate", str(tmp_path / "job.yaml"), "--kubeconfig", kubeconfig,
                            "--format", "json")  # fmt: skip
        assert simulated.returncode == 0, simulated.stderr
        assert json.loads(simulated.stdout)["try"]["admitted"] is True
        again = harness("up")
        assert again.returncode == 2
        assert again.stderr.strip() == (
            f"up: a cluster `up` started is already running: KUBECONFIG={kubeconfig} (export "
            "it to use it; `down` stops it; --another starts a second one)"
        )
    finally:
        stopped = harness("down")
    assert "kube-apiserver" in stopped.stdout
