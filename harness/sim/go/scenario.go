package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// Scenario is one line of input: the scenario contract in JSON form, always as version-2
// lists (the Python loader has desugared a version-1 file already). Keys the sim does
// not need (description, source, kueue, expect) are ignored; the Python loader has validated
// the document already, and Kueue's own webhooks check the objects again here.
type Scenario struct {
	Name                    string               `json:"name"`
	FeatureGates            map[string]bool      `json:"featureGates"`
	KueueConfig             KueueConfig          `json:"kueueConfig"`
	Topologies              []TopologySpec       `json:"topologies"`
	ResourceFlavors         []FlavorSpec         `json:"resourceFlavors"`
	Cohorts                 []CohortSpec         `json:"cohorts"`
	ClusterQueues           []ClusterQueueSpec   `json:"clusterQueues"`
	WorkloadPriorityClasses []PriorityClassSpec  `json:"workloadPriorityClasses"`
	Nodes                   []NodeSpec           `json:"nodes"`
	Usage                   []UsageSpec          `json:"usage"`
	Admitted                []AdmittedSpec       `json:"admitted"`
	AdmissionChecks         []AdmissionCheckSpec `json:"admissionChecks"`
	Namespaces              []NamespaceSpec      `json:"namespaces"`
	LocalQueues             []LocalQueueSpec     `json:"localQueues"`
	Workloads               []WorkloadSpec       `json:"workloads"`
	Steps                   []StepSpec           `json:"steps"`
	// BindableNodes is the fit model's kube-scheduler filter per pod set (podsbind.go).
	BindableNodes bindableNodes `json:"bindableNodes"`
	// SimOptions are knobs of this backend only, not part of the contract.
	SimOptions SimOptions `json:"simOptions"`
}

// SimOptions lets tests reach code paths a real cluster would not (see skipWebhook).
type SimOptions struct {
	// SkipWebhook hands Workloads to the scheduler without the Job webhook's TAS
	// validation, the way a Workload created by another path would arrive.
	SkipWebhook bool `json:"skipWebhook"`
}

type TopologySpec struct {
	Name   string   `json:"name"`
	Levels []string `json:"levels"`
}

// FlavorSpec is a ResourceFlavor: its name and Kueue's own spec (nodeLabels, nodeTaints,
// tolerations, topologyName; no topologyName = a flavor without TAS).
type FlavorSpec struct {
	Name string `json:"name"`
	kueue.ResourceFlavorSpec
}

// ClusterQueueSpec is a ClusterQueue: its name and Kueue's own spec (cohortName,
// queueingStrategy, preemption, flavorFungibility, resourceGroups).
type ClusterQueueSpec struct {
	Name string `json:"name"`
	kueue.ClusterQueueSpec
}

// CohortSpec is a Cohort: its name and Kueue's own spec (parentName, resourceGroups,
// fairSharing).
type CohortSpec struct {
	Name string `json:"name"`
	kueue.CohortSpec
}

type PriorityClassSpec struct {
	Name  string `json:"name"`
	Value int32  `json:"value"`
}

type NodeSpec struct {
	Name          string            `json:"name"`
	Labels        map[string]string `json:"labels"`
	Allocatable   ResourceMap       `json:"allocatable"`
	Taints        []corev1.Taint    `json:"taints"`
	Ready         *bool             `json:"ready"`
	Unschedulable bool              `json:"unschedulable"`
	// readyStatus and readySince: the Ready condition a step left (node-not-ready,
	// node-ready); unset, Ready says it.
	readyStatus corev1.ConditionStatus
	readySince  time.Time
}

type UsageSpec struct {
	Name     string      `json:"name"` // optional: lets a delete-usage step refer to it
	Node     string      `json:"node"`
	Requests ResourceMap `json:"requests"`
	Count    *int        `json:"count"`
}

// WorkloadSpec is a workload to submit: the ClusterQueue it goes to (through its LocalQueue
// in its namespace) and its WorkloadPriorityClass, if any.
type WorkloadSpec struct {
	Name          string       `json:"name"`
	Queue         string       `json:"queue"`
	LocalQueue    string       `json:"localQueue"` // "": the LocalQueue named after Queue
	Namespace     string       `json:"namespace"`  // "": the scenario's own`
	PriorityClass string       `json:"priorityClass"`
	PodSets       []PodSetSpec `json:"podSets"`
	PodsReady     *bool        `json:"podsReady"` // false: its pods never turn Ready (podsready.go)
}

// AdmittedSpec is a workload that holds quota before the scenario starts: the workload, and
// the status Kueue would have written when admitting it (status.admission and the
// QuotaReserved/Admitted conditions), built in Python by harness/admission.py so the sim and
// the cluster runner write the same admission.
type AdmittedSpec struct {
	WorkloadSpec
	Status kueue.WorkloadStatus `json:"status"`
}

type PodSetSpec struct {
	Name         string              `json:"name"`
	Count        int32               `json:"count"`
	Requests     ResourceMap         `json:"requests"`
	Topology     *TopologyRequest    `json:"topology"`
	NodeSelector map[string]string   `json:"nodeSelector"`
	Tolerations  []corev1.Toleration `json:"tolerations"`
}

type TopologyRequest struct {
	Mode            string `json:"mode"`
	Level           string `json:"level"`
	SliceLevel      string `json:"sliceLevel"`
	SliceSize       *int64 `json:"sliceSize"`
	PodSetGroupName string `json:"podSetGroupName"`
}

// ResourceMap holds Kubernetes quantities written either as strings ("500m", "256Gi")
// or as JSON numbers (4, 0.5).
type ResourceMap map[corev1.ResourceName]resource.Quantity

func (m *ResourceMap) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	out := make(ResourceMap, len(raw))
	for name, value := range raw {
		q, err := parseQuantity(value)
		if err != nil {
			return fmt.Errorf("resource %q: %w", name, err)
		}
		out[corev1.ResourceName(name)] = q
	}
	*m = out
	return nil
}

func parseQuantity(value json.RawMessage) (resource.Quantity, error) {
	text := string(bytes.TrimSpace(value))
	if len(text) > 0 && text[0] == '"' {
		if err := json.Unmarshal(value, &text); err != nil {
			return resource.Quantity{}, err
		}
	}
	return resource.ParseQuantity(text)
}

// List converts the map to a corev1.ResourceList.
func (m ResourceMap) List() corev1.ResourceList {
	out := make(corev1.ResourceList, len(m))
	for k, v := range m {
		out[k] = v.DeepCopy()
	}
	return out
}
