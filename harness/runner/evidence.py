"""What a failure report carries: Workload conditions, events, Kueue's log tail, artifacts."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path

import yaml

from harness.kube import KUEUE_API, RUN_LABEL, Kube, KubeError, events
from harness.runner.objects import Names, Obj

KINDS = (
    ("v1", "Node", False),
    ("v1", "Pod", True),
    ("batch/v1", "Job", True),
    (KUEUE_API, "Workload", True),
    (KUEUE_API, "LocalQueue", True),
    (KUEUE_API, "ClusterQueue", False),
    (KUEUE_API, "Cohort", False),
    (KUEUE_API, "ResourceFlavor", False),
    (KUEUE_API, "Topology", False),
    (KUEUE_API, "WorkloadPriorityClass", False),
)

# libyaml's emitter when PyYAML has it: pure Python took ~5 s for a 1,000-node run's objects.
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def workload_details(kube: Kube, names: Names, workloads: Mapping[str, str]) -> str:
    """Conditions of the given Workloads (scenario name -> Kueue name) and recent events."""
    lines = []
    for name, kueue_name in workloads.items():
        wl = kube.get_or_none(KUEUE_API, "Workload", kueue_name, names.namespace)
        lines.append(f"workload {name} (Workload {names.namespace}/{kueue_name}):")
        if wl is None:
            lines.append("  (absent)")
            continue
        for c in (wl.get("status") or {}).get("conditions") or []:
            lines.append(
                f"  {c.get('type')}={c.get('status')} {c.get('reason', '')}: {c.get('message', '')}"
            )
    try:
        recent = events(kube, names.namespace)[-15:]
    except KubeError as err:
        recent, lines = [], [*lines, f"(events unavailable: {err})"]
    if recent:
        lines.append(f"recent events in {names.namespace}:")
        for e in recent:
            obj = e.get("involvedObject") or e.get("regarding") or {}
            lines.append(
                f"  {obj.get('kind')}/{obj.get('name')} {e.get('reason')}: "
                f"{(e.get('message') or e.get('note') or '').strip()}"
            )
    return "\n".join(lines)


def _strip(obj: Obj) -> Obj:
    meta = obj.get("metadata") or {}
    meta.pop("managedFields", None)
    return obj


def write_objects(kube: Kube, names: Names, out: Path) -> None:
    """All objects of the run in one multi-document YAML, plus the namespace's events."""
    sel = f"{RUN_LABEL}={names.run_id}"
    docs: list[Obj] = []
    for api, kind, namespaced in KINDS:
        try:
            items = kube.list(
                api,
                kind,
                names.namespace if namespaced else None,
                None if kind == "Workload" else sel,
            )
        except KubeError as err:
            docs.append({"error": f"{kind}: {err}"})
            continue
        docs += [_strip({"apiVersion": api, "kind": kind, **i}) for i in items]
    with contextlib.suppress(KubeError):
        docs += [_strip(e) for e in events(kube, names.namespace)]
    out.write_text(yaml.dump_all(docs, Dumper=_DUMPER, sort_keys=False))


class LogSlicer:
    """Remembers where each component log ended, to copy only one scenario's part of it."""

    def __init__(self, logs: Mapping[str, Path]) -> None:
        self.logs = dict(logs)
        self.offsets = {name: _size(path) for name, path in self.logs.items()}

    def write(self, out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        for name, path in self.logs.items():
            try:
                with path.open("rb") as f:
                    f.seek(self.offsets.get(name, 0))
                    (out / f"{name}.log").write_bytes(f.read())
            except OSError:
                continue


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
