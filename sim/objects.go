package main

import (
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// Names of the objects every scenario gets. The flavor name shows in quota messages
// ("... in flavor gpu-topology, 2 more needed"); without flavor.name it is the topology's
// name, as the harness's loader defaults it.
const (
	namespace        = "default"
	clusterQueueName = "tas-cq"
	localQueueName   = "tas-lq"
	hostnameLabel    = corev1.LabelHostname
	// podIndexLabel is what Kueue's batch/v1 Job integration passes to the topology
	// request builder (Job.PodSets): each completion index gets its own rank.
	podIndexLabel = "batch.kubernetes.io/job-completion-index"
)

func flavorName(sc *Scenario) string {
	if sc.Flavor != nil && sc.Flavor.Name != "" {
		return sc.Flavor.Name
	}
	return sc.Topology.Name
}

func buildTopology(sc *Scenario) *kueue.Topology {
	levels := make([]kueue.TopologyLevel, 0, len(sc.Topology.Levels))
	for _, l := range sc.Topology.Levels {
		levels = append(levels, kueue.TopologyLevel{NodeLabel: l})
	}
	return &kueue.Topology{
		ObjectMeta: metav1.ObjectMeta{Name: sc.Topology.Name},
		Spec:       kueue.TopologySpec{Levels: levels},
	}
}

func buildFlavor(sc *Scenario) *kueue.ResourceFlavor {
	rf := &kueue.ResourceFlavor{
		ObjectMeta: metav1.ObjectMeta{Name: flavorName(sc)},
		Spec: kueue.ResourceFlavorSpec{
			TopologyName: ptr.To(kueue.TopologyReference(sc.Topology.Name)),
		},
	}
	if sc.Flavor != nil {
		rf.Spec.NodeLabels = sc.Flavor.NodeLabels
		rf.Spec.Tolerations = sc.Flavor.Tolerations
	}
	return rf
}

// buildClusterQueue makes the one ClusterQueue: a single resource group with the TAS
// flavor, covering every resource the queue lists or any workload requests. Listed
// resources get their nominal quota; the others get exactly the sum of all workloads'
// requests (those submitted by steps included), which is enough for all of them. "pods" is covered only when listed, as in
// a ClusterQueue that does not list it (Kueue then does not count pods against quota).
func buildClusterQueue(sc *Scenario) *kueue.ClusterQueue {
	totals := map[corev1.ResourceName]resource.Quantity{}
	all := slices.Clone(sc.Workloads)
	for _, st := range sc.Steps {
		if st.Workload != nil {
			all = append(all, *st.Workload)
		}
	}
	for _, wl := range all {
		for _, ps := range wl.PodSets {
			for name, q := range ps.Requests {
				t := totals[name]
				t.Add(times(q, int64(ps.Count)))
				totals[name] = t
			}
		}
	}
	var listed ResourceMap
	if sc.Queue != nil {
		listed = sc.Queue.NominalQuota
	}
	names := make([]corev1.ResourceName, 0, len(totals)+len(listed))
	for n := range totals {
		names = append(names, n)
	}
	for n := range listed {
		if _, ok := totals[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	quotas := make([]kueue.ResourceQuota, 0, len(names))
	for _, n := range names {
		q, ok := listed[n]
		if !ok {
			q = totals[n]
		}
		quotas = append(quotas, kueue.ResourceQuota{Name: n, NominalQuota: q.DeepCopy()})
	}
	return &kueue.ClusterQueue{
		ObjectMeta: metav1.ObjectMeta{Name: clusterQueueName},
		Spec: kueue.ClusterQueueSpec{
			ResourceGroups: []kueue.ResourceGroup{{
				CoveredResources: names,
				Flavors: []kueue.FlavorQuotas{{
					Name:      kueue.ResourceFlavorReference(flavorName(sc)),
					Resources: quotas,
				}},
			}},
			// The CRD defaults, spelled out: this object never passes an API server.
			QueueingStrategy:  kueue.BestEffortFIFO,
			NamespaceSelector: &metav1.LabelSelector{},
			FlavorFungibility: &kueue.FlavorFungibility{
				WhenCanBorrow:  kueue.MayStopSearch,
				WhenCanPreempt: kueue.TryNextFlavor,
			},
			Preemption: &kueue.ClusterQueuePreemption{
				ReclaimWithinCohort: kueue.PreemptionPolicyNever,
				WithinClusterQueue:  kueue.PreemptionPolicyNever,
			},
			StopPolicy: ptr.To(kueue.None),
		},
	}
}

func times(q resource.Quantity, n int64) resource.Quantity {
	out := resource.Quantity{Format: q.Format}
	for range n {
		out.Add(q)
	}
	return out
}

func buildLocalQueue() *kueue.LocalQueue {
	return &kueue.LocalQueue{
		ObjectMeta: metav1.ObjectMeta{Name: localQueueName, Namespace: namespace},
		Spec:       kueue.LocalQueueSpec{ClusterQueue: clusterQueueName},
	}
}

func buildNode(n *NodeSpec) *corev1.Node {
	labels := make(map[string]string, len(n.Labels)+1)
	for k, v := range n.Labels {
		labels[k] = v
	}
	labels[hostnameLabel] = n.Name
	ready := corev1.ConditionTrue
	if n.Ready != nil && !*n.Ready {
		ready = corev1.ConditionFalse
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: n.Taints, Unschedulable: n.Unschedulable},
		Status: corev1.NodeStatus{
			Allocatable: n.Allocatable.List(),
			Capacity:    n.Allocatable.List(),
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}},
		},
	}
}

// buildUsagePods makes the pods of a usage entry: bound, Running, no Kueue metadata, so
// Kueue's TAS cache counts them as non-TAS usage. prefix names them (unique per entry).
func buildUsagePods(prefix string, u *UsageSpec) []*corev1.Pod {
	count := 1
	if u.Count != nil {
		count = *u.Count
	}
	pods := make([]*corev1.Pod, 0, count)
	for j := range count {
		name := fmt.Sprintf("%s-%d", prefix, j)
		pods = append(pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: types.UID(name)},
			Spec: corev1.PodSpec{
				NodeName: u.Node,
				Containers: []corev1.Container{{
					Name:      "usage",
					Resources: corev1.ResourceRequirements{Requests: u.Requests.List()},
				}},
			},
			Status: corev1.PodStatus{Phase: corev1.PodRunning},
		})
	}
	return pods
}

// podTemplate is the pod template a Job would carry: the per-pod requests, node
// selector, tolerations and the TAS annotations of scenario-format.md.
func podTemplate(ps *PodSetSpec) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: topologyAnnotations(ps.Topology)},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			NodeSelector:  ps.NodeSelector,
			Tolerations:   ps.Tolerations,
			Containers: []corev1.Container{{
				Name:      "main",
				Image:     "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: ps.Requests.List()},
			}},
		},
	}
}

func topologyAnnotations(t *TopologyRequest) map[string]string {
	if t == nil {
		return nil
	}
	a := map[string]string{}
	switch t.Mode {
	case "required":
		a[kueue.PodSetRequiredTopologyAnnotation] = t.Level
	case "preferred":
		a[kueue.PodSetPreferredTopologyAnnotation] = t.Level
	case "unconstrained":
		a[kueue.PodSetUnconstrainedTopologyAnnotation] = "true"
	}
	if t.SliceLevel != "" {
		a[kueue.PodSetSliceRequiredTopologyAnnotation] = t.SliceLevel
	}
	if t.SliceSize != nil {
		a[kueue.PodSetSliceSizeAnnotation] = strconv.FormatInt(*t.SliceSize, 10)
	}
	if t.PodSetGroupName != "" {
		a[kueue.PodSetGroupName] = t.PodSetGroupName
	}
	return a
}
