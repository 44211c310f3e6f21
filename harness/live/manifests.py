"""What Kueue's integrations make of a manifest a user would `kubectl apply`: its pod sets
(name, pod count, pod template), each pod's requests as Kubernetes computes them, the
topology it asks for, its queue and its priority class.

Read the way Kueue v0.19.2 builds Workloads (pkg/controller/jobs): a batch/v1 Job is one pod
set "main" (parallelism capped by completions); a JobSet one pod set per replicated Job
(replicas x pods per Job); a LeaderWorkerSet one Workload per group (`replicas`), each with
pod sets "leader" (1 pod) and "worker" (size - 1), or "main" (size) without a leader
template; a Workload is taken as written. The one home of this reading: the Python-test
fixtures (harness.fixtures.manifests) and `simulate` both use it, and `snapshot` uses
`pod_requests` for the pods already running.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from harness.errors import InputError
from harness.k8s.quantity import QuantityError, format_quantity, parse_quantity
from harness.k8s.rules import is_dns_label
from harness.kueue import keys as kueue_keys
from harness.kueue.key_check import unknown_kueue_keys
from harness.kueue.keys import JOBSET_API as JOBSET_API
from harness.scenario.keypath import KeyPath
from harness.scenario.strict_yaml import parse_yaml

Obj = dict[str, Any]
ManifestSource = str | Path | Mapping[str, Any] | Sequence[Mapping[str, Any]]
"""YAML text, a path to a YAML file (Path, or str ending .yaml/.yml), one object or a list."""

JOB_API = "batch/v1"
LWS_API = "leaderworkerset.x-k8s.io/v1"
WORKLOAD_APIS = ("kueue.x-k8s.io/v1beta2", "kueue.x-k8s.io/v1beta1")
KINDS: dict[str, tuple[str, ...]] = {
    "Job": (JOB_API,),
    "JobSet": (JOBSET_API,),
    "LeaderWorkerSet": (LWS_API,),
    "Workload": WORKLOAD_APIS,
}
"""Every kind whose Workload this module can build, with the API versions it reads."""
WPC = "WorkloadPriorityClass"
MAIN = "main"  # Kueue's pod set name for a single-template workload (DefaultPodSetName)
UNMODELLED = ("affinity", "topologySpreadConstraints", "priorityClassName", "resourceClaims")
"""Pod fields the fit model does not model: a prediction would silently ignore them."""


class UserManifestError(InputError):
    """A user's manifest is malformed or not supported: names the file, the key path and why."""


@dataclass(frozen=True)
class PodSetSource:
    """One pod set as Kueue builds it. `topology_request`: a Workload's own topologyRequest
    (other kinds carry the request as pod template annotations)."""

    name: str
    count: int
    template: KeyPath
    replicated_job: str = ""
    topology_request: KeyPath | None = None


@dataclass(frozen=True)
class Manifest:
    """One checked object of a user's manifest, with the file it came from."""

    obj: Obj
    file: str

    @property
    def kind(self) -> str:
        return str(self.obj["kind"])

    @property
    def api_version(self) -> str:
        return str(self.obj["apiVersion"])

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def namespace(self) -> str | None:
        given = self.obj["metadata"].get("namespace")
        return str(given) if given else None

    @property
    def labels(self) -> dict[str, str]:
        return {str(k): str(v) for k, v in (self.obj["metadata"].get("labels") or {}).items()}

    def at(self) -> KeyPath:
        return KeyPath(self.file, "", self.obj, UserManifestError)

    def warnings(self) -> list[str]:
        """`FILE: key.path: problem` for what Kueue would silently ignore: labels and
        annotations with its prefix that it does not know (a misspelling, most likely)."""
        return [f"{self.file}: {u.text()}" for u in unknown_kueue_keys(self.obj)]

    def queue_name(self) -> str | None:
        """The LocalQueue it goes to (a Workload's spec.queueName, else the queue label)."""
        if self.kind == "Workload":
            queue = self.obj["spec"].get("queueName")
            return str(queue) if queue else None
        return self.labels.get(kueue_keys.QUEUE_LABEL)

    def priority_class(self) -> str | None:
        """Its WorkloadPriorityClass: the priority-class label (a Workload's
        spec.priorityClassRef / priorityClassName)."""
        if self.kind == "Workload":
            spec = self.obj["spec"]
            ref = spec.get("priorityClassRef") or {}
            name = ref.get("name") if ref.get("kind") in (None, WPC) else None
            if spec.get("priorityClassSource") == "kueue.x-k8s.io/workloadpriorityclass":
                name = spec.get("priorityClassName")  # v1beta1
            return str(name) if name else None
        return self.labels.get(kueue_keys.PRIORITY_CLASS_LABEL)

    def groups(self) -> int:
        """How many Workloads Kueue makes of it: a LeaderWorkerSet's replicas, else 1."""
        if self.kind != "LeaderWorkerSet":
            return 1
        return _field(_field(self.at(), "spec"), "replicas", 1).positive_int()

    def pod_sets(self) -> list[PodSetSource]:
        """The pod sets Kueue's integration makes of this object (of one group), in order."""
        spec = _field(self.at(), "spec")
        if self.kind == "Job":
            return [PodSetSource(MAIN, _pods_count(spec), _field(spec, "template"))]
        if self.kind == "JobSet":
            return _jobset_pod_sets(spec)
        if self.kind == "LeaderWorkerSet":
            return _lws_pod_sets(spec)
        return _workload_pod_sets(spec)


def _jobset_pod_sets(spec: KeyPath) -> list[PodSetSource]:
    out = []
    for rj in _field(spec, "replicatedJobs").items():
        name = _field(rj, "name").string()
        replicas = _field(rj, "replicas", 1).positive_int()
        job_spec = _field(_field(rj, "template"), "spec")
        template = _field(job_spec, "template")
        out.append(PodSetSource(name, replicas * _pods_count(job_spec), template, name))
    if not out:
        _field(spec, "replicatedJobs").fail("must list at least one replicated Job")
    return out


def _lws_pod_sets(spec: KeyPath) -> list[PodSetSource]:
    """pkg/controller/jobs/leaderworkerset podSets()."""
    lwt = _field(spec, "leaderWorkerTemplate")
    size = _field(lwt, "size", 1).positive_int()
    worker = _field(lwt, "workerTemplate")
    if "leaderTemplate" not in lwt.value:
        return [PodSetSource(MAIN, size, worker)]
    if size < 2:
        _field(lwt, "size").fail("a leader template needs size 2 or more (leader plus workers)")
    return [
        PodSetSource("leader", 1, _field(lwt, "leaderTemplate")),
        PodSetSource("worker", size - 1, worker),
    ]


def _workload_pod_sets(spec: KeyPath) -> list[PodSetSource]:
    out = []
    for ps in _field(spec, "podSets").items():
        request = (
            ps.child("topologyRequest", ps.value["topologyRequest"])
            if isinstance(ps.value, Mapping) and ps.value.get("topologyRequest")
            else None
        )
        out.append(
            PodSetSource(
                _field(ps, "name", MAIN).string(is_dns_label, "pod set name (a DNS label)"),
                _field(ps, "count").positive_int(),
                _field(ps, "template"),
                topology_request=request,
            )
        )
    if not out:
        _field(spec, "podSets").fail("must list at least one pod set")
    return out


KindCheck = Callable[[KeyPath, str, str], None]
"""Refuses a kind (and API version) a caller does not take: (the object, kind, apiVersion)."""


def any_known_kind(at: KeyPath, kind: str, api: str) -> None:
    """Every kind in KINDS, at the API versions listed there."""
    if kind not in KINDS:
        known = ", ".join(f"{v[0]} {k}" for k, v in KINDS.items())
        at.child("kind", kind).fail(f"{kind!r}: a manifest is one of {known}")
    if api not in KINDS[kind]:
        at.child("apiVersion", api).fail(f"{api!r}: a {kind} is {' or '.join(KINDS[kind])}")


def read(source: ManifestSource, check_kind: KindCheck = any_known_kind) -> list[Manifest]:
    """Every object of the source, checked: a kind `check_kind` takes, a name, pod sets."""
    docs = load_documents(source)
    return [_checked(doc, where, check_kind) for where, doc in docs]


def load_documents(source: ManifestSource) -> list[tuple[str, Any]]:
    """The objects of a source, each with the name errors give it."""
    if isinstance(source, Path) or (isinstance(source, str) and is_file_path(source)):
        file = str(source)
        try:
            text = Path(str(source)).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise UserManifestError(file, "(file)", f"cannot read: {err}") from None
        docs = documents(text, file)
    elif isinstance(source, str):
        file, docs = "<manifest>", documents(source, "<manifest>")
    elif isinstance(source, Mapping):
        file, docs = "<manifest>", [("<manifest>", source)]
    else:
        file = "<manifest>"
        docs = [(f"<manifest>[{i}]", d) for i, d in enumerate(source)]
    if not docs:
        raise UserManifestError(file, "(top level)", "no object in the manifest")
    return docs


def is_file_path(source: object) -> bool:
    """A Path, or a one-line str ending .yaml/.yml: a file to read rather than YAML text."""
    return isinstance(source, Path) or (
        isinstance(source, str) and "\n" not in source and source.endswith((".yaml", ".yml"))
    )


def documents(text: str, file: str) -> list[tuple[str, Any]]:
    """The non-empty documents of a `---`-separated YAML text, each named for errors
    ("FILE (document N)"; positions count from that document's first line)."""
    parts = _SEPARATOR.split(text)
    named = [
        (file if len(parts) == 1 else f"{file} (document {i + 1})", p) for i, p in enumerate(parts)
    ]
    return [(where, doc) for where, part in named if (doc := parse_yaml(part, where)) is not None]


_SEPARATOR = re.compile(r"^---[ \t]*(?:#.*)?$", re.MULTILINE)


def _checked(doc: Any, file: str, check_kind: KindCheck) -> Manifest:
    at = KeyPath(file, "", doc, UserManifestError)
    if not isinstance(doc, Mapping):
        at.fail("a manifest object must be a mapping")
    kind = _field(at, "kind").string()
    api = _field(at, "apiVersion").string()
    check_kind(at, kind, api)
    name = _field(_field(at, "metadata"), "name")
    name.string(is_dns_label, "DNS label (Kueue's integrations name Workloads after it)")
    manifest = Manifest(dict(doc), file)
    manifest.groups()
    for ps in manifest.pod_sets():  # structure errors now, not halfway through
        containers = _field(_field(ps.template, "spec"), "containers")
        if not containers.items():
            containers.fail("must list at least one container")
    return manifest


Unmodelled = Callable[[KeyPath], None]
"""Told of each pod field the fit model does not model (it may refuse or note it)."""


def refuse_unmodelled(at: KeyPath) -> None:
    at.fail("the fit model does not model it; leave it out of manifests given to fit_model")


def workload_data(m: Manifest, unmodelled: Unmodelled = refuse_unmodelled) -> Obj:
    """The scenario-format workload (docs/scenario-format.md) of the manifest (of one group):
    pod sets with counts, per-pod requests, topology, selectors."""
    return {"name": m.name, "podSets": [pod_set_data(ps, unmodelled) for ps in m.pod_sets()]}


def pod_set_data(ps: PodSetSource, unmodelled: Unmodelled = refuse_unmodelled) -> Obj:
    spec = _field(ps.template, "spec")
    for key in UNMODELLED:
        if key in spec.value:
            unmodelled(spec.child(key, spec.value[key]))
    out: Obj = {
        "name": ps.name,
        "count": ps.count,
        "requests": {k: format_quantity(v) for k, v in sorted(pod_requests(spec).items())},
    }
    if ps.topology_request is not None:
        topology = workload_topology(ps.topology_request)
    else:
        meta = _field(ps.template, "metadata", {})
        topology = topology_annotations(_field(meta, "annotations", {}))
    if topology:
        out["topology"] = topology
    if spec.value.get("nodeSelector"):
        out["nodeSelector"] = spec.value["nodeSelector"]
    if spec.value.get("tolerations"):
        out["tolerations"] = spec.value["tolerations"]
    return out


def pod_requests(spec: KeyPath) -> dict[str, Fraction]:
    """Per-pod requests as Kubernetes computes them (component-helpers PodRequests, which
    Kueue calls): the containers' sum (a request defaults to the limit), restartable init
    containers (sidecars) added, other init containers as a floor, plus the pod overhead;
    pod-level requests, where given, replace the containers' for their resources."""
    total: dict[str, Fraction] = {}
    for c in _field(spec, "containers").items():
        _add(total, _container_requests(c))
    floor: dict[str, Fraction] = {}
    sidecars: dict[str, Fraction] = {}
    for c in _field(spec, "initContainers", []).items():
        if c.value.get("restartPolicy") == "Always":
            _add(sidecars, _container_requests(c))
            _add(total, _container_requests(c))
        else:
            for key, value in _container_requests(c).items():
                # An init container runs beside the sidecars started before it.
                floor[key] = max(floor.get(key, Fraction(0)), value + sidecars.get(key, 0))
    for key, value in floor.items():
        total[key] = max(total.get(key, Fraction(0)), value)
    total.update(_container_requests(spec))  # pod-level resources (PodLevelResources)
    _add(total, _quantities(_field(spec, "overhead", {})))
    return total


def _container_requests(c: KeyPath) -> dict[str, Fraction]:
    resources = _field(c, "resources", {})
    limits = _quantities(_field(resources, "limits", {}))
    return {**limits, **_quantities(_field(resources, "requests", {}))}


def _quantities(at: KeyPath) -> dict[str, Fraction]:
    """A resource list (name -> quantity) parsed exactly."""
    if at.value is None:
        return {}
    if not isinstance(at.value, Mapping):
        at.fail("must be a mapping of resource name to quantity")
    out = {}
    for name, text in at.value.items():
        try:
            out[str(name)] = parse_quantity(text)
        except QuantityError as err:
            at.child(str(name), text).fail(str(err))
    return out


def _add(total: dict[str, Fraction], more: Mapping[str, Fraction]) -> None:
    for key, value in more.items():
        total[key] = total.get(key, Fraction(0)) + value


def topology_annotations(annotations: KeyPath) -> Obj:
    """Kueue's pod-template topology annotations -> the scenario's topology request."""
    ann = annotations.value or {}
    if kueue_keys.REQUIRED in ann and kueue_keys.PREFERRED in ann:
        annotations.child(kueue_keys.PREFERRED, ann[kueue_keys.PREFERRED]).fail(
            f"may not be set together with {kueue_keys.REQUIRED} (Kueue's webhook refuses it)"
        )
    out: Obj = {}
    if kueue_keys.REQUIRED in ann:
        out = {"mode": "required", "level": ann[kueue_keys.REQUIRED]}
    elif kueue_keys.PREFERRED in ann:
        out = {"mode": "preferred", "level": ann[kueue_keys.PREFERRED]}
    elif ann.get(kueue_keys.UNCONSTRAINED) == "true":
        out = {"mode": "unconstrained"}
    if kueue_keys.SLICE_LEVEL in ann:
        out["sliceLevel"] = ann[kueue_keys.SLICE_LEVEL]
    if kueue_keys.SLICE_SIZE in ann:
        size = str(ann[kueue_keys.SLICE_SIZE])
        if not size.isdigit():
            annotations.child(kueue_keys.SLICE_SIZE, size).fail("must be a whole number")
        out["sliceSize"] = int(size)
    if kueue_keys.GROUP in ann:
        out["podSetGroupName"] = ann[kueue_keys.GROUP]
    return out


def workload_topology(request: KeyPath) -> Obj:
    """A Workload pod set's topologyRequest (Kueue v1beta2) -> the scenario's request."""
    tr = request.value
    out: Obj = {}
    if tr.get("required"):
        out = {"mode": "required", "level": tr["required"]}
    elif tr.get("preferred"):
        out = {"mode": "preferred", "level": tr["preferred"]}
    elif tr.get("unconstrained"):
        out = {"mode": "unconstrained"}
    if tr.get("podSetSliceRequiredTopology"):
        out["sliceLevel"] = tr["podSetSliceRequiredTopology"]
    if tr.get("podSetSliceSize"):
        out["sliceSize"] = int(tr["podSetSliceSize"])
    if tr.get("podSetGroupName"):
        out["podSetGroupName"] = tr["podSetGroupName"]
    return out


def _pods_count(job_spec: KeyPath) -> int:
    """Pods of one Job as Kueue counts them: parallelism (default 1), capped by completions."""
    count = _field(job_spec, "parallelism", 1).positive_int()
    if job_spec.value.get("completions") is not None:
        count = min(count, _field(job_spec, "completions").positive_int())
    return count


_REQUIRED = object()


def _field(at: KeyPath, key: str, default: Any = _REQUIRED) -> KeyPath:
    """The child `key` of a mapping; `default` when absent, else an error naming the key."""
    if not isinstance(at.value, Mapping):
        at.fail("must be a mapping")
    if key not in at.value or (at.value[key] is None and default is not _REQUIRED):
        if default is _REQUIRED:
            at.child(key, None).fail("missing")
        return at.child(key, default)
    return at.child(key, at.value[key])


field_of = _field
"""The child of a mapping, or an error naming the key (for the fixtures' own checks)."""
