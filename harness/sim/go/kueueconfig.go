package main

import (
	config "sigs.k8s.io/kueue/apis/config/v1beta2"
	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
	schdcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
)

// KueueConfig is the scenario's kueueConfig: sections of Kueue's Configuration
// (config.kueue.x-k8s.io/v1beta2) in Kueue's own types. The sim runs fairSharing,
// admissionFairSharing, waitForPodsReady and resources; the Python side refuses a scenario
// with any other section before it reaches here.
type KueueConfig struct {
	FairSharing          *config.FairSharing          `json:"fairSharing"`
	AdmissionFairSharing *config.AdmissionFairSharing `json:"admissionFairSharing"`
	WaitForPodsReady     *config.WaitForPodsReady     `json:"waitForPodsReady"`
	Resources            *config.Resources            `json:"resources"`
}

// cacheResourceOptions are the scheduler cache's options for the resources section, added
// as cmd/kueue/main.go adds them: Kueue's workload.Info then drops the excluded resources and
// applies the transformations when it totals a Workload's requests.
func cacheResourceOptions(r *config.Resources) []schdcache.Option {
	var opts []schdcache.Option
	if r != nil && len(r.ExcludeResourcePrefixes) > 0 {
		opts = append(opts, schdcache.WithExcludedResourcePrefixes(r.ExcludeResourcePrefixes))
	}
	if r != nil && len(r.Transformations) > 0 {
		opts = append(opts, schdcache.WithResourceTransformations(r.Transformations))
	}
	return opts
}

// queueResourceOptions are the queue manager's, likewise (cmd/kueue/main.go).
func queueResourceOptions(r *config.Resources) []qcache.Option {
	var opts []qcache.Option
	if r != nil && len(r.ExcludeResourcePrefixes) > 0 {
		opts = append(opts, qcache.WithExcludedResourcePrefixes(r.ExcludeResourcePrefixes))
	}
	if r != nil && len(r.Transformations) > 0 {
		opts = append(opts, qcache.WithResourceTransformations(r.Transformations))
	}
	return opts
}
