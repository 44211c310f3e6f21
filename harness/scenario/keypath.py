"""A value read from a user's YAML file together with the key path that leads to it.

Shared by every loader of user files (scenarios, cluster shapes), so all of them report
`FILE: key.path: problem` and quote values as YAML writes them (`true`, `null`, `'text'`),
not as Python does (`True`, `None`).
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any, NoReturn

from harness.errors import ScenarioError, did_you_mean
from harness.k8s.rules import is_label_value, is_qualified_name

INT32_MAX = 2**31 - 1
"""Kubernetes and Kueue keep counts (pod set count, slice size) in int32."""


def yaml_text(value: object) -> str:
    """A scalar as YAML writes it: strings in single quotes, `true`, `null`, `.inf`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        return repr(value)
    if isinstance(value, int | Fraction):
        return str(value)
    if isinstance(value, str):
        if value.isprintable():
            return "'" + value.replace("'", "''") + "'"
        escaped = value.encode("unicode_escape").decode("ascii").replace('"', '\\"')
        return f'"{escaped}"'
    return kind(value)


def kind(value: object) -> str:
    """What a value is, for `got ...`: collections by kind, scalars as YAML writes them."""
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, datetime.date):
        return f"a date ({value.isoformat()}; quote it to make it text)"
    if isinstance(value, bytes):
        return "binary data"
    if value is None or isinstance(value, bool | int | float | str):
        return yaml_text(value)
    return type(value).__name__


_new = object.__new__
_LABEL_KEYS: set[str] = set()
"""Label keys found valid (a snapshot's 5,000 nodes repeat the same few). Bounded."""


class KeyPath:
    """A value from a YAML file and the key path to it; `fail` raises `error(file, path, …)`.

    The path text is made only when asked for (an error): a 5,000-node snapshot makes
    ~140,000 KeyPaths, nearly all of which never fail."""

    __slots__ = ("_key", "_parent", "_path", "error", "file", "value")

    def __init__(
        self,
        file: str,
        path: str,
        value: Any,
        error: Callable[[str, str, str], Exception] = ScenarioError,
    ) -> None:
        self.file, self.value, self.error = file, value, error
        self._path: str | None = path
        self._parent: KeyPath | None = None
        self._key: str | int = ""

    @property
    def path(self) -> str:
        if self._path is None:
            assert self._parent is not None  # only child() leaves the path unmade
            parent, key = self._parent.path, self._key
            sub = f"[{key}]" if isinstance(key, int) else (f".{key}" if parent else key)
            self._path = parent + sub
        return self._path

    def fail(self, problem: str) -> NoReturn:
        raise self.error(self.file, self.path or "(top level)", problem)

    def child(self, key: str | int, value: Any) -> KeyPath:
        sub = _new(KeyPath)  # without __init__: the loader makes ~30 a node
        sub.file, sub.value, sub.error = self.file, value, self.error
        sub._path, sub._parent, sub._key = None, self, key
        return sub

    def mapping(
        self, allowed: tuple[str, ...], required: tuple[str, ...] = ()
    ) -> dict[str, KeyPath]:
        value = self.value
        if not isinstance(value, dict):
            self.fail(f"must be a mapping, got {kind(value)}")
        for key in value:
            if key not in allowed:  # a key that is not a string never is
                if not isinstance(key, str):
                    self.fail(f"keys must be strings, got {kind(key)}")
                hint = did_you_mean(key, allowed)
                self.fail(
                    f"unknown key {yaml_text(key)}"
                    + (f": {hint}" if hint else "")
                    + f" (allowed: {', '.join(allowed)})"
                )
        for key in required:
            if key not in value:
                self.fail(f"missing required key {yaml_text(key)}")
        out: dict[str, KeyPath] = {}
        for key, item in value.items():  # child(), inlined: a snapshot has ~25,000 mappings
            sub = out[key] = _new(KeyPath)
            sub.file, sub.value, sub.error = self.file, item, self.error
            sub._path, sub._parent, sub._key = None, self, key
        return out

    def items(self) -> list[KeyPath]:
        if not isinstance(self.value, list):
            self.fail(f"must be a list, got {kind(self.value)}")
        return [self.child(i, v) for i, v in enumerate(self.value)]

    def string(self, valid: Callable[[str], bool] | None = None, what: str = "") -> str:
        """A non-empty string; with `valid` (a check from harness.k8s.rules) one that passes."""
        if not isinstance(self.value, str) or not self.value:
            self.fail(f"must be a non-empty string, got {kind(self.value)}")
        if valid is not None and not valid(self.value):
            self.fail(f"{yaml_text(self.value)} is not a valid {what}")
        return self.value

    def labels(self) -> dict[str, str]:
        """Kubernetes labels (node labels, node selectors): label keys to string values."""
        if not isinstance(self.value, dict):
            self.fail(f"must be a mapping of label key to string value, got {kind(self.value)}")
        out: dict[str, str] = {}
        for key, value in self.value.items():
            if key not in _LABEL_KEYS and (not isinstance(key, str) or not is_qualified_name(key)):
                self.child(str(key), value).fail(f"{yaml_text(key)} is not a valid label key")
            if not isinstance(value, str):
                self.child(key, value).fail(
                    f"label values must be strings (quote it), got {kind(value)}"
                )
            if not is_label_value(value):
                self.child(key, value).fail(f"{yaml_text(value)} is not a valid label value")
            if len(_LABEL_KEYS) < 1024:
                _LABEL_KEYS.add(key)
            out[key] = value
        return out

    def boolean(self) -> bool:
        if not isinstance(self.value, bool):
            self.fail(f"must be true or false, got {kind(self.value)}")
        return self.value

    def integer(self, minimum: int, maximum: int = INT32_MAX) -> int:
        if isinstance(self.value, bool) or not isinstance(self.value, int):
            self.fail(f"must be a whole number, got {kind(self.value)}")
        if self.value < minimum:
            self.fail(f"must be at least {minimum}, got {self.value}")
        if self.value > maximum:
            self.fail(f"must be at most {maximum}, got {self.value}")
        return self.value

    def positive_int(self) -> int:
        """A count Kubernetes keeps in int32: 1 to 2147483647."""
        return self.integer(1)

    def seconds(self, *, above_zero: bool) -> float:
        """A time on a stream's clock, in seconds (whole or fractional)."""
        if isinstance(self.value, bool) or not isinstance(self.value, int | float):
            self.fail(f"must be a number of seconds, got {kind(self.value)}")
        value = float(self.value)
        if value != value or value in (float("inf"), float("-inf")):
            self.fail("must be a finite number of seconds")
        if value < 0 or (above_zero and value == 0):
            self.fail(f"must be {'above' if above_zero else 'at least'} 0, got {self.value}")
        return value
