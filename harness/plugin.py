"""The pytest plugin: options, scenario collection and the session's backend.

Registered through the `pytest11` entry point, so `pytest suites/` works in any checkout
with the package installed. No cluster starts unless `--cluster` asks for one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.backends import add_backend_options, backend_options, create_backend
from harness.collect import (
    BACKEND_KEY,
    NotAScenario,
    ScenarioFile,
    ScenarioItem,
    refuse_duplicate_names,
)
from harness.discover import SUFFIXES, why_not_a_scenario
from harness.html.pytest_report import DEFAULT_PATH as DEFAULT_REPORT
from harness.html.pytest_report import HtmlReport
from harness.kueue_gates import GateError, parse_gates

# The fixtures for tests written in Python (kueue_cluster, tas_shape, fit_model), and --shard.
pytest_plugins = ["harness.fixtures.plugin", "harness.pytest_shards"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "kth_suites",
        type="paths",
        default=[],
        help="folders (relative to the ini file) whose every .yaml/.yml file is a scenario, "
        "as in any folder named suites (default: none)",
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
        "an empty PATH writes none (default: run/report.html when scenarios ran)",
    )


def pytest_configure(config: pytest.Config) -> None:
    try:
        parse_gates(config.getoption("feature_gates"))
    except GateError as err:
        # Once, here: later it would be a setup error with a traceback on every cluster test.
        raise pytest.UsageError(str(err)) from None
    if config.getoption("--cluster") == "kind":
        from harness.providers.kind import prereqs

        found = prereqs.check()
        if found.problems:
            raise pytest.UsageError(found.message())
    report = config.getoption("kth_report")
    if report != "":
        path = Path(report) if report else config.invocation_params.dir / DEFAULT_REPORT
        config.pluginmanager.register(
            HtmlReport(path, config.getoption("--cluster")), "kth-html-report"
        )


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.File | None:
    """Scenario files: every YAML file in a suite folder; elsewhere, YAML files that look like
    scenarios (harness/discover.py). A YAML file named on the command line that is no
    scenario is a one-line collection error rather than pytest's "found no collectors"."""
    if file_path.suffix not in SUFFIXES:
        return None
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
    """Refuse duplicate scenario names. On a cluster, run scenarios that need the same Kueue
    feature gates together: each change of gate set restarts Kueue's cluster (~10 s). The sort
    is stable, so file order holds within a gate set; scenarios with default gates come first."""
    refuse_duplicate_names(items)
    if config.getoption("--cluster") not in ("local", "kind"):
        return
    keys = {id(item): _gate_key(item) for item in items}
    items.sort(key=lambda item: keys[id(item)])


def _gate_key(item: pytest.Item) -> tuple[int, tuple[tuple[str, bool], ...]]:
    if not isinstance(item, ScenarioItem) or item.scenario is None:
        return (0, ())  # a bad file reports itself when it runs
    gates = item.scenario.feature_gates
    return (1 if gates else 0, tuple(sorted(gates.items())))


def pytest_report_header(config: pytest.Config) -> str:
    cluster = config.getoption("--cluster")
    if cluster is None:
        return "scenarios: fit model only (use --cluster=local to run them on real Kueue)"
    return f"scenarios: on the {cluster} backend, checked against expect and the fit model"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip cluster tests unless enabled; start the scenario backend once, when first needed."""
    cluster = item.config.getoption("--cluster")
    if item.get_closest_marker("cluster") and not (
        item.config.getoption("--cluster-tests") or cluster in ("local", "kind", "existing")
    ):
        pytest.skip("cluster tests are not enabled: run with --cluster=local or --cluster-tests")
    if cluster is None or not isinstance(item.parent, ScenarioFile):
        return
    if item.config.stash.get(BACKEND_KEY, None) is None:
        item.config.stash[BACKEND_KEY] = create_backend(
            cluster, **backend_options(item.config.getoption)
        )


def pytest_unconfigure(config: pytest.Config) -> None:
    backend = config.stash.get(BACKEND_KEY, None)
    if backend is not None:
        backend.close()
        config.stash[BACKEND_KEY] = None
