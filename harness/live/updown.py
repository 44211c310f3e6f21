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
from harness.scenario.model import Scenario

DEFAULT_NAMESPACE = "default"


def registry() -> Path:
    """Where `up` records the run dirs it leaves running (one file each)."""
    root = Path(os.environ.get("KTH_RUN_ROOT") or tempfile.gettempdir())
    return root / "kth-up"


class AlreadyUp(HarnessError):
    """A cluster `up` started still runs, and a second one was not asked for."""


def up(scenario_file: str | None, feature_gates: str, *, another: bool = False) -> Path:
    """Start and shape a cluster, leave it running; returns its kubeconfig. Without a
    scenario: the default shape (said on stderr). One already up: refused unless `another`
    (a second cluster costs about a GiB and minutes of 2 cores; most often it was forgotten)."""
    first = running()
    if first and not another:
        raise AlreadyUp(
            f"up: a cluster `up` started is already running: KUBECONFIG={first[0] / 'kubeconfig'}"
            " (export it to use it; `down` stops it; --another starts a second one)"
        )
    if scenario_file is None:
        scenario, said = default_scenario()
        print(f"up: {said}", file=sys.stderr)
        return _up_scenario(scenario, feature_gates)
    from harness.scenario.loader import load_scenario

    return _up_scenario(load_scenario(scenario_file), feature_gates)


def running() -> list[Path]:
    """The run dirs of clusters `up` recorded whose processes still run."""
    markers = sorted(registry().glob("*")) if registry().is_dir() else []
    dirs = [Path(m.read_text().strip()) for m in markers]
    return [d for d in dirs if detached.is_running(d)]


DEFAULT_SHAPE = (
    Path(__file__).resolve().parents[1] / "scenario" / "examples" / "guide-required-host.yaml"
)
"""`up` without a scenario: the guide's first cluster (three 4-GPU nodes in two racks, two of
them half busy), the one docs/getting-started.md starts from."""


def default_scenario() -> tuple[Scenario, str]:
    """The default shape without its workloads, and the line that says so."""
    from harness.scenario.loader import scenario_from_data
    from harness.scenario.strict_yaml import parse_yaml

    try:
        text = DEFAULT_SHAPE.read_text(encoding="utf-8")
    except OSError as err:
        raise HarnessError(f"up: no scenario given and no default shape ({err})") from None
    data = {k: v for k, v in parse_yaml(text, str(DEFAULT_SHAPE)).items()
            if k not in ("workloads", "expect", "steps")}  # fmt: skip
    data["name"] = "up-default"
    scenario = covering_nodes(scenario_from_data(data, str(DEFAULT_SHAPE)))
    said = (
        "no scenario given: the guide's example cluster (suites/guide/guide-required-host) "
        f"without its workloads ({len(scenario.nodes)} nodes of 4 GPUs in 2 racks, "
        f"{len(scenario.usage)} of them half busy); `up SCENARIO.yaml` brings up your own"
    )
    return scenario, said


def covering_nodes(scenario: Scenario) -> Scenario:
    """The scenario whose ample-quota ClusterQueue also covers every
    resource its nodes offer: the Jobs a user will apply are not in the file (as for the
    fixtures)."""
    from harness.scenario import ample_quota

    return ample_quota.covering(scenario, {r for n in scenario.nodes for r in n.allocatable})


def _up_scenario(scenario: Scenario, feature_gates: str) -> Path:
    from harness.results.text import render_text
    from harness.runner.backend import ClusterBackend

    scenario = covering_nodes(scenario)
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
    """A LocalQueue in `default` per ClusterQueue, named as it (each said on stderr); the
    kubeconfig's path."""
    for cq in kube.list(KUEUE_API, "ClusterQueue"):
        name = cq["metadata"]["name"]
        print(f"up: LocalQueue {DEFAULT_NAMESPACE}/{name} -> ClusterQueue {name}", file=sys.stderr)
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
