"""Provider "existing": kubeconfig handling, refusals, and only-what-it-created cleanup.

The cluster tests use real API servers: a bare kube-apiserver (no Kueue at all), the embedded
cluster (Kueue with TAS) and the embedded cluster with TAS switched off.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.backends.base import Unsupported
from harness.kube import KUEUE_API, RUN_LABEL, Kube, absent, kubeconfig, poll_until
from harness.providers.base import ClusterError
from harness.providers.existing.cluster import ExistingCluster, KueueMissing, pinned_kubeconfig
from harness.providers.kind import prereqs
from harness.providers.kind.cluster import KindCluster
from harness.providers.kwok import fake_node, wait_nodes_ready
from harness.providers.kwokrun import free_port
from harness.providers.local.cluster import LocalCluster
from harness.runner.backend import ClusterBackend
from harness.scenario.loader import load_scenario
from harness.scenario.shorthand import ALL_NODES_LABEL
from harness.toolchain import tools

REPO = Path(__file__).resolve().parents[2]
TAS_OFF = (
    "TopologyAwareScheduling",
    # Kueue v0.19.2 refuses to start with TAS off while these default-on TAS gates stay on
    # (pkg/config/validation.go, validateFeatureGates).
    "TASProfileMixed",
    "TASHandleOverlappingFlavors",
    "TASFailedNodeReplacement",
    "TASFailedNodeReplacementFailFast",
    "TASReplaceNodeOnPodTermination",
    "TASReplaceNodeOnNodeTaints",
    "TASMultiLayerTopology",
    "TASRecomputeAssignmentWithinSchedulingCycle",
)
KUBECONFIG = {
    "apiVersion": "v1",
    "kind": "Config",
    "clusters": [
        {
            "name": "a",
            "cluster": {"server": "https://127.0.0.1:1", "certificate-authority": "ca.crt"},
        },
        {"name": "b", "cluster": {"server": "https://127.0.0.1:2"}},
    ],
    "users": [{"name": "u", "user": {"client-certificate": "/abs/u.crt", "client-key": "u.key"}}],
    "contexts": [
        {"name": "ctx-a", "context": {"cluster": "a", "user": "u"}},
        {"name": "ctx-b", "context": {"cluster": "b", "user": "u"}},
    ],
    "current-context": "ctx-a",
}


def test_needs_a_kubeconfig(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    with pytest.raises(ClusterError, match=r"needs --kubeconfig FILE \(or \$KUBECONFIG\)"):
        ExistingCluster()


def test_feature_gates_are_refused() -> None:
    with pytest.raises(ClusterError, match="cannot be set on an existing cluster"):
        ExistingCluster(kubeconfig="x", feature_gates="TASBalancedPlacement=true")


def test_pinned_kubeconfig_picks_the_context_and_leaves_the_source_alone(tmp_path: Path) -> None:
    source = tmp_path / "src" / "config"
    source.parent.mkdir()
    source.write_text(yaml.safe_dump(KUBECONFIG))
    before = source.read_bytes()
    copy = pinned_kubeconfig(source, "ctx-b", tmp_path / "pinned")
    assert source.read_bytes() == before
    data = yaml.safe_load(copy.read_text())
    assert data["current-context"] == "ctx-b"
    assert data["clusters"][0]["cluster"]["certificate-authority"] == str(source.parent / "ca.crt")
    assert data["users"][0]["user"]["client-certificate"] == "/abs/u.crt"
    assert data["users"][0]["user"]["client-key"] == str(source.parent / "u.key")
    assert copy.stat().st_mode & 0o077 == 0


def relative_kubeconfig(server: str, ca: str = "ca.crt") -> dict[str, Any]:
    """Token file, exec plugin and CA named relative to the kubeconfig's own folder, as a
    kubeconfig written next to its credentials does."""
    plugin = {"apiVersion": "client.authentication.k8s.io/v1", "interactiveMode": "Never"}
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server, "certificate-authority": ca}}],
        "users": [
            {"name": "by-file", "user": {"tokenFile": "secrets/token"}},
            {"name": "by-plugin", "user": {"exec": {**plugin, "command": "./bin/plugin"}}},
            {"name": "on-path", "user": {"exec": {**plugin, "command": "gke-gcloud-auth-plugin"}}},
        ],
        "contexts": [
            {"name": n, "context": {"cluster": "c", "user": n}}
            for n in ("by-file", "by-plugin", "on-path")
        ],
        "current-context": "on-path",
    }


def test_pinned_kubeconfig_keeps_relative_token_file_plugin_and_ca_working(
    tmp_path: Path,
) -> None:
    """They are relative to the user's kubeconfig (client-go resolves them so), not to the
    copy in the run directory: the copy names them absolutely, as our client reads them."""
    source = tmp_path / "home" / "config"
    source.parent.mkdir()
    source.write_text(yaml.safe_dump(relative_kubeconfig("https://127.0.0.1:1")))
    (source.parent / "ca.crt").write_bytes(b"the user's CA")
    before = source.read_bytes()
    runs = tmp_path / "run"
    runs.mkdir()
    home = source.parent.resolve()
    for context in ("by-file", "by-plugin", "on-path"):
        access = kubeconfig.load([pinned_kubeconfig(source, context, runs / context)])
        assert access.ca_pem == b"the user's CA"
        if context == "by-file":
            assert access.token_file == home / "secrets" / "token"
        elif context == "by-plugin":
            assert access.exec_plugin is not None
            assert access.exec_plugin.command == str(home / "bin" / "plugin")
        else:  # a bare command is looked up on $PATH, wherever the kubeconfig is
            assert access.exec_plugin is not None
            assert access.exec_plugin.command == "gke-gcloud-auth-plugin"
    assert source.read_bytes() == before


def test_unknown_context_names_the_known_ones(tmp_path: Path) -> None:
    source = tmp_path / "config"
    source.write_text(yaml.safe_dump(KUBECONFIG))
    with pytest.raises(ClusterError, match="no context 'nope'; contexts: ctx-a, ctx-b"):
        pinned_kubeconfig(source, "nope", tmp_path / "pinned")


def test_unreachable_cluster_fails_in_one_line(tmp_path: Path) -> None:
    config = dict(KUBECONFIG, clusters=[{"name": "a", "cluster": {
        "server": f"https://127.0.0.1:{free_port()}", "insecure-skip-tls-verify": True}}],
        users=[{"name": "u", "user": {"token": "x"}}],
        contexts=[{"name": "ctx-a", "context": {"cluster": "a", "user": "u"}}])  # fmt: skip
    source = tmp_path / "config"
    source.write_text(yaml.safe_dump(config))
    provider = ExistingCluster(kubeconfig=source, run_root=tmp_path / "runs")
    with pytest.raises(ClusterError, match="cluster not reachable") as err:
        provider.start()
    assert str(source) in str(err.value)
    assert list((tmp_path / "runs").iterdir()) == []  # run dir removed again


# -- against real API servers ----------------------------------------------------------------


@pytest.fixture(scope="module")
def bare_apiserver(apiserver_only: Callable[[], AbstractContextManager[Any]]) -> Iterator[Path]:
    """etcd + kube-apiserver only: a real cluster on which Kueue was never installed."""
    with apiserver_only() as api:
        yield api.kubeconfig


@pytest.fixture(scope="module")
def token_apiserver(apiserver_only: Callable[..., AbstractContextManager[Any]], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:  # fmt: skip
    """A bare API server that also accepts the bearer token tok-carol (user carol)."""
    tokens = tmp_path_factory.mktemp("tokens") / "tokens.csv"
    tokens.write_text('tok-carol,carol,uid-carol,"system:masters"\n')
    with apiserver_only([f"--token-auth-file={tokens}"]) as api:
        yield api


@pytest.mark.cluster
def test_relative_token_file_and_plugin_authenticate_through_the_pinned_copy(
    token_apiserver: Any, tmp_path: Path
) -> None:
    """Who the server says we are (SelfSubjectReview) proves the credential was found."""
    home = tmp_path / "home"
    (home / "secrets").mkdir(parents=True)
    (home / "bin").mkdir()
    (home / "ca.crt").write_bytes((token_apiserver.layout.pki / "ca.crt").read_bytes())
    (home / "secrets" / "token").write_text("tok-carol\n")
    answer = {"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
              "status": {"token": "tok-carol"}}  # fmt: skip
    plugin = home / "bin" / "plugin"
    plugin.write_text(f"#!{sys.executable}\nprint({json.dumps(answer)!r})\n")
    plugin.chmod(0o755)
    source = home / "config"
    source.write_text(yaml.safe_dump(relative_kubeconfig(token_apiserver.server)))
    for context in ("by-file", "by-plugin"):
        copy = pinned_kubeconfig(source, context, tmp_path / f"pinned-{context}")
        review = Kube(copy).create(
            {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        )
        assert review["status"]["userInfo"]["username"] == "carol", context
        provider = ExistingCluster(kubeconfig=source, context=context, run_root=tmp_path / "runs")
        with pytest.raises(KueueMissing):  # reached and read the cluster: Kueue is not there
            provider.start()


@pytest.mark.cluster
def test_refuses_a_cluster_without_kueue(bare_apiserver: Path, tmp_path: Path) -> None:
    provider = ExistingCluster(kubeconfig=bare_apiserver, run_root=tmp_path)
    with pytest.raises(KueueMissing) as err:
        provider.start()
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("Kueue is not installed on https://127.0.0.1:")
    assert "workloads.kueue.x-k8s.io" in message and "topologies.kueue.x-k8s.io" in message
    kube = Kube(bare_apiserver)
    try:  # the refusal left nothing behind: no probe node
        assert kube.list("v1", "Node") == []
    finally:
        kube.close()


@pytest.mark.cluster
def test_refuses_kueue_whose_webhook_does_not_answer(bare_apiserver: Path, tmp_path: Path) -> None:
    """Kueue's chart installed by the kind provider's own code (real helm, real API server),
    but with no node to run Kueue's pod its webhook cannot answer. Runs after the test above:
    it leaves Kueue's objects on the bare API server."""
    helm = tools.tool_path("helm")
    if helm is None:
        pytest.skip("helm is not built: run `make tools`")
    installer = KindCluster(run_root=tmp_path)
    installer.tools = prereqs.Prereqs(paths={"helm": helm})
    installer.run_dir, installer.kubeconfig = tmp_path, bare_apiserver
    installer.install_kueue(wait=False)
    kube = Kube(bare_apiserver)
    try:
        deploy = kube.get("apps/v1", "Deployment", "kueue-controller-manager", "kueue-system")
        pod = deploy["spec"]["template"]["spec"]
        assert pod["containers"][0]["image"] == "registry.k8s.io/kueue/kueue:v0.19.2"
        assert pod["nodeSelector"] == {"node-role.kubernetes.io/control-plane": ""}
        assert kube.get_or_none("apiextensions.k8s.io/v1", "CustomResourceDefinition",
                                "topologies.kueue.x-k8s.io") is not None  # fmt: skip
        assert kube.get_or_none("apiextensions.k8s.io/v1", "CustomResourceDefinition",
                                "jobsets.jobset.x-k8s.io") is not None  # fmt: skip
    finally:
        kube.close()
    provider = ExistingCluster(kubeconfig=bare_apiserver, run_root=tmp_path / "existing")
    with pytest.raises(KueueMissing) as err:
        provider.start()
    message = str(err.value)
    assert message.startswith("Kueue's webhook on https://127.0.0.1:")
    assert (
        "does not answer" in message and "Kueue's Job webhook to suspend a dry-run Job" in message
    )


@pytest.fixture(scope="module")
def embedded() -> Iterator[LocalCluster]:
    """The embedded cluster (Kueue v0.19.2, TAS on), one for this module."""
    cluster = LocalCluster()
    cluster.start()
    yield cluster
    cluster.stop()


@pytest.mark.cluster
def test_runs_on_the_embedded_cluster_and_deletes_only_its_objects(
    embedded: LocalCluster, tmp_path: Path
) -> None:
    assert embedded.handle is not None
    provider = ExistingCluster(kubeconfig=embedded.handle.kubeconfig, run_root=tmp_path)
    handle = provider.start()
    assert handle.provider == "existing" and handle.server == embedded.handle.server
    assert provider.kwok is None  # the embedded cluster's own KWOK answered the probe
    kube = Kube(handle.kubeconfig)
    own = {RUN_LABEL: provider.run_id}
    other = {RUN_LABEL: "someone-else"}
    try:
        kube.create(fake_node("kth-mine", allocatable={"nvidia.com/gpu": "8"}, labels=own))
        kube.create(fake_node("kth-theirs", allocatable={"nvidia.com/gpu": "8"}, labels=other))
        kube.create({"apiVersion": "v1", "kind": "Namespace",
                     "metadata": {"name": f"kth-mine-{provider.run_id}", "labels": own}})  # fmt: skip
        provider.stop()
        poll_until(lambda: absent(kube.get_or_none("v1", "Node", "kth-mine")),
                   what="node kth-mine to be deleted", timeout=30)  # fmt: skip
        theirs = kube.get("v1", "Node", "kth-theirs")
        assert theirs["metadata"]["labels"][RUN_LABEL] == "someone-else"
        ns = kube.get_or_none("v1", "Namespace", f"kth-mine-{provider.run_id}")
        assert ns is None or ns["metadata"].get("deletionTimestamp")
        assert not handle.run_dir.exists()
    finally:
        kube.delete("v1", "Node", "kth-mine")
        kube.delete("v1", "Node", "kth-theirs")
        kube.close()


@pytest.mark.cluster
def test_names_foreign_nodes_that_would_join_a_scenario(
    embedded: LocalCluster, tmp_path: Path
) -> None:
    """Nodes the run did not create (and may not cordon) but that match a scenario's flavor
    and levels would change its outcome (here: another run's, carrying the label the guide's
    flavor selects); the provider says which."""
    assert embedded.handle is not None
    guide = load_scenario(REPO / "suites" / "guide" / "guide-required-host.yaml")
    (level, _) = guide.topologies[0].levels
    provider = ExistingCluster(kubeconfig=embedded.handle.kubeconfig, run_root=tmp_path)
    provider.start()
    kube = Kube(embedded.handle.kubeconfig)
    try:
        assert provider.scenario_problem(guide) is None
        kube.create(fake_node("kth-foreign", allocatable={"nvidia.com/gpu": "8"},
                              labels={level: "rack-9", **ALL_NODES_LABEL}))  # fmt: skip
        kube.create(fake_node("kth-mine", allocatable={"nvidia.com/gpu": "8"},
                              labels={level: "rack-9", RUN_LABEL: provider.run_id, **ALL_NODES_LABEL}))  # fmt: skip
        kube.create(fake_node("kth-cordoned", allocatable={"nvidia.com/gpu": "8"},
                              labels={level: "rack-9", **ALL_NODES_LABEL}, unschedulable=True))  # fmt: skip
        wait_nodes_ready(kube, ["kth-foreign", "kth-mine"])
        assert provider.foreign_nodes(guide) == ["kth-foreign"]
        problem = provider.scenario_problem(guide)
        assert problem is not None and problem.startswith(
            "1 node(s) of the existing cluster would join topology 'guide-topology' (kth-foreign)"
        )
    finally:
        for name in ("kth-foreign", "kth-mine", "kth-cordoned"):
            kube.delete("v1", "Node", name)
        kube.close()
        provider.stop()


@pytest.mark.cluster
def test_runner_refuses_a_scenario_that_foreign_nodes_would_join(embedded: LocalCluster) -> None:
    """The guard runs in real runs: `--cluster=existing` skips the scenario, saying why,
    instead of reporting an outcome that the cluster's own nodes changed."""
    assert embedded.handle is not None
    guide = load_scenario(REPO / "suites" / "guide" / "guide-required-host.yaml")
    (level, _) = guide.topologies[0].levels
    kube = Kube(embedded.handle.kubeconfig)
    backend = ClusterBackend(name="existing", kubeconfig=embedded.handle.kubeconfig)
    try:
        kube.create(fake_node("kth-foreign-2", allocatable={"nvidia.com/gpu": "8"},
                              labels={level: "rack-9", **ALL_NODES_LABEL}))  # fmt: skip
        wait_nodes_ready(kube, ["kth-foreign-2"])
        with pytest.raises(Unsupported, match=r"^1 node\(s\) of the existing cluster would "
                           r"join topology 'guide-topology' \(kth-foreign-2\)"):  # fmt: skip
            backend.run(guide)
        assert kube.list("v1", "Namespace", labels={RUN_LABEL: backend.run_id}) == []
    finally:
        kube.delete("v1", "Node", "kth-foreign-2")
        backend.close()
        kube.close()


@pytest.mark.cluster
def test_runner_never_uses_an_object_of_the_same_name_it_did_not_make(
    embedded: LocalCluster,
) -> None:
    """A Topology of the cluster's own, named and shaped exactly as the scenario's, is neither
    used nor changed nor deleted: the scenario fails in one line naming it."""
    assert embedded.handle is not None
    guide = load_scenario(REPO / "suites" / "guide" / "guide-required-host.yaml")
    theirs = {
        "apiVersion": KUEUE_API,
        "kind": "Topology",
        "metadata": {"name": guide.topologies[0].name, "labels": {"team": "platform"}},
        "spec": {"levels": [{"nodeLabel": level} for level in guide.topologies[0].levels]},
    }
    kube = Kube(embedded.handle.kubeconfig)
    backend = ClusterBackend(name="existing", kubeconfig=embedded.handle.kubeconfig)
    try:
        kube.create(theirs)
        with pytest.raises(Exception, match=rf"Topology {guide.topologies[0].name} exists and was "
                           r"not made by this run"):  # fmt: skip
            backend.run(guide)
        backend.close()
        after = kube.get(KUEUE_API, "Topology", guide.topologies[0].name)
        assert after["metadata"]["labels"] == {"team": "platform"}
        assert after["spec"] == theirs["spec"] and not after["metadata"].get("deletionTimestamp")
    finally:
        kube.delete(KUEUE_API, "Topology", guide.topologies[0].name)
        backend.close()
        kube.close()


@pytest.mark.cluster
def test_refuses_when_tas_is_off(tmp_path: Path) -> None:
    cluster = LocalCluster(feature_gates=dict.fromkeys(TAS_OFF, False))
    try:
        handle = cluster.start()
        provider = ExistingCluster(kubeconfig=handle.kubeconfig, run_root=tmp_path)
        with pytest.raises(KueueMissing) as err:
            provider.start()
        message = str(err.value)
        assert "\n" not in message
        assert "TopologyAwareScheduling looks off" in message
        kube = Kube(handle.kubeconfig)
        try:  # the probe's flavor and queue are gone
            assert kube.list("kueue.x-k8s.io/v1beta2", "ClusterQueue") == []
            assert kube.list("kueue.x-k8s.io/v1beta2", "ResourceFlavor") == []
        finally:
            kube.close()
    finally:
        cluster.stop()
