"""Provider "local": the embedded cluster, built from Go modules and run as local processes."""
