"""pytest-xdist (`-n N`): every worker runs its own embedded cluster.

One Kueue cannot serve two scenarios at once: a node change makes Kueue retry the
inadmissible workloads of *every* active ClusterQueue (pkg/controller/tas/resource_flavor.go,
Reconcile -> NotifyRetryInadmissible(r.queues, r.cache.ActiveClusterQueues())), and such a
retry landing between two submissions of another scenario changes its outcome. Two Kueues
cannot share one API server either (both would reconcile every ClusterQueue). So the unit of
concurrency is a whole cluster: each xdist worker's session starts its own (loopback ports,
run dir, etcd dir and run id of its own, harness/providers/local) and stops it when the
worker ends, as a serial session does.

Each change of Kueue version or feature gates restarts a worker's cluster, so, unless the
user picks a --dist, the controller schedules each such set as one unit of work (one
worker, one restart) and every default scenario as a unit of its own. xdist's `loadgroup`
would do it through `xdist_group` marks, but it renames the items (`id@group`) and, with
pytest 9.2, does not apply the groups (xdist 3.8 sets `item._nodeid`, which pytest 9.2 no
longer reads). The HTML report is written by the controller from results the workers relay
(harness/plugin/html_report.py); junit is pytest's own, also the controller's.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from harness.providers.base import ClusterError, provider_class

GroupOf = Callable[[Path], str]
"""A scenario file's group ("" for the default Kueue version and gates)."""


def is_worker(config: pytest.Config) -> bool:
    """This process is an xdist worker (pytest's junitxml asks the same)."""
    return hasattr(config, "workerinput")


def workers(config: pytest.Config) -> int:
    """How many xdist workers run the session (0: none, the session runs in this process)."""
    if not config.pluginmanager.hasplugin("xdist"):
        return 0
    if config.getoption("dist", "no") == "no":
        return 0
    return len(config.getoption("tx", None) or [])


def configure(config: pytest.Config, group_of: GroupOf) -> None:
    """On the controller: refuse workers for a cluster that cannot run once per worker, and
    schedule by Kueue version and gates unless the user chose a --dist."""
    cluster = config.getoption("--cluster")
    if is_worker(config) or cluster is None or workers(config) == 0:
        return
    try:
        per_worker: bool = provider_class(cluster).one_per_worker
    except ClusterError:  # no provider behind it (the sim runs in each worker's process)
        return
    if not per_worker:
        raise pytest.UsageError(
            f"-n {workers(config)} with --cluster={cluster}: every pytest-xdist worker needs a "
            f"cluster of its own, and --cluster={cluster} has one (one kind cluster per machine, "
            "or the one your kubeconfig names); run with -n 0"
        )
    if config.getoption("dist") == "load" and not _dist_given(config):
        config.pluginmanager.register(_GateScheduling(config, group_of), "kth-distribute")


def _dist_given(config: pytest.Config) -> bool:
    """--dist (or -d) was on the command line, in PYTEST_ADDOPTS or in the ini's addopts."""
    words = [*config.invocation_params.args, *shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))]
    words += config.getini("addopts")
    return any(w == "-d" or w == "--dist" or w.startswith("--dist=") for w in words)


class _GateScheduling:
    """Makes the controller's scheduler: xdist's scope scheduling, a scope per group."""

    def __init__(self, config: pytest.Config, group_of: GroupOf) -> None:
        root = config.rootpath
        self.group_of = cache(lambda file: group_of(root / file))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        from xdist.scheduler import LoadScopeScheduling

        group_of = self.group_of

        class GateGroups(LoadScopeScheduling):  # type: ignore[misc]
            """A unit of work is a scenario on the default version and gates, or every
            scenario of one other version or gate set; units go to whichever worker is free."""

            def _split_scope(self, nodeid: str) -> str:
                file = nodeid.split("::", 1)[0]
                return f"group {group_of(file)}" if group_of(file) else nodeid

        return GateGroups(config, log)


def header(config: pytest.Config) -> str | None:
    n = workers(config)
    if n == 0 or config.getoption("--cluster") is None:
        return None
    how = f"--dist {config.getoption('dist')}"
    if config.pluginmanager.has_plugin("kth-distribute"):
        how = "each Kueue version and gate set on one worker"
    return f"scenarios: {n} pytest-xdist workers, one cluster each ({how})"
