"""A KWOK controller run by the harness as a local process against any cluster's kubeconfig.

kind and existing clusters get KWOK nodes this way: the same binary and stage set as the
embedded cluster (harness.providers.kwok), no image to pull, and it manages only nodes
annotated kwok.x-k8s.io/node=fake, so real nodes are never touched.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

from harness import toolchain
from harness.providers import health
from harness.providers.kwok import MANAGED_ANNOTATION, stages_yaml
from harness.providers.process import Process


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class KwokController:
    """Start, check and stop one kwok process; its log is run_dir/logs/kwok.log."""

    def __init__(self, kubeconfig: Path, run_dir: Path) -> None:
        self.kubeconfig = kubeconfig
        self.run_dir = run_dir
        self.log = run_dir / "logs" / "kwok.log"
        self.proc: Process | None = None

    def start(self, timeout: float = 60.0) -> None:
        binary = toolchain.binary("kwok")
        config = self.run_dir / "kwok" / "stages.yaml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(stages_yaml(toolchain.kwok_module_dir()))
        port = free_port()
        args = [
            f"--kubeconfig={self.kubeconfig}",  # kwok ignores $KUBECONFIG
            f"--config={config}",
            "--manage-all-nodes=false",
            f"--manage-nodes-with-annotation-selector={MANAGED_ANNOTATION}=fake",
            "--node-ip=10.0.0.1",
            "--cidr=10.0.0.0/24",
            "--node-lease-duration-seconds=40",
            f"--server-address=127.0.0.1:{port}",
        ]
        env = {**os.environ, "KWOK_WORKDIR": str(config.parent), "NO_PROXY": "127.0.0.1,localhost"}
        self.proc = Process("kwok", [str(binary), *args], self.log, env, self.run_dir)
        self.proc.start()
        health.wait_healthy(
            self.proc,
            health.http_probe(f"http://127.0.0.1:{port}/healthz"),
            what="/healthz",
            timeout=timeout,
        )

    def check(self) -> None:
        if self.proc is not None:
            self.proc.check()

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop()
