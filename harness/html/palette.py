"""One colour per workload, the same in every map of a scenario."""

from __future__ import annotations

import colorsys
from collections.abc import Iterable

GOLDEN_ANGLE = 137.508
"""Degrees between successive hues: neighbours in file order never look alike."""


class Palette:
    def __init__(self, names: Iterable[str] = ()) -> None:
        self._colours: dict[str, str] = {}
        for name in names:
            self.colour(name)

    def colour(self, name: str) -> str:
        """The workload's colour, assigned in order of first use."""
        if name not in self._colours:
            hue = (len(self._colours) * GOLDEN_ANGLE + 200) % 360 / 360
            r, g, b = colorsys.hls_to_rgb(hue, 0.55, 0.62)
            self._colours[name] = f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"
        return self._colours[name]

    def items(self) -> list[tuple[str, str]]:
        return list(self._colours.items())
