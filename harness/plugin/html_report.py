"""The pytest side of the HTML report: note each scenario item's result as it runs, write
one page at the end of the session. Registered by harness/plugin/hooks.py (as pytest registers
its junitxml writer), which owns the --kth-report option.

Under pytest-xdist the items run in worker processes and the controller writes the page: a
worker attaches each item's result to its teardown report (`kth_result`), serialized by
pytest's own report serialization hooks, which xdist uses to send reports to the controller."""

from __future__ import annotations

import base64
import os
import pickle
import time
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.html import RunInfo, ScenarioResult, report_page
from harness.html.results import scenario_result
from harness.kueue.versions import DEFAULT_KUEUE, version_key
from harness.plugin.collect import ScenarioItem
from harness.plugin.streams import StreamItem, stream_result
from harness.results.report import rerun_note

"""Beside the JUnit files `make test` writes (RUN_DIR=run), relative to where pytest runs."""


RESULT_ATTR = "kth_result"
"""The TestReport attribute carrying a scenario's Row, set where the item ran."""


@dataclass
class _Noted:
    item: ScenarioItem | StreamItem
    status: str = "passed"
    text: str = ""
    duration: float = 0.0


@dataclass(frozen=True)
class Row:
    """One scenario's part of the page, as it travels from a worker: its place in the
    session's (sorted) items, so the page keeps the serial order, and the Kueue version that
    ran it (None: nothing ran; "": not known, a cluster of the user's)."""

    index: int
    result: ScenarioResult
    kueue: str | None = None


class HtmlReport:
    """Notes scenario items in run order; writes nothing when no scenario ran. With `relay`
    (an xdist worker) it only attaches results to reports for the controller to write."""

    def __init__(self, path: Path, backend: str | None, relay: bool = False) -> None:
        self.path = path
        self.backend = backend
        self.relay = relay
        self.started = time.time()
        self.noted: dict[str, _Noted] = {}
        self.rows: dict[str, Row] = {}

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, Any, None]:
        outcome = yield
        report: pytest.TestReport = outcome.get_result()
        if not isinstance(item, ScenarioItem | StreamItem):
            return
        noted = self.noted.setdefault(item.nodeid, _Noted(item))
        noted.duration += report.duration
        if not report.passed and noted.status == "passed":  # the first phase that did not pass
            noted.status, noted.text = _status(report), _text(report)
        if report.when == "teardown":
            observed = item.observed if isinstance(item, ScenarioItem) else None
            kueue = observed.kueue if observed is not None else None
            index = item.session.items.index(item)
            setattr(report, RESULT_ATTR, Row(index, self._result(noted), kueue))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Where results gather (this process, or the xdist controller)."""
        row = getattr(report, RESULT_ATTR, None)
        if isinstance(row, Row):
            self.rows[report.nodeid] = row

    @pytest.hookimpl(hookwrapper=True)
    def pytest_report_to_serializable(self, report: Any) -> Generator[None, Any, None]:
        outcome = yield
        data = outcome.get_result()
        if isinstance(data, dict) and isinstance(data.get(RESULT_ATTR), Row):
            data[RESULT_ATTR] = base64.b64encode(pickle.dumps(data[RESULT_ATTR])).decode()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_report_from_serializable(self, data: Any) -> Generator[None, Any, None]:
        outcome = yield
        report = outcome.get_result()
        text = getattr(report, RESULT_ATTR, None)
        if isinstance(text, str):
            # Sent by a worker of this same session (same code), never read from elsewhere.
            setattr(report, RESULT_ATTR, pickle.loads(base64.b64decode(text)))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.relay or not self.rows:
            return
        rows = sorted(self.rows.values(), key=lambda row: row.index)
        run = RunInfo(
            backend=self.backend or "fit model only (no cluster)",
            kueue=self._kueue(rows),
            duration=time.time() - self.started,
            started=time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.started)),
        )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(report_page([row.result for row in rows], run), encoding="utf-8")

    def _kueue(self, rows: list[Row]) -> str:
        """The Kueue versions that ran the scenarios (a session may run several), else the
        versions the fit model predicted for (each scenario's kueue: or --kueue-version)."""
        if not self.backend:
            checked = {r.result.scenario.kueue or DEFAULT_KUEUE for r in rows if r.result.scenario}
            return f"{', '.join(sorted(checked or {DEFAULT_KUEUE}, key=version_key))} (modelled)"
        ran = {row.kueue for row in rows if row.kueue is not None}
        shown = sorted(v for v in ran if v)
        if "" in ran:
            shown.append("version not known (a cluster of yours)")
        return ", ".join(shown) or "none ran"

    def _result(self, noted: _Noted) -> ScenarioResult:
        item = noted.item
        folder = os.path.relpath(item.path.parent, item.config.rootpath)
        if isinstance(item, StreamItem):
            return stream_result(item, noted.status, noted.text, noted.duration, folder)
        if item.scenario is None:
            return ScenarioResult(
                None, (), item.name, noted.status, noted.text, noted.duration, folder
            )
        text = noted.text
        if not text and item.observed is not None:  # a failure's text says it already
            text = rerun_note(item.observed.incidents)
        return scenario_result(
            item.scenario,
            item.predicted,
            item.observed,
            backend=self.backend or "",
            status=noted.status,
            text=text,
            duration=noted.duration,
            folder=folder,
        )

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.relay and self.rows and self.path.exists():
            size = self.path.stat().st_size
            terminalreporter.write_line(
                f"HTML report: {self.path} ({len(self.rows)} scenarios, {size // 1024} KiB)"
            )


def _status(report: pytest.TestReport) -> str:
    if report.skipped:
        return "skipped"
    if report.failed:
        return "failed" if report.when == "call" else "error"
    return "passed"


def _text(report: pytest.TestReport) -> str:
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])
    if report.failed:
        return report.longreprtext
    return ""
