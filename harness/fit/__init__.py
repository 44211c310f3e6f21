"""The reference fit model (oracle): pure Python, no I/O, modelling Kueue v0.19.2's TAS."""

from harness.fit import engine
from harness.fit.engine import MODELLED_KUEUE_VERSIONS, FitResult, check_supported
from harness.gcpause import without_gc_pauses

fit = without_gc_pauses(engine.fit)
"""engine.fit without cyclic GC pauses, which made it grow faster than the node count
(harness/gcpause.py)."""

__all__ = ["MODELLED_KUEUE_VERSIONS", "FitResult", "check_supported", "fit"]
