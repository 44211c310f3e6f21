"""Kueue's visibility API (visibility.kueue.x-k8s.io) served through the API server.

Kueue's visibility server (pkg/visibility/server.go) is an extension API server inside the
Kueue process; config/components/visibility/ registers it with one APIService per version
(v1beta1, v1beta2) backed by Service kueue-system/visibility-server. Those APIServices are
read from Kueue's module and pointed at Kueue on 127.0.0.1:

- The Service becomes `type: ExternalName, externalName: localhost`, and the APIServices'
  `service.port` the visibility port: the aggregator then proxies to https://localhost:PORT
  (k8s.io/apiserver pkg/util/proxy ResolveCluster). An EndpointSlice cannot point at
  127.0.0.1 (ValidateEndpointIP refuses loopback), so endpoint routing is not used.
- `insecureSkipTLSVerify: true` is kept as upstream has it: Kueue serves the fixed
  /visibility/tls.crt, shared by every run on the machine and signed by no run's CA.
- The RoleBinding that lets Kueue's service account read
  kube-system/extension-apiserver-authentication is left out: the embedded cluster's Kueue
  authenticates as kubernetes-admin (system:masters), which may read it and create the
  SubjectAccessReviews and TokenReviews of delegated authn/authz already.
"""

from __future__ import annotations

from pathlib import Path

from harness.install.manifests import ManifestError, Obj, load_all
from harness.kube import Kube, has_condition, poll_until

VISIBILITY_DIR = Path("config/components/visibility")
CERT_DIR = Path("/visibility")
"""Fixed in Kueue's pkg/visibility/server.go (`certDir`): with internal cert management off
the visibility server reads tls.crt/tls.key there and fails without them."""
GROUP = "visibility.kueue.x-k8s.io"
LOOPBACK_NAME = "localhost"


def enabled(gates: dict[str, bool]) -> bool:
    """Whether Kueue will run its visibility server (the gate is on by default here)."""
    return gates.get("VisibilityOnDemand", True)


def objects(kueue_dir: Path, port: int) -> list[Obj]:
    """The kustomization's Service and APIServices, rewritten to reach 127.0.0.1:port."""
    directory = kueue_dir / VISIBILITY_DIR
    (kust,) = load_all(directory / "kustomization.yaml")
    out: list[Obj] = []
    for resource in kust.get("resources") or []:
        for doc in load_all(directory / resource):
            if doc["kind"] == "APIService":
                doc["spec"]["service"]["port"] = port
                out.append(doc)
            elif doc["kind"] == "Service":
                doc["spec"] = {"type": "ExternalName", "externalName": LOOPBACK_NAME}
                out.append(doc)
    kinds = sorted(d["kind"] for d in out)
    if kinds.count("Service") != 1 or kinds.count("APIService") < 1:
        raise ManifestError(f"{directory}: expected one Service and APIServices, found {kinds}")
    return out


def install(kube: Kube, objs: list[Obj]) -> None:
    """Apply the Service first: an APIService naming a missing Service is unavailable."""
    for obj in sorted(objs, key=lambda o: o["kind"] != "Service"):
        kube.apply(obj)


def wait_available(kube: Kube, objs: list[Obj], timeout: float) -> None:
    """Until every APIService is Available: the aggregator has reached Kueue's visibility
    server and discovery of visibility.kueue.x-k8s.io answers (kubectl would otherwise warn
    on every call that it cannot list the group's resources)."""
    names = [o["metadata"]["name"] for o in objs if o["kind"] == "APIService"]
    check = has_condition("Available")

    def probe() -> tuple[bool, str]:
        seen = []
        for name in names:
            obj = kube.get_or_none("apiregistration.k8s.io/v1", "APIService", name)
            done, what = check(obj)
            if not done:
                seen.append(f"{name}: {what}")
        return not seen, "; ".join(seen)

    poll_until(probe, what=f"APIServices of {GROUP} to be Available", timeout=timeout)
