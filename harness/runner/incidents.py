"""Infrastructure incidents: the cluster under a scenario failed in a way the scenario did
not ask for (a component exited, a node went NotReady by itself).

An attempt that saw one says nothing about Kueue, pass or fail: the runner discards it and
runs the scenario again on a fresh cluster (harness.runner.backend). A disagreement on a
healthy cluster is never retried.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.errors import HarnessError
from harness.kube import Obj, condition
from harness.kube.wait import NOT_READY_TAINTS
from harness.providers.base import ClusterError, Provider
from harness.scenario.model import Node, Scenario, TaintChange

MADE_NOT_READY = ("node-not-ready", "node-ready")
"""Steps after which a node's readiness is the scenario's doing."""


class Incident(HarnessError):
    """The infrastructure failed under an attempt; the message says how, in one line."""


def component_down(provider: Provider | None) -> str | None:
    """A component of the cluster that exited, in one line (None: all running)."""
    if provider is None:
        return None
    try:
        provider.check()
    except ClusterError as crash:
        return str(crash).split(";", 1)[0].splitlines()[0]
    return None


def raise_if_down(provider: Provider | None) -> None:
    """The watchdog of an attempt's waits: end them as soon as a component exits."""
    down = component_down(provider)
    if down is not None:
        raise Incident(down)


def not_ready_by_themselves(nodes: Iterable[Obj], scenario: Scenario) -> list[str]:
    """The run's nodes that are not Ready though the scenario keeps them ready: neither
    declared NotReady, nor added NotReady, nor named by a step that changes readiness."""
    chosen = {n.name for n in scenario.nodes if not n.ready}
    for step in scenario.steps:
        target = step.target
        if step.action in MADE_NOT_READY and isinstance(target, str):
            chosen.add(target)
        elif step.action == "add-node" and isinstance(target, Node) and not target.ready:
            chosen.add(target.name)
    declared = {t.key for n in scenario.nodes for t in n.taints}
    declared |= {s.target.taint.key for s in scenario.steps if isinstance(s.target, TaintChange)}
    found = []
    for node in nodes:
        name = str(node["metadata"]["name"])
        ready = condition(node, "Ready")
        status = "absent" if ready is None else str(ready.get("status"))
        if name in chosen:
            continue
        if status != "True":
            why = "" if ready is None else f" ({ready.get('reason')}: {ready.get('message')})"
            found.append(f"node {name} is Ready={status}{why}, which the scenario did not do")
            continue
        # The node lifecycle controller can taint a node it saw before KWOK's first status
        # (fake Ready=Unknown, node_lifecycle_controller.go tryUpdateNodeHealth) and keep the
        # taint on the Ready node until its next pass: Kueue then excludes it.
        for taint in (node.get("spec") or {}).get("taints") or []:
            if taint.get("key") in NOT_READY_TAINTS and taint.get("key") not in declared:
                found.append(
                    f"node {name} is Ready but has the {taint['key']} taint, which the scenario "
                    "did not add"
                )
    return sorted(found)
