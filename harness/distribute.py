"""pytest-xdist (`-n N`): every worker runs its own embedded cluster.

One Kueue cannot serve two scenarios at once: a node change makes Kueue retry the
inadmissible workloads of *every* active ClusterQueue (pkg/controller/tas/resource_flavor.go,
Reconcile -> NotifyRetryInadmissible(r.queues, r.cache.ActiveClusterQueues())), and such a
retry landing between two submissions of another scenario changes its outcome. Two Kueues
cannot share one API server either (both would reconcile every ClusterQueue). So the unit of
concurrency is a whole cluster: each xdist worker's session starts its own (loopback ports,
run dir, etcd dir and run id of its own, harness/providers/local) and stops it when the
worker ends, as a serial session does.

Each change of Kueue version or feature gates restarts a worker's cluster, so each such
set is one `xdist_group` and, with `--dist loadgroup` (the default here for a cluster when
no --dist is given), runs on one worker; scenarios on the default version and gates go to
whichever worker is free. The HTML report is written by the controller from results the
workers relay (harness/html/pytest_report.py); junit is pytest's own, also the controller's.
"""

from __future__ import annotations

import os
import shlex

import pytest

from harness.providers.base import ClusterError, provider_class

GROUP_MARK = "xdist_group"


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


def configure(config: pytest.Config) -> None:
    """On the controller: refuse workers for a cluster that cannot run once per worker, and
    group by Kueue version and gates unless the user chose a --dist."""
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
        config.option.dist = "loadgroup"


def _dist_given(config: pytest.Config) -> bool:
    """--dist (or -d) was on the command line, in PYTEST_ADDOPTS or in the ini's addopts."""
    words = [*config.invocation_params.args, *shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))]
    words += config.getini("addopts")
    return any(w == "-d" or w == "--dist" or w.startswith("--dist=") for w in words)


def header(config: pytest.Config) -> str | None:
    n = workers(config)
    if n == 0 or config.getoption("--cluster") is None:
        return None
    how = "each Kueue version and gate set on one worker"
    if config.getoption("dist") != "loadgroup":
        how = f"--dist {config.getoption('dist')}: a worker restarts its cluster per gate change"
    return f"scenarios: {n} pytest-xdist workers, one cluster each ({how})"


def mark_groups(config: pytest.Config, items: list[pytest.Item], groups: dict[int, str]) -> None:
    """Mark every item whose group (item id -> name, "" for the default) is not the default
    with `xdist_group`, so loadgroup keeps each version and gate set on one worker."""
    if not config.pluginmanager.hasplugin("xdist") or config.getoption("dist", "no") != "loadgroup":
        return
    for item in items:
        if groups.get(id(item)):
            item.add_marker(pytest.mark.xdist_group(groups[id(item)]))
