"""The component configuration the kubernetes-sigs controllers the embedded cluster runs
(JobSet, LeaderWorkerSet) read from --config: one shape, each in its own API group."""

from __future__ import annotations

from pathlib import Path

from harness.kube import Obj


def controller_config(
    api_version: str, *, health_port: int, webhook_port: int, cert_dir: Path
) -> Obj:
    """For a local process: our certs, no leader election, no metrics server, client rates
    as high as the other controllers'."""
    return {
        "apiVersion": api_version,
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "metrics": {"bindAddress": "0"},
        "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(cert_dir)},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "clientConnection": {"qps": 500, "burst": 1000},
    }
