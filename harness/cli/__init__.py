"""The one command tree: `python -m harness <command>` and `kth <command>` (main)."""
