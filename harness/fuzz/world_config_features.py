"""Kueue Configuration `resources`, a LocalQueue's stopPolicy and pods that never become
Ready, grown onto a version-2 fuzz world (docs/scenario-format-v2.md), after every other draw
(`world_features.grow`), so a case without them is what it was before.

- `resources`: a transformation of GPUs or CPUs into example.com/credits (Retain or
  Replace, sometimes multiplied by the pod's CPUs) that the ClusterQueues cover (sometimes not
  all of them); pods asking for example.com/nic, which no ClusterQueue covers, with that
  prefix excluded or quotaCheckStrategy IgnoreUndeclared or neither (then they wait: Kueue
  refuses an undeclared resource).
- LocalQueues named after their ClusterQueues (the workloads' `queue` stays valid), one with
  Hold or HoldAndDrain, and `set-stop-policy` steps among the case's steps.
- `podsReady: false` on some workloads, sometimes with a short waitForPodsReady timeout.
- waitForPodsReady blockAdmission (with or without pods that never become Ready).
- `set-stop-policy` steps on a ClusterQueue (Hold, HoldAndDrain, None again).
"""

from __future__ import annotations

import random
from typing import Any

from harness.fuzz.generator import GPU

Data = dict[str, Any]

FEATURES = (
    "res-transform",
    "res-exclude",
    "res-ignore-undeclared",
    "res-undeclared-blocked",
    "lq-stop",
    "lq-stop-steps",
    "pods-never-ready",
    "pods-ready-timeout",
    "block-admission",
    "cq-stop-steps",
)
"""What `features` can name, in report order."""

CREDITS = "example.com/credits"
NIC = "example.com/nic"
STOP_POLICIES = ("None", "Hold", "HoldAndDrain")


def grow_config(rng: random.Random, data: Data) -> None:
    """Add some of these features to `data`, each with its own chance."""
    if rng.random() < 0.45:
        _resources(rng, data)
    if rng.random() < 0.2:
        _local_queue_stop(rng, data)
    if rng.random() < 0.2:
        _never_ready(rng, data)
    # Drawn last, so a case without them is what it was before.
    if rng.random() < 0.12:
        data.setdefault("kueueConfig", {}).setdefault("waitForPodsReady", {})["blockAdmission"] = (
            True
        )
    if rng.random() < 0.12:
        _cluster_queue_stop_steps(rng, data)


def features(data: Data) -> list[str]:
    """The features of FEATURES a case holds."""
    resources = data.get("kueueConfig", {}).get("resources", {})
    asks_nic = NIC in str(data.get("workloads", []))
    excluded = bool(resources.get("excludeResourcePrefixes"))
    ignoring = resources.get("quotaCheckStrategy") == "IgnoreUndeclared"
    ready = data.get("kueueConfig", {}).get("waitForPodsReady", {})
    steps = data.get("steps", [])
    found = {
        "res-transform": bool(resources.get("transformations")),
        "res-exclude": excluded and asks_nic,
        "res-ignore-undeclared": ignoring and asks_nic,
        "res-undeclared-blocked": asks_nic and not excluded and not ignoring,
        "lq-stop": any(q.get("stopPolicy", "None") != "None" for q in data.get("localQueues", [])),
        "lq-stop-steps": any("set-stop-policy" in s for s in data.get("steps", [])),
        "pods-never-ready": any(w.get("podsReady") is False for w in data.get("workloads", [])),
        "pods-ready-timeout": "timeout" in ready,
        "block-admission": bool(ready.get("blockAdmission")),
        "cq-stop-steps": any("clusterQueue" in str(s.get("set-stop-policy")) for s in steps),
    }
    return [name for name in FEATURES if found[name]]


def _resources(rng: random.Random, data: Data) -> None:
    section: Data = {}
    if rng.random() < 0.75:
        section["transformations"] = [_transformation(rng)]
        _cover_credits(rng, data["clusterQueues"])
    if rng.random() < 0.75:
        _ask_nic(rng, data)
        draw = rng.random()
        if draw < 0.3:
            section["excludeResourcePrefixes"] = [rng.choice((NIC, "example.com/n"))]
        elif draw < 0.7:
            section["quotaCheckStrategy"] = "IgnoreUndeclared"
    if "quotaCheckStrategy" not in section and rng.random() < 0.2:
        section["quotaCheckStrategy"] = "BlockUndeclared"
    if section:
        data.setdefault("kueueConfig", {})["resources"] = section


def _transformation(rng: random.Random) -> Data:
    source = rng.choice((GPU, GPU, "cpu"))
    out: Data = {
        "input": source,
        "strategy": rng.choice(("Retain", "Replace")),
        "outputs": {CREDITS: rng.choice(("1", "2", "4", "500m"))},
    }
    if source == GPU and rng.random() < 0.2:
        out["multiplyBy"] = "cpu"  # only pods asking for CPU are scaled
    return out


def _cover_credits(rng: random.Random, queues: list[Data]) -> None:
    """Credits quota in the first resource group, per flavor; sometimes a ClusterQueue
    leaves credits out (its workloads are refused under BlockUndeclared)."""
    for queue in queues:
        if rng.random() < 0.15:
            continue
        group = queue["resourceGroups"][0]
        # A list of its own: the generator shares one among the ClusterQueues.
        group["coveredResources"] = [*group["coveredResources"], CREDITS]
        for flavor in group["flavors"]:
            quota = rng.choice((0, 2, 4, 8, 16, 32))
            flavor["resources"].append({"name": CREDITS, "nominalQuota": quota})


def _ask_nic(rng: random.Random, data: Data) -> None:
    """Most nodes have a few NICs (TAS places the pod's own requests, excluded or not)."""
    for node in data["nodes"]:
        if rng.random() < 0.8:
            node["allocatable"][NIC] = rng.choice((1, 2, 4, 8))
    for workload in data["workloads"]:
        if rng.random() < 0.5:
            pod_set = rng.choice(workload["podSets"])
            pod_set["requests"][NIC] = rng.choice((1, 1, 2))


def _local_queue_stop(rng: random.Random, data: Data) -> None:
    queues = [{"name": q["name"], "clusterQueue": q["name"]} for q in data["clusterQueues"]]
    chosen = rng.choice(queues)
    if rng.random() < 0.6:
        chosen["stopPolicy"] = rng.choice(STOP_POLICIES[1:])
    data["localQueues"] = queues
    if rng.random() < 0.7:
        steps = data.setdefault("steps", [])
        for _ in range(rng.randint(1, 3)):
            step = {"set-stop-policy": {"localQueue": chosen["name"]}}
            step["set-stop-policy"]["stopPolicy"] = rng.choice(STOP_POLICIES)
            steps.insert(rng.randrange(len(steps) + 1), step)


def _never_ready(rng: random.Random, data: Data) -> None:
    workloads = data["workloads"]
    for workload in rng.sample(workloads, rng.randint(1, min(2, len(workloads)))):
        workload["podsReady"] = False
    if rng.random() < 0.6:
        section: Data = {"timeout": rng.choice(("5s", "20s"))}
        section["requeuingStrategy"] = {
            "backoffLimitCount": rng.choice((0, 1, 2)),
            "backoffBaseSeconds": 3,
        }
        data.setdefault("kueueConfig", {})["waitForPodsReady"] = section
    if rng.random() < 0.3:
        names = [w["name"] for w in workloads if w.get("podsReady") is False]
        steps = data.setdefault("steps", [])
        steps.insert(rng.randrange(len(steps) + 1), {"pods-ready": rng.choice(names)})


def _cluster_queue_stop_steps(rng: random.Random, data: Data) -> None:
    """One ClusterQueue stopped and started again by steps (a user's kubectl patch, or
    kueuectl stop/resume clusterqueue), among the case's steps."""
    chosen = rng.choice(data["clusterQueues"])["name"]
    steps = data.setdefault("steps", [])
    for _ in range(rng.randint(1, 3)):
        change = {"clusterQueue": chosen, "stopPolicy": rng.choice(STOP_POLICIES)}
        steps.insert(rng.randrange(len(steps) + 1), {"set-stop-policy": change})
