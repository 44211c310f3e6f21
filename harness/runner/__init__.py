"""The cluster runner: one scenario on a real API server with real Kueue (see backend.py)."""
