"""Time: replay a stream of workloads (submit times, run durations) and report when each ran,
where, and what the cluster looked like meanwhile (docs/replay.md)."""
