"""`kueueConfig:` of a scenario: the part of Kueue's Configuration
(config.kueue.x-k8s.io/v1beta2, apis/config/v1beta2/configuration_types.go) a scenario may
set, in Kueue's own field names, and the facts the engines read from it.

`document` is the section as the file gives it (JSON-like): the embedded cluster merges it
into the Configuration file Kueue starts with and the sim decodes it into Kueue's own types,
so there is one spelling of every field. The typed fields are what the fit model reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

LESS_THAN_OR_EQUAL_TO_FINAL_SHARE = "LessThanOrEqualToFinalShare"
LESS_THAN_INITIAL_SHARE = "LessThanInitialShare"
PREEMPTION_STRATEGY_SETS = (
    (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,),
    (LESS_THAN_INITIAL_SHARE,),
    (LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, LESS_THAN_INITIAL_SHARE),
)
"""The strategy lists Kueue accepts (pkg/config/validation.go validStrategySets)."""

SECTIONS = ("fairSharing", "admissionFairSharing", "waitForPodsReady", "resources")


@dataclass(frozen=True)
class ResourceTransformation:
    """One `resources.transformations` entry (configuration_types.go ResourceTransformation):
    `replace` for strategy Replace (Retain, the default, keeps the input); `outputs` per unit
    of input, exact."""

    input: str
    replace: bool = False
    multiply_by: str = ""
    outputs: Mapping[str, Fraction] = field(default_factory=dict)


@dataclass(frozen=True)
class QuotaResources:
    """The `resources` section: what Kueue counts against quota instead of a pod's requests
    (harness.kueue.quota_requests applies it). `ignore_undeclared`: quotaCheckStrategy
    IgnoreUndeclared (it acts only while the QuotaCheckStrategy gate is on)."""

    exclude_prefixes: tuple[str, ...] = ()
    transformations: tuple[ResourceTransformation, ...] = ()
    ignore_undeclared: bool = False


@dataclass(frozen=True)
class KueueConfig:
    """The sections a scenario sets. `fair_sharing`: the preemption strategies when
    `fairSharing` is present (present means on in v1beta2: fairsharing.Enabled)."""

    document: Mapping[str, Any] = field(default_factory=dict)
    fair_sharing: tuple[str, ...] | None = None
    resources: QuotaResources = field(default_factory=QuotaResources)

    def sections(self) -> tuple[str, ...]:
        """The sections present, in SECTIONS order."""
        return tuple(s for s in SECTIONS if s in self.document)

    def unmodelled(self, modelled: tuple[str, ...]) -> tuple[str, ...]:
        """The sections present that an engine modelling `modelled` cannot honour."""
        return tuple(s for s in self.sections() if s not in modelled)
