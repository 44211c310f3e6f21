"""Labels and annotations with Kueue's prefix that Kueue does not know.

Kueue ignores them without a word: a Job annotated `podset-requierd-topology` is admitted as
if it asked for no topology. The harness predicts the same, and says so, naming the closest
key Kueue knows (issue 32 item 2).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from harness.errors import closest
from harness.kueue.keys import KNOWN, PREFIX


@dataclass(frozen=True)
class UnknownKey:
    """One key Kueue would ignore: where it is (a key path), and the likeliest intended one."""

    path: str
    key: str
    closest: str

    def text(self) -> str:
        hint = f"; did you mean {self.closest!r}?" if self.closest else ""
        return f"{self.path}: not a Kueue key, Kueue ignores it{hint}"


def unknown_kueue_keys(obj: Any) -> list[UnknownKey]:
    """Every unknown `kueue.x-k8s.io/` key in any `metadata.labels` or `.annotations` of an
    object (its own, its pod templates', a JobSet's Job templates')."""
    found = []
    for path, meta in _metadata(obj, ""):
        for field in ("labels", "annotations"):
            keys = meta.get(field)
            for key in keys if isinstance(keys, Mapping) else ():
                if isinstance(key, str) and key.startswith(PREFIX) and key not in KNOWN:
                    found.append(UnknownKey(f"{path}{field}.{key}", key, closest(key, KNOWN)))
    return found


def _metadata(value: Any, path: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(`a.b.metadata.`, the mapping) for every `metadata` mapping inside a value."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            sub = f"{path}{key}"
            if key == "metadata" and isinstance(item, Mapping):
                yield f"{sub}.", item
            yield from _metadata(item, f"{sub}.")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _metadata(item, f"{path.rstrip('.')}[{index}].")
