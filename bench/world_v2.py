"""The benchmarks' version-2 scenario (issue 11): 3 GPU flavors x 1,000 nodes of 8 GPUs,
each flavor with its own block/rack/host topology; 4 ClusterQueues in one cohort; 200
admitted workloads (14-15 whole nodes each, low and mid priority, spread over the flavors
and queues) that fill every node; a high-priority 256-pod preemptor that needs one block.
Shared by bench/oracle.py (fit model) and the sim timing beside it, so both time the
same case.
"""

from __future__ import annotations

from typing import Any

FLAVORS = ("h100", "a100", "l4")
TEAMS = ("team-a", "team-b", "team-c", "team-d")
NODES_PER_FLAVOR = 1_000
LEVELS = ("bench.io/block", "bench.io/rack", "kubernetes.io/hostname")


def preemption_world(admitted: int = 200, preemptor_pods: int = 256) -> dict[str, Any]:
    """The scenario as the loader's dict (so the sim can be given the same file)."""
    nodes = []
    for flavor in FLAVORS:
        for i in range(NODES_PER_FLAVOR):
            labels = {
                "example.com/gpu": flavor,
                LEVELS[0]: f"{flavor}-b{i // 100}",
                LEVELS[1]: f"{flavor}-r{i // 10}",
            }
            nodes.append(
                {
                    "name": f"{flavor}-{i:04d}",
                    "labels": labels,
                    "allocatable": {"nvidia.com/gpu": 8, "cpu": 64, "pods": 110},
                }
            )
    # team-a (the preemptor's) lends: half of every flavor is its nominal quota, the other
    # teams hold more than theirs by borrowing it, so team-a reclaims from any team's
    # workloads in the block it needs (reclaimWithinCohort: Any).
    capacity = NODES_PER_FLAVOR * 8
    quotas = {TEAMS[0]: capacity // 2}
    quotas.update({team: capacity // 2 // (len(TEAMS) - 1) + 1 for team in TEAMS[1:]})
    queues = [
        {
            "name": team,
            "cohortName": "research",
            "preemption": {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"},
            "resourceGroups": [
                {
                    "coveredResources": ["nvidia.com/gpu"],
                    "flavors": [
                        {
                            "name": flavor,
                            "resources": [{"name": "nvidia.com/gpu", "nominalQuota": quotas[team]}],
                        }
                        for flavor in FLAVORS
                    ],
                }
            ],
        }
        for team in TEAMS
    ]
    running = []
    next_node = dict.fromkeys(FLAVORS, 0)
    for j in range(admitted):
        flavor = FLAVORS[j % len(FLAVORS)]
        share = len(range(j % len(FLAVORS), admitted, len(FLAVORS)))  # workloads on this flavor
        k = j // len(FLAVORS)
        size = NODES_PER_FLAVOR // share + (1 if k < NODES_PER_FLAVOR % share else 0)
        first = next_node[flavor]
        next_node[flavor] += size
        placement = {f"{flavor}-{first + n:04d}": 1 for n in range(size)}
        running.append(
            {
                "name": f"old-{j:03d}",
                "queue": TEAMS[j % len(TEAMS)],
                "priorityClass": "low" if j % 2 else "mid",
                "podSets": [
                    {
                        "name": "main",
                        "count": size,
                        "requests": {"nvidia.com/gpu": 8},
                        "flavor": flavor,
                        "placement": placement,
                    }
                ],
            }
        )
    return {
        "name": "bench-v2-preemption",
        "topologies": [{"name": f"{f}-topology", "levels": list(LEVELS)} for f in FLAVORS],
        "resourceFlavors": [
            {"name": f, "nodeLabels": {"example.com/gpu": f}, "topologyName": f"{f}-topology"}
            for f in FLAVORS
        ],
        "workloadPriorityClasses": [
            {"name": "low", "value": 10},
            {"name": "mid", "value": 100},
            {"name": "high", "value": 1000},
        ],
        "clusterQueues": queues,
        "nodes": nodes,
        "admitted": running,
        "workloads": [
            {
                "name": "train",
                "queue": TEAMS[0],
                "priorityClass": "high",
                "podSets": [
                    {
                        "name": "main",
                        "count": preemptor_pods,
                        "requests": {"nvidia.com/gpu": 1},
                        "topology": {"mode": "required", "level": LEVELS[0]},
                    }
                ],
            }
        ],
    }
