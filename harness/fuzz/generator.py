"""Seeded random scenarios in the contract's dict form, one `random.Random` per case.

Case `i` of seed `s` depends on nothing but `(s, i)`, so any case can be regenerated alone.
The shapes aim at Kueue's TAS corners: 1-4 level topologies (sometimes without a hostname
level), uneven and tight nodes, foreign usage, taints and tolerations, not-ready, cordoned
and unlabelled nodes, every topology mode, slices (also ones the webhook refuses),
leader/worker groups, tight quotas and the placement feature gates.
"""

from __future__ import annotations

import random
from typing import Any

from harness.k8s.quantity import parse_quantity
from harness.scenario.model import HOSTNAME

GPU = "nvidia.com/gpu"
LEVEL_POOL = (
    ("example.com/zone", "z"),
    ("example.com/block", "b"),
    ("example.com/rack", "r"),
    ("example.com/group", "g"),
)
POOL_LABEL = "example.com/pool"
TAINT_KEYS = ("example.com/dedicated", "example.com/maintenance")
TAINT_VALUES = ("gpu", "batch", "")
EFFECTS = ("NoSchedule", "NoExecute", "PreferNoSchedule")
MODES = ("required", "preferred", "unconstrained", "implied", "slice-only")

Data = dict[str, Any]


def case_rng(seed: int, index: int) -> random.Random:
    """The generator of one case: independent of every other case of the seed."""
    return random.Random(f"kth-fuzz:{seed}:{index}")


def generate(seed: int, index: int) -> Data:
    """Scenario `index` of `seed`, a dict the loader accepts (no `expect`)."""
    return _Case(case_rng(seed, index)).build(f"fuzz-{seed}-{index}")


class _Case:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.levels: list[str] = []
        self.nodes: list[Data] = []
        self.allow_empty = False

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def build(self, name: str) -> Data:
        rng = self.rng
        self.levels = self._levels()
        self.taints = self._taint_pool()
        pooled = self.chance(0.15)
        self.nodes = self._nodes(pooled)
        data: Data = {"name": name, "topology": {"name": "fuzz-topology", "levels": self.levels}}
        gates: dict[str, bool] = {}
        if self.chance(0.35):
            gates["TASBalancedPlacement"] = True
        if self.chance(0.1):
            gates["TASProfileMixed"] = False
        if gates:
            data["featureGates"] = gates
        flavor: Data = {}
        if pooled:
            flavor["nodeLabels"] = {POOL_LABEL: "gpu"}
        if self.chance(0.15):
            flavor["tolerations"] = [self._toleration()]
        if flavor:
            data["flavor"] = {"name": "fuzz-flavor", **flavor}
        data["nodes"] = self.nodes
        usage = self._usage()
        if usage:
            data["usage"] = usage
        count = rng.randint(1, 4)
        workloads = [self._workload(f"wl-{i}", last=i == count - 1) for i in range(count)]
        data["workloads"] = workloads
        if self.chance(0.25):
            data["queue"] = {"nominalQuota": self._quota(workloads)}
        return data

    # ---- cluster ---------------------------------------------------------------------------

    def _levels(self) -> list[str]:
        rng = self.rng
        count = rng.randint(1, 4)
        if self.chance(0.85):
            upper = sorted(rng.sample(range(len(LEVEL_POOL)), count - 1))
            return [LEVEL_POOL[i][0] for i in upper] + [HOSTNAME]
        chosen = sorted(rng.sample(range(len(LEVEL_POOL)), count))
        return [LEVEL_POOL[i][0] for i in chosen]

    def _taint_pool(self) -> list[Data]:
        if self.chance(0.6):
            return []
        taints: list[Data] = []
        for _ in range(self.rng.randint(1, 2)):
            taint = {"key": self.rng.choice(TAINT_KEYS), "effect": self.rng.choice(EFFECTS)}
            value = self.rng.choice(TAINT_VALUES)
            if value:
                taint["value"] = value
            if all((t["key"], t["effect"]) != (taint["key"], taint["effect"]) for t in taints):
                taints.append(taint)  # the API server refuses a key and effect twice on a node
        return taints

    def _domain_paths(self) -> list[list[str]]:
        """Label values of the non-hostname levels, one path per leaf domain."""
        rng = self.rng
        short = dict(LEVEL_POOL)
        reuse = self.chance(0.3)  # the same rack name under different blocks
        paths: list[list[str]] = [[]]
        for depth, level in enumerate(self.levels):
            if level == HOSTNAME:
                break
            fanout_max = 3 if depth else 4
            nxt = []
            for path in paths:
                for j in range(1, rng.randint(1, fanout_max) + 1):
                    value = f"{short[level]}{j}" if reuse or not path else f"{path[-1]}-{j}"
                    nxt.append([*path, value])
            paths = nxt
        return paths

    def _nodes(self, pooled: bool) -> list[Data]:
        rng = self.rng
        count = rng.choice((rng.randint(3, 8), rng.randint(3, 12), rng.randint(3, 40)))
        paths = self._domain_paths()
        upper = [lv for lv in self.levels if lv != HOSTNAME]
        gpus = rng.choice((1, 2, 4, 4, 8, 8))
        cpu = rng.choice(("4", "8", "32", "64"))
        tight_pods = self.chance(0.15)
        tight_cpu = self.chance(0.15)
        nodes = []
        for i in range(count):
            labels = dict(zip(upper, rng.choice(paths), strict=True))
            if upper and self.chance(0.04):
                del labels[rng.choice(upper)]
            if pooled:
                labels[POOL_LABEL] = "gpu" if self.chance(0.8) else "cpu"
            allocatable: Data = {
                "cpu": str(rng.randint(1, 6)) if tight_cpu and self.chance(0.5) else cpu,
                "memory": rng.choice(("64Gi", "256Gi")),
            }
            if not self.chance(0.05):
                allocatable[GPU] = rng.randint(1, 8) if self.chance(0.2) else gpus
            if tight_pods and self.chance(0.6):
                allocatable["pods"] = rng.randint(1, 6)
            elif not self.chance(0.03):
                allocatable["pods"] = 110
            node: Data = {"name": f"n{i}", "labels": labels, "allocatable": allocatable}
            if self.taints and self.chance(0.35):
                many = 2 if len(self.taints) > 1 and self.chance(0.3) else 1
                node["taints"] = [dict(t) for t in rng.sample(self.taints, many)]
            if self.chance(0.05):
                node["ready"] = False
            if self.chance(0.05):
                node["unschedulable"] = True
            nodes.append(node)
        return nodes

    def _usage(self) -> list[Data]:
        rng = self.rng
        if self.chance(0.5):
            return []
        # Usage fits its node: the loader refuses more than allocatable, as the kubelet does.
        free = {
            n["name"]: {r: parse_quantity(q) for r, q in n["allocatable"].items()}
            for n in self.nodes
        }
        usage = []
        for _ in range(rng.randint(1, min(6, len(self.nodes)))):
            node = rng.choice(self.nodes)
            left = free[node["name"]]
            requests: Data = {}
            gpus = int(left.get(GPU, 0))
            if gpus and self.chance(0.85):
                requests[GPU] = rng.randint(1, gpus)
            if self.chance(0.4) or not requests:
                requests["cpu"] = rng.choice(("500m", "1", "2", "16"))
            if self.chance(0.1):
                requests["memory"] = rng.choice(("8Gi", "128Gi"))
            count = 2 if self.chance(0.2) else 1
            fits = {
                r: q for r, q in requests.items() if parse_quantity(q) * count <= left.get(r, 0)
            }
            if not fits or left.get("pods", 0) < count:
                continue
            for resource, q in (*fits.items(), ("pods", 1)):
                left[resource] -= parse_quantity(q) * count
            entry: Data = {"node": node["name"], "requests": fits}
            if count == 2:
                entry["count"] = 2
            usage.append(entry)
        return usage

    def _toleration(self) -> Data:
        rng = self.rng
        taint = rng.choice(self.taints) if self.taints else {"key": TAINT_KEYS[0]}
        kind = rng.randrange(4)
        if kind == 0:
            return {"operator": "Exists"}
        if kind == 1:
            tol: Data = {"key": taint["key"], "operator": "Exists"}
        else:
            value = taint.get("value", "") if kind == 2 else "other"
            tol = {"key": taint["key"], "operator": "Equal", "value": value}
        if "effect" in taint and self.chance(0.5):
            tol["effect"] = taint["effect"]
            if taint["effect"] == "NoExecute" and self.chance(0.3):
                tol["tolerationSeconds"] = 300
        return tol

    # ---- workloads -------------------------------------------------------------------------

    def _requests(self, gpu: bool = True) -> Data:
        rng = self.rng
        requests: Data = {}
        if self.chance(0.02) and self.allow_empty:
            return requests  # a pod set that requests nothing
        if self.chance(0.03):
            requests[GPU] = 0
        elif gpu and not self.chance(0.1):
            requests[GPU] = rng.choice((1, 1, 1, 2, 2, 4, rng.randint(1, 8)))
        if self.chance(0.6) or not requests:
            requests["cpu"] = rng.choice(("500m", "1", "2", "4"))
        if self.chance(0.2):
            requests["memory"] = rng.choice(("1Gi", "16Gi"))
        return requests

    def _count(self) -> int:
        rng = self.rng
        return rng.choice((1, 2, rng.randint(1, 8), rng.randint(1, 16), rng.randint(1, 32)))

    def _workload(self, name: str, last: bool) -> Data:
        # A pod set requesting nothing can be retried by Kueue forever ("no longer fits"),
        # starving every later workload: only the last workload may have one.
        self.allow_empty = last
        two = self.chance(0.35)
        if two and self.chance(0.4):
            pod_sets = self._group()
        else:
            names = ("main",) if not two else ("launcher", "workers")
            pod_sets = [self._pod_set(n) for n in names]
        return {"name": name, "podSets": pod_sets}

    def _pod_set(self, name: str) -> Data:
        rng = self.rng
        count = self._count()
        pod_set: Data = {"name": name, "count": count, "requests": self._requests()}
        mode = rng.choice(MODES)
        level_index = rng.randrange(len(self.levels))
        topology: Data = {}
        if mode in ("required", "preferred"):
            topology = {"mode": mode, "level": self.levels[level_index]}
        elif mode == "unconstrained":
            topology = {"mode": "unconstrained"}
            level_index = 0
        elif mode == "slice-only":
            level_index = 0
        if mode == "slice-only" or (mode != "implied" and self.chance(0.3)):
            topology.update(self._slice(count, level_index))
        if topology:
            pod_set["topology"] = topology
        self._placement_extras(pod_set)
        return pod_set

    def _slice(self, count: int, level_index: int) -> Data:
        rng = self.rng
        if self.chance(0.07):
            slice_index = rng.randrange(len(self.levels))  # possibly above the pod set level
        else:
            slice_index = rng.randrange(level_index, len(self.levels))
        roll = rng.random()
        divisors = [d for d in range(1, count + 1) if count % d == 0]
        if roll < 0.8:
            size = rng.choice(divisors)
        elif roll < 0.9:
            size = rng.randint(1, count)
        else:
            size = count + rng.randint(1, 3)
        return {"sliceLevel": self.levels[slice_index], "sliceSize": size}

    def _placement_extras(self, pod_set: Data) -> None:
        rng = self.rng
        if self.chance(0.2):
            pod_set["tolerations"] = [self._toleration()]
        if self.chance(0.1):
            node = rng.choice(self.nodes)
            key = rng.choice(sorted(node["labels"]) or [HOSTNAME])
            pod_set["nodeSelector"] = {key: node["labels"].get(key, node["name"])}

    def _group(self) -> list[Data]:
        """A leader/worker pair: same podSetGroupName, one pod set with a single pod."""
        rng = self.rng
        mode = rng.choice(("required", "preferred"))
        level = rng.choice(self.levels)
        leader_count = self.rng.randint(2, 3) if self.chance(0.05) else 1
        leader: Data = {
            "name": "leader",
            "count": leader_count,
            "requests": self._requests(gpu=False),
        }
        workers: Data = {"name": "workers", "count": self._count(), "requests": self._requests()}
        for pod_set in (leader, workers):
            topology = {"mode": mode, "level": level, "podSetGroupName": "lws"}
            if self.chance(0.1):
                topology["mode"] = rng.choice(("required", "preferred"))
                topology["level"] = rng.choice(self.levels)
            if self.chance(0.03):
                topology.update(self._slice(pod_set["count"], 0))
            pod_set["topology"] = topology
            self._placement_extras(pod_set)
        return [leader, workers] if self.chance(0.7) else [workers, leader]

    def _quota(self, workloads: list[Data]) -> Data:
        rng = self.rng
        gpus = sum(
            int(ps["requests"].get(GPU, 0)) * int(ps["count"])
            for wl in workloads
            for ps in wl["podSets"]
        )
        quota: Data = {GPU: rng.randint(1, max(1, gpus))}
        if self.chance(0.2):
            quota["cpu"] = str(rng.randint(1, 16))
        if self.chance(0.15):
            quota["pods"] = rng.randint(1, 40)
        if self.chance(0.1):
            quota["memory"] = rng.choice(("8Gi", "64Gi"))
        return quota
