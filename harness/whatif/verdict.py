"""The verdict on one pod set: the level it needs, the best domain there and how many of its
pods fit, and what holds the capacity that is short (per node and resource).

Pure arithmetic on a settled state (harness/whatif/ledger.py); it names no option.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from harness.fit.resources import count_in
from harness.k8s.quantity import format_kueue_units
from harness.scenario.model import HOSTNAME, PodSet, Scenario, Workload
from harness.whatif.ledger import (
    FlavorLedger,
    Holder,
    excluded,
    leaves_under,
    per_pod,
    pods_in_leaf,
    pods_per_domain,
)


@dataclass(frozen=True)
class Short:
    """A node (or lowest-level domain) of the best domain that holds fewer of the pods than
    it would empty: the resource that limits it and who holds that resource there."""

    node: str
    resource: str
    free: int
    capacity: int
    holders: tuple[tuple[Holder, int], ...] = ()
    why: str = ""  # the node is left out entirely (not Ready, cordoned, a taint, ...)
    level: str | None = None
    """The lowest level when it is not the hostname: `node` is then that domain (its nodes'
    capacity summed, as Kueue's TAS sums them)."""

    @property
    def where(self) -> str:
        return f"{level_word(self.level)} {self.node}"


@dataclass
class Verdict:
    pod_set: PodSet
    mode: str  # required | preferred | unconstrained
    level: str | None  # the level it must (or would like to) fit in; None: any nodes
    flavor: str | None
    domain: tuple[str, ...] = ()  # the best domain at `level` (() for the whole flavor)
    fits: int = 0
    fits_empty: int = 0  # what the domain would hold with nothing running on it
    short: list[Short] = field(default_factory=list)
    spans: list[str] = field(default_factory=list)  # admitted over these domains (preferred)

    @property
    def count(self) -> int:
        return self.pod_set.count


def candidate_ledgers(
    scenario: Scenario, workload: Workload, pod_set: PodSet, ledgers: Mapping[str, FlavorLedger]
) -> list[FlavorLedger]:
    """The TAS flavors the pod set may use: those of its ClusterQueue's resource group that
    covers what it requests."""
    try:
        cq = scenario.cluster_queue(workload.queue)
    except KeyError:
        return []
    names: list[str] = []
    for resource in [*pod_set.requests, "pods"]:
        group = cq.group_of(resource)
        if group is not None:
            names += [f.name for f in group.flavors if f.name not in names]
    return [ledgers[n] for n in names if n in ledgers]


def mode_and_level(pod_set: PodSet) -> tuple[str, str | None]:
    tr = pod_set.topology
    if tr is None or tr.mode is None or tr.mode == "unconstrained":
        return "unconstrained", None
    return tr.mode, tr.level


def judge(
    pod_set: PodSet,
    ledgers: list[FlavorLedger],
    whole_flavor: bool,
) -> Verdict:
    """The best domain (most pods fit; ties to the first name) over the candidate flavors.
    `whole_flavor`: count the flavor as one domain (a pending preferred or unconstrained pod
    set may spread)."""
    mode, level = mode_and_level(pod_set)
    best: Verdict | None = None
    for ledger in ledgers:
        levels = ledger.topology.levels
        if level is not None and level not in levels:
            continue
        depth = None if whole_flavor or level is None else levels.index(level)
        counts = pods_per_domain(ledger, pod_set, depth)
        domain = max(sorted(counts), key=lambda d: counts[d]) if counts else ()
        if best is None or counts.get(domain, 0) > best.fits:
            best = Verdict(pod_set, mode, level, ledger.flavor.name, domain, counts.get(domain, 0))
            everyone = {h for leaf in leaves_under(ledger, domain) for h in leaf.held}
            empty = pods_per_domain(ledger, pod_set, depth, everyone)
            best.fits_empty = empty.get(domain, 0)
            best.short = shortages(ledger, pod_set, domain)
    return best or Verdict(pod_set, mode, level, None)


def shortages(
    ledger: FlavorLedger,
    pod_set: PodSet,
    domain: tuple[str, ...],
) -> list[Short]:
    """Nodes of the domain holding fewer of the pods than they would empty, most lost first;
    then the domain's nodes the flavor leaves out."""
    found: list[tuple[int, Short]] = []
    wanted = per_pod(pod_set)
    for leaf in leaves_under(ledger, domain):
        why = excluded(leaf, pod_set, ledger.flavor)
        empty, _ = count_in(wanted, leaf.capacity)
        if why is not None:
            found.append((empty, Short(leaf.name, "", 0, 0, why=why)))  # hostname leaves only
            continue
        fits, resource = pods_in_leaf(leaf, pod_set, ledger.flavor)
        if fits >= empty or not resource:
            continue
        free = leaf.free().get(resource, 0)
        holders = sorted(
            ((h, v.get(resource, 0)) for h, v in leaf.held.items() if v.get(resource, 0)),
            key=lambda hv: (-hv[1], hv[0].name),
        )
        found.append(
            (
                empty - fits,
                Short(
                    leaf.values[-1],
                    resource,
                    free,
                    leaf.capacity.get(resource, 0),
                    tuple(holders),
                    level=None if isinstance(leaf.key, str) else ledger.topology.levels[-1],
                ),
            )
        )
    found.sort(key=lambda lost_short: (-lost_short[0], lost_short[1].node))
    out = [s for _, s in found]
    for node, (why, values) in sorted(ledger.dropped.items()):
        # Nodes without the flavor's labels are not its nodes at all: not worth a word.
        if values[: len(domain)] == domain and not why.startswith("lacks"):
            out.append(Short(node, "", 0, 0, why=why))
    return out


# ---- words ------------------------------------------------------------------------------------


def level_word(level: str | None) -> str:
    """`example.com/rack` -> rack; the hostname level -> node."""
    if level is None or level == HOSTNAME:
        return "node"
    return level.rsplit("/", 1)[-1]


def per_pod_text(pod_set: PodSet) -> str:
    units = per_pod(pod_set)
    units.pop("pods", None)
    order = sorted(units, key=lambda r: (not r.endswith("gpu"), r))
    parts = [f"{format_kueue_units(r, units[r])} {r}" for r in order]
    pods = f"{pod_set.count} pod{'s' if pod_set.count != 1 else ''}"
    if not parts:
        return pods
    joined = parts[0] if len(parts) == 1 else f"({', '.join(parts)})"
    return f"{pods} x {joined}"


def need_text(v: Verdict, flavors: bool = False) -> str:
    where = "anywhere" if v.level is None else f"within one {level_word(v.level)}"
    if v.level == HOSTNAME:
        where = "on one node"
    if v.mode == "preferred":
        where += " if it can (preferred)"
    elif v.mode == "required":
        where += " (required)"
    tr = v.pod_set.topology
    if tr is not None and tr.slice_size:
        where += f", in slices of {tr.slice_size} pods per {level_word(tr.slice_level)}"
    on = f" on flavor {v.flavor}" if v.flavor and flavors else ""
    return f"it needs {per_pod_text(v.pod_set)}{on} {where}"


def short_text(s: Short) -> str:
    if s.why:
        return f"{s.where} is left out: {s.why}"
    r = s.resource
    text = (
        f"{s.where} has {format_kueue_units(r, s.free)} of "
        f"{format_kueue_units(r, s.capacity)} {r} free"
    )
    if s.holders:
        held = ", ".join(f"{h.text()} {format_kueue_units(r, v)}" for h, v in s.holders[:3])
        more = f" and {len(s.holders) - 3} more" if len(s.holders) > 3 else ""
        text += f" (held by {held}{more})"
    return text


def best_text(v: Verdict) -> str:
    if v.flavor is None:
        return f"No flavor of its ClusterQueue has the level {v.level}."
    where = f"{level_word(v.level)} {v.domain[-1]}" if v.domain else f"flavor {v.flavor}"
    if v.fits >= v.count:
        return f"Best {where} has room for all {v.count} ({v.fits} would fit)."
    text = f"Best {where} fits {v.fits} of {v.count} pods"
    if v.fits_empty < v.count:
        empty = v.fits_empty or "none"
        text += f" (with nothing running there: {empty})"
    if v.short:
        shown = "; ".join(short_text(s) for s in v.short[:3])
        more = f"; {len(v.short) - 3} more nodes short" if len(v.short) > 3 else ""
        text += f": {shown}{more}"
    return text + "."
