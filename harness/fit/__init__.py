"""The reference fit model (oracle): pure Python, no I/O, modelling Kueue v0.19.2's TAS."""

from harness.fit.model import MODELLED_KUEUE_VERSIONS, FitResult, check_supported, fit

__all__ = ["MODELLED_KUEUE_VERSIONS", "FitResult", "check_supported", "fit"]
