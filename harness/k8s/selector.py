"""metav1.LabelSelector: its shape, Kubernetes' validation and its matching.

Validation mirrors k8s.io/apimachinery/pkg/apis/meta/v1/validation ValidateLabelSelector
(what Kueue's ClusterQueue webhook runs on `namespaceSelector`); matching mirrors
metav1.LabelSelectorAsSelector + labels.Selector.Matches. Each check returns None when the
value passes, else the problem in Kubernetes' words.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from harness.k8s.rules import is_label_value, is_qualified_name

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
"""The label the API server sets on every Namespace to its own name (immutable)."""


@dataclass(frozen=True)
class Requirement:
    """One `matchExpressions` entry."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"key": self.key, "operator": self.operator}
        if self.values:
            out["values"] = list(self.values)
        return out

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.operator == "Exists":
            return self.key in labels
        if self.operator == "DoesNotExist":
            return self.key not in labels
        if self.operator == "In":
            return self.key in labels and labels[self.key] in self.values
        return self.key not in labels or labels[self.key] not in self.values  # NotIn


@dataclass(frozen=True)
class LabelSelector:
    """A selector; the empty one (`{}`) matches every object."""

    match_labels: Mapping[str, str] = field(default_factory=dict)
    match_expressions: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(labels.get(k) == v for k, v in self.match_labels.items()) and all(
            r.matches(labels) for r in self.match_expressions
        )

    def keys(self) -> set[str]:
        return {*self.match_labels, *(r.key for r in self.match_expressions)}

    def as_dict(self) -> dict[str, object]:
        """The selector as Kubernetes writes it."""
        out: dict[str, object] = {}
        if self.match_labels:
            out["matchLabels"] = dict(self.match_labels)
        if self.match_expressions:
            out["matchExpressions"] = [
                {
                    "key": r.key,
                    "operator": r.operator,
                    **({"values": list(r.values)} if r.values else {}),
                }
                for r in self.match_expressions
            ]
        return out


def requirement_problem(r: Requirement) -> str | None:
    """ValidateLabelSelectorRequirement's rules."""
    if r.operator not in OPERATORS:
        return f"operator {r.operator!r} is not one of {', '.join(OPERATORS)}"
    if r.operator in ("In", "NotIn") and not r.values:
        return "values: must be specified when `operator` is 'In' or 'NotIn'"
    if r.operator in ("Exists", "DoesNotExist") and r.values:
        return "values: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
    if not is_qualified_name(r.key):
        return f"key: {r.key!r} is not a valid label key"
    for value in r.values:
        if not is_label_value(value):
            return f"values: {value!r} is not a valid label value"
    return None
