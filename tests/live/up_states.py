"""What the live-state tests share: a cluster `up` brings up shaped as a scenario (`down`
afterwards), Jobs to submit, and the two sides compared: `simulate --kubeconfig` (the
snapshot of that cluster, on an engine) and what Kueue then does with the Job.

A Job waiting for admission checks (quota reserved, not admitted) is its own answer:
`quotaReserved` with its placement, on both sides."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from harness.kube import KUEUE_API, Kube, poll_until
from harness.runner.reading import State, admission_placement, evictions, preempted, state
from harness.runner.waits import Timeouts, find_workload, settle

REPO = Path(__file__).resolve().parents[2]
HOST = "kubernetes.io/hostname"
RACK = "example.com/rack"
GPU = "nvidia.com/gpu"
KEYS = ("admitted", "quotaReserved", "placement", "message", "preempts")


def harness(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "harness", *args], capture_output=True,
                          text=True, check=False, cwd=REPO)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done


@contextmanager
def up(directory: Path, scenario: dict[str, Any]) -> Iterator[Kube]:
    """`up` on the scenario (its workloads submitted and settled); `down` afterwards."""
    path = directory / f"{scenario['name']}.yaml"
    path.write_text(yaml.safe_dump(scenario, sort_keys=False))
    try:
        done = harness("up", str(path))
        (line,) = [x for x in done.stdout.splitlines() if x.startswith("KUBECONFIG=")]
        kube = Kube(line.removeprefix("KUBECONFIG="))
        yield kube
        kube.close()
    finally:
        subprocess.run([sys.executable, "-m", "harness", "down"], capture_output=True,
                       check=False, cwd=REPO)  # fmt: skip


def job(name: str, queue: str, count: int, gpus: int, level: str, **labels: str) -> dict[str, Any]:
    """`count` pods of `gpus` GPUs each, required within one `level` domain."""
    return {
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": queue, **labels}},
        "spec": {"parallelism": count, "completions": count, "template": {
            "metadata": {"annotations": {"kueue.x-k8s.io/podset-required-topology": level}},
            "spec": {"restartPolicy": "Never",
                     "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"limits": {GPU: str(gpus)}}}]}}},
    }  # fmt: skip


def snapshot_of(kube: Kube, tmp_path: Path) -> dict[str, Any]:
    """`snapshot --kubeconfig` of the cluster, as the file it writes."""
    out = tmp_path / "now.yaml"
    harness("snapshot", "--kubeconfig", str(kube.kubeconfig), "-o", str(out))
    data: dict[str, Any] = yaml.safe_load(out.read_text())
    return data


def predict(kube: Kube, tmp_path: Path, doc: dict[str, Any], engine: str) -> dict[str, Any]:
    path = tmp_path / f"{doc['metadata']['name']}.yaml"
    path.write_text(yaml.safe_dump(doc))
    done = harness("simulate", str(path), "--kubeconfig", str(kube.kubeconfig),
                   "--engine", engine, "--format", "json")  # fmt: skip
    answer = json.loads(done.stdout)[doc["metadata"]["name"]]
    return {k: answer.get(k, False if k == "quotaReserved" else None) for k in KEYS}


def _ref(wl: dict[str, Any]) -> str:
    return f"{wl['metadata']['namespace']}/{wl['metadata']['name']}"


def kueue_decides(kube: Kube, doc: dict[str, Any]) -> dict[str, Any]:
    """Submit for real (namespace default); once its Workload has settled and every
    Workload has kept its state for QUIET seconds (`_quiet`: what it set off, such as a
    fair-sharing cascade of preemptions, has happened), Kueue's decision and the workloads it
    preempted for it. The one home of this for the live tests (test_live_cluster.py and the
    up_states users)."""
    t = Timeouts()
    before = {_ref(w) for w in kube.list(KUEUE_API, "Workload") if preempted(w)}
    kube.create({**doc, "metadata": {**doc["metadata"], "namespace": "default"}})
    name = find_workload(kube, "default", "Job", doc["metadata"]["name"], t)

    def read() -> State:
        seen = state(kube.get_or_none(KUEUE_API, "Workload", name, "default"))
        if seen.kind == "pending" and "Pending the preemption" in seen.message:
            return State("unsettled", seen.message)  # victims still on their way out
        return seen

    seen = settle(read, what=f"Workload default/{name}", t=t)
    _quiet(kube, t)
    victims = sorted(_ref(w) for w in kube.list(KUEUE_API, "Workload") if preempted(w))
    wl = kube.get(KUEUE_API, "Workload", name, "default")
    holds = seen.kind in ("admitted", "reserved")
    return {
        "admitted": seen.kind == "admitted",
        "quotaReserved": seen.kind == "reserved",
        "placement": admission_placement(wl, {}) if holds else {},
        "message": seen.message,
        "preempts": [v for v in victims if v not in before],
    }


QUIET = 5.0
"""Seconds every Workload must keep its state for the cluster to count as settled: what
the Job set off (victims requeued, preempting others in turn) happens in Kueue's next
cycles, and the engines' answers include all of it ("each settles before the next")."""


def _quiet(kube: Kube, t: Timeouts) -> None:
    """Until no Workload has changed state or eviction count for QUIET seconds, polled; past
    the settle deadline WaitTimeout names the wait and the Workloads last seen."""
    last: dict[str, Any] = {"seen": None, "since": time.monotonic()}

    def probe() -> tuple[bool, str]:
        seen = sorted(
            (_ref(w), state(w).kind, evictions(w)) for w in kube.list(KUEUE_API, "Workload")
        )
        if seen != last["seen"]:
            last.update(seen=seen, since=time.monotonic())
        return time.monotonic() - last["since"] >= QUIET, str(seen)

    poll_until(probe, what=f"every Workload unchanged for {QUIET} s", timeout=t.settle)


def compare(kube: Kube, tmp_path: Path, jobs: list[dict[str, Any]]) -> list[str]:
    """Each Job predicted by both engines on the cluster as it is, then submitted: the
    disagreements (none expected), printing what Kueue did."""
    differ, seen = [], []
    for doc in jobs:
        name = doc["metadata"]["name"]
        by_fit = predict(kube, tmp_path, doc, "fit")
        by_sim = predict(kube, tmp_path, doc, "sim")
        real = kueue_decides(kube, doc)
        seen.append(f"{name}: {real}")
        differ += [f"{name}: {engine} predicted {said}, Kueue did {real}"
                   for engine, said in (("fit", by_fit), ("sim", by_sim)) if said != real]  # fmt: skip
    print("\n".join(seen))
    return differ
