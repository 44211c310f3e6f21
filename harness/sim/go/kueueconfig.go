package main

import (
	config "sigs.k8s.io/kueue/apis/config/v1beta2"
)

// KueueConfig is the scenario's kueueConfig: sections of Kueue's Configuration
// (config.kueue.x-k8s.io/v1beta2) in Kueue's own types. The sim runs fairSharing and
// admissionFairSharing; the
// Python side refuses a scenario with any other section before it reaches here.
type KueueConfig struct {
	FairSharing          *config.FairSharing          `json:"fairSharing"`
	AdmissionFairSharing *config.AdmissionFairSharing `json:"admissionFairSharing"`
	WaitForPodsReady     *config.WaitForPodsReady     `json:"waitForPodsReady"`
}
