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
