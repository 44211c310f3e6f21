"""How each upstream binary is built from its Go module (no source copied into the repo).

- Kueue and KWOK: `go install module/cmd/x@version`; their go.mod files carry no replaces.
- etcd: the server main lives in go.etcd.io/etcd/server/v3, whose go.mod has relative
  replaces, so `go install` refuses it; a generated wrapper module requires it instead.
- JobSet: the same wrapper (`go install sigs.k8s.io/jobset@v0.12.0` asks the proxy for the
  module's version list, which it refuses here).
- LeaderWorkerSet: the same wrapper; its main package is sigs.k8s.io/lws/cmd.
- kube-apiserver, -controller-manager, -scheduler: k8s.io/kubernetes requires every staging
  module at v0.0.0 with `=> ./staging/...` replaces. A generated module pins each staging
  module to the matching v0.X.Y; the list is derived from the real go.mod at build time.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harness.toolchain import cache
from harness.toolchain.gocmd import ToolchainError, go_binary, go_env, module_info, run_go
from harness.toolchain.pins import Pins

K8S_MODULE = "k8s.io/kubernetes"
ETCD_MODULE = "go.etcd.io/etcd/server/v3"
KUEUE_MODULE = "sigs.k8s.io/kueue"
KWOK_MODULE = "sigs.k8s.io/kwok"
JOBSET_MODULE = "sigs.k8s.io/jobset"
LWS_MODULE = "sigs.k8s.io/lws"
K8S_COMMANDS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler")

BuildFn = Callable[["Component", Path, Path], None]


@dataclass(frozen=True)
class Component:
    """One binary: its name, pin, the env var that overrides it, and its recipe."""

    name: str
    version: str
    env_var: str
    build: BuildFn
    recipe: dict[str, str] = field(default_factory=dict)

    @property
    def dirname(self) -> str:
        return f"{self.name}-{self.version}"

    def fingerprint(self) -> dict[str, str]:
        """What the cached build must match to be reused."""
        return {"component": self.name, "version": self.version, **self.recipe}


def k8s_ldflags(pins: Pins) -> str:
    """Version ldflags: without them /version reports v0.0.0-master+$Format:%H$ and Kueue,
    which parses it as semver at start-up, exits."""
    v, minor = pins.kubernetes, pins.kubernetes_minor
    flags = ["-s", "-w"]
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [f"-X {pkg}.gitVersion={v}", f"-X {pkg}.gitMajor=1", f"-X {pkg}.gitMinor={minor}"]
    flags.append("-X k8s.io/component-base/version.gitTreeState=clean")
    return " ".join(flags)


def staging_modules(gomod: Path) -> list[str]:
    """Staging module paths from a k8s.io/kubernetes go.mod; fails on any other replace."""
    go = go_binary("kubernetes (go.mod parsing)")
    out = subprocess.run(
        [go, "mod", "edit", "-json", str(gomod)],
        capture_output=True,
        text=True,
        env=go_env(),
        check=False,
    )
    if out.returncode != 0:
        raise ToolchainError(f"cannot parse {gomod}: {out.stderr.strip()}")
    return staging_from_replaces(json.loads(out.stdout).get("Replace") or [], str(gomod))


def staging_from_replaces(replaces: list[dict[str, dict[str, str]]], where: str) -> list[str]:
    """Split `go mod edit -json` replaces into staging modules; any other replace is an error,
    because the generated module could not reproduce it from the module proxy."""
    staging, other = [], []
    for rep in replaces:
        old, new = rep["Old"]["Path"], rep["New"]["Path"]
        if new == f"./staging/src/{old}":
            staging.append(old)
        else:
            other.append(f"{old} => {new} {rep['New'].get('Version', '')}".strip())
    if other:
        raise ToolchainError(
            f"{where}: non-staging replace directives the generated module cannot reproduce: "
            + "; ".join(other)
        )
    if not staging:
        raise ToolchainError(f"{where}: no staging replaces found; is this k8s.io/kubernetes?")
    return sorted(staging)


def _go_directive(gomod: Path) -> str:
    for line in gomod.read_text().splitlines():
        if line.startswith("go "):
            return line.split()[1]
    raise ToolchainError(f"{gomod}: no go directive")


def _new_module(src: Path, name: str, go_version: str) -> None:
    """A bare main module; `go mod edit` adds requires, replaces and tool directives."""
    src.mkdir(parents=True, exist_ok=True)
    (src / "go.mod").write_text(f"module {name}\n\ngo {go_version}\n")


def k8s_module(pins: Pins, log: Path) -> Path:
    """Generated main module requiring k8s.io/kubernetes with staging modules pinned; cached."""
    info = module_info(K8S_MODULE, pins.kubernetes, "kubernetes")
    gomod = Path(info["GoMod"])
    staging = staging_modules(gomod)
    fingerprint = {"kubernetes": pins.kubernetes, "staging": ",".join(staging)}
    final = cache.cache_root() / "src" / f"kubernetes-{pins.kubernetes}"
    if cache.is_current(final, fingerprint, ["go.mod", "go.sum"]):
        return final

    def fill(src: Path) -> None:
        _new_module(src, "kth-k8s-tools", _go_directive(gomod))
        edits = [f"-require={K8S_MODULE}@{pins.kubernetes}"]
        edits += [f"-replace={m}={m}@{pins.staging}" for m in staging]
        edits += [f"-tool={K8S_MODULE}/cmd/{c}" for c in K8S_COMMANDS]
        run_go(["mod", "edit", *edits], label="generating kubernetes go.mod", cwd=src, log=log)
        run_go(["mod", "tidy"], label="resolving kubernetes modules", cwd=src, log=log)

    with cache.locked("src-kubernetes"):
        if cache.is_current(final, fingerprint, ["go.mod", "go.sum"]):
            return final
        return cache.populate(final, fingerprint, fill)


def _build_k8s(pins: Pins) -> BuildFn:
    def build(comp: Component, out: Path, log: Path) -> None:
        src = k8s_module(pins, log)
        run_go(
            [
                "build",
                "-trimpath",
                "-ldflags",
                k8s_ldflags(pins),
                "-o",
                str(out / comp.name),
                f"{K8S_MODULE}/cmd/{comp.name}",
            ],
            label=f"building {comp.name}",
            cwd=src,
            log=log,
        )

    return build


def _wrapped(module: str, package: str, binary: str) -> BuildFn:
    """Build `package` inside a generated main module that requires `module`: for modules
    whose `go install module@version` the proxy here refuses (etcd's layout; JobSet's
    deprecation lookup answers 403)."""

    def build(comp: Component, out: Path, log: Path) -> None:
        gomod = Path(module_info(module, comp.version, binary)["GoMod"])
        with tempfile.TemporaryDirectory(prefix=f"kth-{binary}-src-") as tmp:
            src = Path(tmp)
            _new_module(src, f"kth-{binary}-tools", _go_directive(gomod))
            run_go(
                ["mod", "edit", f"-require={module}@{comp.version}", f"-tool={package}"],
                label=f"generating {binary} go.mod",
                cwd=src,
                log=log,
            )
            run_go(["mod", "tidy"], label=f"resolving {binary} modules", cwd=src, log=log)
            run_go(
                ["build", "-trimpath", "-ldflags", "-s -w", "-o", str(out / binary), package],
                label=f"building {binary}",
                cwd=src,
                log=log,
            )

    return build


def _go_install(module: str, cmd: str, ldflags: str) -> BuildFn:
    def build(comp: Component, out: Path, log: Path) -> None:
        run_go(
            ["install", "-trimpath", "-ldflags", ldflags, f"{module}/cmd/{cmd}@{comp.version}"],
            label=f"building {comp.name}",
            cwd=out,
            log=log,
            env={"GOBIN": str(out)},
        )

    return build


def _wrapped_component(name: str, version: str, module: str) -> Component:
    """A binary built by `_wrapped` from the main package at `module`'s root; the
    fingerprint names the wrapper so a change of recipe rebuilds the cache."""
    return Component(
        name,
        version,
        "KTH_" + name.upper(),
        _wrapped(module, module, name),
        {"module": module, "wrapper": "tool", "ldflags": "-s -w"},
    )


def components(pins: Pins) -> dict[str, Component]:
    """Every binary the embedded cluster runs, keyed by name."""
    kueue_ld = f"-s -w -X {KUEUE_MODULE}/pkg/version.GitVersion={pins.kueue}"
    table = [
        _wrapped_component("etcd", pins.etcd, ETCD_MODULE),
        *(
            Component(
                c,
                pins.kubernetes,
                "KTH_" + c.upper().replace("-", "_"),
                _build_k8s(pins),
                {"module": K8S_MODULE, "staging": pins.staging, "ldflags": k8s_ldflags(pins)},
            )
            for c in K8S_COMMANDS
        ),
        Component(
            "kwok",
            pins.kwok,
            "KTH_KWOK",
            _go_install(KWOK_MODULE, "kwok", "-s -w"),
            {"module": KWOK_MODULE, "ldflags": "-s -w"},
        ),
        Component(
            "kueue",
            pins.kueue,
            "KTH_KUEUE",
            _go_install(KUEUE_MODULE, "kueue", kueue_ld),
            {"module": KUEUE_MODULE, "ldflags": kueue_ld},
        ),
        _wrapped_component("jobset", pins.jobset, JOBSET_MODULE),
        Component(
            "lws",
            pins.lws,
            "KTH_LWS",
            _wrapped(LWS_MODULE, f"{LWS_MODULE}/cmd", "lws"),
            {"module": LWS_MODULE, "package": "cmd", "wrapper": "tool", "ldflags": "-s -w"},
        ),
    ]
    return {c.name: c for c in table}
