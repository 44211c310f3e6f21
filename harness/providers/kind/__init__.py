"""Provider "kind": a kind cluster from a cluster shape, with Kueue from its Helm chart."""
