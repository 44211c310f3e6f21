"""CLI tools the kind path needs (kind, helm, kubectl), Kueue's CLI kueuectl and actionlint,
built from Go modules.

`python -m harness build tools` (what `make tools` runs) puts them into the same
cache as the embedded cluster's binaries (~/.cache/kueue-tas-harness/<tool>-<version>/),
built the same way: into a temporary directory renamed into place when complete. A tool
already on PATH is never replaced; `tool_path` prefers PATH, then the cache.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness import progress
from harness.toolchain import PINS, cache
from harness.toolchain.gocmd import ToolchainError, go_binary, module_info, run_go
from harness.toolchain.recipes import K8S_MODULE, KUEUE_MODULE, k8s_ldflags, staging_modules

KIND_VERSION = "v0.32.0"  # Kueue v0.19.2's hack/tools pin; KWOK v0.8.0's KindVersion
HELM_VERSION = "v4.3.2"  # Kueue v0.19.2 builds its chart with helm.sh/helm/v4
ACTIONLINT_VERSION = "v1.7.12"
logger = progress.logger("toolchain")


@dataclass(frozen=True)
class Tool:
    """One CLI: how to build it and which version the cache directory is named after."""

    name: str
    version: str
    build: Callable[[Path, Path], None]

    @property
    def dirname(self) -> str:
        return f"{self.name}-{self.version}"


def _go_install(package: str, ldflags: str = "-s -w") -> Callable[[Path, Path], None]:
    def build(out: Path, log: Path) -> None:
        run_go(
            ["install", "-trimpath", "-ldflags", ldflags, package],
            label=f"building {package}",
            cwd=out,
            log=log,
            env={"GOBIN": str(out)},
        )

    return build


def _build_kubectl(out: Path, log: Path) -> None:
    """kubectl's main lives in k8s.io/kubernetes, whose go.mod replaces every staging module
    with a relative path; a generated module pins them to the matching v0.X.Y instead."""
    info = module_info(K8S_MODULE, PINS.kubernetes, "kubectl")
    staging = staging_modules(Path(info["GoMod"]))
    with tempfile.TemporaryDirectory(prefix="kth-kubectl-src-") as tmp:
        src = Path(tmp)
        go_line = next(
            (ln for ln in Path(info["GoMod"]).read_text().splitlines() if ln.startswith("go ")),
            "go 1.26.0",
        )
        (src / "go.mod").write_text(f"module kth-kubectl\n\n{go_line}\n")
        edits = [f"-require={K8S_MODULE}@{PINS.kubernetes}", f"-tool={K8S_MODULE}/cmd/kubectl"]
        edits += [f"-replace={m}={m}@{PINS.staging}" for m in staging]
        run_go(["mod", "edit", *edits], label="generating kubectl go.mod", cwd=src, log=log)
        run_go(["mod", "tidy"], label="resolving kubectl modules", cwd=src, log=log)
        target = ["-o", str(out / "kubectl"), f"{K8S_MODULE}/cmd/kubectl"]
        ldflags = ["-ldflags", k8s_ldflags(PINS)]
        run_go(
            ["build", "-trimpath", *ldflags, *target], label="building kubectl", cwd=src, log=log
        )


TOOLS: dict[str, Tool] = {
    t.name: t
    for t in (
        Tool("kind", KIND_VERSION, _go_install(f"sigs.k8s.io/kind@{KIND_VERSION}")),
        Tool(
            "helm",
            HELM_VERSION,
            _go_install(
                f"helm.sh/helm/v4/cmd/helm@{HELM_VERSION}",
                f"-s -w -X helm.sh/helm/v4/internal/version.version={HELM_VERSION}",
            ),
        ),
        Tool("kubectl", PINS.kubernetes, _build_kubectl),
        # Kueue's own CLI at the Kueue pin: its `list workloads` fills POSITION IN QUEUE
        # from the visibility API (cmd/kueuectl/app/list/list_workloads.go).
        Tool(
            "kueuectl",
            PINS.kueue,
            _go_install(
                f"{KUEUE_MODULE}/cmd/kueuectl@{PINS.kueue}",
                f"-s -w -X {KUEUE_MODULE}/pkg/version.GitVersion={PINS.kueue}",
            ),
        ),
        Tool(
            "actionlint",
            ACTIONLINT_VERSION,
            _go_install(f"github.com/rhysd/actionlint/cmd/actionlint@{ACTIONLINT_VERSION}"),
        ),
    )
}


def cached_path(name: str) -> Path:
    """Where the cache keeps a tool (it may not be built yet)."""
    tool = TOOLS[name]
    return cache.cache_root() / tool.dirname / name


def candidates(name: str) -> list[Path]:
    """Executables to try for a tool, in order: the one on PATH, then the cached build."""
    found = [Path(p) for p in (shutil.which(name),) if p]
    cached = cached_path(name) if name in TOOLS else None
    if cached is not None and cached.is_file() and os.access(cached, os.X_OK):
        found.append(cached)
    return found


def tool_path(name: str) -> Path | None:
    """The first candidate (PATH, then cache), or None; nothing is built here."""
    found = candidates(name)
    return found[0] if found else None


def ensure_built(name: str) -> Path:
    """The cached build of a tool, building it first when missing (ToolchainError on failure)."""
    if name not in TOOLS:
        raise ToolchainError(f"unknown tool {name!r}; known: {', '.join(TOOLS)}")
    tool = TOOLS[name]
    final = cache.cache_root() / tool.dirname
    fingerprint = {"tool": name, "version": tool.version}
    if cache.is_current(final, fingerprint, [name]):
        return final / name
    go_binary(name)
    with cache.locked(tool.dirname):
        if not cache.is_current(final, fingerprint, [name]):
            log = cache.cache_root() / "logs" / f"{tool.dirname}.log"
            log.parent.mkdir(parents=True, exist_ok=True)
            log.write_text("")
            logger.info(f"building {name} {tool.version} (log: {log})")
            started = time.monotonic()
            cache.populate(final, fingerprint, lambda out: tool.build(out, log))
            took = time.monotonic() - started
            logger.info(f"built {name} {tool.version} in {took:.0f}s")
    return final / name


def main(argv: list[str] | None = None) -> int:
    """`python -m harness.toolchain.tools which TOOL...`: the path to run (PATH, then the
    cache), exit 1 when there is none; `build`/`paths` are `python -m harness build` now."""
    args = list(sys.argv[1:] if argv is None else argv)
    action = args.pop(0) if args and args[0] in ("build", "paths", "which") else "build"
    if action != "which":
        from harness.cli.main import main as harness_main

        extra = ["--paths"] if action == "paths" else []
        return harness_main(["build", *(args or ["tools"]), *extra])
    found = [tool_path(n) for n in args]
    for path in found:
        print(path or "")
    return 0 if found and all(found) else 1


if __name__ == "__main__":
    sys.exit(main())
