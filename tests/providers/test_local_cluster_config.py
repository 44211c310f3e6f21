"""Rendering for the local cluster, no processes: Kueue config, webhook and CRD rewriting,
KWOK stages and nodes, command lines and kubeconfig."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness import toolchain
from harness.install import jobset, manifests, visibility
from harness.k8s import pki
from harness.providers import kwok
from harness.providers.base import ClusterError
from harness.providers.local import cluster as local_cluster
from harness.providers.local import spec as localspec

needs_go = pytest.mark.skipif(shutil.which("go") is None, reason="needs the Go module cache")
BASE = "https://127.0.0.1:40123"
CA = "Q0EtUEVN"


@pytest.fixture(scope="module")
def kueue_dir() -> Path:
    """Kueue v0.19.2's module tree (go mod download)."""
    return toolchain.kueue_module_dir()


def _targets_kueue_api(webhook: dict[str, Any]) -> bool:
    return any("kueue.x-k8s.io" in r.get("apiGroups", []) for r in webhook.get("rules", []))


@needs_go
def test_webhooks_point_at_loopback_url_with_ca(kueue_dir: Path) -> None:
    docs = manifests.webhook_configurations(kueue_dir, BASE, CA)
    assert sorted(d["kind"] for d in docs) == [
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ]
    assert all(d["metadata"]["name"].startswith("kueue-") for d in docs)
    hooks = [w for d in docs for w in d["webhooks"]]
    assert len(hooks) > 20
    for w in hooks:
        assert set(w["clientConfig"]) == {"url", "caBundle"}
        assert w["clientConfig"]["url"].startswith(BASE + "/")
        assert w["clientConfig"]["caBundle"] == CA
    job = next(w for w in hooks if w["name"] == "mjob.kb.io")
    assert job["clientConfig"]["url"] == BASE + "/mutate-batch-v1-job"


@needs_go
def test_namespace_exclusions_spare_only_kueue_own_webhooks(kueue_dir: Path) -> None:
    """Kueue's kustomization excludes kube-system and kueue-system from every webhook except
    those on Kueue's own API objects."""
    hooks = [
        w for d in manifests.webhook_configurations(kueue_dir, BASE, CA) for w in d["webhooks"]
    ]
    for w in hooks:
        if _targets_kueue_api(w):
            assert "namespaceSelector" not in w, w["name"]
        else:
            (expr,) = w["namespaceSelector"]["matchExpressions"]
            assert expr["key"] == "kubernetes.io/metadata.name" and expr["operator"] == "NotIn"
            assert sorted(expr["values"]) == ["kube-system", "kueue-system"], w["name"]


def test_unexpected_kustomization_shape_fails_loudly(tmp_path: Path) -> None:
    kust = {
        "patches": [
            {
                "patch": yaml.safe_dump(
                    {
                        "webhooks": [
                            {"name": "vpod.kb.io", "namespaceSelector": {"matchLabels": {"a": "b"}}}
                        ]
                    }
                )
            }
        ],
        "replacements": [
            {
                "source": {"fieldPath": "webhooks.[name=vpod.kb.io].namespaceSelector"},
                "targets": [{"fieldPaths": ["webhooks.0.namespaceSelector"]}],
            }
        ],
    }
    path = tmp_path / "kustomization.yaml"
    path.write_text(yaml.safe_dump(kust))
    with pytest.raises(manifests.ManifestError, match="unexpected fieldPath"):
        manifests.namespace_selectors(path)


@needs_go
def test_crds_get_conversion_webhooks_where_kustomize_enables_them(kueue_dir: Path) -> None:
    crds = manifests.crds(kueue_dir, BASE, CA)
    kust = yaml.safe_load((kueue_dir / manifests.CRD_DIR / "kustomization.yaml").read_text())
    assert len(crds) == len(kust["resources"])
    enabled = {Path(p["path"]).stem.removeprefix("webhook_in_") for p in kust["patches"]}
    for crd in crds:
        conversion = crd["spec"].get("conversion")
        if crd["spec"]["names"]["plural"] in enabled:
            assert conversion["strategy"] == "Webhook"
            assert conversion["webhook"]["clientConfig"] == {
                "url": BASE + "/convert",
                "caBundle": CA,
            }
        else:
            assert conversion is None or conversion.get("strategy") == "None"
    assert "workloads" in enabled


def test_jobset_crd_is_the_version_kueue_is_built_against(kueue_dir: Path) -> None:
    """Kueue's JobSet integration is compiled against one JobSet API; the pin must match."""
    go_mod = (kueue_dir / "go.mod").read_text()
    assert f"sigs.k8s.io/jobset {toolchain.PINS.jobset}" in go_mod
    (crd,) = jobset.crds(toolchain.jobset_module_dir())
    assert crd["spec"]["names"]["kind"] == "JobSet"
    assert any(v["name"] == "v1alpha2" and v["served"] for v in crd["spec"]["versions"])


def test_jobset_webhooks_point_at_the_local_controller_and_keep_kustomize_patches() -> None:
    docs = jobset.webhook_configurations(toolchain.jobset_module_dir(), BASE, CA)
    assert sorted(d["metadata"]["name"] for d in docs) == [
        "jobset-mutating-webhook-configuration",
        "jobset-validating-webhook-configuration",
    ]
    hooks = {wh["name"]: wh for d in docs for wh in d["webhooks"]}
    assert set(hooks) == {"mjobset.kb.io", "mpod.kb.io", "vjobset.kb.io", "vpod.kb.io"}
    for wh in hooks.values():
        assert wh["clientConfig"]["url"].startswith(BASE + "/")
        assert wh["clientConfig"]["caBundle"] == CA
    # The kustomization's patches limit the pod webhooks to JobSet pods (failurePolicy Fail).
    for name in ("mpod.kb.io", "vpod.kb.io"):
        selector = hooks[name]["objectSelector"]["matchExpressions"]
        assert selector == [{"key": "jobset.sigs.k8s.io/jobset-name", "operator": "Exists"}]


def test_jobset_config_serves_its_webhook_on_loopback(tmp_path: Path) -> None:
    cfg = jobset.config(health_port=1, webhook_port=2, cert_dir=tmp_path)
    assert cfg["webhook"] == {"host": "127.0.0.1", "port": 2, "certDir": str(tmp_path)}
    assert cfg["health"]["healthProbeBindAddress"] == "127.0.0.1:1"
    assert cfg["internalCertManagement"] == {"enable": False}
    assert cfg["leaderElection"] == {"leaderElect": False}


def test_kueue_config_defaults_and_overrides(tmp_path: Path) -> None:
    cfg = manifests.kueue_config(
        health_port=1,
        webhook_port=2,
        cert_dir=tmp_path,
        feature_gates={"TASFailedNodeReplacement": True},
        overrides={"waitForPodsReady": {"enable": True}, "webhook": {"host": "127.0.0.1"}},
    )
    assert cfg["featureGates"] == {
        "TopologyAwareScheduling": True,
        "TASFailedNodeReplacement": True,
        "VisibilityOnDemand": False,
    }
    assert "visibilityServer" not in cfg
    assert cfg["internalCertManagement"] == {"enable": False}
    assert cfg["leaderElection"] == {"leaderElect": False}
    assert cfg["metrics"] == {"bindAddress": "0"}
    assert cfg["integrations"]["frameworks"] == ["batch/job", "jobset.x-k8s.io/jobset"]
    assert cfg["webhook"] == {"host": "127.0.0.1", "port": 2, "certDir": str(tmp_path)}
    assert cfg["health"]["healthProbeBindAddress"] == "127.0.0.1:1"
    assert cfg["waitForPodsReady"] == {"enable": True}


def test_visibility_server_listens_on_loopback_by_default(tmp_path: Path) -> None:
    cfg = manifests.kueue_config(
        health_port=1, webhook_port=2, cert_dir=tmp_path, visibility_port=3
    )
    assert cfg["featureGates"]["VisibilityOnDemand"] is True
    assert cfg["visibilityServer"] == {"bindAddress": "127.0.0.1", "bindPort": 3}


def test_visibility_server_can_be_turned_off(tmp_path: Path) -> None:
    cfg = manifests.kueue_config(
        health_port=1,
        webhook_port=2,
        cert_dir=tmp_path,
        visibility_port=3,
        feature_gates={"VisibilityOnDemand": False},
    )
    assert cfg["featureGates"]["VisibilityOnDemand"] is False
    assert "visibilityServer" not in cfg


def test_visibility_server_without_a_port_is_refused(tmp_path: Path) -> None:
    """Kueue's default would be 0.0.0.0:8082, which is neither loopback nor per run."""
    with pytest.raises(manifests.ManifestError, match="loopback port"):
        manifests.kueue_config(
            health_port=1,
            webhook_port=2,
            cert_dir=tmp_path,
            feature_gates={"VisibilityOnDemand": True},
        )


@needs_go
def test_visibility_objects_reach_kueue_on_loopback() -> None:
    objs = visibility.objects(toolchain.kueue_module_dir(), 4321)
    services = [o for o in objs if o["kind"] == "APIService"]
    assert sorted(o["metadata"]["name"] for o in services) == [
        "v1beta1.visibility.kueue.x-k8s.io",
        "v1beta2.visibility.kueue.x-k8s.io",
    ]
    assert {o["spec"]["service"]["port"] for o in services} == {4321}
    (svc,) = [o for o in objs if o["kind"] == "Service"]
    assert svc["spec"] == {"type": "ExternalName", "externalName": "localhost"}
    assert svc["metadata"]["name"] == services[0]["spec"]["service"]["name"]


def test_apiserver_runs_the_aggregation_layer(tmp_path: Path) -> None:
    layout = localspec.Layout(tmp_path, tmp_path / "etcd")
    argv = localspec.apiserver_args(localspec.Ports.allocate(), layout)
    assert f"--requestheader-client-ca-file={layout.pki / 'front-proxy-ca.crt'}" in argv
    assert "--requestheader-allowed-names=front-proxy-client" in argv
    assert f"--proxy-client-cert-file={layout.pki / 'front-proxy-client.crt'}" in argv


@needs_go
def test_kwok_stages_keep_pods_running() -> None:
    config, *docs = yaml.safe_load_all(kwok.stages_yaml(toolchain.kwok_module_dir()))
    assert config["kind"] == "KwokConfiguration"
    assert config["options"]["nodePlayStageParallelism"] > 4  # KWOK's default
    assert all(d["kind"] == "Stage" for d in docs)
    names = {d["metadata"]["name"] for d in docs}
    assert {"node-initialize", "pod-ready", "pod-delete"} <= names
    assert any("heartbeat" in n for n in names)
    assert "pod-complete" not in names


@needs_go
def test_kwok_starts_annotated_pods_not_ready() -> None:
    """`podsReady: false` pods (harness.runner.objects annotates them) go to a copy of
    KWOK's pod-ready stage that writes Ready False; pod-ready itself leaves them alone."""
    _, *docs = yaml.safe_load_all(kwok.stages_yaml(toolchain.kwok_module_dir()))
    stages = {d["metadata"]["name"]: d for d in docs}
    ready, not_ready = stages["pod-ready"], stages["pod-running-not-ready"]
    last = ready["spec"]["selector"]["matchExpressions"][-1]
    assert (last["key"], last["operator"]) == (
        f'.metadata.annotations["{kwok.NOT_READY_ANNOTATION}"]',
        "NotIn",
    )
    assert not_ready["spec"]["selector"]["matchExpressions"][-1]["operator"] == "In"
    template = not_ready["spec"]["next"]["statusTemplate"]
    assert 'status: "False"\n  type: Ready\n' in template
    assert 'status: "True"\n  type: Ready\n' in ready["spec"]["next"]["statusTemplate"]
    assert "phase: Running" in template


def test_fake_node_capacity_equals_allocatable() -> None:
    node = kwok.fake_node(
        "gpu-1",
        allocatable={"nvidia.com/gpu": 8, "cpu": "32"},
        labels={"cloud.provider.com/topology-rack": "r1"},
    )
    assert node["metadata"]["annotations"][kwok.MANAGED_ANNOTATION] == "fake"
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "gpu-1"
    assert node["metadata"]["labels"]["cloud.provider.com/topology-rack"] == "r1"
    assert (
        node["status"]["allocatable"]
        == node["status"]["capacity"]
        == {"nvidia.com/gpu": "8", "cpu": "32", "pods": "110"}
    )
    assert "taints" not in node["spec"]


def test_ports_are_distinct_and_free() -> None:
    ports = localspec.Ports.allocate().as_dict()
    assert len(set(ports.values())) == len(ports) == 13
    for port in ports.values():
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))


def test_command_lines_use_only_loopback_and_run_files(tmp_path: Path) -> None:
    ports = localspec.Ports.allocate()
    layout = localspec.Layout(tmp_path, tmp_path / "etcd")
    argv = [
        *localspec.etcd_args(ports, layout),
        *localspec.apiserver_args(ports, layout),
        *localspec.controller_manager_args(ports, layout),
        *localspec.scheduler_args(ports, layout),
        *localspec.kwok_args(ports, layout),
        *localspec.kueue_args(layout),
        *localspec.jobset_args(layout),
    ]
    assert not [a for a in argv if "=0.0.0.0" in a or "/.kube" in a]
    assert f"--secure-port={ports.apiserver}" in argv
    assert sum(a.startswith("--kubeconfig=") for a in argv) == 5


def test_kubeconfig_references_run_pki(tmp_path: Path) -> None:
    layout = localspec.Layout(tmp_path, tmp_path / "etcd")
    doc = yaml.safe_load(localspec.kubeconfig("https://127.0.0.1:6443", layout))
    cluster = doc["clusters"][0]["cluster"]
    assert cluster == {
        "server": "https://127.0.0.1:6443",
        "certificate-authority": str(tmp_path / "pki" / "ca.crt"),
    }
    assert doc["users"][0]["user"] == {"tokenFile": str(tmp_path / "pki" / "admin.token")}


def test_unwritable_metrics_cert_dir_says_the_one_time_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kueue v0.19.2 reads its metrics key pair from a fixed path under /etc (no flag or
    config moves it); a non-root user is told, in one line, the command the README gives.
    Root cannot be refused a write, so the path is made unwritable by a file in its way."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert local_cluster.ONE_TIME_STEP.format(certs=local_cluster.KUEUE_METRICS_CERTS) in readme
    (tmp_path / "etc").write_text("a file, not a folder")
    certs = tmp_path / "etc" / "kueue" / "metrics" / "certs"
    monkeypatch.setattr(local_cluster, "KUEUE_METRICS_CERTS", certs)
    with pytest.raises(ClusterError) as err:
        local_cluster.ensure_metrics_certs(pki.Authority.create())
    message = str(err.value)
    assert "\n" not in message
    assert message.endswith(f'run once: sudo install -d -o "$(id -un)" {certs}'), message


def test_metrics_cert_pair_is_written_once_and_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local_cluster, "KUEUE_METRICS_CERTS", tmp_path / "certs")
    local_cluster.ensure_metrics_certs(pki.Authority.create())
    first = (tmp_path / "certs" / "tls.crt").read_bytes()
    local_cluster.ensure_metrics_certs(pki.Authority.create())
    assert (tmp_path / "certs" / "tls.crt").read_bytes() == first


def _refuse_visibility_certs(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(ca: pki.Authority, directory: Path, name: str) -> None:
        if directory == visibility.CERT_DIR:
            raise ClusterError(f"cannot write {directory}")

    monkeypatch.setattr(local_cluster, "ensure_fixed_certs", refuse)


def test_without_visibility_certs_the_cluster_starts_without_the_api(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A non-root user who has not made /visibility still gets a cluster, as before."""
    _refuse_visibility_certs(monkeypatch)
    cluster = local_cluster.LocalCluster()
    cluster._ensure_visibility_certs(pki.Authority.create())
    assert cluster.feature_gates["VisibilityOnDemand"] is False


def test_visibility_asked_for_without_its_certs_is_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _refuse_visibility_certs(monkeypatch)
    cluster = local_cluster.LocalCluster(feature_gates={"VisibilityOnDemand": True})
    with pytest.raises(ClusterError, match="/visibility"):
        cluster._ensure_visibility_certs(pki.Authority.create())


def test_go_processes_get_one_p_each_when_six_clusters_share_two_cores() -> None:
    six_workers = {"PYTEST_XDIST_WORKER_COUNT": "6"}
    assert local_cluster.go_env(six_workers, cores=2) == {"GOGC": "300", "GOMAXPROCS": "1"}
    assert local_cluster.go_env({"PYTEST_XDIST_WORKER_COUNT": "2"}, cores=8)["GOMAXPROCS"] == "4"


def test_one_cluster_keeps_every_core_and_the_users_go_settings_win() -> None:
    assert local_cluster.go_env({}, cores=2)["GOMAXPROCS"] == "2"
    assert local_cluster.go_env({"PYTEST_XDIST_WORKER_COUNT": "junk"}, cores=2)["GOMAXPROCS"] == "2"
    mine = {"PYTEST_XDIST_WORKER_COUNT": "6", "GOMAXPROCS": "2", "GOGC": "100"}
    assert local_cluster.go_env(mine, cores=2) == {}
