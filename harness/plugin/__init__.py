"""The pytest plugin: options and hooks (hooks), scenario collection (collect), xdist workers
(xdist) and CI shards (shards, sharding). The entry point is harness.plugin.hooks."""
