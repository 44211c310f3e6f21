"""`--help` says what every option does and what it is when not given, for each
`python -m harness` subcommand and for every pytest option the plugin registers."""

from __future__ import annotations

import argparse
import re

import pytest

from harness.cli.main import build_parser


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The parser and every subcommand's parser, by prog (nested subcommands included)."""
    found = {parser.prog: parser}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= _subparsers(sub)
    return found


def _problems(parser: argparse.ArgumentParser) -> list[str]:
    """Options without help, and options whose value when not given is None (the formatter
    would only append "(default: none)") whose own help does not say what happens then."""
    problems = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        name = "/".join(action.option_strings) or action.dest
        if not action.help or action.help == argparse.SUPPRESS:
            problems.append(f"{name}: no help")
        elif (
            action.option_strings
            and action.default is None
            and not action.required
            and action.nargs != 0
            and "default" not in action.help
        ):
            problems.append(f"{name}: the help does not say what happens when it is not given")
    return problems


def test_every_subcommand_option_has_help_and_says_what_unset_means() -> None:
    parsers = _subparsers(build_parser())
    assert {"python -m harness oracle", "python -m harness check", "python -m harness run",
            "python -m harness fuzz", "python -m harness leftovers", "python -m harness build",
            "python -m harness up", "python -m harness down"} <= set(parsers)  # fmt: skip
    problems = [f"{prog}: {p}" for prog, sub in parsers.items() for p in _problems(sub)]
    assert problems == []


def test_the_check_finds_an_option_that_leaves_unset_unexplained() -> None:
    """Negative control: the check above can fail."""
    parser = argparse.ArgumentParser(prog="planted")
    parser.add_argument("--where", help="a folder")
    parser.add_argument("--quiet", action="store_true")
    assert _problems(parser) == [
        "--where: the help does not say what happens when it is not given",
        "--quiet: no help",
    ]


def test_the_defaults_show_in_the_rendered_help() -> None:
    text = _subparsers(build_parser())["python -m harness run"].format_help()
    assert re.search(r"--cluster .*\(default: local\)", " ".join(text.split()))
    assert "(default: off, the cluster is stopped)" in " ".join(text.split())


def test_every_pytest_option_has_help_and_a_default(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    text = "\n".join(result.outlines)
    section = text[text.index("kueue-tas-harness:") :].split("\n\n")[0]
    entries = re.split(r"\n  (?=--)", section)[1:]
    assert {e.split()[0].split("=")[0] for e in entries} >= {
        "--cluster", "--cluster-tests", "--keep-cluster", "--feature-gates", "--kubeconfig"
    }  # fmt: skip
    assert [e.split()[0] for e in entries if "(default" not in e] == []
    ini = text[text.index("kth_suites (paths):") :].split("\n  [A-Za-z]")[0]
    assert "(default: none)" in " ".join(ini.split()[:60])
