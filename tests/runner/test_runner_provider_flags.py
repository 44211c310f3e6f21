"""The runner asks the provider what it can do (capability flags), never its name.

A stand-in provider class (a test double: it starts nothing) is registered under a name the
runner has never heard of; the runner must follow its flags exactly as it follows
ExistingCluster's, which carries the same ones.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.backends.base import BackendError, Unsupported
from harness.providers import base
from harness.providers.base import ClusterHandle, ProviderBase
from harness.providers.existing.cluster import ExistingCluster
from harness.providers.kind.cluster import KindCluster
from harness.providers.local.cluster import LocalCluster
from harness.runner.backend import ClusterBackend
from harness.scenario.loader import load_scenario

SUITES = Path(__file__).resolve().parents[2] / "suites"
GUIDE = SUITES / "guide"


class SharedClusterStandIn(ProviderBase):
    """Test double of someone else's cluster: flags only; starting it is a test failure."""

    name = "stand-in"
    can_set_feature_gates = False
    shared = True
    needs_kubeconfig = True

    def __init__(self, **options: object) -> None:
        self.options = options

    def start(self) -> ClusterHandle:
        raise AssertionError("the runner started a cluster it should have refused")

    def logs(self) -> dict[str, Path]:
        return {}


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> None:
    """SharedClusterStandIn registered as provider "stand-in" for one test."""
    monkeypatch.setitem(base.PROVIDERS, "stand-in", f"{__name__}:SharedClusterStandIn")


def test_existing_carries_the_flags_of_a_shared_cluster() -> None:
    flags = ("can_set_feature_gates", "shared", "needs_kubeconfig")
    assert [getattr(ExistingCluster, f) for f in flags] == [False, True, True]
    for owned in (LocalCluster, KindCluster):
        assert [getattr(owned, f) for f in flags] == [True, False, False]


@pytest.mark.usefixtures("stand_in")
def test_a_provider_that_needs_a_kubeconfig_is_refused_without_one() -> None:
    with pytest.raises(BackendError, match=r"^--cluster=stand-in needs --kubeconfig PATH$"):
        ClusterBackend(name="stand-in")


@pytest.mark.usefixtures("stand_in")
def test_gates_on_a_cluster_whose_gates_are_not_ours_are_unsupported(tmp_path: Path) -> None:
    backend = ClusterBackend(name="stand-in", kubeconfig=tmp_path / "kubeconfig")
    scenario = load_scenario(SUITES / "kueue-cases" / "balanced-basic.yaml")
    assert scenario.feature_gates, "the scenario should ask for a feature gate"
    with pytest.raises(Unsupported, match="cannot be set on the stand-in cluster"):
        backend.run(scenario)


@pytest.mark.usefixtures("stand_in")
def test_command_line_gates_alone_are_unsupported_too(tmp_path: Path) -> None:
    backend = ClusterBackend(
        name="stand-in", kubeconfig=tmp_path / "k", feature_gates="TASProfileMixed=true"
    )
    with pytest.raises(Unsupported, match="TASProfileMixed=true cannot be set"):
        backend.run(load_scenario(GUIDE / "guide-required-host.yaml"))


def test_unknown_provider_is_a_backend_error() -> None:
    with pytest.raises(BackendError, match="unknown provider 'nowhere'; known: existing"):
        ClusterBackend(name="nowhere")


def test_only_the_embedded_cluster_takes_a_kueue_config() -> None:
    assert LocalCluster.can_set_kueue_config
    assert not ExistingCluster.can_set_kueue_config
    assert not KindCluster.can_set_kueue_config


@pytest.mark.usefixtures("stand_in")
def test_kueue_config_on_a_cluster_that_cannot_take_it_is_unsupported(tmp_path: Path) -> None:
    backend = ClusterBackend(name="stand-in", kubeconfig=tmp_path / "kubeconfig")
    scenario = load_scenario(SUITES / "fair-sharing" / "fs-reclaim-huge-borrower.yaml")
    with pytest.raises(Unsupported, match=r"kueueConfig \(fairSharing\) cannot be set on the"):
        backend.run(scenario)
