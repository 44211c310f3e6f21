"""The pytest side of the HTML report: note each scenario item's result as it runs, write
one page at the end of the session. Registered by harness/plugin.py (as pytest registers
its junitxml writer), which owns the --kth-report option."""

from __future__ import annotations

import os
import time
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.collect import ScenarioItem
from harness.fit import MODELLED_KUEUE_VERSIONS
from harness.html import RunInfo, ScenarioResult, report_page
from harness.html.results import scenario_result

DEFAULT_PATH = Path("run") / "report.html"
"""Beside the JUnit files `make test` writes (RUN_DIR=run), relative to where pytest runs."""


@dataclass
class _Noted:
    item: ScenarioItem
    status: str = "passed"
    text: str = ""
    duration: float = 0.0


class HtmlReport:
    """Notes scenario items in run order; writes nothing when no scenario ran."""

    def __init__(self, path: Path, backend: str | None) -> None:
        self.path = path
        self.backend = backend
        self.started = time.time()
        self.noted: dict[str, _Noted] = {}

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, Any, None]:
        outcome = yield
        report: pytest.TestReport = outcome.get_result()
        if not isinstance(item, ScenarioItem):
            return
        noted = self.noted.setdefault(item.nodeid, _Noted(item))
        noted.duration += report.duration
        if not report.passed and noted.status == "passed":  # the first phase that did not pass
            noted.status, noted.text = _status(report), _text(report)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.noted:
            return
        results = [self._result(noted) for noted in self.noted.values()]
        run = RunInfo(
            backend=self.backend or "fit model only (no cluster)",
            kueue=self._kueue(),
            duration=time.time() - self.started,
            started=time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.started)),
        )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(report_page(results, run), encoding="utf-8")

    def _kueue(self) -> str:
        """The Kueue versions that ran the scenarios (a session may run several), else the
        version(s) the fit model modelled."""
        if not self.backend:
            return f"{', '.join(MODELLED_KUEUE_VERSIONS)} (modelled)"
        ran = {n.item.observed.kueue for n in self.noted.values() if n.item.observed is not None}
        shown = sorted(v for v in ran if v)
        if "" in ran:
            shown.append("version not known (a cluster of yours)")
        return ", ".join(shown) or "none ran"

    def _result(self, noted: _Noted) -> ScenarioResult:
        item = noted.item
        folder = os.path.relpath(item.path.parent, item.config.rootpath)
        if item.scenario is None:
            return ScenarioResult(
                None, (), item.name, noted.status, noted.text, noted.duration, folder
            )
        return scenario_result(
            item.scenario,
            item.predicted,
            item.observed,
            backend=self.backend or "",
            status=noted.status,
            text=noted.text,
            duration=noted.duration,
            folder=folder,
        )

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.noted and self.path.exists():
            size = self.path.stat().st_size
            terminalreporter.write_line(
                f"HTML report: {self.path} ({len(self.noted)} scenarios, {size // 1024} KiB)"
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
