"""Command lines and files for the local control plane (pure: no processes, no I/O).

Flags are modelled on kwokctl's binary runtime and envtest, restricted to loopback and to
ports chosen per run so clusters can run side by side.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, fields
from pathlib import Path

import yaml

from harness.k8s.pki import FRONT_PROXY_CLIENT

SERVICE_CIDR = "10.96.0.0/16"
APISERVER_SANS_IP = ("127.0.0.1", "10.96.0.1")
APISERVER_SANS_DNS = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)


@dataclass(frozen=True)
class Ports:
    """One free 127.0.0.1 port per listener."""

    etcd: int
    etcd_peer: int
    apiserver: int
    controller_manager: int
    scheduler: int
    kwok: int
    kueue_health: int
    kueue_webhook: int
    kueue_visibility: int
    jobset_health: int
    jobset_webhook: int
    lws_health: int
    lws_webhook: int

    @classmethod
    def allocate(cls) -> Ports:
        """Ask the kernel for distinct free ports (all sockets held open until all are picked)."""
        socks = []
        try:
            for _ in fields(cls):
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s.bind(("127.0.0.1", 0))
                socks.append(s)
            return cls(*(s.getsockname()[1] for s in socks))
        finally:
            for s in socks:
                s.close()

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class Layout:
    """Where a run keeps its files."""

    run_dir: Path
    etcd_data: Path

    @property
    def pki(self) -> Path:
        return self.run_dir / "pki"

    @property
    def kubeconfig(self) -> Path:
        return self.run_dir / "kubeconfig"

    @property
    def token_file(self) -> Path:
        """The admin's bearer token, which the kubeconfig names (tokenFile)."""
        return self.pki / "admin.token"

    @property
    def token_auth_file(self) -> Path:
        """The API server's static token table (--token-auth-file): the admin's one row."""
        return self.pki / "tokens.csv"

    @property
    def logs(self) -> Path:
        return self.run_dir / "logs"

    def webhook_certs(self, controller: str) -> Path:
        """Serving certificate directory of a webhook-serving controller (kueue, jobset)."""
        return self.run_dir / controller / "webhook-certs"

    def config_file(self, controller: str) -> Path:
        """Configuration file of a controller that takes --config (kueue, jobset)."""
        return self.run_dir / controller / "config.yaml"

    @property
    def kwok_config(self) -> Path:
        return self.run_dir / "kwok" / "stages.yaml"


def kubeconfig(server: str, layout: Layout) -> str:
    """An admin kubeconfig using the run's CA and a bearer token (file references).

    A token, not the admin client certificate: the API server verifies a client
    certificate's chain on every request (crypto/x509 Verify was 5.6 % of its CPU during
    scenarios), a static token is one map lookup."""
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "kth",
                "cluster": {"server": server, "certificate-authority": str(layout.pki / "ca.crt")},
            }
        ],
        "users": [
            {
                "name": "kth-admin",
                "user": {"tokenFile": str(layout.token_file)},
            }
        ],
        "contexts": [{"name": "kth", "context": {"cluster": "kth", "user": "kth-admin"}}],
        "current-context": "kth",
    }
    return yaml.safe_dump(doc, sort_keys=False)


# Client-side rate limits for the controllers: one loopback API server, no other tenants.
CLIENT_RATE = ("--kube-api-qps=500", "--kube-api-burst=1000")


def etcd_args(ports: Ports, layout: Layout) -> list[str]:
    client, peer = f"http://127.0.0.1:{ports.etcd}", f"http://127.0.0.1:{ports.etcd_peer}"
    return [
        "--name=kth",
        f"--data-dir={layout.etcd_data}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=kth={peer}",
        "--unsafe-no-fsync=true",
        "--auto-compaction-retention=1",
        "--log-level=warn",
    ]


def apiserver_args(ports: Ports, layout: Layout) -> list[str]:
    pki = layout.pki
    return [
        f"--etcd-servers=http://127.0.0.1:{ports.etcd}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={ports.apiserver}",
        f"--tls-cert-file={pki / 'apiserver.crt'}",
        f"--tls-private-key-file={pki / 'apiserver.key'}",
        f"--client-ca-file={pki / 'ca.crt'}",
        f"--token-auth-file={layout.token_auth_file}",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-account-key-file={pki / 'sa.pub'}",
        f"--service-account-signing-key-file={pki / 'sa.key'}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--authorization-mode=RBAC",
        "--allow-privileged=true",
        # The `kubernetes` Service cannot get a loopback endpoint; nothing here needs it.
        "--endpoint-reconciler-type=none",
        # ServiceAccount, as envtest: pods need no token volume, no race on the default
        # ServiceAccount. TaintNodesByCondition would give every new Node the not-ready
        # taint until kube-controller-manager lifts it (~50 nodes/s here); KWOK's nodes
        # report Ready at once, and a scenario node that is not Ready is out of Kueue's
        # topology with or without the taint.
        "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
        f"--cert-dir={layout.run_dir / 'apiserver-certs'}",
        # Clearing a scenario is one DELETE per kind; one worker (the default) removed a
        # 2,048-node scenario's nodes and pods one at a time.
        "--delete-collection-workers=4",
        *aggregation_args(layout),
    ]


def aggregation_args(layout: Layout) -> list[str]:
    """The aggregation layer (front proxy), so Kueue's visibility API is served through the
    API server. With --requestheader-* set the API server publishes them in ConfigMap
    kube-system/extension-apiserver-authentication, which an extension server's delegated
    authentication reads. No --enable-aggregator-routing: it resolves a Service through its
    EndpointSlices, and those refuse loopback addresses (ValidateEndpointIP), while Kueue
    listens on 127.0.0.1 only; service routing of an ExternalName Service named localhost
    reaches it (harness/install/visibility.py)."""
    pki = layout.pki
    return [
        f"--requestheader-client-ca-file={pki / 'front-proxy-ca.crt'}",
        f"--requestheader-allowed-names={FRONT_PROXY_CLIENT}",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        f"--proxy-client-cert-file={pki / 'front-proxy-client.crt'}",
        f"--proxy-client-key-file={pki / 'front-proxy-client.key'}",
    ]


def _control_loop_args(port: int, layout: Layout, certs: str) -> list[str]:
    """What kube-controller-manager and kube-scheduler share: our kubeconfig, one replica
    (no leader election), serving on loopback only, certificates in the run dir."""
    return [
        f"--kubeconfig={layout.kubeconfig}",
        "--leader-elect=false",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--cert-dir={layout.run_dir / certs}",
    ]


CONTROLLERS = (
    "job-controller",
    "garbage-collector-controller",  # a deleted Job's Workload and pods (ownerReferences)
    "pod-garbage-collector-controller",  # pods of a deleted node, terminated pods
    "node-lifecycle-controller",  # a NotReady node's pods and taints (faults)
    "taint-eviction-controller",  # NoExecute taints evict pods (faults)
    "statefulset-controller",  # LeaderWorkerSet's groups
    "namespace-controller",  # a namespace deleted at the end of a run
    "ttl-after-finished-controller",
    "clusterrole-aggregation-controller",  # view/edit roles Kueue's roles aggregate into
)
"""kube-controller-manager's controllers a scenario can meet. The rest watch what no
scenario creates, and two write into every new namespace (a ServiceAccount, the root CA
ConfigMap); the resource quota controller alone watches every kind."""


def controller_manager_args(ports: Ports, layout: Layout) -> list[str]:
    return [
        *_control_loop_args(ports.controller_manager, layout, "kcm-certs"),
        f"--root-ca-file={layout.pki / 'ca.crt'}",
        f"--service-account-private-key-file={layout.pki / 'sa.key'}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--node-monitor-period=5s",
        f"--controllers={','.join(CONTROLLERS)}",
        # The default 20 QPS makes the Job controller create a 256-pod Job over ~12 s.
        *CLIENT_RATE,
    ]


def scheduler_args(ports: Ports, layout: Layout) -> list[str]:
    return [
        *_control_loop_args(ports.scheduler, layout, "scheduler-certs"),
        *CLIENT_RATE,  # default 50 QPS: binding hundreds of pods would wait on the limiter
    ]


def kwok_args(ports: Ports, layout: Layout) -> list[str]:
    return [
        # Explicit: kwok's default is ~/.kube/config and it ignores $KUBECONFIG.
        f"--kubeconfig={layout.kubeconfig}",
        f"--config={layout.kwok_config}",
        "--manage-all-nodes=false",
        "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
        "--node-ip=10.0.0.1",
        "--cidr=10.0.0.0/24",
        "--node-lease-duration-seconds=40",
        f"--server-address=127.0.0.1:{ports.kwok}",
    ]


def jobset_args(layout: Layout) -> list[str]:
    return [
        f"--config={layout.config_file('jobset')}",
        f"--kubeconfig={layout.kubeconfig}",
        "--zap-log-level=2",
    ]


def lws_args(layout: Layout) -> list[str]:
    return [
        f"--config={layout.config_file('lws')}",
        f"--kubeconfig={layout.kubeconfig}",
        "--zap-log-level=2",
    ]


def kueue_args(layout: Layout) -> list[str]:
    return [
        f"--config={layout.config_file('kueue')}",
        f"--kubeconfig={layout.kubeconfig}",
        "--zap-log-level=2",
    ]
