//go:build kueue_v0_17

package main

import (
	config "sigs.k8s.io/kueue/apis/config/v1beta2"
	"sigs.k8s.io/kueue/pkg/scheduler"
)

// quotaCheckOptions: Kueue v0.17 has no quotaCheckStrategy (its Configuration has no such
// field; the Python side refuses it for this version), so every resource is checked.
func quotaCheckOptions(*config.Resources) []scheduler.Option { return nil }
