"""`kueueConfig:` -> KueueConfig, refusing what Kueue v0.19.2 refuses at start-up
(pkg/config/validation.go: validateFairSharing, validateAdmissionFairSharing,
validateWaitForPodsReady, validateResourceTransformations, validateQuotaCheckStrategy) and any
key that is not a field of config.kueue.x-k8s.io/v1beta2's sections the contract takes."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from harness.k8s.quantity import QuantityError, parse_quantity
from harness.k8s.rules import is_qualified_name
from harness.scenario.keypath import KeyPath, kind, yaml_text
from harness.scenario.kueue_config import (
    PREEMPTION_STRATEGY_SETS,
    SECTIONS,
    KueueConfig,
    QuotaResources,
    ResourceTransformation,
)

QUOTA_CHECK_GATE = "QuotaCheckStrategy"

_DURATION = re.compile(r"^-?(0|(\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h))+$")
"""Go's time.ParseDuration, which metav1.Duration uses ("0" alone needs no unit)."""

_AFS_KEYS = ("usageHalfLifeTime", "usageSamplingInterval", "resourceWeights")
_PODS_READY_KEYS = ("timeout", "blockAdmission", "requeuingStrategy", "recoveryTimeout")
_REQUEUING_KEYS = ("timestamp", "backoffLimitCount", "backoffBaseSeconds", "backoffMaxSeconds")
_RESOURCES_KEYS = ("quotaCheckStrategy", "excludeResourcePrefixes", "transformations")
_TRANSFORMATION_KEYS = ("input", "strategy", "multiplyBy", "outputs")
_NOT_TAKEN = {
    "enable": "not a field of config.kueue.x-k8s.io/v1beta2: the section being present "
    "means enabled (waitForPodsReady is on by default in v0.19.2; the DisableWaitForPodsReady "
    "gate turns it off)",
    "deviceClassMappings": "dynamic resource allocation: not supported",
}


def quota_check_gate(versions: Iterable[str], gates: Mapping[str, bool]) -> bool:
    """Whether the QuotaCheckStrategy gate is on in any of the Kueue `versions` a scenario
    runs: its featureGates, else the version's default (kube_features.go: alpha and off in
    v0.18, beta and on from v0.19; v0.17 has no such gate, nor its validation)."""
    on = [v for v in versions if not v.startswith("v0.17.")]
    if QUOTA_CHECK_GATE in gates:
        return bool(on) and gates[QUOTA_CHECK_GATE]
    return any(not v.startswith("v0.18.") for v in on)


def kueue_config(at: KeyPath, quota_check_gate: bool = True) -> KueueConfig:
    """The validated section; its document keeps the file's values as given.
    `quota_check_gate`: the QuotaCheckStrategy gate's state, under which alone Kueue checks
    `resources.quotaCheckStrategy` (validation.go validateQuotaCheckStrategy)."""
    if isinstance(at.value, dict) and "featureGates" in at.value:
        at.child("featureGates", None).fail("give feature gates in the top-level featureGates")
    fields = at.mapping(SECTIONS)
    strategies = _fair_sharing(fields["fairSharing"]) if "fairSharing" in fields else None
    if "admissionFairSharing" in fields:
        _admission_fair_sharing(fields["admissionFairSharing"])
    if "waitForPodsReady" in fields:
        _wait_for_pods_ready(fields["waitForPodsReady"])
    resources = (
        _resources(fields["resources"], quota_check_gate)
        if "resources" in fields
        else QuotaResources()
    )
    document: dict[str, Any] = dict(at.value)
    return KueueConfig(document=document, fair_sharing=strategies, resources=resources)


def _refuse_not_taken(at: KeyPath) -> None:
    if isinstance(at.value, dict):
        for key in at.value:
            if key in _NOT_TAKEN:
                at.child(str(key), None).fail(_NOT_TAKEN[key])


def _fair_sharing(at: KeyPath) -> tuple[str, ...]:
    _refuse_not_taken(at)
    fields = at.mapping(("preemptionStrategies",), ("preemptionStrategies",))
    listed = tuple(item.string() for item in fields["preemptionStrategies"].items())
    if listed not in PREEMPTION_STRATEGY_SETS:
        allowed = "; ".join(f"[{', '.join(s)}]" for s in PREEMPTION_STRATEGY_SETS)
        fields["preemptionStrategies"].fail(
            f"[{', '.join(listed)}] is not supported (Kueue accepts {allowed})"
        )
    return listed


def _duration(at: KeyPath, *, above_zero: bool = False) -> None:
    value = at.value
    if not isinstance(value, str) or not _DURATION.match(value):
        at.fail(f"must be a duration such as '30s', '5m' or '1h30m', got {kind(value)}")
    if value.startswith("-"):
        at.fail(f"must be greater than or equal to 0, got {yaml_text(value)}")
    if above_zero and not re.search(r"[1-9]", value):
        at.fail(f"must be greater than 0, got {yaml_text(value)}")


def _admission_fair_sharing(at: KeyPath) -> None:
    _refuse_not_taken(at)
    fields = at.mapping(_AFS_KEYS, ("usageHalfLifeTime",))
    _duration(fields["usageHalfLifeTime"])
    if "usageSamplingInterval" in fields:  # 0 or absent defaults to 5m (defaults.go)
        _duration(fields["usageSamplingInterval"])
    if "resourceWeights" in fields:
        weights = fields["resourceWeights"]
        if not isinstance(weights.value, dict):
            weights.fail(f"must be a mapping of resource name to weight, got {kind(weights.value)}")
        for name, weight in weights.value.items():
            sub = weights.child(str(name), weight)
            if not isinstance(name, str) or not is_qualified_name(name):
                sub.fail(f"{yaml_text(name)} is not a valid resource name")
            if isinstance(weight, bool) or not isinstance(weight, int | float):
                sub.fail(f"must be a number, got {kind(weight)}")
            if weight < 0:
                sub.fail(f"must be greater than or equal to 0, got {weight}")


def _wait_for_pods_ready(at: KeyPath) -> None:
    _refuse_not_taken(at)
    fields = at.mapping(_PODS_READY_KEYS)
    for key in ("timeout", "recoveryTimeout"):
        if key in fields:  # a timeout of 0 defaults to 30m (defaults.go)
            _duration(fields[key])
    if "blockAdmission" in fields:
        fields["blockAdmission"].boolean()
    if "requeuingStrategy" in fields:
        strategy = fields["requeuingStrategy"].mapping(_REQUEUING_KEYS)
        if "timestamp" in strategy:
            value = strategy["timestamp"].string()
            if value not in ("Creation", "Eviction"):
                strategy["timestamp"].fail(f"{yaml_text(value)} is not one of Creation, Eviction")
        for key in ("backoffLimitCount", "backoffBaseSeconds", "backoffMaxSeconds"):
            if key in strategy:
                strategy[key].integer(0)


def _resources(at: KeyPath, quota_check_gate: bool) -> QuotaResources:
    _refuse_not_taken(at)
    fields = at.mapping(_RESOURCES_KEYS)
    strategy = None
    if "quotaCheckStrategy" in fields:
        strategy = fields["quotaCheckStrategy"].string()
        if quota_check_gate and strategy not in ("BlockUndeclared", "IgnoreUndeclared"):
            fields["quotaCheckStrategy"].fail(
                f"{yaml_text(strategy)} is not one of BlockUndeclared, IgnoreUndeclared"
            )
    prefixes: tuple[str, ...] = ()
    if "excludeResourcePrefixes" in fields:
        prefixes = tuple(item.string() for item in fields["excludeResourcePrefixes"].items())
        if quota_check_gate and strategy == "IgnoreUndeclared" and prefixes:
            fields["excludeResourcePrefixes"].fail(
                "must not be set when quotaCheckStrategy is IgnoreUndeclared "
                "(with the QuotaCheckStrategy feature gate on)"
            )
    transformations: list[ResourceTransformation] = []
    if "transformations" in fields:
        for item in fields["transformations"].items():
            transformation = _transformation(item)
            if any(t.input == transformation.input for t in transformations):
                item.child("input", None).fail(f"duplicate input {yaml_text(transformation.input)}")
            transformations.append(transformation)
    return QuotaResources(
        exclude_prefixes=prefixes,
        transformations=tuple(transformations),
        ignore_undeclared=strategy == "IgnoreUndeclared",
    )


def _transformation(at: KeyPath) -> ResourceTransformation:
    fields = at.mapping(_TRANSFORMATION_KEYS, ("input",))
    name = fields["input"].string(is_qualified_name, "resource name")
    strategy = "Retain"  # the default (apis/config/v1beta2/defaults.go)
    if "strategy" in fields:
        strategy = fields["strategy"].string()
        if strategy not in ("Retain", "Replace"):
            fields["strategy"].fail(f"{yaml_text(strategy)} is not one of Retain, Replace")
    multiply_by = ""
    if "multiplyBy" in fields:
        multiply_by = fields["multiplyBy"].string(is_qualified_name, "resource name")
    outputs: dict[str, Fraction] = {}
    if "outputs" in fields:
        given = fields["outputs"]
        if not isinstance(given.value, dict):
            given.fail(f"must be a mapping of resource name to quantity, got {kind(given.value)}")
        for key, value in given.value.items():
            sub = given.child(str(key), value)
            if not isinstance(key, str) or not is_qualified_name(key):
                sub.fail(f"{yaml_text(key)} is not a valid resource name")
            try:
                outputs[key] = parse_quantity(value)
            except QuantityError as err:
                sub.fail(str(err))
    return ResourceTransformation(name, strategy == "Replace", multiply_by, outputs)
