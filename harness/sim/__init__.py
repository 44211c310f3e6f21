"""Kueue v0.19.2's real scheduler run as a library (the Go program in harness/sim/go/), from Python.

`build` compiles it into the build cache, `contract` turns a typed Scenario into the JSON
it reads, and `process` runs it. `harness.backends.sim` is the pytest backend built on them.
"""
