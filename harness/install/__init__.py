"""Installing Kueue (CRDs, webhooks, config) into a cluster whose Kueue runs as a local process."""
