"""Why nodes were left out of a placement, and the failure messages that quote it.

Formats follow Kueue v0.19.2 tas_flavor_snapshot.go (notFitMessage, formatReasons):
reasons are rendered, then sorted as strings, then joined with ", ".
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from harness.errors import Nondeterministic


def go_quote(text: str) -> str:
    """Go's %q for ordinary printable strings."""
    return json.dumps(text, ensure_ascii=False)


@dataclass
class ExclusionStats:
    total_nodes: int = 0
    node_selector: int = 0
    affinity: int = 0
    topology_domain: int = 0
    taints: dict[str, int] = field(default_factory=dict)
    resources: dict[str, int] = field(default_factory=dict)
    random_exclusion: str = ""
    """Why the resource exclusions depend on Go map order (Kueue before v0.19), if they do:
    a message quoting them cannot be predicted."""

    def exclude_taint(self, rendered: str) -> None:
        self.taints[rendered] = self.taints.get(rendered, 0) + 1

    def exclude_resource(self, name: str) -> None:
        self.resources[name] = self.resources.get(name, 0) + 1

    def has_exclusions(self) -> bool:
        return bool(
            self.node_selector
            or self.affinity
            or self.topology_domain
            or self.taints
            or self.resources
        )

    def reasons(self) -> str:
        items = []
        if self.node_selector:
            items.append(f"nodeSelector: {self.node_selector}")
        if self.affinity:
            items.append(f"affinity: {self.affinity}")
        if self.topology_domain:
            items.append(f"topologyDomain: {self.topology_domain}")
        items += [f"taint {go_quote(t)}: {n}" for t, n in self.taints.items()]
        items += [f"resource {go_quote(r)}: {n}" for r, n in self.resources.items()]
        return ", ".join(sorted(items))

    def suffix(self) -> str:
        if not self.has_exclusions():
            return ""
        if self.random_exclusion:
            raise Nondeterministic(f"the pending message's exclusions: {self.random_exclusion}")
        return f". Total nodes: {self.total_nodes}; excluded: {self.reasons()}"


def not_fit_message(
    topology_name: str, fit: int, total: int, slice_size: int, stats: ExclusionStats
) -> str:
    unit = "pod" if slice_size == 1 else "slice"
    name = go_quote(topology_name)
    if fit == 0:
        head = f"topology {name} doesn't allow to fit any of {total} {unit}(s)"
    else:
        head = f"topology {name} allows to fit only {fit} out of {total} {unit}(s)"
    return head + stats.suffix()
