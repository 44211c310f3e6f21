"""Where a scenario runs for real: the backend interface and lookup (base), the in-process
Kueue scheduler (sim); the cluster runner is harness.runner."""
