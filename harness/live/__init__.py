"""Ask a live cluster (issue 12): snapshot it as a version-2 scenario and simulate manifests
against it (both only read, through harness.kube), or bring a scenario up as a running
cluster to try them on."""
