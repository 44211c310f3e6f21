//go:build !kueue_v0_17

package main

import (
	config "sigs.k8s.io/kueue/apis/config/v1beta2"
	"sigs.k8s.io/kueue/pkg/features"
	"sigs.k8s.io/kueue/pkg/scheduler"
)

// quotaCheckOptions is the scheduler's quotaCheckStrategy as cmd/kueue/main.go chooses it:
// the Configuration's while the QuotaCheckStrategy gate is on (since v0.18; Beta and on by
// default in v0.19), else BlockUndeclared (the scheduler's zero value acts the same).
func quotaCheckOptions(r *config.Resources) []scheduler.Option {
	if features.Enabled(features.QuotaCheckStrategy) && r != nil && r.QuotaCheckStrategy != nil {
		return []scheduler.Option{scheduler.WithQuotaCheckStrategy(*r.QuotaCheckStrategy)}
	}
	return nil
}
