"""Cluster providers: a small Protocol and a name -> class table (see base.py)."""

from harness.providers.base import (
    PROVIDERS,
    ClusterError,
    ClusterHandle,
    ComponentCrashed,
    Provider,
    create_provider,
    provider_class,
)

__all__ = [
    "PROVIDERS",
    "ClusterError",
    "ClusterHandle",
    "ComponentCrashed",
    "Provider",
    "create_provider",
    "provider_class",
]
