"""Options about nodes the flavor leaves out of the pod set's reach: tolerate the taints that
keep it off them, uncordon the cordoned ones. Each is one fit-model run (a NotReady node is
named in the verdict but not offered: no setting makes it Ready).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from harness.scenario.model import Node, Scenario, Taint, Toleration
from harness.whatif import variants
from harness.whatif.ledger import FlavorLedger
from harness.whatif.options import Option, pod_set_of
from harness.whatif.variants import Seen
from harness.whatif.verdict import Verdict

Check = Callable[[Scenario], Seen | None]


def refused_taints(ledger: FlavorLedger, v: Verdict) -> list[Taint]:
    """The NoSchedule/NoExecute taints on the flavor's nodes that neither the pod set nor the
    flavor tolerates, in node order."""
    tolerations = v.pod_set.tolerations + ledger.flavor.tolerations
    found: list[Taint] = []
    for holdings in ledger.leaves.values():
        for node in holdings.leaf.nodes:
            for taint in node.taints:
                if taint.effect not in ("NoSchedule", "NoExecute") or taint in found:
                    continue
                if not any(t.tolerates(taint) for t in tolerations):
                    found.append(taint)
    return found


def tolerate_option(
    base: Scenario,
    name: str,
    v: Verdict,
    ledgers: Mapping[str, FlavorLedger],
    check: Check,
    many: bool,
) -> Option | None:
    ledger = ledgers.get(v.flavor or "")
    taints = refused_taints(ledger, v) if ledger is not None else []
    if not taints:
        return None
    added = tuple(Toleration(t.key, "Equal", t.value, t.effect) for t in taints)
    changed = variants.with_pod_set(
        base, name, v.pod_set.name, lambda p: replace(p, tolerations=p.tolerations + added)
    )
    seen = check(changed)
    if seen is None:
        return None
    landed = _nodes_of(base, seen.outcome.placement.get(v.pod_set.name, {}))
    used = [t for t in taints if any(t in n.taints for n in landed)] or taints
    text = f"{pod_set_of(v, many)}its pods tolerated taint {', '.join(t.render() for t in used)}"
    return Option("tolerate", text, v.pod_set.name).seen(seen)


def uncordon_option(
    base: Scenario, v: Verdict, ledgers: Mapping[str, FlavorLedger], check: Check
) -> Option | None:
    ledger = ledgers.get(v.flavor or "")
    if ledger is None:
        return None
    cordoned = sorted(n for n, (why, _) in ledger.dropped.items() if why.startswith("cordoned"))
    if not cordoned:
        return None
    seen = check(uncordoned(base, set(cordoned)))
    if seen is None:
        return None
    landed = {n.name for n in _nodes_of(base, seen.outcome.placement.get(v.pod_set.name, {}))}
    used = [n for n in cordoned if n in landed] or cordoned
    word = "node" if len(used) == 1 else "nodes"
    text = f"{word} {', '.join(used)} {'was' if len(used) == 1 else 'were'} uncordoned"
    return Option("uncordon", text, v.pod_set.name).seen(seen)


def uncordoned(scenario: Scenario, names: set[str]) -> Scenario:
    """The scenario with these nodes schedulable (and no step cordoning them)."""

    def fixed(node: Node) -> Node:
        return replace(node, unschedulable=False) if node.name in names else node

    steps = tuple(s for s in scenario.steps if not (s.action == "cordon" and s.target in names))
    steps = tuple(replace(s, target=fixed(s.target)) if isinstance(s.target, Node) else s
                  for s in steps)  # fmt: skip
    return replace(scenario, nodes=tuple(map(fixed, scenario.nodes)), steps=steps)


def _nodes_of(scenario: Scenario, placement: Mapping[str, int]) -> list[Node]:
    """The nodes a placement names (lowest-level names that are node names)."""
    by_name = {n.name: n for n in scenario.nodes}
    by_name.update({s.target.name: s.target for s in scenario.steps if isinstance(s.target, Node)})
    return [by_name[k] for k in placement if k in by_name]
