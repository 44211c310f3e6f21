"""The one place that pins upstream versions; a pin change rebuilds the affected binaries."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

from harness.toolchain.gocmd import ToolchainError


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
    # LeaderWorkerSet: the newest release the Go module proxy serves; Kueue v0.19.2's go.mod
    # requires v0.7.0's API, whose shape v0.8.0 keeps (leaderworkerset.x-k8s.io/v1).
    lws: str = "v0.8.0"

    @property
    def staging(self) -> str:
        """Version of the k8s.io staging modules matching `kubernetes` (v1.36.1 -> v0.36.1)."""
        return "v0." + self.kubernetes.removeprefix("v1.")

    @property
    def kubernetes_minor(self) -> str:
        """Minor version number of `kubernetes` ("36"), for the version ldflags."""
        return self.kubernetes.removeprefix("v").split(".")[1]


PINS = Pins()

KUEUE_JOBSET: dict[str, str] = {
    "v0.17.1": "v0.11.1",
    "v0.18.2": "v0.12.0",
    "v0.19.2": "v0.12.0",
}
"""The Kueue versions the embedded cluster runs -> the sigs.k8s.io/jobset version each one's
go.mod requires. One Kubernetes (v1.36.1) serves them all: v0.17.1 is built on client-go
v0.35.3, one minor behind the API server, within the supported client skew. `make binaries`
builds each (`build --kueue-version all`); elsewhere a version is built on first use."""


class KueueVersionError(ToolchainError):
    """A Kueue version the embedded cluster does not run."""


def pins_for(kueue: str | None) -> Pins:
    """The pins for one supported Kueue version (None: the default, PINS)."""
    if kueue is None or kueue == PINS.kueue:
        return PINS
    if kueue not in KUEUE_JOBSET:
        raise KueueVersionError(
            f"Kueue {kueue} is not supported by the embedded cluster; supported: "
            f"{', '.join(KUEUE_JOBSET)}"
        )
    return dataclasses.replace(PINS, kueue=kueue, jobset=KUEUE_JOBSET[kueue])


KUEUE_VERSION_ENV = "KTH_KUEUE_VERSION"
"""The Kueue version the embedded cluster starts when none is passed to it (--kueue-version
sets it for the providers a backend creates)."""


def selected_pins() -> Pins:
    """The pins for $KTH_KUEUE_VERSION (unset or empty: PINS)."""
    return pins_for(os.environ.get(KUEUE_VERSION_ENV) or None)
