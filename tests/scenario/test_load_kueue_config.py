"""`kueueConfig:` (docs/scenario-format-v2.md, "Kueue's configuration"): the sections load as
Kueue's v1beta2 Configuration spells them, what Kueue v0.19.2 refuses at start-up is refused
in one line naming the key, and engines that do not run a section refuse the scenario."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from harness.backends.base import Unsupported
from harness.backends.sim import SimBackend
from harness.errors import ScenarioError, UnsupportedVersionError
from harness.fit import check_supported
from harness.install.manifests import kueue_config
from harness.kueue.cluster_queue_spec import cluster_queue_spec
from harness.scenario.loader import scenario_from_data
from harness.scenario.model import Scenario
from harness.sim.contract import scenario_to_dict

FILE = "kc.yaml"


def base(config: Any = None, weight: Any = None) -> dict[str, Any]:
    cq: dict[str, Any] = {
        "name": "a",
        "cohortName": "all",
        "resourceGroups": [
            {
                "coveredResources": ["cpu"],
                "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": 4}]}],
            }
        ],
    }
    if weight is not None:
        cq["fairSharing"] = {"weight": weight}
    data: dict[str, Any] = {
        "name": "kc",
        "resourceFlavors": [{"name": "f"}],
        "clusterQueues": [cq],
        "nodes": [{"name": "n1", "allocatable": {"cpu": 8}}],
    }
    if config is not None:
        data["kueueConfig"] = config
    return data


def load(config: Any = None, weight: Any = None) -> Scenario:
    return scenario_from_data(base(config, weight), FILE)


FULL = {
    "fairSharing": {"preemptionStrategies": ["LessThanInitialShare"]},
    "admissionFairSharing": {"usageHalfLifeTime": "1h", "resourceWeights": {"cpu": 0.5}},
    "waitForPodsReady": {
        "timeout": "5m",
        "blockAdmission": True,
        "requeuingStrategy": {"timestamp": "Creation", "backoffBaseSeconds": 10},
    },
    "resources": {
        "excludeResourcePrefixes": ["example.com/"],
        "transformations": [
            {"input": "nvidia.com/mig-1g.5gb", "strategy": "Replace", "outputs": {"memory": "5Gi"}}
        ],
    },
}


def test_every_section_loads_with_kueues_field_names() -> None:
    scenario = load(FULL, weight="2")
    assert scenario.kueue_config.document == FULL
    assert scenario.kueue_config.fair_sharing == ("LessThanInitialShare",)
    assert scenario.cluster_queues[0].fair_weight == 2
    assert cluster_queue_spec(scenario.cluster_queues[0])["fairSharing"] == {"weight": "2"}


def test_no_section_means_kueues_defaults() -> None:
    scenario = load()
    assert scenario.kueue_config.document == {}
    assert scenario.kueue_config.fair_sharing is None
    assert "fairSharing" not in cluster_queue_spec(scenario.cluster_queues[0])


@pytest.mark.parametrize(
    ("config", "weight", "error"),
    [
        ({"fairSharing": {}}, None, "kueueConfig.fairSharing: missing required key 'preemptionStrategies'"),
        (
            {"fairSharing": {"preemptionStrategies": ["LessThanInitialShare", "LessThanOrEqualToFinalShare"]}},
            None,
            "kueueConfig.fairSharing.preemptionStrategies: [LessThanInitialShare, LessThanOrEqualToFinalShare] is not supported",
        ),
        ({"fairSharing": {"enable": True}}, None, "kueueConfig.fairSharing.enable: not a field of config.kueue.x-k8s.io/v1beta2"),
        ({"waitForPodsReady": {"enable": True}}, None, "kueueConfig.waitForPodsReady.enable: not a field"),
        ({"waitForPodsReady": {"timeout": "-5m"}}, None, "kueueConfig.waitForPodsReady.timeout: must be greater than or equal to 0"),
        ({"waitForPodsReady": {"timeout": 300}}, None, "kueueConfig.waitForPodsReady.timeout: must be a duration"),
        (
            {"waitForPodsReady": {"requeuingStrategy": {"backoffLimitCount": -1}}},
            None,
            "kueueConfig.waitForPodsReady.requeuingStrategy.backoffLimitCount: must be at least 0",
        ),
        (
            {"waitForPodsReady": {"requeuingStrategy": {"timestamp": "Now"}}},
            None,
            "kueueConfig.waitForPodsReady.requeuingStrategy.timestamp: 'Now' is not one of Creation, Eviction",
        ),
        ({"admissionFairSharing": {}}, None, "kueueConfig.admissionFairSharing: missing required key 'usageHalfLifeTime'"),
        (
            {"admissionFairSharing": {"usageHalfLifeTime": "1h", "resourceWeights": {"cpu": -1}}},
            None,
            "kueueConfig.admissionFairSharing.resourceWeights.cpu: must be greater than or equal to 0",
        ),
        (
            {"resources": {"transformations": [{"input": "a.io/x"}, {"input": "a.io/x"}]}},
            None,
            "kueueConfig.resources.transformations[1].input: duplicate input 'a.io/x'",
        ),
        (
            {"resources": {"transformations": [{"input": "a.io/x", "strategy": "Keep"}]}},
            None,
            "kueueConfig.resources.transformations[0].strategy: 'Keep' is not one of Retain, Replace",
        ),
        (
            {"resources": {"quotaCheckStrategy": "IgnoreUndeclared", "excludeResourcePrefixes": ["x/"]}},
            None,
            "kueueConfig.resources.excludeResourcePrefixes: must not be set when quotaCheckStrategy is IgnoreUndeclared",
        ),
        ({"resources": {"deviceClassMappings": []}}, None, "kueueConfig.resources.deviceClassMappings: dynamic resource allocation"),
        ({"featureGates": {}}, None, "kueueConfig.featureGates: give feature gates in the top-level featureGates"),
        ({"multiKueue": {}}, None, "kueueConfig: unknown key 'multiKueue'"),
        (None, "-1", "clusterQueues[0].fairSharing.weight: must not be negative"),
        (None, "1n", "clusterQueues[0].fairSharing.weight: When not 0, weight must be > 10e-9"),
    ],
)  # fmt: skip
def test_what_kueue_refuses_is_one_line_naming_the_key(
    config: Any, weight: Any, error: str
) -> None:
    with pytest.raises(ScenarioError) as raised:
        load(config, weight)
    message = str(raised.value)
    assert message.startswith(f"{FILE}: ")
    assert error in message
    assert "\n" not in message


def test_the_embedded_cluster_gets_the_sections_merged_into_its_configuration() -> None:
    document = load(FULL).kueue_config.document
    cfg = kueue_config(health_port=1, webhook_port=2, cert_dir=Path("/c"), overrides=document)
    assert cfg["fairSharing"] == FULL["fairSharing"]
    assert cfg["waitForPodsReady"]["timeout"] == "5m"
    assert cfg["integrations"]["frameworks"]  # the harness's own settings stay


def test_the_sim_gets_the_sections_in_its_contract() -> None:
    scenario = load({"fairSharing": {"preemptionStrategies": ["LessThanOrEqualToFinalShare"]}})
    sent = scenario_to_dict(scenario)
    assert sent["kueueConfig"] == {
        "fairSharing": {"preemptionStrategies": ["LessThanOrEqualToFinalShare"]}
    }


def test_engines_that_do_not_run_a_section_refuse_the_scenario() -> None:
    scenario = load({"waitForPodsReady": FULL["waitForPodsReady"]})
    # The sim runs waitForPodsReady and blockAdmission, but not timestamp: Creation (FULL sets it).
    why = r"kueueConfig\.waitForPodsReady\.requeuingStrategy\.timestamp: .*not run by the sim"
    with pytest.raises(Unsupported, match=why):
        SimBackend().run(scenario)


def test_resources_load_as_the_fit_models_typed_section() -> None:
    resources = load(FULL).kueue_config.resources
    assert resources.exclude_prefixes == ("example.com/",)
    (transformation,) = resources.transformations
    assert transformation.input == "nvidia.com/mig-1g.5gb"
    assert transformation.replace
    assert transformation.outputs == {"memory": 5 * 2**30}
    assert not resources.ignore_undeclared


def test_resources_are_modelled_on_every_version_but_v0_17_quota_check_strategy() -> None:
    for version in ("v0.17.1", "v0.18.2"):
        data = {**base({"resources": FULL["resources"]}), "kueue": version}
        check_supported(scenario_from_data(data, FILE))
    strategy = {**FULL["resources"], "quotaCheckStrategy": "BlockUndeclared"}
    strategy.pop("excludeResourcePrefixes")
    check_supported(scenario_from_data({**base({"resources": strategy}), "kueue": "v0.18.2"}, FILE))
    data = {**base({"resources": strategy}), "kueue": "v0.17.1"}
    why = "kueueConfig.resources.quotaCheckStrategy: not a field of Kueue v0.17.1's Configuration"
    with pytest.raises(UnsupportedVersionError, match=re.escape(why)):
        check_supported(scenario_from_data(data, FILE))


@pytest.mark.parametrize("section", ["fairSharing", "waitForPodsReady", "resources"])
def test_sections_the_fit_model_runs(section: str) -> None:
    check_supported(load({section: FULL[section]}))


@pytest.mark.parametrize("version", ["v0.17.1", "v0.18.2", "v0.19.2"])
def test_fair_sharing_runs_on_every_version(version: str) -> None:
    check_supported(
        scenario_from_data({**base({"fairSharing": FULL["fairSharing"]}), "kueue": version}, FILE)
    )


@pytest.mark.parametrize(
    ("extra", "error"),
    [
        (
            {"featureGates": {"FairSharingPreemptWithinNominal": False}},
            "featureGates.FairSharingPreemptWithinNominal: False is not modelled",
        ),
    ],
)  # fmt: skip
def test_fair_sharing_outside_what_the_model_follows_is_refused(
    extra: dict[str, Any], error: str
) -> None:
    data = {**base({"fairSharing": FULL["fairSharing"]}), **extra}
    with pytest.raises(UnsupportedVersionError) as raised:
        check_supported(scenario_from_data(data, FILE))
    assert error in str(raised.value)


IGNORE_AND_EXCLUDE = {
    "resources": {"quotaCheckStrategy": "IgnoreUndeclared", "excludeResourcePrefixes": ["x/"]}
}


@pytest.mark.parametrize(
    "extra",
    [
        {"featureGates": {"QuotaCheckStrategy": False}},
        {"kueue": "v0.18.2"},  # alpha, off by default (kube_features.go)
        {"kueue": "v0.17.1"},  # no such gate nor validation
    ],
)
def test_ignore_undeclared_with_prefixes_loads_while_the_gate_is_off(extra: Any) -> None:
    # validation.go validateQuotaCheckStrategy returns no error when the gate is off.
    scenario = scenario_from_data({**base(IGNORE_AND_EXCLUDE), **extra}, FILE)
    assert scenario.kueue_config.resources.exclude_prefixes == ("x/",)


@pytest.mark.parametrize(
    "extra",
    [
        {},  # v0.19.2: beta, on by default
        {"featureGates": {"QuotaCheckStrategy": True}},
        {"kueue": "v0.18.2", "featureGates": {"QuotaCheckStrategy": True}},
        {"kueue": "v0.18.2", "steps": [{"upgrade-kueue": "v0.19.2"}]},  # on after it
    ],
)
def test_ignore_undeclared_with_prefixes_is_refused_while_the_gate_is_on(extra: Any) -> None:
    with pytest.raises(ScenarioError, match="must not be set when quotaCheckStrategy is Ignore"):
        scenario_from_data({**base(IGNORE_AND_EXCLUDE), **extra}, FILE)


def test_an_unknown_strategy_is_refused_only_while_the_gate_is_on() -> None:
    unknown = {"resources": {"quotaCheckStrategy": "Sometimes"}}
    with pytest.raises(ScenarioError, match="'Sometimes' is not one of BlockUndeclared"):
        load(unknown)
    off = {**base(unknown), "featureGates": {"QuotaCheckStrategy": False}}
    assert not scenario_from_data(off, FILE).kueue_config.resources.ignore_undeclared
