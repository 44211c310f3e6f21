"""`python -m harness up [SCENARIO.yaml]` / `down`: a real Kueue to try kubectl, snapshot
and simulate on, without Docker.

`up` starts the embedded cluster and leaves it running: shaped as the scenario says by the
scenario runner (nodes, usage pods, Kueue objects; its workloads submitted and settled),
plus a LocalQueue in namespace `default` for every ClusterQueue, named as it, so a user's
Job with `kueue.x-k8s.io/queue-name: <ClusterQueue>` needs no namespace. It prints
`KUBECONFIG=<path>` and exits 0. Each cluster it starts is recorded under the run root
(`kth-up/`), so `down` stops every one and removes its files.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from harness.errors import HarnessError
from harness.kube import KUEUE_API, RUN_LABEL, Kube
from harness.providers.local import detached
from harness.providers.local.cluster import LocalCluster

DEFAULT_NAMESPACE = "default"


def registry() -> Path:
    """Where `up` records the run dirs it leaves running (one file each)."""
    root = Path(os.environ.get("KTH_RUN_ROOT") or tempfile.gettempdir())
    return root / "kth-up"


def up(scenario_file: str | None, feature_gates: str) -> Path:
    """Start and shape a cluster, leave it running; returns its kubeconfig."""
    if scenario_file is None:
        cluster = LocalCluster(keep=True, feature_gates=feature_gates)
        try:
            handle = cluster.start()
        except BaseException:
            _discard(cluster.layout.run_dir if cluster.layout else None)
            raise
        _record(handle.run_dir)
        kube = Kube(handle.kubeconfig)
        try:
            return _with_default_queues(kube, "up")
        finally:
            kube.close()
    return _up_scenario(scenario_file, feature_gates)


def _up_scenario(scenario_file: str, feature_gates: str) -> Path:
    from harness.results.text import render_text
    from harness.runner.backend import ClusterBackend
    from harness.scenario.loader import load_scenario

    scenario = load_scenario(scenario_file)
    backend = ClusterBackend("local", keep=True, feature_gates=feature_gates)
    try:
        seen = backend.run(scenario)
    except BaseException:
        layout = getattr(backend.provider, "layout", None)
        backend.keep = False  # a failed start or run leaves nothing behind
        backend.close()
        _discard(layout.run_dir if layout else None)
        raise
    assert backend.kube is not None and backend.provider is not None
    run_dir = backend.provider.start().run_dir  # started already: its handle
    _record(run_dir)
    print(render_text(seen.outcomes), file=sys.stderr)
    kubeconfig = _with_default_queues(backend.kube, backend.run_id)
    backend.close()  # keep=True: the processes stay
    return kubeconfig


def _discard(run_dir: Path | None) -> None:
    """A kept cluster keeps its run dir even when stopped; one that failed must not."""
    if run_dir is not None:
        shutil.rmtree(run_dir, ignore_errors=True)


def _record(run_dir: Path) -> None:
    registry().mkdir(parents=True, exist_ok=True)
    (registry() / run_dir.name).write_text(str(run_dir) + "\n")


def _with_default_queues(kube: Kube, run_id: str) -> Path:
    """A LocalQueue in `default` per ClusterQueue, named as it; the kubeconfig's path."""
    for cq in kube.list(KUEUE_API, "ClusterQueue"):
        name = cq["metadata"]["name"]
        kube.apply(
            {
                "apiVersion": KUEUE_API,
                "kind": "LocalQueue",
                "metadata": {"name": name, "namespace": DEFAULT_NAMESPACE,
                             "labels": {RUN_LABEL: run_id}},
                "spec": {"clusterQueue": name},
            }
        )  # fmt: skip
    return kube.kubeconfig


def down() -> list[str]:
    """Stop every cluster `up` left running; one line per cluster, what was stopped."""
    lines = []
    for marker in sorted(registry().glob("*")) if registry().is_dir() else []:
        run_dir = Path(marker.read_text().strip())
        try:
            stopped = detached.stop_detached(run_dir)
        except HarnessError as err:
            lines.append(f"{run_dir}: {err}")
        else:
            lines.append(f"{run_dir}: stopped {', '.join(stopped) or 'nothing (already down)'}")
        marker.unlink()
    return lines
