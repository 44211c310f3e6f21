"""Version-2 details on real Kueue (the embedded cluster): the pre-admission a preemption must
undo, and one applied under another field manager. Every file under suites/v2 runs as a
scenario item in `make test`'s pass on the embedded cluster (and `make e2e`), once.

Marked `cluster` (enable with --cluster-tests or --cluster=local): `make test` runs them.
Expectations come from the scenario files and the fit model, never from a previous run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.kube import KUEUE_API, Obj
from harness.runner import session
from harness.runner.backend import ClusterBackend, namespace_for
from harness.scenario.loader import scenario_from_data
from harness.scenario.model import Scenario

pytestmark = pytest.mark.cluster
REPO = Path(__file__).resolve().parents[2]


def _preemption(name: str) -> Scenario:
    """`old` (priority 1, admitted before the scenario) holds all 4 GPUs of one host; `new`
    (priority 100) needs them, and its ClusterQueue preempts lower priorities."""
    data: dict[str, Any] = {
        "name": name,
        "topologies": [{"name": "v2-hosts", "levels": ["kubernetes.io/hostname"]}],
        "resourceFlavors": [
            {
                "name": "v2-gpu",
                "nodeLabels": {"example.com/pool": "gpu"},
                "topologyName": "v2-hosts",
            }
        ],
        "workloadPriorityClasses": [
            {"name": "v2-low", "value": 1},
            {"name": "v2-high", "value": 100},
        ],
        "clusterQueues": [
            {
                "name": "v2-team",
                "preemption": {"withinClusterQueue": "LowerPriority"},
                "resourceGroups": [
                    {
                        "coveredResources": ["nvidia.com/gpu"],
                        "flavors": [
                            {
                                "name": "v2-gpu",
                                "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 4}],
                            }
                        ],
                    }
                ],
            }
        ],
        "nodes": [
            {
                "name": "g1",
                "labels": {"example.com/pool": "gpu"},
                "allocatable": {"nvidia.com/gpu": 4, "pods": 20},
            }
        ],
        "admitted": [
            {
                "name": "old",
                "priorityClass": "v2-low",
                "podSets": [
                    {
                        "name": "main",
                        "count": 4,
                        "requests": {"nvidia.com/gpu": 1},
                        "flavor": "v2-gpu",
                        "placement": {"g1": 4},
                    }
                ],
            }
        ],
        "workloads": [
            {
                "name": "new",
                "priorityClass": "v2-high",
                "podSets": [{"name": "main", "count": 4, "requests": {"nvidia.com/gpu": 1}}],
            }
        ],
    }
    return scenario_from_data(data, f"<{name}>")


def _workload_of(runner: ClusterBackend, scenario: Scenario, job: str) -> Obj:
    assert runner.kube is not None
    namespace = namespace_for(runner.seq, scenario.name)
    for wl in runner.kube.list(KUEUE_API, "Workload", namespace):
        if any(o.get("name") == job for o in wl["metadata"].get("ownerReferences") or []):
            return wl
    raise AssertionError(f"no Workload for Job {namespace}/{job}")


def test_pre_admitted_workload_is_preempted_and_its_admission_cleared_by_kueue(
    runner: ClusterBackend,
) -> None:
    """Kueue counts the written admission (it picks `old` as victim), evicts it, and its own
    eviction removes `status.admission`: the harness applied it under Kueue's field manager."""
    scenario = _preemption("v2-pre-admitted-preempted")
    observed = runner.run(scenario)
    new, old = observed.outcomes["new"], observed.outcomes["old"]
    assert (
        new.admitted and new.flavors == {"main": "v2-gpu"} and new.placement == {"main": {"g1": 4}}
    )
    assert not old.admitted and old.preempted, observed.details
    assert "Preempted to accommodate" not in old.message  # evaluated again after its release
    wl = _workload_of(runner, scenario, "old")
    assert "admission" not in (wl.get("status") or {}), wl.get("status")
    evictions = wl["status"]["schedulingStats"]["evictions"]
    assert [(e["reason"], e["count"]) for e in evictions] == [("Preempted", 1)]
    assert runner.kube is not None
    cq = runner.kube.get(KUEUE_API, "ClusterQueue", "v2-team")
    again = runner.run(scenario)  # an identical ClusterQueue is kept for the next scenario
    assert (
        runner.kube.get(KUEUE_API, "ClusterQueue", "v2-team")["metadata"]["uid"]
        == (cq["metadata"]["uid"])
    )
    assert again.outcomes["old"].preempted


def test_admission_under_another_field_manager_is_never_cleared(
    runner: ClusterBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Negative control for the test above: written under the harness's own field manager,
    the admission survives Kueue's eviction (server-side apply removes only fields the
    applier owns). Kueue still takes the victim for pending (QuotaReserved False), so the
    outcomes look the same; only the stale `status.admission` tells, which is why the test
    above checks it."""
    monkeypatch.setattr(session, "ADMISSION_FIELD_MANAGER", "kueue-tas-harness")
    scenario = _preemption("v2-pre-admitted-wrong-manager")
    observed = runner.run(scenario)
    assert observed.outcomes["old"].preempted and not observed.outcomes["old"].admitted
    wl = _workload_of(runner, scenario, "old")
    assert wl["status"].get("admission") is not None
