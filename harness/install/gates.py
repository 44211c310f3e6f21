"""Which feature gates a Kueue version registers, read from that version's own module.

Kueue refuses to start when its Configuration sets a gate it does not register ("unrecognized
feature gate"), and the gate list moves between minor versions (v0.18 added
TASHandleOverlappingFlavors, v0.19 TASAssignmentsEncodingByHostnamePrefix, ...:
docs/dev/kueue-version-differences.md §1). Reading the list from
pkg/features/kube_features.go keeps it in step with the module that is run, not restated.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from harness.install.manifests import ManifestError

FEATURES_GO = Path("pkg/features/kube_features.go")
_MAP_START = re.compile(r"^var defaultVersionedFeatureGates = map\[featuregate\.Feature\]")
_KEY = re.compile(r"^\t([A-Z][A-Za-z0-9]*): \{")


class GateNotRegistered(ManifestError):
    """A feature gate the Kueue version to be started does not register."""


def registered_gates(kueue_dir: Path) -> frozenset[str]:
    """The keys of `defaultVersionedFeatureGates` in the module's kube_features.go."""
    path = kueue_dir / FEATURES_GO
    try:
        lines = path.read_text().splitlines()
    except OSError as err:
        raise ManifestError(f"{path}: cannot read Kueue's feature gates: {err}") from None
    start = next((i for i, line in enumerate(lines) if _MAP_START.match(line)), None)
    if start is None:
        raise ManifestError(f"{path}: no defaultVersionedFeatureGates map")
    names: set[str] = set()
    for line in lines[start + 1 :]:
        if line.startswith("}"):
            break
        if hit := _KEY.match(line):
            names.add(hit.group(1))
    if not names:
        raise ManifestError(f"{path}: defaultVersionedFeatureGates lists no gates")
    return frozenset(names)


def check_gates(gates: Mapping[str, bool], version: str, registered: frozenset[str]) -> None:
    """Refuse, in one line, the first gate (by name) that `version` does not register. The
    gates the harness sets itself (TopologyAwareScheduling, VisibilityOnDemand) exist in
    every supported version, so only the user's and the scenario's can be refused."""
    for gate in sorted(set(gates) - registered):
        raise GateNotRegistered(
            f"feature gate {gate} does not exist in Kueue {version} (Kueue would refuse to "
            f"start); leave it out or choose another --kueue-version"
        )
