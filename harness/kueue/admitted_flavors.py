"""The flavors of an admitted pod set (contract v2 `admitted`): one flavor, or one per
resource group joined by `,` in resource-group order, as outcomes write `flavors` when a
ClusterQueue's resource groups gave a pod set's resources different flavors (Kueue assigns
a flavor per resource group: pkg/scheduler/flavorassigner, `assignFlavors`)."""

from __future__ import annotations

from harness.scenario.model import ClusterQueue


def parts(flavor: str) -> tuple[str, ...]:
    return tuple(f for f in flavor.split(",") if f)


def flavor_of(cq: ClusterQueue, flavor: str, resource: str) -> str:
    """The flavor its resource was admitted on: the part listed in the resource's group."""
    names = parts(flavor)
    if len(names) == 1:
        return names[0]
    group = cq.group_of(resource)
    listed = {fq.name for fq in group.flavors} if group is not None else set()
    return next((n for n in names if n in listed), names[0])
