"""The one thin Kubernetes adapter: everything that talks to an API server goes through here."""

from harness.kube.client import FIELD_MANAGER, Kube, Obj, in_parallel, selector
from harness.kube.errors import Conflict, KubeError, NotFound, WaitTimeout
from harness.kube.reads import KUEUE_API, events, workloads
from harness.kube.wait import (
    Check,
    absent,
    condition,
    has_condition,
    interval_after,
    node_ready,
    pause,
    poll_for,
    poll_until,
    wait_for,
    wait_for_all,
    watchdog,
)

RUN_LABEL = "kueue-tas-harness/run"
"""Label carried by every object the harness creates, so cleanup is a label query."""

__all__ = [
    "FIELD_MANAGER",
    "KUEUE_API",
    "RUN_LABEL",
    "Check",
    "Conflict",
    "Kube",
    "KubeError",
    "NotFound",
    "Obj",
    "WaitTimeout",
    "absent",
    "condition",
    "events",
    "has_condition",
    "in_parallel",
    "interval_after",
    "node_ready",
    "pause",
    "poll_for",
    "poll_until",
    "selector",
    "wait_for",
    "wait_for_all",
    "watchdog",
    "workloads",
]
