"""What `--cluster=kind` needs on the machine, checked up front with one message for all of it.

A container engine that answers (Docker, or Podman through kind's experimental provider),
and kind, helm and kubectl recent enough for Kubernetes 1.36 and Kueue's chart. Each tool is
looked up on PATH first, then in the harness cache (`make tools` builds them there).
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from harness.providers.base import ClusterError
from harness.toolchain.tools import TOOLS, candidates

Version = tuple[int, int, int]
MIN_VERSIONS: dict[str, Version] = {
    "docker": (20, 10, 0),  # cgroup v2 support kind's node images rely on
    "podman": (4, 0, 0),
    "kind": (0, 32, 0),  # kindest/node:v1.36.1 is built for kind v0.32.0
    "helm": (3, 8, 0),  # OCI charts (fake-gpu-operator) without the experimental flag
    "kubectl": (1, 35, 0),  # version skew: within one minor of the 1.36 API server
}
HOW_TO_GET = {
    "engine": "install and start Docker (https://docs.docker.com/engine/install/) or Podman "
    ">= 4.0 (kind then needs KIND_EXPERIMENTAL_PROVIDER=podman)",
    "tools": "`make tools` builds kind, helm and kubectl from their Go modules into "
    "~/.cache/kueue-tas-harness (needs Go >= 1.26), or install them from your package manager",
}
TIMEOUT_S = 15.0
_VERSION = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?")


class PrerequisitesMissing(ClusterError):
    """Tools the kind provider needs are missing or too old; the message lists all of them."""


@dataclass
class Prereqs:
    """The result: a usable path per tool (when found) and every problem seen."""

    paths: dict[str, Path] = field(default_factory=dict)
    engine: str | None = None
    problems: list[str] = field(default_factory=list)

    def message(self) -> str:
        head = f"--cluster=kind cannot start: {len(self.problems)} prerequisite(s) missing"
        lines = [head, *(f"  - {p}" for p in self.problems)]
        if any(p.split(":")[0] in ("kind", "helm", "kubectl") for p in self.problems):
            lines.append(f"  how: {HOW_TO_GET['tools']}")
        return "\n".join(lines)

    def raise_if_missing(self) -> None:
        if self.problems:
            raise PrerequisitesMissing(self.message())


def parse_version(text: str) -> Version | None:
    """First x.y[.z] in a version string ("kind v0.32.0 go1.26", "v4.3.2+g1a2b", "28.2.2")."""
    match = _VERSION.search(text)
    if not match:
        return None
    major, minor, patch = match.groups()
    return int(major), int(minor), int(patch or 0)


def _fmt(v: Version) -> str:
    return ".".join(map(str, v))


Runner = Callable[[list[str]], tuple[int, str]]


def run(argv: list[str]) -> tuple[int, str]:
    """Run a version command: (exit code, stdout or else stderr); never raises."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        return 127, str(err)
    return proc.returncode, (proc.stdout if proc.returncode == 0 else proc.stderr).strip()


def _version_of(name: str, path: Path, runner: Runner) -> tuple[Version | None, str]:
    if name == "kubectl":
        code, out = runner([str(path), "version", "--client", "-o", "json"])
        try:
            text = json.loads(out)["clientVersion"]["gitVersion"] if code == 0 else out
        except (ValueError, KeyError, TypeError):
            text = out
    else:
        args = {"kind": ["version"], "helm": ["version", "--short"]}[name]
        code, text = runner([str(path), *args])
    return (parse_version(text) if code == 0 else None), text


def check_tool(name: str, result: Prereqs, runner: Runner = run) -> None:
    """Find the first candidate of `name` recent enough; otherwise record why none is."""
    found = candidates(name)
    if not found:
        pin = TOOLS[name].version if name in TOOLS else ""
        result.problems.append(f"{name}: not found on PATH or in the harness cache (want {pin})")
        return
    seen = []
    for path in found:
        version, text = _version_of(name, path, runner)
        if version is not None and version >= MIN_VERSIONS[name]:
            result.paths[name] = path
            return
        seen.append(f"{path} is {_fmt(version) if version else f'unusable ({text[:80]})'}")
    want = _fmt(MIN_VERSIONS[name])
    result.problems.append(f"{name}: need >= {want}; {'; '.join(seen)}")


def check_engine(
    result: Prereqs, runner: Runner = run, env: Mapping[str, str] | None = None
) -> None:
    """Docker (or Podman) must answer, not just be installed: kind drives the engine's API."""
    notes = []
    podman_first = (env or {}).get("KIND_EXPERIMENTAL_PROVIDER") == "podman"
    order = ["podman", "docker"] if podman_first else ["docker", "podman"]
    for engine in order:
        paths = candidates(engine)
        if not paths:
            notes.append(f"{engine} not found")
            continue
        probe = ["version", "--format", "{{.Server.Version}}"]  # asks the engine, not the CLI
        if engine == "podman":
            probe = ["info", "--format", "{{.Version.Version}}"]
        code, out = runner([str(paths[0]), *probe])
        version = parse_version(out) if code == 0 else None
        if version is None:
            first = out.splitlines()[0] if out else f"exit {code}"
            notes.append(f"{engine} CLI at {paths[0]} but no engine answers ({first})")
        elif version < MIN_VERSIONS[engine]:
            notes.append(f"{engine} engine {_fmt(version)} < {_fmt(MIN_VERSIONS[engine])}")
        else:
            result.paths[engine] = paths[0]
            result.engine = engine
            return
    result.problems.append(f"container engine: {'; '.join(notes)}; {HOW_TO_GET['engine']}")


def check(runner: Runner = run, env: Mapping[str, str] | None = None) -> Prereqs:
    """Everything the kind provider needs; call `.raise_if_missing()` on the result."""
    result = Prereqs()
    check_engine(result, runner, env)
    for name in ("kind", "helm", "kubectl"):
        check_tool(name, result, runner)
    return result
