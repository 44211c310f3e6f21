"""LeaderWorkerSet on the embedded cluster: its manifests from the LWS module, its config,
and Kueue's integration list (no cluster)."""

from __future__ import annotations

from pathlib import Path

from harness import toolchain
from harness.install import lws
from harness.providers.local.cluster import LWS_INTEGRATION
from harness.toolchain import components

BASE = "https://127.0.0.1:9443"
CA = "Q0E="


def test_lws_crd_serves_v1_only_so_no_conversion_webhook_is_needed() -> None:
    (crd,) = lws.crds(toolchain.lws_module_dir())
    assert crd["spec"]["names"]["kind"] == "LeaderWorkerSet"
    assert [v["name"] for v in crd["spec"]["versions"] if v["served"]] == ["v1"]
    assert "conversion" not in crd["spec"]


def test_lws_webhooks_point_at_the_local_controller_and_keep_kustomize_patches() -> None:
    docs = lws.webhook_configurations(toolchain.lws_module_dir(), BASE, CA)
    assert sorted(d["metadata"]["name"] for d in docs) == [
        "lws-mutating-webhook-configuration",
        "lws-validating-webhook-configuration",
    ]
    hooks = {wh["name"]: wh for d in docs for wh in d["webhooks"]}
    assert set(hooks) == {
        "mleaderworkerset.kb.io",
        "vleaderworkerset.kb.io",
        "mpod.kb.io",
        "vpod.kb.io",
    }
    for wh in hooks.values():
        assert wh["clientConfig"]["url"].startswith(BASE + "/")
        assert wh["clientConfig"]["caBundle"] == CA
    # The patches limit LWS's pod webhooks (failurePolicy Fail) to LWS pods.
    for name in ("mpod.kb.io", "vpod.kb.io"):
        selector = hooks[name]["objectSelector"]["matchExpressions"]
        assert selector == [{"key": "leaderworkerset.sigs.k8s.io/name", "operator": "Exists"}]


def test_lws_config_serves_its_webhook_on_loopback(tmp_path: Path) -> None:
    cfg = lws.config(health_port=1, webhook_port=2, cert_dir=tmp_path)
    assert cfg["apiVersion"] == "config.lws.x-k8s.io/v1alpha1"
    assert cfg["webhook"] == {"host": "127.0.0.1", "port": 2, "certDir": str(tmp_path)}
    assert cfg["health"]["healthProbeBindAddress"] == "127.0.0.1:1"
    assert cfg["internalCertManagement"] == {"enable": False}
    assert cfg["leaderElection"] == {"leaderElect": False}


def test_kueue_manages_leader_worker_sets_beside_jobs_and_jobsets() -> None:
    frameworks = LWS_INTEGRATION["integrations"]["frameworks"]
    assert frameworks == ["batch/job", "jobset.x-k8s.io/jobset", lws.FRAMEWORK]
    assert lws.FRAMEWORK == "leaderworkerset.x-k8s.io/leaderworkerset"


def test_lws_binary_is_built_from_its_module_main_package() -> None:
    comp = components(toolchain.PINS)["lws"]
    assert comp.version == toolchain.PINS.lws == "v0.8.0"
    assert comp.env_var == "KTH_LWS"
    assert comp.fingerprint()["module"] == "sigs.k8s.io/lws"
    assert comp.fingerprint()["package"] == "cmd"
