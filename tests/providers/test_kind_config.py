"""Cluster shapes and what the kind provider renders from them (no Docker needed).

Expectations are derived from the shape files' raw YAML, so editing a shape keeps these
tests meaningful; `helm template` renders Kueue's real chart with our values when helm is
available (built by `make tools`).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness import toolchain
from harness.providers.kind import config as kindconfig
from harness.providers.kind import helm_values, prereqs
from harness.providers.kind.shape import (
    POOL_LABEL,
    REPO_CLUSTERS,
    ShapeError,
    load_shape,
    parse_shape,
)
from harness.toolchain.tools import tool_path

SHAPES = sorted(REPO_CLUSTERS.glob("*.yaml"))


def _raw_workers(path: Path) -> list[tuple[dict[str, str], str]]:
    """(labels, pool) per worker, expanded by count, straight from the YAML."""
    raw = yaml.safe_load(path.read_text())
    out = []
    for entry in raw["workers"]:
        out += [(entry.get("labels") or {}, entry["pool"])] * entry.get("count", 1)
    return out


def test_there_are_shapes_and_the_default_exists() -> None:
    assert SHAPES, "harness/providers/kind/shapes/ holds no shapes"
    assert (REPO_CLUSTERS / "gpu-2blocks-4racks.yaml") in SHAPES


@pytest.mark.parametrize("path", SHAPES, ids=lambda p: p.stem)
def test_kind_config_has_one_node_per_shape_worker(path: Path) -> None:
    shape = load_shape(path)
    raw = yaml.safe_load(path.read_text())
    expected = _raw_workers(path)
    cfg = kindconfig.named_config(shape, "kth-test")
    assert cfg["apiVersion"] == "kind.x-k8s.io/v1alpha4" and cfg["kind"] == "Cluster"
    assert cfg["name"] == "kth-test"
    assert cfg["networking"]["apiServerAddress"] == "127.0.0.1"
    roles = [n["role"] for n in cfg["nodes"]]
    assert roles == ["control-plane"] + ["worker"] * len(expected)
    for node in cfg["nodes"]:
        assert node["image"] == kindconfig.NODE_IMAGE
        assert node["image"].startswith("kindest/node:v1.36.1@sha256:3489c7674813ba5d")
    for index, (node, (labels, pool)) in enumerate(zip(cfg["nodes"][1:], expected, strict=True)):
        assert {k: node["labels"][k] for k in labels} == labels
        assert node["labels"][POOL_LABEL] == pool
        assert node["labels"][kindconfig.WORKER_LABEL] == str(index)
        assert set(node["labels"]) == {*labels, POOL_LABEL, kindconfig.WORKER_LABEL}
    assert shape.total_gpus() == sum(raw["pools"][p]["gpus"] for _, p in expected)


def test_kind_config_survives_a_yaml_round_trip() -> None:
    shape = load_shape("gpu-2blocks-4racks")
    cfg = kindconfig.named_config(shape, "kth")
    assert yaml.safe_load(yaml.safe_dump(cfg)) == cfg


def test_worker_names_follow_kinds_namer() -> None:
    shape = load_shape("kueue-tas-e2e")
    names = [w.node_name("kth") for w in shape.workers]
    assert names[:3] == ["kth-worker", "kth-worker2", "kth-worker3"]
    assert len(set(names)) == len(names) == len(_raw_workers(REPO_CLUSTERS / "kueue-tas-e2e.yaml"))


def test_gpu_status_patch_escapes_the_resource_name() -> None:
    patch = kindconfig.gpu_status_patch("nvidia.com/gpu", 8)
    assert patch == [
        {"op": "add", "path": "/status/capacity/nvidia.com~1gpu", "value": "8"},
        {"op": "add", "path": "/status/allocatable/nvidia.com~1gpu", "value": "8"},
    ]


def test_label_patch_removes_only_owned_keys() -> None:
    current = {"a/x": "1", "a/y": "2", "kubernetes.io/hostname": "h", "user/z": "keep"}
    patch = kindconfig.label_patch({"a/x": "1", "a/w": "3"}, current, {"a/x", "a/y", "a/w"})
    assert patch == {"metadata": {"labels": {"a/w": "3", "a/y": None}}}


@pytest.mark.parametrize("path", SHAPES, ids=lambda p: p.stem)
def test_fake_gpu_operator_values_match_the_pools(path: Path) -> None:
    shape = load_shape(path)
    raw = yaml.safe_load(path.read_text())
    values = helm_values.fake_gpu_operator_values(shape)
    pools = values["topology"]["nodePools"]
    used = {pool for _, pool in _raw_workers(path)}
    assert set(pools) == used
    for name in used:
        assert pools[name]["gpuCount"] == raw["pools"][name]["gpus"]
        if "product" in raw["pools"][name]:
            assert pools[name]["gpuProduct"] == raw["pools"][name]["product"]
    assert values["topology"]["nodePoolLabelKey"] == POOL_LABEL
    assert values["kwokGpuDevicePlugin"] == {"enabled": False}


@pytest.mark.parametrize(
    ("doc", "key", "problem"),
    [
        ({"name": "x", "pools": {"p": {"gpus": 1}}, "workers": []}, "workers", "non-empty"),
        ({"name": "x", "pools": {"p": {"gpus": 1}}, "workers": [{"pool": "q"}]},
         "workers[0].pool", "unknown pool 'q'"),
        ({"name": "x", "pools": {"p": {"gpus": -1}}, "workers": [{"pool": "p"}]},
         "pools.p.gpus", "at least 0"),
        ({"name": "x", "pools": {"p": {"gpus": 1}},
          "workers": [{"pool": "p", "labels": {"kubernetes.io/rack": "r1"}}]},
         "workers[0].labels.kubernetes.io/rack", "kubelet may not set"),
        ({"name": "x", "pools": {"p": {"gpus": 1}},
          "workers": [{"pool": "p", "labels": {"example.com/rack": 1}}]},
         "workers[0].labels.example.com/rack", "must be strings (quote it), got 1"),
        ({"name": "x", "pools": {"p": {"gpus": 1}},
          "workers": [{"pool": "p", "labels": {"example.com/rack": "r 1"}}]},
         "workers[0].labels.example.com/rack", "'r 1' is not a valid label value"),
        ({"name": "x", "pools": {"p": {"gpus": 1}}, "workers": [{"pool": "p", "cpus": 2}]},
         "workers[0]", "unknown key 'cpus'"),
        ({"name": "y", "pools": {"p": {"gpus": 1}}, "workers": [{"pool": "p"}]},
         "name", "must equal the file name"),
        # As the scenario loader (harness/k8s/rules.py): YAML's words, Kubernetes' limits.
        ({"name": "x", "pools": {"p": {"gpus": 1}},
          "workers": [{"pool": "p", "labels": {"example.com/rack": True}}]},
         "workers[0].labels.example.com/rack", "must be strings (quote it), got true"),
        ({"name": "x", "pools": {"p": {"gpus": 1}},
          "workers": [{"pool": "p", "labels": {"example.com/" + "r" * 64: "r1"}}]},
         "workers[0].labels.example.com/" + "r" * 64, "is not a valid label key"),
    ],
)  # fmt: skip
def test_bad_shapes_fail_in_one_line(doc: dict[str, Any], key: str, problem: str) -> None:
    with pytest.raises(ShapeError) as err:
        parse_shape(doc, "clusters/x.yaml")
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"clusters/x.yaml: {key}: ")
    assert problem in message


def test_topology_zone_label_is_allowed_for_the_kubelet() -> None:
    doc = {"name": "x", "pools": {"p": {"gpus": 1}},
           "workers": [{"pool": "p", "labels": {"topology.kubernetes.io/zone": "z1"}}]}  # fmt: skip
    assert parse_shape(doc, "x.yaml").workers[0].labels == {"topology.kubernetes.io/zone": "z1"}


def test_unknown_shape_names_the_known_ones() -> None:
    with pytest.raises(ShapeError, match=r"known: .*gpu-2blocks-4racks"):
        load_shape("no-such-shape")


# -- Kueue's chart ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kueue_chart() -> Path:
    """Kueue v0.19.2's chart directory from the Go module cache (downloaded if needed)."""
    try:
        return toolchain.kueue_module_dir() / "charts" / "kueue"
    except toolchain.ToolchainError as err:
        pytest.skip(f"Kueue's module is not available: {err}")


def test_kueue_values_keep_the_chart_config_and_set_ours(kueue_chart: Path) -> None:
    values = helm_values.kueue_values(
        kueue_chart, version="v0.19.2", feature_gates={"TASBalancedPlacement": True}
    )
    cm = values["controllerManager"]
    assert cm["manager"]["image"] == {
        "repository": "registry.k8s.io/kueue/kueue",
        "tag": "v0.19.2",
        "pullPolicy": "IfNotPresent",
    }
    gates = {g["name"]: g["enabled"] for g in cm["featureGates"]}
    assert gates == {"TopologyAwareScheduling": True, "TASBalancedPlacement": True}
    assert cm["nodeSelector"] == {"node-role.kubernetes.io/control-plane": ""}
    config = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
    chart_default = helm_values.chart_manager_config(kueue_chart)
    assert config["integrations"]["frameworks"] == ["batch/job", "jobset.x-k8s.io/jobset"]
    assert config["webhook"] == chart_default["webhook"]
    assert config["health"] == chart_default["health"]


def test_kueue_values_let_a_gate_be_turned_off(kueue_chart: Path) -> None:
    values = helm_values.kueue_values(
        kueue_chart, version="v0.19.2", feature_gates={"TopologyAwareScheduling": False}
    )
    gates = values["controllerManager"]["featureGates"]
    assert gates == [{"name": "TopologyAwareScheduling", "enabled": False}]


def _helm_template(
    chart: Path,
    values: dict[str, Any],
    tmp_path: Path,
    release: str = "kueue",
    namespace: str = "kueue-system",
) -> list[dict[str, Any]]:
    helm = tool_path("helm")
    if helm is None:
        pytest.skip("helm is not built: run `make tools` (or python -m harness build tools)")
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    out = subprocess.run(
        [
            str(helm),
            "template",
            release,
            str(chart),
            "--namespace",
            namespace,
            "-f",
            str(path),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def test_helm_renders_kueue_on_the_control_plane_with_tas(
    kueue_chart: Path, tmp_path: Path
) -> None:
    values = helm_values.kueue_values(
        kueue_chart, version="v0.19.2", feature_gates={"TASBalancedPlacement": True}
    )
    docs = _helm_template(kueue_chart, values, tmp_path)
    (deploy,) = [d for d in docs if d["kind"] == "Deployment" and "controller-manager" in
                 d["metadata"]["name"]]  # fmt: skip
    pod = deploy["spec"]["template"]["spec"]
    (manager,) = [c for c in pod["containers"] if c["name"] == "manager"]
    assert manager["image"] == "registry.k8s.io/kueue/kueue:v0.19.2"
    gates = [a for a in manager["args"] if a.startswith("--feature-gates=")]
    assert gates == ["--feature-gates=TopologyAwareScheduling=true,TASBalancedPlacement=true"]
    assert pod["nodeSelector"] == {"node-role.kubernetes.io/control-plane": ""}
    assert {
        "key": "node-role.kubernetes.io/control-plane",
        "operator": "Exists",
        "effect": "NoSchedule",
    } in pod["tolerations"]
    assert {"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
            "effect": "NoSchedule"} in pod["tolerations"]  # fmt: skip
    assert deploy["spec"]["replicas"] == 1
    (cm,) = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith(
        "manager-config")]  # fmt: skip
    config = yaml.safe_load(cm["data"]["controller_manager_config.yaml"])
    assert config["integrations"]["frameworks"] == ["batch/job", "jobset.x-k8s.io/jobset"]
    kinds = {d["kind"] for d in docs}
    assert {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} <= kinds


# -- kind's own parser -------------------------------------------------------------------------


def _kind_create(config: Path, tmp_path: Path) -> str:
    """Output of `kind create cluster` with a config, on a machine where no engine answers:
    kind decodes (strictly) and validates the config before it asks the engine for anything."""
    kind = tool_path("kind")
    if kind is None:
        pytest.skip("kind is not built: run `make tools`")
    if prereqs.check().engine is not None:
        pytest.skip("an engine answers here: this would really create a cluster")
    out = subprocess.run(
        [str(kind), "create", "cluster", "--name", "kth-config-check", "--config", str(config),
         "--kubeconfig", str(tmp_path / "kubeconfig")],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert out.returncode != 0
    return out.stdout + out.stderr


@pytest.mark.parametrize("path", SHAPES, ids=lambda p: p.stem)
def test_kind_accepts_the_rendered_config(path: Path, tmp_path: Path) -> None:
    config = tmp_path / "kind.yaml"
    config.write_text(yaml.safe_dump(kindconfig.named_config(load_shape(path), "kth")))
    output = _kind_create(config, tmp_path)
    assert "unable to decode config" not in output and "invalid" not in output.lower(), output
    assert "docker" in output or "podman" in output  # it got as far as the engine


def test_kind_rejects_a_misspelt_config(tmp_path: Path) -> None:
    """The check above can fail: kind's strict decoder names an unknown field."""
    cfg = kindconfig.named_config(load_shape("gpu-1rack-2hosts"), "kth")
    cfg["nodes"][1]["labelz"] = cfg["nodes"][1].pop("labels")
    config = tmp_path / "kind.yaml"
    config.write_text(yaml.safe_dump(cfg))
    output = _kind_create(config, tmp_path)
    assert "unable to decode config" in output and "labelz" in output


def test_helm_renders_jobset_released_image_on_the_control_plane(tmp_path: Path) -> None:
    """JobSet's chart defaults to a staging `main` image; kind gets the pinned release."""
    chart = toolchain.jobset_module_dir() / "charts" / "jobset"
    values = helm_values.jobset_values(version=toolchain.PINS.jobset)
    docs = _helm_template(chart, values, tmp_path, "jobset", "jobset-system")
    (deploy,) = [d for d in docs if d["kind"] == "Deployment"]
    pod = deploy["spec"]["template"]["spec"]
    (manager,) = pod["containers"]
    assert manager["image"] == "registry.k8s.io/jobset/jobset:v0.12.0"
    assert pod["nodeSelector"] == {"node-role.kubernetes.io/control-plane": ""}
    assert deploy["spec"]["replicas"] == 1
    kinds = {d["kind"] for d in docs}
    assert {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} <= kinds
