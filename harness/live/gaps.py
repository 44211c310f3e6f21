"""What a snapshot could not represent: one line each, said on stderr and written into the
snapshot (a comment and `x-snapshot.notRepresented`), never dropped silently."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Gaps:
    """Lines in the order found, each once."""

    lines: list[str] = field(default_factory=list)

    def add(self, line: str) -> None:
        if line not in self.lines:
            self.lines.append(line)

    def __bool__(self) -> bool:
        return bool(self.lines)
