"""Kubernetes' validation rules for names and resource quantities, mirrored for the loader.

A scenario must not describe what the API server would refuse: the same checks as
k8s.io/apimachinery/pkg/util/validation (names, label keys and values) and
k8s.io/kubernetes/pkg/apis/core/{helper,validation} (resource names and quantities), v1.36.
Each function returns None when the value passes, else the problem in Kubernetes' words.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from fractions import Fraction

from harness.k8s.quantity import QuantityError, parse_quantity

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(rf"{_DNS_LABEL.pattern}(\.{_DNS_LABEL.pattern})*")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")

HUGEPAGES_PREFIX = "hugepages-"
# helper.standardContainerResources; hugepages-<size> is allowed besides these.
CONTAINER_RESOURCES = ("cpu", "memory", "ephemeral-storage")
# helper.integerResources: quota object counts, and pods.
_INTEGER_RESOURCES = frozenset(
    {
        "pods",
        "resourcequotas",
        "services",
        "replicationcontrollers",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "services.nodeports",
        "services.loadbalancers",
    }
)
NOT_INTEGER = (
    "must be a whole number (Kubernetes measures pods and extended resources in whole units)"
)


def is_dns_label(text: str) -> bool:
    """IsDNS1123Label: a workload or pod set name."""
    return len(text) <= 63 and _DNS_LABEL.fullmatch(text) is not None


def is_dns_subdomain(text: str) -> bool:
    """IsDNS1123Subdomain: object names such as Node, Topology, ResourceFlavor."""
    return len(text) <= 253 and _DNS_SUBDOMAIN.fullmatch(text) is not None


def is_qualified_name(text: str) -> bool:
    """IsQualifiedName: a label key, taint key or resource name (`[prefix/]name`)."""
    prefix, slash, name = text.rpartition("/")
    if slash and not is_dns_subdomain(prefix):
        return False
    return len(name) <= 63 and _QUALIFIED_NAME.fullmatch(name) is not None


def is_label_value(text: str) -> bool:
    """IsValidLabelValue: at most 63 characters, may be empty."""
    return len(text) <= 63 and _LABEL_VALUE.fullmatch(text) is not None


def is_native_resource(name: str) -> bool:
    """IsNativeResource: unprefixed, or in the kubernetes.io/ namespace."""
    return "/" not in name or "kubernetes.io/" in name


def is_extended_resource(name: str) -> bool:
    """IsExtendedResourceName: a domain-prefixed resource outside kubernetes.io/."""
    if is_native_resource(name) or name.startswith("requests."):
        return False
    return is_qualified_name("requests." + name)


def is_integer_resource(name: str) -> bool:
    """IsIntegerResourceName: pods, quota object counts and every extended resource."""
    return name in _INTEGER_RESOURCES or is_extended_resource(name)


def quantity_problem(name: str, quantity: Fraction) -> str | None:
    """ValidateResourceQuantityValue (node allocatable and pod requests) beyond the sign."""
    if is_integer_resource(name) and not _whole(quantity):
        return NOT_INTEGER
    return None


def _whole(quantity: Fraction) -> bool:
    """Kubernetes' integer test, `MilliValue() % 1000 == 0` (MilliValue rounds up)."""
    return math.ceil(quantity * 1000) % 1000 == 0


def container_resource_problem(name: str) -> str | None:
    """validateContainerResourceName: what a container (so a pod set or usage pod) may
    request."""
    if not is_qualified_name(name):
        return "not a valid resource name ([DNS subdomain/]name, the name at most 63 characters)"
    if "/" not in name:
        if name in CONTAINER_RESOURCES or name.startswith(HUGEPAGES_PREFIX):
            return None
        return (
            "must be a standard resource for containers (cpu, memory, ephemeral-storage, "
            "hugepages-<size>) or a domain-prefixed extended resource"
        )
    if not is_native_resource(name) and not is_extended_resource(name):
        return "doesn't follow extended resource name standard"
    return None


def hugepages_problem(name: str, quantity: Fraction, text: str) -> str | None:
    """validateResourceQuantityHugePageValue: a whole number of pages of the named size."""
    if not name.startswith(HUGEPAGES_PREFIX):
        return None
    try:
        page = parse_quantity(name.removeprefix(HUGEPAGES_PREFIX))
    except QuantityError:
        page = Fraction(0)
    if page <= 0 or not _whole(page) or math.ceil(quantity) % math.ceil(page) != 0:
        return f"{text} is not positive integer multiple of {name}"
    return None


def requests_problem(requests: Mapping[str, Fraction]) -> str | None:
    """validateResourceRequirements across one container's requests."""
    hugepages = any(name.startswith(HUGEPAGES_PREFIX) for name in requests)
    if hugepages and not any(name in ("cpu", "memory") for name in requests):
        return "HugePages require cpu or memory"
    return None
