"""Entry point for `python -m harness` (the `kth` console script is the same)."""

from harness.cli.main import entry

entry()
