"""The label and annotation keys of Kueue v0.19.2 that a TAS workload carries: the queue it
goes to and what it asks of the topology (pkg/controller/constants,
apis/kueue/v1beta2/topology_types.go). The fit model's webhook rules read them, the runner
writes them on Jobs and JobSets, and the fixtures read them from users' manifests.
"""

from __future__ import annotations

PREFIX = "kueue.x-k8s.io/"
QUEUE_LABEL = PREFIX + "queue-name"
REQUIRED = PREFIX + "podset-required-topology"
PREFERRED = PREFIX + "podset-preferred-topology"
UNCONSTRAINED = PREFIX + "podset-unconstrained-topology"
SLICE_LEVEL = PREFIX + "podset-slice-required-topology"
SLICE_SIZE = PREFIX + "podset-slice-size"
SLICE_CONSTRAINTS = PREFIX + "podset-slice-required-topology-constraints"
# A pod with any of these is Kueue's TAS pod (pkg/util/tas/tas.go: IsTAS); any other pod on a
# node counts as non-TAS usage there.
TAS_POD_ANNOTATIONS = (REQUIRED, PREFERRED, UNCONSTRAINED, SLICE_LEVEL, SLICE_CONSTRAINTS)
GROUP = PREFIX + "podset-group-name"
PRIORITY_CLASS_LABEL = PREFIX + "priority-class"
# The JobSet API Kueue v0.19.2 manages (the JobSet v0.12.0 CRD the harness installs).
JOBSET_API = "jobset.x-k8s.io/v1alpha2"

KNOWN = frozenset(
    PREFIX + name
    for name in (
        # pkg/controller/constants/constants.go
        "queue-name", "prebuilt-workload-name", "job-uid", "priority-class",
        "max-exec-time-seconds", "safe-to-forcefully-delete", "job-owner-gvk",
        "job-owner-name", "component-workload-index", "multikueue", "concurrent-admission",
        "priority-boost", "workload-allowed-resource-flavors", "concurrent-admission-parent",
        # apis/kueue/v1beta2: TAS (topology_types.go), elastic jobs, MultiKueue, provisioning
        "podset-required-topology", "podset-preferred-topology",
        "podset-unconstrained-topology", "podset-slice-required-topology",
        "podset-slice-required-topology-constraints", "podset-slice-size", "podset-group-name",
        "topology", "workload", "elastic-job", "workload-slice-name",
        "workload-slice-replacement-for", "multikueue-origin", "multikueue-origin-uid",
        "multikueue-worker-workload-pod", "provisioning-request", "resource-in-use",
        "admission-gated-by", "local-queue-name", "cluster-queue-name", "podset",
        # pkg/controller/jobs/pod/constants and the other integrations
        "pod-group-name", "pod-group-total-count", "pod-group-fast-admission",
        "pod-group-serving", "pod-group-pod-index", "pod-group-pod-index-label",
        "pod-index-offset", "pod-suspending-parent", "retriable-in-group", "role-hash",
        "is-group-workload", "managed", "admission", "stopping", "auto-generated",
        "job-min-parallelism", "job-completions-equal-parallelism", "podset-replica-sizes",
        "raycluster-podset-replica-sizes", "raycluster-generation",
        "multikueue-dispatcher-all-at-once", "multikueue-dispatcher-incremental", "manager",
    )
)  # fmt: skip
"""Every `kueue.x-k8s.io/` label, annotation and finalizer key in Kueue v0.19.2's sources
(string literals of pkg/ and apis/, API versions left out): any other key with the prefix is
one Kueue ignores, most likely a misspelling (issue 32 item 2)."""
