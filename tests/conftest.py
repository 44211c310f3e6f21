"""Test-suite wiring (pytester and what tests share with examples/: the root conftest.py)."""

# Scenarios that are wrong on purpose (test_loader_errors.py reads them): not tests themselves.
collect_ignore = ["data"]
