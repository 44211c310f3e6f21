"""Seeded random version-2 scenarios (docs/scenario-format-v2.md): several GPU flavors each
with its own Topology, 1-4 ClusterQueues (usually in one cohort) with tight quotas,
borrowing and lending limits, priority classes, every preemption policy and fungibility
setting, StrictFIFO, workloads admitted before the scenario starts, and deletions of them.

Nodes, usage and pod sets come from the version-1 generator (`generator._Case`), so the TAS
corners it reaches (modes, slices, taints, tight nodes) are reached per flavor too. Case `i`
of seed `s` depends on nothing but `(s, i)`.
"""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Any

from harness.fuzz.generator import GPU, LEVEL_POOL, _Case, case_rng
from harness.fuzz.world_features import grow
from harness.k8s.quantity import parse_quantity
from harness.scenario.kueue_config import PREEMPTION_STRATEGY_SETS
from harness.scenario.model import HOSTNAME

Data = dict[str, Any]
FLAVOR_LABEL = "example.com/gpu"
FLAVOR_NAMES = ("h100", "a100", "l4")
WITHIN_CQ = ("LowerPriority", "LowerPriority", "LowerOrNewerEqualPriority")
RECLAIM = ("Never", "LowerPriority", "Any")
PRIORITY_VALUES = (0, 10, 100, 1000)


def generate_v2(seed: int, index: int) -> Data:
    """Version-2 scenario `index` of `seed`, a dict the loader accepts (no `expect`)."""
    rng = case_rng(seed, index)
    rng.random()  # not the same stream as the version-1 case of the same (seed, index)
    return _WorldCase(rng).build_v2(f"fuzz2-{seed}-{index}")


class _WorldCase(_Case):
    def __init__(self, rng: random.Random) -> None:
        super().__init__(rng)
        self.flavors: list[Data] = []
        self.topologies: list[Data] = []

    def build_v2(self, name: str) -> Data:
        rng = self.rng
        data: Data = {"name": name}
        if self.chance(0.2):
            data["featureGates"] = {"TASBalancedPlacement": True}
        self.taints = self._taint_pool()
        all_nodes: list[Data] = []
        all_levels: list[str] = []
        for f in range(rng.randint(1, 3)):
            flavor_name = FLAVOR_NAMES[f]
            self.levels = self._levels()
            topology = {"name": f"{flavor_name}-topology", "levels": self.levels}
            flavor: Data = {"name": flavor_name, "nodeLabels": {FLAVOR_LABEL: flavor_name}}
            flavor["topologyName"] = topology["name"]
            if self.chance(0.1):
                flavor["tolerations"] = [self._toleration()]
            nodes = self._nodes(pooled=False)[: rng.randint(2, 8)]
            for node in nodes:
                node["name"] = f"{flavor_name}-{node['name']}"
                node["labels"][FLAVOR_LABEL] = flavor_name
            self.topologies.append(topology)
            self.flavors.append(flavor)
            all_nodes += nodes
            all_levels += [lv for lv in self.levels if lv not in all_levels]
        order = {level: i for i, (level, _) in enumerate(LEVEL_POOL)}
        self.levels = sorted(all_levels, key=lambda lv: order.get(lv, len(order)))
        self.nodes = all_nodes
        data["topologies"] = self.topologies
        data["resourceFlavors"] = self.flavors
        classes = self._priority_classes()
        if classes:
            data["workloadPriorityClasses"] = classes
        queues = self._cluster_queues()
        data["clusterQueues"] = queues
        data["nodes"] = all_nodes
        usage = self._usage()
        if usage:
            data["usage"] = usage
        admitted = self._admitted(queues, classes, usage)
        if admitted:
            data["admitted"] = admitted
        workloads = []
        count = rng.randint(1, 4)
        for i in range(count):
            workload = self._workload(f"wl-{i}", last=i == count - 1)
            workload["queue"] = self._queue(queues)["name"]
            if classes and not self.chance(0.2):
                top = classes[-1] if self.chance(0.5) else rng.choice(classes)
                workload["priorityClass"] = top["name"]
            workloads.append(workload)
        data["workloads"] = workloads
        self._tighten(queues, admitted, workloads)
        if admitted and self.chance(0.25):
            victim = rng.choice(admitted)["name"]
            data["steps"] = [{"delete-workload": victim}]
        # Drawn last, so the rest of a case is what it was before fair sharing was added.
        if any("cohortName" in q for q in queues) and self.chance(0.35):
            self._fair_sharing(data, queues)
        grow(rng, data, lambda name: self._workload(name, last=False))
        return data

    def _fair_sharing(self, data: Data, queues: list[Data]) -> None:
        """kueueConfig.fairSharing with one of Kueue's strategy lists, and some weights
        (0: borrows only what nobody wants)."""
        strategies = self.rng.choice(PREEMPTION_STRATEGY_SETS)
        data["kueueConfig"] = {"fairSharing": {"preemptionStrategies": list(strategies)}}
        for queue in queues:
            if self.chance(0.4):
                queue["fairSharing"] = {"weight": self.rng.choice(("0", "0.5", "2", "3"))}

    def _priority_classes(self) -> list[Data]:
        if self.chance(0.2):
            return []
        values = sorted(self.rng.sample(PRIORITY_VALUES, self.rng.choice((1, 2, 2, 3, 3))))
        names = ("low", "mid", "high")[3 - len(values) :]
        return [{"name": n, "value": v} for n, v in zip(names, values, strict=True)]

    def _capacity(self, flavor: str, resource: str) -> Fraction:
        return sum(
            (
                parse_quantity(n["allocatable"].get(resource, 0))
                for n in self.nodes
                if n["labels"][FLAVOR_LABEL] == flavor
            ),
            Fraction(0),
        )

    def _cluster_queues(self) -> list[Data]:
        rng = self.rng
        count = rng.randint(1, 4)
        cohort = count > 1 and not self.chance(0.15)
        covered = [GPU, "cpu", "memory"] + (["pods"] if self.chance(0.15) else [])
        queues = []
        for q in range(count):
            names = [f["name"] for f in self.flavors]
            offered = rng.sample(names, rng.randint(1, len(names)))
            flavors = []
            for flavor in offered:
                resources = []
                for resource in covered:
                    share = self._capacity(flavor, resource) / count
                    nominal = int(share * Fraction(rng.choice((0, 1, 2, 3, 4, 6)), 4))
                    quota: Data = {"name": resource}
                    if resource == "memory":
                        quota["nominalQuota"] = f"{max(nominal // 2**30, 0)}Gi"
                    else:
                        quota["nominalQuota"] = nominal
                    if cohort and self.chance(0.15):
                        quota["borrowingLimit"] = rng.randint(0, 8)
                    if cohort and resource == GPU and self.chance(0.15):
                        quota["lendingLimit"] = rng.randint(0, nominal)
                    resources.append(quota)
                flavors.append({"name": flavor, "resources": resources})
            queue: Data = {
                "name": f"team-{'abcd'[q]}",
                "resourceGroups": [{"coveredResources": covered, "flavors": flavors}],
            }
            if cohort:
                queue["cohortName"] = "research"
            if self.chance(0.2):
                queue["queueingStrategy"] = "StrictFIFO"
            preemption: Data = {}
            if self.chance(0.85):
                preemption["withinClusterQueue"] = rng.choice(WITHIN_CQ)
            if cohort and self.chance(0.6):
                preemption["reclaimWithinCohort"] = rng.choice(RECLAIM)
                if preemption["reclaimWithinCohort"] != "Never" and self.chance(0.4):
                    borrow: Data = {"policy": "LowerPriority"}
                    if self.chance(0.5):
                        borrow["maxPriorityThreshold"] = rng.choice(PRIORITY_VALUES)
                    preemption["borrowWithinCohort"] = borrow
            if preemption:
                queue["preemption"] = preemption
            fungibility: Data = {}
            if self.chance(0.25):
                fungibility["whenCanBorrow"] = "TryNextFlavor"
            if self.chance(0.25):
                fungibility["whenCanPreempt"] = "MayStopSearch"
            if fungibility:
                queue["flavorFungibility"] = fungibility
            queues.append(queue)
        return queues

    def _admitted(self, queues: list[Data], classes: list[Data], usage: list[Data]) -> list[Data]:
        """Workloads already running: each pod set on nodes of one flavor its queue offers,
        packed where capacity is left (the loader refuses more than a node holds)."""
        rng = self.rng
        free = {
            n["name"]: {r: parse_quantity(q) for r, q in n["allocatable"].items()}
            for n in self.nodes
        }
        for entry in usage:
            left = free[entry["node"]]
            count = entry.get("count", 1)
            for resource, q in (*entry["requests"].items(), ("pods", 1)):
                left[resource] = left.get(resource, Fraction(0)) - parse_quantity(q) * count
        out = []
        for i in range(rng.choice((0, 1, 2, 3, 4, 6, 8))):
            queue = self._queue(queues)
            group = queue["resourceGroups"][0]
            flavor = rng.choice(group["flavors"])["name"]
            requests: Data = {GPU: rng.choice((1, 1, 2, 4))}
            if self.chance(0.4):
                requests["cpu"] = rng.choice(("500m", "1", "2"))
            count = rng.choice((1, 2, rng.randint(1, 8)))
            placement: dict[str, int] = {}
            if HOSTNAME not in self._levels_of(flavor):
                continue  # placements name nodes; keep admitted entries to hostname topologies
            nodes = [n for n in self.nodes if n["labels"][FLAVOR_LABEL] == flavor]
            if self.chance(0.5):
                rng.shuffle(nodes)
            for node in nodes:
                levels = [lv for lv in self._levels_of(flavor) if lv != HOSTNAME]
                if any(level not in node["labels"] for level in levels) or not _healthy(node):
                    continue
                left = free[node["name"]]
                while sum(placement.values()) < count and _fits(left, requests):
                    for r, q in (*requests.items(), ("pods", 1)):
                        left[r] = left.get(r, Fraction(0)) - parse_quantity(q)
                    placement[node["name"]] = placement.get(node["name"], 0) + 1
            if sum(placement.values()) != count:
                continue
            admitted_entry: Data = {
                "name": f"old-{i}",
                "queue": queue["name"],
                "podSets": [
                    {
                        "name": "main",
                        "count": count,
                        "requests": requests,
                        "flavor": flavor,
                        "placement": placement,
                    }
                ],
            }
            if classes and not self.chance(0.2):
                lower = classes[:-1] if len(classes) > 1 and self.chance(0.7) else classes
                admitted_entry["priorityClass"] = rng.choice(lower)["name"]
            out.append(admitted_entry)
        return out

    def _queue(self, queues: list[Data]) -> Data:
        """Mostly the first queue, so that running and new workloads meet in one queue (where
        preemption within the ClusterQueue can happen) more often than chance would have it."""
        return queues[0] if self.chance(0.6) else self.rng.choice(queues)

    def _tighten(self, queues: list[Data], admitted: list[Data], workloads: list[Data]) -> None:
        """Where workloads are admitted, most GPU quotas become just enough for the biggest
        new workload of the queue, or for what is held plus a little: new workloads then need
        preemption or borrowing rather than spare quota. CPU quota mostly stops mattering."""
        used: dict[tuple[str, str], int] = {}
        for entry in admitted:
            for pod_set in entry["podSets"]:
                key = (entry["queue"], pod_set["flavor"])
                used[key] = used.get(key, 0) + _gpus(pod_set)
        biggest: dict[str, int] = {}
        for workload in workloads:
            need = sum(_gpus(ps) for ps in workload["podSets"])
            biggest[workload["queue"]] = max(biggest.get(workload["queue"], 0), need)
        for queue in queues:
            for flavor in queue["resourceGroups"][0]["flavors"]:
                held = used.get((queue["name"], flavor["name"]), 0)
                if not held or not self.chance(0.7):
                    continue
                for quota in flavor["resources"]:
                    if quota["name"] == "cpu" and self.chance(0.8):
                        quota["nominalQuota"] = int(self._capacity(flavor["name"], "cpu"))
                    if quota["name"] != GPU:
                        continue
                    want = biggest.get(queue["name"], 0) if self.chance(0.5) else held
                    quota["nominalQuota"] = want + self.rng.choice((0, 0, 1, 2, 4))
                    if "lendingLimit" in quota:
                        quota["lendingLimit"] = min(quota["lendingLimit"], quota["nominalQuota"])

    def _levels_of(self, flavor: str) -> list[str]:
        for topology in self.topologies:
            if topology["name"] == f"{flavor}-topology":
                return list(topology["levels"])
        return []


def _healthy(node: Data) -> bool:
    """A node Kueue's TAS node controller would not find failed for pods without tolerations
    (pkg/controller/tas/node_controller.go getWorkloadStatus): Ready, not cordoned, without a
    NoSchedule or NoExecute taint. Running workloads start on such nodes only: the fit model
    judges node health when a step acts on nodes, Kueue when a node or pod event comes, and
    for an admitted entry that event is its pods' creation (not modelled by either engine)."""
    return (
        node.get("ready", True)
        and not node.get("unschedulable", False)
        and not any(t["effect"] in ("NoSchedule", "NoExecute") for t in node.get("taints", []))
    )


def _gpus(pod_set: Data) -> int:
    return int(pod_set["requests"].get(GPU, 0)) * int(pod_set["count"])


def _fits(left: dict[str, Fraction], requests: Data) -> bool:
    """One more pod with these requests fits what is left on a node (pods included)."""
    return left.get("pods", Fraction(0)) >= 1 and all(
        left.get(r, Fraction(0)) >= parse_quantity(q) for r, q in requests.items()
    )
