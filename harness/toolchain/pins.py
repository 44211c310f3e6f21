"""The one place that pins upstream versions; a pin change rebuilds the affected binaries."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Pins:
    """Upstream versions the embedded cluster is built from.

    Kubernetes v1.36.1 matches kind v0.32.0's node image, Kueue v0.19.2's own e2e and KWOK
    v0.8.0's default, so the embedded and kind backends run the same server code.
    """

    kubernetes: str = "v1.36.1"
    etcd: str = "v3.6.14"
    kwok: str = "v0.8.0"
    kueue: str = "v0.19.2"
    # The JobSet API Kueue v0.19.2 is built against (its go.mod); only the CRD is installed,
    # so multi-pod-set workloads pass Kueue's JobSet webhook and reconciler.
    jobset: str = "v0.12.0"

    @property
    def staging(self) -> str:
        """Version of the k8s.io staging modules matching `kubernetes` (v1.36.1 -> v0.36.1)."""
        return "v0." + self.kubernetes.removeprefix("v1.")

    @property
    def kubernetes_minor(self) -> str:
        """Minor version number of `kubernetes` ("36"), for the version ldflags."""
        return self.kubernetes.removeprefix("v").split(".")[1]


PINS = Pins()
