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
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from harness.plugin import worker_classes
from harness.plugin.sharding import ShardError, cpu_record_path, load_durations
from harness.providers.base import ClusterError, provider_class

PLAN_KEY = pytest.StashKey["worker_classes.Plan | None"]()

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
        scheduling = _GateScheduling(config, group_of, worker_plan(config))
        config.pluginmanager.register(scheduling, "kth-distribute")


def worker_plan(config: pytest.Config) -> worker_classes.Plan | None:
    """The worker classes from --worker-record (None without one): its items under the
    paths this session runs, sized by harness/plugin/worker_classes.py."""
    if PLAN_KEY in config.stash:
        return config.stash[PLAN_KEY]
    found = None
    record = config.getoption("worker_record", None)
    if record:
        try:
            wall = load_durations(Path(record))
            cpu_path = cpu_record_path(Path(record))
            cpu = load_durations(cpu_path) if cpu_path.is_file() else {}
        except ShardError as err:
            raise pytest.UsageError(f"--worker-record: {err}") from None
        roots = [str(a).split("::", 1)[0].rstrip("/") for a in config.args] or [""]
        items = [i for i in wall if any(_under(i, root) for root in roots)]
        found = worker_classes.plan(items, wall, cpu)
    config.stash[PLAN_KEY] = found
    return found


def _under(item: str, root: str) -> bool:
    file = item.split("::", 1)[0]
    return root in ("", ".") or file == root or file.startswith(root + "/")


def auto_workers(config: pytest.Config) -> int | None:
    """`-n auto` on an embedded cluster with --worker-record: the plan's clusters."""
    if config.getoption("--cluster", None) != "local":
        return None
    found = worker_plan(config)
    return found.workers if found is not None else None


def _dist_given(config: pytest.Config) -> bool:
    """--dist (or -d) was on the command line, in PYTEST_ADDOPTS or in the ini's addopts."""
    words = [*config.invocation_params.args, *shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))]
    words += config.getini("addopts")
    return any(w == "-d" or w == "--dist" or w.startswith("--dist=") for w in words)


class _GateScheduling:
    """Makes the controller's scheduler: xdist's scope scheduling, a scope per group."""

    def __init__(
        self, config: pytest.Config, group_of: GroupOf, plan: worker_classes.Plan | None
    ) -> None:
        root = config.rootpath
        self.group_of = cache(lambda file: group_of(root / file))
        self.plan = plan
        record = config.getoption("worker_record", None)
        self.wall = load_durations(Path(record)) if record and plan is not None else {}

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        from xdist.scheduler import LoadScopeScheduling

        group_of = self.group_of
        plan, wall = self.plan, self.wall

        class GateGroups(LoadScopeScheduling):  # type: ignore[misc]
            """A unit of work is a scenario on the default version and gates, or every
            scenario of one other version or gate set; units go to whichever worker is free.
            With a plan, the first `plan.busy` workers take busy units and the others
            waiting ones, each the heaviest of its class first, the other class's once its
            own are gone."""

            def __init__(self, config: pytest.Config, log: Any) -> None:
                super().__init__(config, log)
                self.roles: dict[Any, bool] = {}  # worker -> takes waiting units first

            def _split_scope(self, nodeid: str) -> str:
                file = nodeid.split("::", 1)[0]
                return f"group {group_of(file)}" if group_of(file) else nodeid

            def _assign_work_unit(self, node: Any) -> None:
                if plan is not None:
                    if node not in self.roles:
                        self.roles[node] = sum(not w for w in self.roles.values()) >= plan.busy
                    scope = pick_unit(self.workqueue, plan, wall, waiting=self.roles[node])
                    self.workqueue.move_to_end(scope, last=False)
                super()._assign_work_unit(node)

        return GateGroups(config, log)


def pick_unit(
    queue: Mapping[str, Mapping[str, bool]],
    plan: worker_classes.Plan,
    wall: Mapping[str, float],
    *,
    waiting: bool,
) -> str:
    """The heaviest unit of the worker's class (by recorded wall time; unknown items weigh
    1 s), else the heaviest of the other class."""

    def rank(scope: str) -> tuple[bool, float, tuple[int, ...]]:
        ids = queue[scope]
        own = all(i in plan.waiting_items for i in ids) == waiting
        return (own, sum(wall.get(i, 1.0) for i in ids), _reverse(scope))

    return max(queue, key=rank)


def _reverse(scope: str) -> tuple[int, ...]:
    """Ties go to the scope first in name order (max() picks the largest key)."""
    return tuple(-ord(c) for c in scope)


def header(config: pytest.Config) -> str | None:
    n = workers(config)
    if n == 0 or config.getoption("--cluster") is None:
        return None
    how = f"--dist {config.getoption('dist')}"
    if config.pluginmanager.has_plugin("kth-distribute"):
        how = "each Kueue version and gate set on one worker"
        found = worker_plan(config)
        if found is not None:
            how += f"; worker classes: {found.why}"
    return f"scenarios: {n} pytest-xdist workers, one cluster each ({how})"
