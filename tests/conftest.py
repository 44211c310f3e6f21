"""Test-suite wiring: pytester runs the plugin end to end in a scratch directory."""

pytest_plugins = ["pytester"]
