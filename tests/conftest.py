"""Test-suite wiring: pytester runs the plugin end to end in a scratch directory."""

pytest_plugins = ["pytester"]

# Scenarios that are wrong on purpose (test_loader_errors.py reads them): not tests themselves.
collect_ignore = ["data"]
