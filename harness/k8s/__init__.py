"""Kubernetes' own rules, without a client: quantities, name and resource validation,
and the certificates an API server needs."""
