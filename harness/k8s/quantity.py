"""Kubernetes quantities parsed exactly, and turned into the integers Kueue computes with.

Kueue keeps cpu in millicores and every other resource in whole units, rounding up
(pkg/resources ResourceValue: Quantity.MilliValue / Quantity.Value), so a parsed quantity
is kept as an exact Fraction and converted only at that boundary.
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction

_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_PATTERN = re.compile(
    r"^(?P<sign>[+-]?)(?P<num>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)
CPU = "cpu"


class QuantityError(ValueError):
    """Text that is not a Kubernetes quantity."""


def parse_quantity(value: object) -> Fraction:
    """Parse `"500m"`, `256Gi`, `1e3` or a plain number into an exact Fraction."""
    if isinstance(value, bool) or value is None:
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"{value!r} is not a quantity")
        return Fraction(str(value))
    if not isinstance(value, str):
        raise QuantityError(f"{value!r} is not a quantity")
    return _parse_text(value)


@functools.lru_cache(maxsize=4096)
def _parse_text(value: str) -> Fraction:
    """Cached: a large cluster repeats a few quantities ("8", "64", "512Gi") thousands of
    times, and Fraction arithmetic dominated loading a 5,000-node snapshot."""
    match = _PATTERN.match(value.strip())
    if not match:
        raise QuantityError(f"{value!r} is not a quantity (e.g. 2, 500m, 16Gi)")
    number = Fraction(match["num"])
    if match["sign"] == "-":
        number = -number
    suffix = match["suffix"] or ""
    if suffix in _BINARY:
        return number * Fraction(1024) ** _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * Fraction(10) ** _DECIMAL[suffix]
    return number * Fraction(10) ** int(suffix[1:])


def format_quantity(value: Fraction) -> str:
    """Exact Kubernetes quantity text for a parsed quantity: a plain integer, or n, u or m
    units when fractional (1/2 -> "500m"), so parse_quantity(format_quantity(q)) == q."""
    if value.denominator == 1:
        return str(value.numerator)
    for suffix in ("m", "u", "n"):
        scaled = value * Fraction(10) ** -_DECIMAL[suffix]
        if scaled.denominator == 1:
            return f"{scaled.numerator}{suffix}"
    raise QuantityError(f"{value} is finer than a nano unit, which Kubernetes cannot hold")


INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)


def kueue_units(resource: str, quantity: Fraction) -> int:
    """The int64 Kueue uses: millicores for cpu, whole units (rounded up) otherwise, clamped
    to the int64 range (pkg/util/math SafeMilliValue / SafeValue)."""
    if quantity.denominator == 1:  # the common case, without Fraction arithmetic
        units = quantity.numerator * 1000 if resource == CPU else quantity.numerator
    elif resource == CPU:
        units = math.ceil(quantity * 1000)
    else:
        units = math.ceil(quantity)
    return min(max(units, INT64_MIN), INT64_MAX)


def _decimal_string(mantissa: int, exponent: int) -> str:
    """Go's canonical DecimalSI text for mantissa * 10**exponent (exponent multiple of 3)."""
    while mantissa != 0 and mantissa % 1000 == 0 and exponent < 18:
        mantissa //= 1000
        exponent += 3
    suffix = {v: k for k, v in _DECIMAL.items()}[exponent]
    return f"{mantissa}{suffix}"


def format_kueue_units(resource: str, value: int) -> str:
    """Render an integer the way Kueue's ResourceFormatter does in its messages."""
    if value == 0:
        return "0"
    if resource == CPU:
        return _decimal_string(value, -3)
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        if -1024 < value < 1024:
            return _decimal_string(value, 0)
        exponent = 0
        while value % 1024 == 0 and exponent < 6:
            value //= 1024
            exponent += 1
        suffix = {v: k for k, v in _BINARY.items()}.get(exponent, "")
        return f"{value}{suffix}"
    return _decimal_string(value, 0)
