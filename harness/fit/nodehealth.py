"""Whether a node of a workload's assignment failed for it, as Kueue's TAS node controller
judges (pkg/controller/tas/node_controller.go getWorkloadStatus), under the feature gates of
node replacement (pkg/features/kube_features.go); docs/dev/kueue-v0.19.2-node-replacement.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.fit.faultnotes import NodeHealth, pods_running, taint_words
from harness.fit.faultworld import World
from harness.fit.kubescheduler import Pod
from harness.fit.versions import KueueRules
from harness.scenario.model import Scenario, Taint, Toleration

SCHEDULING_EFFECTS = ("NoSchedule", "NoExecute")


@dataclass(frozen=True)
class Gates:
    """The feature gates of node replacement (pkg/features/kube_features.go, v0.19.2
    defaults)."""

    replacement: bool = True
    fail_fast: bool = True
    on_pod_termination: bool = True
    on_taints: bool = True
    over_fixed_time: bool = False

    @classmethod
    def of(cls, scenario: Scenario, rules: KueueRules | None = None) -> Gates:
        """The scenario's gates on `rules`' version (None: v0.19.2). Before v0.19 the NotReady
        timer is no gate but always on (KueueRules.not_ready_timer_gated)."""
        g = scenario.feature_gates
        timer = g.get("TASReplaceNodeDueToNotReadyOverFixedTime", False)
        return cls(
            replacement=g.get("TASFailedNodeReplacement", True),
            fail_fast=g.get("TASFailedNodeReplacementFailFast", True),
            on_pod_termination=g.get("TASReplaceNodeOnPodTermination", True),
            on_taints=g.get("TASReplaceNodeOnNodeTaints", True),
            over_fixed_time=timer if rules is None or rules.not_ready_timer_gated else True,
        )


def node_health(world: World, g: Gates, rules: KueueRules, name: str, node_name: str) -> NodeHealth:
    """getWorkloadStatus: has this node failed for this workload? With why in words."""
    node = world.nodes.get(node_name)
    if node is None:
        return NodeHealth(True, "the node was deleted")
    running = sum(b.count for b in world.binder.pods_of(name, node_name) if not b.terminating)
    if not node.ready:
        if g.over_fixed_time or not g.on_pod_termination:
            # the step dates NotReady NodeFailureDelay (30 s) back
            gate = "TASReplaceNodeDueToNotReadyOverFixedTime is on"
            if not rules.not_ready_timer_gated:
                gate = f"always on Kueue {rules.version}, kueue#13043"
            if not g.on_pod_termination:
                gate = "TASReplaceNodeOnPodTermination is off"
            return NodeHealth(True, f"NotReady for 30 s ({gate}: its pods do not matter)")
        if running:
            return NodeHealth(False, f"NotReady, but {pods_running(running)}, so it is kept")
        return NodeHealth(True, "NotReady and none of its pods still runs there")
    taints = [t for t in node.taints if t.effect in SCHEDULING_EFFECTS]
    if not taints:
        return NodeHealth(False, "")
    if not g.on_taints:
        return NodeHealth(
            False, f"{taint_words(taints)} ignored: TASReplaceNodeOnNodeTaints is off"
        )
    tolerations = tolerations_on(
        world, name, node_name, rules.taints_judged_with_flavor_tolerations
    )
    untolerated = [t for t in taints if not all(_tolerates(ts, t) for ts in tolerations)]
    if untolerated:
        what = f"untolerated {taint_words(untolerated)}"
        if not g.on_pod_termination:
            return NodeHealth(True, f"{what} (TASReplaceNodeOnPodTermination is off)")
        if running:
            return NodeHealth(False, f"{what}, but {pods_running(running)}, so it is kept")
        return NodeHealth(True, f"{what} and none of its pods still runs there")
    permanent = [tuple(t for t in ts if t.toleration_seconds is None) for ts in tolerations]
    timed = [t for t in taints if not all(_tolerates(ts, t) for ts in permanent)]
    if timed:
        what = f"{taint_words(timed)} tolerated only for tolerationSeconds"
        if running:
            return NodeHealth(False, f"{what}, but {pods_running(running)}, so it is kept")
        return NodeHealth(True, f"{what} and none of its pods still runs there")
    return NodeHealth(False, f"{taint_words(taints)} tolerated by its pod sets")


def tolerations_on(
    world: World, name: str, node: str, with_flavor: bool = True
) -> list[tuple[Toleration, ...]]:
    """podSetsWithEffectiveTolerationsOnNode: the pod sets placed on the node, each with
    its own tolerations and the flavor's (v0.17.1, `with_flavor` False: its own only,
    workload.PodSetsOnNode)."""
    per_leaf, flavors = world.assignments()[name], world.pod_set_flavors(name)
    return [
        ps.tolerations + (flavors[ps.name].tolerations if with_flavor else ())
        for ps in world.workload(name).pod_sets
        if node in per_leaf.get(ps.name, {}) and ps.name in flavors
    ]


def _tolerates(tolerations: tuple[Toleration, ...], taint: Taint) -> bool:
    return Pod({}, {}, tolerations).tolerates(taint)
