"""`summary JUNIT.xml`: a pytest run's JUnit XML as Markdown, for a CI job summary
($GITHUB_STEP_SUMMARY): passed, failed and skipped per suite folder, and the first mismatch
as pytest printed it. Exit 0 when nothing failed, 1 otherwise, 2 on a file it cannot read."""

from __future__ import annotations

import argparse
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import InputError

FIRST_MISMATCH_LINES = 40
"""Enough for a scenario's report (differences, conditions, events), short for a summary."""


def register(sub: argparse._SubParsersAction[Any]) -> None:
    """Add the `summary` command."""
    cmd = sub.add_parser("summary", help="a JUnit XML file as a Markdown job summary")
    cmd.add_argument("junit", help="JUnit XML written by pytest --junitxml")
    cmd.add_argument(
        "--title",
        default="Kueue TAS scenarios",
        help="the summary's heading (default: %(default)s)",
    )
    cmd.set_defaults(handler=_summary)


@dataclass(frozen=True)
class Case:
    folder: str
    name: str
    state: str  # passed | failed | skipped
    text: str


def _summary(args: argparse.Namespace) -> int:
    cases = read_cases(Path(args.junit))
    print(render(cases, args.title))
    return 1 if any(c.state == "failed" for c in cases) else 0


def read_cases(path: Path) -> list[Case]:
    """Every testcase of the file, with its folder (suites/guide, tests, ...)."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as err:
        raise InputError(str(path), "", f"not a readable JUnit XML file ({err})") from None
    cases = []
    for case in root.iter("testcase"):
        failure = case.find("failure")
        if failure is None:
            failure = case.find("error")
        skipped = case.find("skipped")
        state = "failed" if failure is not None else "skipped" if skipped is not None else "passed"
        text = (failure.text or failure.get("message") or "") if failure is not None else ""
        cases.append(Case(_folder(case.get("classname", "")), case.get("name", ""), state, text))
    return cases


def _folder(classname: str) -> str:
    """`suites.guide.a.yaml` -> suites/guide; `tests.cli.test_x` -> tests/cli; `test_x` -> ."""
    for ext in (".yaml", ".yml"):
        if classname.endswith(ext):
            classname = classname.removesuffix(ext)
    parts = classname.split(".")[:-1]
    while parts and parts[-1][:1].isupper():  # a test class inside the module
        parts.pop()
    return "/".join(parts) or "."


def render(cases: list[Case], title: str) -> str:
    """The Markdown: totals, a table per folder, the first failure's text."""
    totals = Counter(c.state for c in cases)
    lines = [
        f"## {title}",
        "",
        f"{len(cases)} items: {totals['passed']} passed, {totals['failed']} failed, "
        f"{totals['skipped']} skipped",
        "",
        "| folder | passed | failed | skipped |",
        "| --- | ---: | ---: | ---: |",
    ]
    for folder in sorted({c.folder for c in cases}):
        count = Counter(c.state for c in cases if c.folder == folder)
        mark = " ❌" if count["failed"] else ""
        lines.append(
            f"| `{folder}`{mark} | {count['passed']} | {count['failed']} | {count['skipped']} |"
        )
    failed = [c for c in cases if c.state == "failed"]
    if failed:
        first = failed[0]
        text = first.text.strip().splitlines()
        shown = text[:FIRST_MISMATCH_LINES]
        if len(text) > len(shown):
            shown.append(f"... ({len(text) - len(shown)} more lines in the JUnit file)")
        lines += ["", f"### First failure: `{first.folder}` {first.name}", "", "```", *shown, "```"]
    return "\n".join(lines)
