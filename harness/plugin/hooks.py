"""The pytest plugin: options, scenario collection and the session's backend.

Registered through the `pytest11` entry point, so `pytest suites/` works in any checkout
with the package installed. No cluster starts unless `--cluster` asks for one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from harness.backends.base import (
    BackendError,
    add_backend_options,
    backend_options,
    create_backend,
    kueue_version_for,
    select_kueue_version,
)
from harness.errors import HarnessError
from harness.kueue.gates import GateError, parse_gates
from harness.plugin import xdist as distribute
from harness.plugin.collect import (
    BACKEND_KEY,
    CPU_PROPERTY,
    PHASES_PROPERTY,
    RERUN_PROPERTY,
    NotAScenario,
    ScenarioFile,
    ScenarioItem,
    refuse_duplicate_names,
)
from harness.plugin.html_report import HtmlReport
from harness.plugin.streams import CLUSTER_SECONDS, StreamFile, is_stream_file
from harness.providers.local.lifecycle import sigterm_interrupts
from harness.replay.clock import DEFAULT_SCALE, scale_arg
from harness.scenario.discover import SUFFIXES, why_not_a_scenario
from harness.scenario.loader import load_scenario
from harness.scenario.model import Scenario
from harness.toolchain import KueueVersionError, selected_pins

# The Kueue version the session's backend runs, and the one a scenario without its own runs on.
RUNNING_VERSION_KEY = pytest.StashKey[str]()
DEFAULT_VERSION_KEY = pytest.StashKey[str]()

# The fixtures for tests written in Python (kueue_cluster, tas_shape, fit_model), and --shard.
pytest_plugins = ["harness.fixtures.plugin", "harness.plugin.shards"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "kth_suites",
        type="paths",
        default=[],
        help="folders (relative to the ini file) whose every .yaml/.yml file is a scenario, "
        "as in any folder named suites (default: none)",
    )
    parser.addini(
        "kth_report",
        type="string",
        default="",
        help="write the HTML report of the scenarios here (relative to where pytest runs); "
        "--kth-report overrides it (default: none, nothing is written into your tree unasked)",
    )
    group = parser.getgroup("kueue-tas-harness")
    add_backend_options(
        group.addoption,
        cluster_default=None,
        cluster_help="run scenarios (and cluster tests) on this backend, checking Kueue against "
        "expect and the fit model; without it scenarios check the fit model against expect",
    )
    group.addoption(
        "--cluster-tests",
        action="store_true",
        default=False,
        help="run the tests marked `cluster` (they start the embedded cluster themselves) "
        "whatever backend the scenarios use (default: off; --cluster=local, kind or existing "
        "runs them too)",
    )
    group.addoption(
        "--kth-report",
        default=None,
        metavar="PATH",
        help="write the HTML report of the scenarios (a rack-and-GPU map of each) to PATH; "
        "an empty PATH writes none (default: the kth_report ini setting, else none)",
    )
    group.addoption(
        "--time-scale",
        type=scale_arg,
        default=DEFAULT_SCALE,
        metavar="S",
        help="stream scenarios on a cluster: S stream seconds pass in one real second "
        f"(default: {DEFAULT_SCALE:g}, docs/replay.md)",
    )
    group.addoption(
        "--stream-seconds",
        type=scale_arg,
        default=CLUSTER_SECONDS,
        metavar="N",
        help="stream scenarios on a cluster: skip those that would take more than N real "
        f"seconds at --time-scale (default: {CLUSTER_SECONDS:g})",
    )
    group.addoption(
        "--worker-record",
        default=None,
        metavar="FILE",
        help="with -n auto on --cluster=local: size the clusters and split the scenarios into "
        "busy and waiting classes by the wall seconds in FILE (as --store-durations writes "
        "it) and the CPU seconds beside it (FILE-cpu.json) (default: none, xdist's own)",
    )


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    return distribute.auto_workers(config)


def pytest_configure(config: pytest.Config) -> None:
    sigterm_interrupts()
    try:
        parse_gates(config.getoption("feature_gates"))
    except GateError as err:
        # Once, here: later it would be a setup error with a traceback on every cluster test.
        raise pytest.UsageError(str(err)) from None
    _configure_kueue_version(config)
    distribute.configure(config, lambda path: _group_of_file(config, path))
    if config.getoption("--cluster") == "kind":
        from harness.providers.kind import prereqs

        found = prereqs.check()
        if found.problems:
            raise pytest.UsageError(found.message())
    report = config.getoption("kth_report")
    if report is None:
        report = config.getini("kth_report")
    if report:
        path = config.invocation_params.dir / report
        # An xdist worker relays its results; the controller writes the one page.
        writer = HtmlReport(path, config.getoption("--cluster"), relay=distribute.is_worker(config))
        config.pluginmanager.register(writer, "kth-html-report")


def _configure_kueue_version(config: pytest.Config) -> None:
    """Check --kueue-version once, and remember the version scenarios without their own run on
    (before anything sets $KTH_KUEUE_VERSION for a backend)."""
    version = config.getoption("kueue_version")
    cluster = config.getoption("--cluster")
    try:
        if version is not None:
            select_kueue_version(cluster or "local", version)
        config.stash[DEFAULT_VERSION_KEY] = version or selected_pins().kueue
    except (BackendError, KueueVersionError) as err:
        raise pytest.UsageError(str(err)) from None


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.File | None:
    """Scenario files: every YAML file in a suite folder; elsewhere, YAML files that look like
    scenarios (harness/scenario/discover.py). A YAML file named on the command line that is no
    scenario is a one-line collection error rather than pytest's "found no collectors"."""
    if file_path.suffix not in SUFFIXES:
        return None
    if is_stream_file(file_path):  # a stream scenario: replayed, never run as one moment
        return StreamFile.from_parent(parent, path=file_path)
    if _in_suite_folder(file_path, parent.config):
        return ScenarioFile.from_parent(parent, path=file_path)
    reason = why_not_a_scenario(file_path)
    if reason is None:
        return ScenarioFile.from_parent(parent, path=file_path)
    if parent.session.isinitpath(file_path):
        return NotAScenario.from_parent(parent, path=file_path, reason=reason)
    return None


def _in_suite_folder(path: Path, config: pytest.Config) -> bool:
    roots: list[Path] = config.getini("kth_suites")
    return "suites" in path.parts or any(path.is_relative_to(root) for root in roots)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Refuse duplicate scenario names. With --kueue-version, every scenario is checked as one
    for that version: the fit model, which models v0.19.2 only, then says it cannot predict
    another, and Kueue is compared with expect alone. On a cluster, run scenarios that need
    the same Kueue version and feature gates together: each change restarts Kueue's cluster
    (~10 s; a new version, a new cluster). The sort is stable, so file order holds within a
    group; scenarios on the default version with default gates (and Python tests) come first."""
    refuse_duplicate_names(items)
    override = config.getoption("kueue_version")
    if override is not None:
        for item in items:
            if isinstance(item, ScenarioItem) and item.scenario is not None:
                item.scenario = dataclasses.replace(item.scenario, kueue=override)
    if config.getoption("--cluster") not in ("local", "kind"):
        return
    keys = {id(item): _group_key(config, _scenario_of(item)) for item in items}
    items.sort(key=lambda item: keys[id(item)])


GroupKey = tuple[bool, str, int, tuple[tuple[str, bool], ...], str]


def _group_key(config: pytest.Config, scenario: Scenario | None) -> GroupKey:
    """Scenarios (None: a Python test, or a file that did not load and reports itself when
    it runs) with equal keys need the same cluster (Kueue version, gates and kueueConfig);
    the default version, gates and configuration sort first."""
    version = _version_of(config, scenario)
    first = version == config.stash[DEFAULT_VERSION_KEY]
    gates = scenario.feature_gates if scenario is not None else {}
    kueue_config = scenario.kueue_config.document if scenario is not None else {}
    configured = json.dumps(kueue_config, sort_keys=True) if kueue_config else ""
    return (not first, version, 1 if gates else 0, tuple(sorted(gates.items())), configured)


def _group_of_file(config: pytest.Config, path: Path) -> str:
    """The group of a scenario file, named for pytest-xdist ("" for the default version and
    gates, or when it does not load). The xdist controller collects nothing itself, so it
    loads the files the workers name (harness/plugin/xdist.py)."""
    if path.suffix not in SUFFIXES:
        return ""  # a Python test
    try:
        scenario = load_scenario(path)
    except HarnessError:
        return ""
    return unit_name(_group_key(config, scenario))


def unit_name(key: GroupKey) -> str:
    """The pytest-xdist unit of work a scenario runs in ("": one of its own, for the default
    version, gates and configuration). Every scenario of another Kueue version is in one unit,
    whatever its gates and kueueConfig: a version change starts a new cluster (about 10 CPU-s
    and 20-25 s on busy cores), a gate or configuration change restarts Kueue alone, and the
    unit's items run in collection order (grouped by _group_key). As units of their own, the
    five scenarios on v0.17.1 and v0.18.2 started five clusters and three more to come back
    in one `make e2e`."""
    not_first, version, _, gates, configured = key
    if not_first:
        return version
    if not gates and not configured:
        return ""
    named = [version, *(f"{k}={str(v).lower()}" for k, v in gates)]
    if configured:
        named.append("kueueConfig=" + hashlib.sha256(configured.encode()).hexdigest()[:8])
    return "+".join(named)


def _scenario_of(item: pytest.Item) -> Scenario | None:
    return item.scenario if isinstance(item, ScenarioItem) else None


def kueue_version_of(item: pytest.Item) -> str:
    """The Kueue version an item runs on: --kueue-version, else the scenario's `kueue:` when
    the backend can start it, else the session's default."""
    return _version_of(item.config, _scenario_of(item))


def _version_of(config: pytest.Config, scenario: Scenario | None) -> str:
    default = config.stash[DEFAULT_VERSION_KEY]
    if config.getoption("kueue_version") is not None or scenario is None:
        return default
    return kueue_version_for(config.getoption("--cluster") or "local", scenario.kueue) or default


def pytest_report_header(config: pytest.Config) -> list[str]:
    cluster = config.getoption("--cluster")
    if cluster is None:
        return ["scenarios: fit model only (use --cluster=local to run them on real Kueue)"]
    lines = [f"scenarios: on the {cluster} backend, checked against expect and the fit model"]
    workers = distribute.header(config)
    return [*lines, workers] if workers else lines


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip cluster tests unless enabled; start the scenario backend once, when first needed."""
    cluster = item.config.getoption("--cluster")
    if item.get_closest_marker("cluster") and not (
        item.config.getoption("--cluster-tests") or cluster in ("local", "kind", "existing")
    ):
        pytest.skip("cluster tests are not enabled: run with --cluster=local or --cluster-tests")
    if cluster is None or not isinstance(item.parent, ScenarioFile | StreamFile):
        return
    stash, version = item.config.stash, kueue_version_of(item)
    backend = stash.get(BACKEND_KEY, None)
    # A backend the kueue_cluster fixture made runs the session's default version.
    running = stash.get(RUNNING_VERSION_KEY, stash[DEFAULT_VERSION_KEY])
    if backend is not None and running != version:
        backend.close()  # another Kueue version: a new cluster (items are grouped by version)
        backend = stash[BACKEND_KEY] = None
    if backend is None:
        options = {**backend_options(item.config.getoption), "kueue_version": version}
        stash[BACKEND_KEY] = create_backend(cluster, **options)
        stash[RUNNING_VERSION_KEY] = version


SLOWEST_SHOWN = 10


def pytest_terminal_summary(terminalreporter: Any) -> None:
    _slowest_scenarios(terminalreporter)
    _reruns(terminalreporter)


def _slowest_scenarios(terminalreporter: Any) -> None:
    """The scenarios that took a cluster longest, with the seconds of each phase (shaping,
    submission, reading, steps) and the CPU seconds the cluster and the harness spent: where
    a suite's time goes, run after run, and how much of it was waiting."""
    timed = []
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "when", None) != "call":
                continue
            props = dict(getattr(report, "user_properties", ()))
            if PHASES_PROPERTY not in props:
                continue
            phases = json.loads(props[PHASES_PROPERTY])
            cpu = sum(json.loads(props.get(CPU_PROPERTY, "{}")).values())
            timed.append((sum(phases.values()), report.nodeid, phases, cpu))
    if not timed:
        return
    terminalreporter.section(f"slowest {min(SLOWEST_SHOWN, len(timed))} scenarios on the cluster")
    for total, nodeid, phases, cpu in sorted(timed, key=lambda t: (-t[0], t[1]))[:SLOWEST_SHOWN]:
        spent = ", ".join(f"{k} {v:.2f}" for k, v in phases.items() if v >= 0.01)
        waited = max(0.0, total - cpu)
        terminalreporter.write_line(
            f"{total:7.2f}s {nodeid} ({spent}; cpu {cpu:.2f}s, waiting {waited:.2f}s)"
        )


def _reruns(terminalreporter: Any) -> None:
    """Scenarios that passed or failed only after an attempt was discarded because the
    infrastructure failed under it (say so, even when they passed)."""
    reruns = [
        (report.nodeid, text)
        for reports in terminalreporter.stats.values()
        for report in reports
        if getattr(report, "when", None) == "call"
        for key, text in getattr(report, "user_properties", ())
        if key == RERUN_PROPERTY
    ]
    if not reruns:
        return
    terminalreporter.section("scenarios rerun on a fresh cluster (the infrastructure failed)")
    for nodeid, text in reruns:
        terminalreporter.write_line(f"{nodeid}: attempt discarded: {text}")


def pytest_unconfigure(config: pytest.Config) -> None:
    backend = config.stash.get(BACKEND_KEY, None)
    if backend is not None:
        backend.close()
        config.stash[BACKEND_KEY] = None
