"""`python -m harness snapshot`: a live cluster as a version-2 scenario (pure part: cluster
objects in, scenario data and the list of what it could not represent out).

The file loads with `harness oracle` and `harness check`; `simulate --from FILE` adds
manifests to it. `x-snapshot` (ignored by the loader, as every top-level `x-` key) keeps
what the scenario has no words for but `simulate` needs: the LocalQueues, pods' PriorityClasses,
which Workload each scenario name stands for, and the gaps.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.errors import InputError
from harness.live import (
    check_objects,
    kueue_configuration,
    node_objects,
    queue_objects,
    workload_objects,
    world_objects,
)
from harness.live.cluster_read import ClusterState
from harness.live.gaps import Gaps
from harness.live.queue_positions import QueuePositions
from harness.scenario.strict_yaml import parse_yaml


@dataclass(frozen=True)
class Snapshot:
    data: dict[str, Any]
    gaps: Gaps


def snapshot(
    state: ClusterState, name: str = "snapshot", taken: dt.datetime | None = None
) -> Snapshot:
    """The scenario data of a cluster's state (see the module docstring)."""
    gaps = Gaps()
    for kind in state.missing:
        gaps.add(f"{kind}: not read")
    topologies = world_objects.topologies(state.topologies)
    flavors = world_objects.resource_flavors(
        state.resource_flavors, {t["name"] for t in topologies}, gaps
    )
    classes = world_objects.priority_classes(state.priority_classes)
    queues = world_objects.cluster_queues(state.cluster_queues, {f["name"] for f in flavors}, gaps)
    cohorts = world_objects.cohorts(state.cohorts, {f["name"] for f in flavors}, gaps)
    local_queues = world_objects.local_queues(state.local_queues)
    checks = check_objects.admission_checks(state.admission_checks, gaps)
    skipped = check_objects.left_out(state.admission_checks, checks)
    check_rules: dict[str, list[Any]] = {}
    for cq, entry in zip(sorted(state.cluster_queues, key=_cq_name), queues, strict=True):
        strategy = check_objects.strategy(cq, skipped, gaps)
        if strategy:
            entry["admissionChecksStrategy"] = strategy
            check_rules[entry["name"]] = strategy["admissionChecks"]
    keep = node_objects.kept_labels(topologies, flavors)
    nodes, hostnames = node_objects.nodes(state.nodes, keep, flavors, gaps)
    usage = node_objects.usage(state.pods, {n["name"] for n in nodes}, gaps)
    values = {c["name"]: c["value"] for c in classes}
    world = workload_objects.World(
        cluster_queues={q["name"] for q in queues},
        flavors={f["name"]: f for f in flavors},
        topologies={t["name"]: t["levels"] for t in topologies},
        nodes=nodes,
        hostnames=hostnames,
        local_queues=local_queues,
        priority_classes=values,
        check_rules=check_rules,
        group_flavors={
            q["name"]: [[f["name"] for f in g["flavors"]] for g in q["resourceGroups"]]
            for q in queues
        },
    )
    written = workload_objects.workloads(state.workloads, world, gaps)
    queue_keys: dict[str, Any] = {}
    if queue_objects.needed(queues, state.local_queues):
        listed, lqs, where = queue_objects.queue_objects(
            state.local_queues, state.namespaces, {q["name"] for q in queues}, gaps
        )
        queue_objects.requeue_entries(
            [*written.admitted, *written.pending], written.names, state.workloads, where
        )
        queue_keys = {**({"namespaces": listed} if listed else {}), "localQueues": lqs}
    configured = kueue_configuration.configuration(state.kueue_config_maps, gaps)
    data: dict[str, Any] = {
        "name": name,
        "description": f"snapshot of {state.server} (context {state.context or '-'})",
        **configured,
        "topologies": topologies,
        "resourceFlavors": flavors,
        "workloadPriorityClasses": [{"name": n, "value": v} for n, v in values.items()],
        **({"cohorts": cohorts} if cohorts else {}),
        **({"admissionChecks": checks} if checks else {}),
        "clusterQueues": queues,
        **queue_keys,
        "nodes": nodes,
        "usage": usage,
        "admitted": written.admitted,
        "workloads": written.pending,
        "x-snapshot": {
            "server": state.server,
            "context": state.context,
            "taken": (taken or dt.datetime.now(dt.UTC)).isoformat(timespec="seconds"),
            "localQueues": local_queues,
            "podPriorityClasses": {
                str(pc["metadata"]["name"]): int(pc.get("value", 0))
                for pc in state.pod_priority_classes
            },
            "globalDefaultPriorityClass": next(
                (
                    pc["metadata"]["name"]
                    for pc in state.pod_priority_classes
                    if pc.get("globalDefault")
                ),
                None,
            ),
            "workloads": written.names,
            "owners": written.owners,
            "notRepresented": list(gaps.lines),
        },
    }
    if state.queue_positions is not None:
        data["x-snapshot"]["queuePositions"] = _positions(state.queue_positions, written.names)
    if not values:
        del data["workloadPriorityClasses"]
    if not topologies:
        del data["topologies"]
    return Snapshot(data, gaps)


def _cq_name(cq: Any) -> str:
    return str(cq["metadata"]["name"])


def _positions(found: QueuePositions, names: dict[str, str]) -> dict[str, Any] | str:
    """Scenario workload name -> its positions from Kueue's visibility API, in queue order,
    or why there are none. Under x-snapshot (which the loader ignores): the scenario has no
    key for a position, which follows from the pending list's order and priorities; the
    ClusterQueue is the workload's `queue` already."""
    if found.not_served:
        return found.not_served
    listed = [
        (found.by_workload[ref], name) for name, ref in names.items() if ref in found.by_workload
    ]
    listed.sort(key=lambda p: (str(p[0]["clusterQueue"]), int(str(p[0]["positionInClusterQueue"]))))
    keys = ("positionInClusterQueue", "positionInLocalQueue")
    return {name: {k: position[k] for k in keys} for position, name in listed}


def positions_line(snap: Snapshot) -> str:
    """One line on the queue positions (the file's header and `snapshot`'s stderr)."""
    found = snap.data["x-snapshot"].get("queuePositions", "not read")
    if isinstance(found, str):
        return f"queue positions: {found}"
    return f"queue positions: {len(found)} pending workloads, in x-snapshot.queuePositions"


class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """libyaml's emitter when PyYAML has it."""


LINE_PER_ITEM = ("nodes", "usage", "admitted", "workloads")
"""Long lists written one item a line, as JSON (which YAML reads): a 5,000-node snapshot is
written in a fraction of a second and stays diffable, one node per line."""


def render(snap: Snapshot) -> str:
    """The scenario as YAML, headed by what it could not represent."""
    header = [f"# {snap.data['description']}", "# version-2 scenario (docs/scenario-format-v2.md)"]
    if "queuePositions" in snap.data["x-snapshot"]:
        header.append(f"# {positions_line(snap)}")
    if snap.gaps:
        header.append("# Not represented (Kueue may decide differently where these matter):")
        header += [f"#   - {line}" for line in snap.gaps.lines]
    parts = ["\n".join(header) + "\n"]
    block: dict[str, Any] = {}
    for key, value in snap.data.items():
        if key not in LINE_PER_ITEM:
            block[key] = value
            continue
        if block:
            parts.append(_yaml(block))
            block = {}
        lines = "".join(f"- {json.dumps(item)}\n" for item in value)
        parts.append(f"{key}:\n{lines}" if value else f"{key}: []\n")
    if block:
        parts.append(_yaml(block))
    return "".join(parts)


def _yaml(data: dict[str, Any]) -> str:
    return str(
        yaml.dump(
            data,
            Dumper=_Dumper,
            sort_keys=False,
            default_flow_style=None,
            width=100,
            allow_unicode=True,
        )
    )


def render_json(snap: Snapshot) -> str:
    """The scenario as JSON (which YAML reads too): what it could not represent is under
    x-snapshot.notRepresented. Read back in milliseconds where YAML takes seconds."""
    return json.dumps(snap.data, indent=1) + "\n"


def read_file(path: str) -> dict[str, Any]:
    """A snapshot file: JSON when it ends in .json (keys given twice are refused, as the YAML
    reader refuses them), else YAML; one line naming the file when it cannot be read."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(path, "", f"cannot read: {err}") from None
    if not path.endswith(".json"):
        data = parse_yaml(text, path)
    else:
        try:
            data = json.loads(text, object_pairs_hook=_no_duplicates)
        except json.JSONDecodeError as err:
            raise InputError(path, f"line {err.lineno} column {err.colno}", err.msg) from None
        except _Duplicate as dup:
            raise InputError(path, str(dup), "given twice") from None
    if not isinstance(data, dict) or "clusterQueues" not in data:
        raise InputError(
            path,
            "",
            "not a version-2 scenario (no clusterQueues): write one with "
            "`python -m harness snapshot`",
        )
    return data


class _Duplicate(Exception):
    """A JSON object names a key twice."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Duplicate(key)
        out[key] = value
    return out
