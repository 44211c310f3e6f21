"""Issue 29's features grown onto a version-2 fuzz world (docs/scenario-format-v2.md):
hierarchical Cohort trees with quota and limits of their own, AdmissionChecks with steps that
set their state as a check controller would, a ClusterQueue's stopPolicy, a flavor no
ResourceFlavor is named after, and a topology level no flavor has.

Each is drawn after the rest of the case (`world_v2._WorldCase.build_v2`), so a case without
them is what it was before. `features` names what a generated case holds, for the campaign's
per-feature counts.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from harness.fuzz import world_config_features
from harness.fuzz.generator import GPU

Data = dict[str, Any]

FEATURES = (
    "fair-sharing",
    "fair-tree",
    "cohort-tree",
    "cohort-quota",
    "admission-checks",
    "check-steps",
    "stop-policy",
    "missing-flavor",
    "missing-level",
    *world_config_features.FEATURES,
)
"""What `features` can name, in report order."""

CHECK_NAMES = ("capacity-check", "budget-check")
CHECK_STATES = ("Ready", "Ready", "Ready", "Retry", "Rejected", "Pending")
MISSING_FLAVOR = "b200"
MISSING_LEVEL = "example.com/superpod"
"""A label key no generated Topology has (generator.LEVEL_POOL)."""
STOP_POLICIES = ("Hold", "HoldAndDrain")


def grow(
    rng: random.Random, data: Data, make_workload: Callable[[str], Data] | None = None
) -> None:
    """Add some of the features to `data` (a world_v2 case), each with its own chance;
    `make_workload(name)` makes a workload for a late `submit` step."""
    grower = _Grower(rng, data, make_workload)
    fair = "fairSharing" in data.get("kueueConfig", {})
    if rng.random() < (0.6 if fair else 0.35):
        grower.cohort_tree()
    if rng.random() < 0.3:
        grower.admission_checks()
    if rng.random() < 0.15:
        grower.stop_policy()
    if rng.random() < 0.12:
        grower.missing_flavor()
    if rng.random() < 0.15:
        grower.missing_level()
    world_config_features.grow_config(rng, data)


def features(data: Data) -> list[str]:
    """The features of FEATURES a case holds."""
    queues = data.get("clusterQueues", [])
    known = {f["name"] for f in data.get("resourceFlavors", [])}
    cohorts = data.get("cohorts", [])
    found = {
        "fair-sharing": "fairSharing" in data.get("kueueConfig", {}),
        "fair-tree": "fairSharing" in data.get("kueueConfig", {}) and bool(cohorts),
        "cohort-tree": any("parentName" in c for c in cohorts),
        "cohort-quota": any("resourceGroups" in c for c in cohorts),
        "admission-checks": any(
            "admissionChecks" in q or "admissionChecksStrategy" in q for q in queues
        ),
        "check-steps": any("set-admission-check" in s for s in data.get("steps", [])),
        "stop-policy": any(q.get("stopPolicy", "None") != "None" for q in queues),
        "missing-flavor": any(
            f["name"] not in known
            for group in [*queues, *cohorts]
            for rg in group.get("resourceGroups", [])
            for f in rg["flavors"]
        ),
        "missing-level": MISSING_LEVEL in str(data.get("workloads", [])),
    }
    more = world_config_features.features(data)
    return [name for name in FEATURES if found.get(name) or name in more]


class _Grower:
    def __init__(
        self, rng: random.Random, data: Data, make_workload: Callable[[str], Data] | None
    ) -> None:
        self.make_workload = make_workload
        self.rng = rng
        self.data = data
        self.queues: list[Data] = data["clusterQueues"]

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    # ---- hierarchical cohorts ------------------------------------------------------------

    def cohort_tree(self) -> None:
        """A tree `org` -> `research`/`prod` (sometimes `research` -> `ml`), ClusterQueues on
        its nodes, and quota and limits of the cohorts' own (limits only below the root, as
        the Cohort webhook requires), and fair-sharing weights when fair sharing is on."""
        rng = self.rng
        fair = "fairSharing" in self.data.get("kueueConfig", {})
        # Fair sharing over a tree needs queues in different subtrees to compare Cohorts.
        shape = rng.choice(("two", "chain") if fair else ("root", "two", "chain"))
        parents: dict[str, str | None] = {"org": None}
        if shape in ("two", "chain"):
            parents.update(research="org", prod="org")
        if shape == "chain":
            parents["ml"] = "research"
        names = list(parents)
        leaves = [n for n in names if n not in parents.values()] or names
        spread = rng.sample(leaves, len(leaves))
        for i, queue in enumerate(self.queues):
            if fair and self.chance(0.8):
                queue["cohortName"] = spread[i % len(spread)]
            else:
                queue["cohortName"] = rng.choice(leaves) if self.chance(0.8) else rng.choice(names)
            if "cohortName" in queue and self.chance(0.2):
                _lend_limit(rng, queue)
        cohorts = []
        for name in names:
            entry: Data = {"name": name}
            if parents[name] is not None:
                entry["parentName"] = parents[name]
            elif self.chance(0.3):
                continue  # an implicit root: named by a parentName, without an entry
            if self.chance(0.5):
                entry["resourceGroups"] = [self._cohort_group(parents[name] is not None)]
            if fair and self.chance(0.4):
                entry["fairSharing"] = {"weight": rng.choice(("0", "0.5", "2", "3"))}
            cohorts.append(entry)
        if fair and self.chance(0.5):
            self._pool_quota(cohorts)
        if cohorts:
            self.data["cohorts"] = cohorts

    def _pool_quota(self, cohorts: list[Data]) -> None:
        """Move some ClusterQueues' GPU quota up to the root Cohort, so their workloads
        borrow and fair sharing compares the subtrees they run in."""
        moved: dict[str, int] = {}
        for queue in self.queues:
            if not self.chance(0.6):
                continue
            if self.chance(0.7):
                preemption = queue.setdefault("preemption", {})
                preemption["reclaimWithinCohort"] = self.rng.choice(("Any", "LowerPriority"))
            for flavor in queue["resourceGroups"][0]["flavors"]:
                for quota in flavor["resources"]:
                    if quota["name"] == GPU:
                        moved[flavor["name"]] = moved.get(flavor["name"], 0) + int(
                            quota["nominalQuota"]
                        )
                        quota["nominalQuota"] = 0
                        quota.pop("lendingLimit", None)
        if not moved:
            return
        root = next((c for c in cohorts if "parentName" not in c), None)
        if root is None:
            root = {"name": "org"}
            cohorts.insert(0, root)
        group = root.setdefault("resourceGroups", [{"coveredResources": [GPU], "flavors": []}])[0]
        for name, amount in moved.items():
            flavor = next((f for f in group["flavors"] if f["name"] == name), None)
            if flavor is None:
                group["flavors"].append(
                    {"name": name, "resources": [{"name": GPU, "nominalQuota": amount}]}
                )
            else:
                flavor["resources"][0]["nominalQuota"] += amount

    def _cohort_group(self, has_parent: bool) -> Data:
        rng = self.rng
        flavors = [f["name"] for f in self.data["resourceFlavors"]]
        chosen = rng.sample(flavors, rng.randint(1, len(flavors)))
        out = []
        for flavor in chosen:
            quota: Data = {"name": GPU, "nominalQuota": rng.choice((0, 1, 2, 4, 8))}
            if has_parent and self.chance(0.3):
                quota["lendingLimit"] = rng.randint(0, quota["nominalQuota"] + 2)
            if has_parent and self.chance(0.3):
                quota["borrowingLimit"] = rng.randint(0, 6)
            out.append({"name": flavor, "resources": [quota]})
        return {"coveredResources": [GPU], "flavors": out}

    # ---- admission checks ----------------------------------------------------------------

    def admission_checks(self) -> None:
        """One or two checks (sometimes inactive, sometimes missing), on some ClusterQueues,
        per flavor too, and steps setting their states for workloads of those queues."""
        rng = self.rng
        names = list(CHECK_NAMES[: rng.randint(1, 2)])
        checks: list[Data] = []
        for name in names:
            check: Data = {"name": name, "controllerName": f"example.com/{name}"}
            if self.chance(0.08):
                check["active"] = False
            if not self.chance(0.06):
                checks.append(check)  # else a missing check: its ClusterQueues are inactive
        if checks:
            self.data["admissionChecks"] = checks
        with_checks = rng.sample(self.queues, rng.randint(1, len(self.queues)))
        for queue in with_checks:
            used = rng.sample(names, rng.randint(1, len(names)))
            if self.chance(0.4):
                queue["admissionChecks"] = used
                continue
            offered = [f["name"] for f in queue["resourceGroups"][0]["flavors"]]
            rules = []
            for name in used:
                rule: Data = {"name": name}
                if self.chance(0.35):
                    rule["onFlavors"] = rng.sample(offered, rng.randint(1, len(offered)))
                rules.append(rule)
            queue["admissionChecksStrategy"] = {"admissionChecks": rules}
        self._check_steps(names)

    def _check_steps(self, names: list[str]) -> None:
        """What check controllers do: Ready for about half the workloads of checked queues
        (so reservations turn into admissions), a few other states, sometimes a late
        submission into a checked queue among them (it meets what the steps freed)."""
        rng = self.rng
        checks_of = {q["name"]: _checks_of(q) for q in self.queues}
        everyone = [*self.data.get("admitted", []), *self.data["workloads"]]
        steps = self.data.get("steps", [])
        deleted = {s["delete-workload"] for s in steps if "delete-workload" in s}
        candidates = [
            (w["name"], w["queue"])
            for w in everyone
            if checks_of.get(w["queue"]) and w["name"] not in deleted
        ]
        if not candidates or self.chance(0.15):
            return
        chosen: list[tuple[str, str, str]] = [
            (name, queue, "Ready") for name, queue in candidates if self.chance(0.5)
        ]
        for _ in range(rng.randint(1, 3)):
            name, queue = rng.choice(candidates)
            chosen.append((name, queue, rng.choice(CHECK_STATES)))
        rng.shuffle(chosen)
        added = [
            {"set-admission-check": {"workload": n, "check": rng.choice(checks_of[q]), "state": st}}
            for n, q, st in chosen
        ]
        if self.make_workload is not None and self.chance(0.3):
            late = self.make_workload("late-0")
            late["queue"] = rng.choice([q for q in checks_of if checks_of[q]])
            at = rng.randrange(len(added) + 1)
            ready = {"workload": "late-0", "check": rng.choice(checks_of[late["queue"]])}
            added[at:at] = [{"submit": late}, {"set-admission-check": {**ready, "state": "Ready"}}]
        self.data.setdefault("steps", []).extend(added)

    # ---- stopPolicy, missing flavor, missing level ---------------------------------------

    def stop_policy(self) -> None:
        queue = self.rng.choice(self.queues)
        queue["stopPolicy"] = self.rng.choice(STOP_POLICIES)

    def missing_flavor(self) -> None:
        """A ClusterQueue (or a Cohort) offers a flavor no ResourceFlavor is named after: the
        ClusterQueue is inactive (FlavorNotFound); a Cohort's quota of it serves nobody."""
        rng = self.rng
        cohorts = [c for c in self.data.get("cohorts", []) if "resourceGroups" in c]
        if cohorts and self.chance(0.3):
            group = rng.choice(cohorts)["resourceGroups"][0]
            quota = {"name": GPU, "nominalQuota": rng.choice((1, 4, 8))}
            group["flavors"].append({"name": MISSING_FLAVOR, "resources": [quota]})
            return
        group = rng.choice(self.queues)["resourceGroups"][0]
        template = group["flavors"][0]["resources"]
        resources = [dict(r) for r in template]
        entry = {"name": MISSING_FLAVOR, "resources": resources}
        group["flavors"].insert(rng.randrange(len(group["flavors"]) + 1), entry)

    def missing_level(self) -> None:
        """One pod set asks for a level (or a slice level) that no Topology has: Kueue skips
        each flavor with "does not contain the requested level" and the workload waits."""
        rng = self.rng
        workload = rng.choice(self.data["workloads"])
        pod_set = rng.choice(workload["podSets"])
        topology = pod_set.setdefault("topology", {})
        if "sliceLevel" in topology and self.chance(0.4):
            topology["sliceLevel"] = MISSING_LEVEL
            return
        if topology.get("mode") not in ("required", "preferred"):
            topology.pop("sliceLevel", None)
            topology.pop("sliceSize", None)
            topology["mode"] = rng.choice(("required", "preferred"))
        topology["level"] = MISSING_LEVEL


def _checks_of(queue: Data) -> list[str]:
    strategy = queue.get("admissionChecksStrategy", {}).get("admissionChecks", [])
    return [*queue.get("admissionChecks", []), *(r["name"] for r in strategy)]


def _lend_limit(rng: random.Random, queue: Data) -> None:
    """A ClusterQueue in a tree lends only part of its GPU quota."""
    for flavor in queue["resourceGroups"][0]["flavors"]:
        for quota in flavor["resources"]:
            if quota["name"] == GPU and "lendingLimit" not in quota:
                quota["lendingLimit"] = rng.randint(0, int(quota["nominalQuota"]))
