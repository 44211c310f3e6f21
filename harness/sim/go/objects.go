package main

import (
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/webhooks"
)

const (
	namespace     = "default"
	hostnameLabel = corev1.LabelHostname
	// podIndexLabel is what Kueue's batch/v1 Job integration passes to the topology
	// request builder (Job.PodSets): each completion index gets its own rank.
	podIndexLabel = "batch.kubernetes.io/job-completion-index"
)

func buildTopology(t *TopologySpec) *kueue.Topology {
	levels := make([]kueue.TopologyLevel, 0, len(t.Levels))
	for _, l := range t.Levels {
		levels = append(levels, kueue.TopologyLevel{NodeLabel: l})
	}
	return &kueue.Topology{
		ObjectMeta: metav1.ObjectMeta{Name: t.Name},
		Spec:       kueue.TopologySpec{Levels: levels},
	}
}

// buildFlavor makes the ResourceFlavor and checks it as Kueue's ResourceFlavor webhook does.
func buildFlavor(f *FlavorSpec) (*kueue.ResourceFlavor, error) {
	rf := &kueue.ResourceFlavor{
		ObjectMeta: metav1.ObjectMeta{Name: f.Name},
		Spec:       *f.ResourceFlavorSpec.DeepCopy(),
	}
	if errs := webhooks.ValidateResourceFlavor(rf); len(errs) > 0 {
		return nil, fmt.Errorf("ResourceFlavor %s: %w", f.Name, errs.ToAggregate())
	}
	return rf, nil
}

// buildClusterQueue makes the ClusterQueue with the defaults its CRD would fill in (this
// object never passes an API server) and checks it as Kueue's ClusterQueue webhook does.
// namespaceSelector {} admits workloads of every namespace: Kueue reads a missing selector
// as matching none.
func buildClusterQueue(spec *ClusterQueueSpec) (*kueue.ClusterQueue, error) {
	cq := &kueue.ClusterQueue{
		ObjectMeta: metav1.ObjectMeta{Name: spec.Name},
		Spec:       *spec.ClusterQueueSpec.DeepCopy(),
	}
	s := &cq.Spec
	if s.QueueingStrategy == "" {
		s.QueueingStrategy = kueue.BestEffortFIFO
	}
	if s.NamespaceSelector == nil {
		s.NamespaceSelector = &metav1.LabelSelector{}
	}
	if s.FlavorFungibility == nil {
		s.FlavorFungibility = &kueue.FlavorFungibility{}
	}
	if s.FlavorFungibility.WhenCanBorrow == "" {
		s.FlavorFungibility.WhenCanBorrow = kueue.MayStopSearch
	}
	if s.FlavorFungibility.WhenCanPreempt == "" {
		s.FlavorFungibility.WhenCanPreempt = kueue.TryNextFlavor
	}
	if s.Preemption == nil {
		s.Preemption = &kueue.ClusterQueuePreemption{}
	}
	if s.Preemption.WithinClusterQueue == "" {
		s.Preemption.WithinClusterQueue = kueue.PreemptionPolicyNever
	}
	if s.Preemption.ReclaimWithinCohort == "" {
		s.Preemption.ReclaimWithinCohort = kueue.PreemptionPolicyNever
	}
	if s.Preemption.BorrowWithinCohort == nil {
		s.Preemption.BorrowWithinCohort = &kueue.BorrowWithinCohort{}
	}
	if s.Preemption.BorrowWithinCohort.Policy == "" {
		s.Preemption.BorrowWithinCohort.Policy = kueue.BorrowWithinCohortPolicyNever
	}
	if s.StopPolicy == nil {
		s.StopPolicy = ptr.To(kueue.None)
	}
	if errs := webhooks.ValidateClusterQueue(cq); len(errs) > 0 {
		return nil, fmt.Errorf("ClusterQueue %s: %w", spec.Name, errs.ToAggregate())
	}
	return cq, nil
}

// buildCohort makes a Cohort from the scenario's spec (the Cohort CRD defaults nothing).
func buildCohort(spec *CohortSpec) *kueue.Cohort {
	return &kueue.Cohort{
		ObjectMeta: metav1.ObjectMeta{Name: spec.Name},
		Spec:       spec.CohortSpec,
	}
}

func buildPriorityClass(pc *PriorityClassSpec) *kueue.WorkloadPriorityClass {
	return &kueue.WorkloadPriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: pc.Name},
		Value:      pc.Value,
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
	if n.readyStatus != "" {
		ready = n.readyStatus
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: slices.Clone(n.Taints), Unschedulable: n.Unschedulable},
		Status: corev1.NodeStatus{
			Allocatable: n.Allocatable.List(),
			Capacity:    n.Allocatable.List(),
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready,
				LastTransitionTime: metav1.NewTime(n.readySince)}},
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
