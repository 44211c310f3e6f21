package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	config "sigs.k8s.io/kueue/apis/config/v1beta2"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// NamespaceSpec is a `namespaces:` entry: a Namespace and its labels, which a ClusterQueue's
// namespaceSelector matches (Kueue's nominate: workload.ValidateAdmissibility).
type NamespaceSpec struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels"`
}

// LocalQueueSpec is a LocalQueue: the Python side sends every one (without `localQueues:`,
// one per ClusterQueue of its name in the scenario's namespace).
type LocalQueueSpec struct {
	Name         string             `json:"name"`
	Namespace    string             `json:"namespace"`
	ClusterQueue string             `json:"clusterQueue"`
	FairSharing  *kueue.FairSharing `json:"fairSharing"`
	StopPolicy   string             `json:"stopPolicy"` // "": None, as the CRD defaults
}

// namespaceOr is a scenario namespace: "" is the scenario's own, `default` here.
func namespaceOr(ns string) string {
	if ns == "" {
		return namespace
	}
	return ns
}

// buildNamespace makes the Namespace with the name label the API server sets on every one.
func buildNamespace(spec *NamespaceSpec) *corev1.Namespace {
	labels := map[string]string{corev1.LabelMetadataName: spec.Name}
	for k, v := range spec.Labels {
		labels[k] = v
	}
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: spec.Name, Labels: labels}}
}

// buildLocalQueueOf makes a LocalQueue with its stopPolicy (None, as its CRD defaults, when
// the entry has none).
func buildLocalQueueOf(spec *LocalQueueSpec) *kueue.LocalQueue {
	stop := kueue.None
	if spec.StopPolicy != "" {
		stop = kueue.StopPolicy(spec.StopPolicy)
	}
	return &kueue.LocalQueue{
		ObjectMeta: metav1.ObjectMeta{Name: spec.Name, Namespace: namespaceOr(spec.Namespace)},
		Spec: kueue.LocalQueueSpec{
			ClusterQueue: kueue.ClusterQueueReference(spec.ClusterQueue),
			StopPolicy:   &stop,
			FairSharing:  spec.FairSharing.DeepCopy(),
		},
	}
}

// createNamespaces stores the scenario's namespaces besides its own.
func (c *cluster) createNamespaces(ctx context.Context, sc *Scenario) error {
	for i := range sc.Namespaces {
		if err := c.client.Create(ctx, buildNamespace(&sc.Namespaces[i])); err != nil {
			return fmt.Errorf("creating Namespace %s: %w", sc.Namespaces[i].Name, err)
		}
	}
	return nil
}

// localQueuesOf lists the LocalQueues of ClusterQueue `cq`.
func localQueuesOf(sc *Scenario, cq string) []*kueue.LocalQueue {
	var out []*kueue.LocalQueue
	for i := range sc.LocalQueues {
		if sc.LocalQueues[i].ClusterQueue == cq {
			out = append(out, buildLocalQueueOf(&sc.LocalQueues[i]))
		}
	}
	return out
}

// clusterQueueOf is the ClusterQueue behind a Workload's LocalQueue.
func (c *cluster) clusterQueueOf(wl *kueue.Workload) string {
	return c.lqCQ[wl.Namespace+"/"+string(wl.Spec.QueueName)]
}

// key is where the workload named `name` is stored (workload names are unique in a
// scenario, across namespaces).
func (c *cluster) key(name string) client.ObjectKey {
	return client.ObjectKey{Namespace: namespaceOr(c.nsOf[name]), Name: name}
}

// admissionFairSharing is the section with the default Kueue's config loading fills in
// (apis/config/v1beta2/defaults.go: usageSamplingInterval 5m when 0).
func admissionFairSharing(cfg *config.AdmissionFairSharing) *config.AdmissionFairSharing {
	if cfg == nil {
		return nil
	}
	out := cfg.DeepCopy()
	if out.UsageSamplingInterval.Duration == 0 {
		out.UsageSamplingInterval.Duration = 5 * time.Minute
	}
	return out
}
