"""Provider "existing": scenarios on a cluster someone else runs, reached by kubeconfig."""
