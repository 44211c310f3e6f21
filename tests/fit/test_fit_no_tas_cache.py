"""A version-1 ClusterQueue that covers no resource has no TAS flavor at all: Kueue refuses a
pod set's TAS request before looking for its flavor (tas_flavorassigner.go
podSetTopologyRequest: `len(cq.TASFlavors) == 0` -> ErrNoTASCacheInformation, ahead of
onlyTASFlavor's ErrNoTASFlavorAssigned). Found by the version-1 fuzzer against the sim
(seed 1, case 116)."""

from __future__ import annotations

from typing import Any

from harness.fit import fit
from harness.scenario.loader import scenario_from_data


def world(*requests: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "no-tas-cache",
        "topology": {"name": "hosts", "levels": ["kubernetes.io/hostname"]},
        "nodes": [{"name": "n1", "allocatable": {"cpu": "4", "nvidia.com/gpu": 4, "pods": 110}}],
        "workloads": [
            {"name": f"wl-{i}", "podSets": [{"name": "main", "count": 1, "requests": r}]}
            for i, r in enumerate(requests)
        ],
    }


def test_a_queue_covering_nothing_has_no_tas_cache_information() -> None:
    outcome = fit(scenario_from_data(world({}))).outcomes["wl-0"]
    assert not outcome.admitted
    assert outcome.message == (
        "failed to assign flavors to pod set main: workload requires Topology, but there is "
        "no TAS cache information"
    )


def test_a_queue_covering_another_workloads_request_has_a_tas_flavor() -> None:
    # wl-1's GPU request gives the queue a resource group, so the flavor is a TAS flavor of
    # the queue and the empty pod set only lacks an assignment of it.
    outcomes = fit(scenario_from_data(world({}, {"nvidia.com/gpu": 1}))).outcomes
    assert outcomes["wl-0"].message == (
        "failed to assign flavors to pod set main: no TAS flavor assigned"
    )
    assert outcomes["wl-1"].admitted
