"""Admission fair sharing's LocalQueue usage in the fit model (harness/fit/admission_fs.py):
the entry penalty Kueue charges at reservation, its weights, and the heads whose order real
Kueue takes from sampled history (a tie the model explores both ways)."""

from __future__ import annotations

import math
from typing import Any

from harness.fit.admission_fs import QueueUsage
from harness.k8s.duration import seconds
from harness.kueue.admission_fair_sharing import AfsConfig
from harness.scenario.loader import scenario_from_data
from harness.scenario.model import Scenario


def scenario(
    afs: dict[str, Any], weights: dict[str, Any] | None = None, scope: bool = True
) -> Scenario:
    cq: dict[str, Any] = {
        "name": "a",
        "resourceGroups": [
            {
                "coveredResources": ["cpu"],
                "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": 4}]}],
            }
        ],
    }
    if scope:
        cq["admissionScope"] = {"admissionMode": "UsageBasedAdmissionFairSharing"}
    lqs = [
        {
            "name": n,
            "clusterQueue": "a",
            **({"fairSharing": {"weight": w}} if w is not None else {}),
        }
        for n, w in (weights or {"p": None, "q": None, "r": None}).items()
    ]
    ps = [{"name": "main", "count": 2, "requests": {"cpu": 1}}]
    return scenario_from_data(
        {
            "name": "afs",
            "kueueConfig": {"admissionFairSharing": afs},
            "resourceFlavors": [{"name": "f"}],
            "clusterQueues": [cq],
            "localQueues": lqs,
            "nodes": [{"name": "n1", "allocatable": {"cpu": 8}}],
            "workloads": [
                {"name": f"w-{lq['name']}", "queue": lq["name"], "podSets": ps} for lq in lqs
            ],
        },
        "afs.yaml",
    )


def test_durations_and_alpha() -> None:
    assert seconds("1h30m") == 5400 and seconds("0") == 0 and seconds("1.5s") == 1.5
    assert math.isclose(AfsConfig(half_life=300, sampling=300).alpha, 0.5)
    assert AfsConfig(half_life=0).alpha == 0


def test_a_reservation_charges_its_local_queue_only() -> None:
    sc = scenario({"usageHalfLifeTime": "5m", "usageSamplingInterval": "5m"})
    usage = QueueUsage(sc, gate_on=True)
    p, q, _ = sc.workloads
    usage.charge(p)
    assert usage.usage(p) == 1.0  # 2 cpu * alpha 0.5
    assert usage.usage(q) == 0.0


def test_zero_weight_is_infinite_and_zero_resource_weight_charges_nothing() -> None:
    sc = scenario({"usageHalfLifeTime": "1h", "resourceWeights": {"cpu": 0}}, {"p": "1", "q": "0"})
    usage = QueueUsage(sc, gate_on=True)
    p, q = sc.workloads
    usage.charge(p)
    assert usage.usage(p) == 0.0
    assert usage.usage(q) == math.inf


def test_without_admission_scope_or_gate_nothing_is_charged() -> None:
    for sc, gate in (
        (scenario({"usageHalfLifeTime": "1h"}, scope=False), True),
        (scenario({"usageHalfLifeTime": "1h"}), False),
    ):
        usage = QueueUsage(sc, gate_on=gate)
        usage.charge(sc.workloads[0])
        assert usage.usage(sc.workloads[0]) == 0.0


def test_two_consumed_local_queues_are_a_tie() -> None:
    sc = scenario({"usageHalfLifeTime": "1h"})
    usage = QueueUsage(sc, gate_on=True)
    picked: list[list[str]] = []
    usage.pick = lambda options, _: (picked.append([w.name for w in options]), options[-1])[1]
    p, q, r = sc.workloads
    usage.charge(p)
    assert usage.contest([r, p, q]) is r  # r's LocalQueue consumed nothing: decided
    usage.charge(q)
    assert usage.contest([p, q]) is q
    assert picked == [["w-p", "w-q"]]
