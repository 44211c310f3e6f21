package main

import (
	"context"
	"fmt"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kwait "sigs.k8s.io/kueue/pkg/util/wait"
	"sigs.k8s.io/kueue/pkg/workload"
)

// waitForPodsReady (docs/dev/kueue-v0.19.2-rules-v2.md §11; docs/scenario-format-v2.md,
// "waitForPodsReady"). A pods-not-ready step is the kubelet reporting a workload's running
// pods not Ready; the job reconciler would write PodsReady=False (WaitForRecovery) and the
// workload controller, once the recovery timeout runs out, evicts the workload
// (reconcileNotReadyTimeout): deactivated past backoffLimitCount (triggerDeactivation), else
// evicted with PodsReadyTimeout and a requeue backoff (UpdateRequeueState). A timer longer
// than the harness's step horizon never runs out within a scenario. The backoff is one of
// the driver's timers: it fires when Kueue is at rest, so the cohort's parked workloads go
// first, as they do on a cluster. blockAdmission: blockadmission.go.

const podsReadyHorizon = 30 * time.Second

// podsReadyTimers is the section after Kueue's defaulting (apis/config/v1beta2/defaults.go).
type podsReadyTimers struct {
	timeout   time.Duration
	recovery  time.Duration
	base, max int32
	limit     *int32
}

func podsReadyConfig(sc *Scenario) (podsReadyTimers, bool) {
	if sc.FeatureGates["DisableWaitForPodsReady"] {
		return podsReadyTimers{}, false
	}
	t := podsReadyTimers{timeout: 30 * time.Minute, recovery: 30 * time.Minute, base: 60, max: 3600}
	w := sc.KueueConfig.WaitForPodsReady
	if w == nil {
		return t, podsReadyOnByDefault
	}
	if w.Timeout.Duration > 0 {
		t.timeout, t.recovery = w.Timeout.Duration, w.Timeout.Duration
	}
	if w.RecoveryTimeout != nil {
		t.recovery = w.RecoveryTimeout.Duration
	}
	if s := w.RequeuingStrategy; s != nil {
		t.base = ptr.Deref(s.BackoffBaseSeconds, t.base)
		t.max = ptr.Deref(s.BackoffMaxSeconds, t.max)
		t.limit = s.BackoffLimitCount
	}
	return t, true
}

// podsReadyRefused is Kueue's refusal to start with this section (podsReadyOnByDefault).
func podsReadyRefused(sc *Scenario) error {
	w := sc.KueueConfig.WaitForPodsReady
	if podsReadyOnByDefault || w == nil || w.Timeout.Duration > 0 {
		return nil
	}
	return fmt.Errorf("Kueue %s refuses to start: waitForPodsReady.timeout: Required value: must be specified", kueueVersion)
}

// backoff is UpdateRequeueState's wait, computed by Kueue's own Backoff without its 0.0001
// jitter: base * 2^(count-1), capped (a 0 cap: none), except the first, which is the base
// even above the cap (apimachinery's wait.Backoff caps only the steps after the first).
func (t podsReadyTimers) backoff(count int32) time.Duration {
	b := kwait.NewBackoff(time.Duration(t.base)*time.Second, time.Duration(t.max)*time.Second, 2, 0)
	return b.WaitTime(int(count))
}

// podsNotReady runs the recovery timeout of an admitted workload's not-ready pods.
func (c *cluster) podsNotReady(ctx context.Context, sc *Scenario, name string) error {
	t, on := podsReadyConfig(sc)
	if !on || t.recovery > podsReadyHorizon {
		return nil
	}
	wl := &kueue.Workload{}
	if err := c.client.Get(ctx, c.key(name), wl); err != nil {
		return nil
	}
	if !workload.IsAdmitted(wl) {
		return nil
	}
	c.clock.Step(t.recovery)
	if err := c.timeOut(ctx, wl); err != nil {
		return err
	}
	return c.settle(ctx)
}

// startTimeout times a `podsReady: false` workload from its admission: its pods never turn
// Ready, so PodsReady stays False (WaitForStart) and `timeout` counts from the Admitted
// condition (reconcileNotReadyTimeout); a driver timer runs it out once Kueue is at rest.
func (c *cluster) startTimeout(ctx context.Context, wl *kueue.Workload) {
	t := c.podsReady
	if !c.neverReady.Has(wl.Name) || !c.podsReadyOn || t.timeout > podsReadyHorizon {
		return
	}
	admittedAt := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadAdmitted).LastTransitionTime
	name := wl.Name
	c.timers.AfterFunc(t.timeout, func() {
		now := &kueue.Workload{}
		if err := c.client.Get(ctx, c.key(name), now); err != nil || !workload.IsAdmitted(now) {
			return
		}
		cond := apimeta.FindStatusCondition(now.Status.Conditions, kueue.WorkloadAdmitted)
		if !cond.LastTransitionTime.Equal(&admittedAt) {
			return // admitted again since: that admission has its own timer
		}
		if err := c.timeOut(ctx, now); err != nil {
			c.log.Error(err, "kueue-sim: PodsReady timeout", "workload", name)
		}
	})
}

// timeOut is reconcileNotReadyTimeout at the timeout: deactivation past backoffLimitCount,
// else the PodsReadyTimeout eviction with its requeue backoff.
func (c *cluster) timeOut(ctx context.Context, wl *kueue.Workload) error {
	t, name := c.podsReady, wl.Name
	count := int32(0)
	if wl.Status.RequeueState != nil {
		count = ptr.Deref(wl.Status.RequeueState.Count, 0)
	}
	if t.limit != nil && count+1 > *t.limit {
		wl.Spec.Active = ptr.To(false)
		if err := c.client.Update(ctx, wl); err != nil {
			return fmt.Errorf("deactivating %s: %w", name, err)
		}
		msg := "The workload is deactivated due to exceeding the maximum number of re-queuing retries"
		if err := evictWorkload(ctx, c.client, wl, kueue.WorkloadDeactivated, msg,
			kueue.EvictionUnderlyingCause(kueue.WorkloadRequeuingLimitExceeded), c.clock); err != nil {
			return fmt.Errorf("deactivating %s: %w", name, err)
		}
		return nil
	}
	old := wl.DeepCopy()
	wait := t.backoff(count + 1)
	wl.Status.RequeueState = &kueue.RequeueState{
		Count: ptr.To(count + 1), RequeueAt: ptr.To(metav1.NewTime(c.clock.Now().Add(wait))),
	}
	if err := c.updateStatus(ctx, old, wl); err != nil {
		return fmt.Errorf("requeue state of %s: %w", name, err)
	}
	msg := fmt.Sprintf("Exceeded the PodsReady timeout %s/%s", namespace, name)
	if err := evictWorkload(ctx, c.client, wl, kueue.WorkloadEvictedByPodsReadyTimeout, msg,
		kueue.EvictionUnderlyingCause(kueue.WorkloadWaitForRecovery), c.clock); err != nil {
		return fmt.Errorf("evicting %s: %w", name, err)
	}
	c.timers.AfterFunc(wait, func() { c.backoffFinished(ctx, name) })
	return nil
}

// backoffFinished is the workload controller's Reconcile at requeueAt: RequeueAt cleared,
// Requeued=True BackoffFinished; the write's update puts it back in its queue.
func (c *cluster) backoffFinished(ctx context.Context, name string) {
	wl := &kueue.Workload{}
	if err := c.client.Get(ctx, c.key(name), wl); err != nil {
		return
	}
	if !workload.IsActive(wl) || workload.HasQuotaReservation(wl) {
		return
	}
	old := wl.DeepCopy()
	if wl.Status.RequeueState != nil {
		wl.Status.RequeueState.RequeueAt = nil
	}
	workload.SetRequeuedCondition(wl, kueue.WorkloadBackoffFinished, "The workload backoff was finished", true)
	_ = c.updateStatus(ctx, old, wl)
}

// inBackoff: an evicted workload whose requeueAt is still ahead stays out of the queue
// (workload_controller.go Update: "Workload transitioned back to pending", not immediate).
func (c *cluster) inBackoff(wl *kueue.Workload) bool {
	rs := wl.Status.RequeueState
	return rs != nil && rs.RequeueAt != nil && rs.RequeueAt.After(c.clock.Now())
}
