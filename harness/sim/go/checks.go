package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/workload"
)

// Admission checks (docs/scenario-format-v2.md, "Admission checks"). The harness plays each
// check's controller: it reports the AdmissionCheck Active (or not) and, on a
// set-admission-check step, writes the check's state into the Workload's
// status.admissionChecks. What Kueue's workload controller does with those states
// (pkg/controller/core/workload_controller.go: reconcileSyncAdmissionChecks,
// SyncAdmittedCondition, reconcileCheckBasedEviction, getQueueBlocker) is emulated here
// between scheduling cycles, calling Kueue's own functions where they are exported.

// AdmissionCheckSpec is an AdmissionCheck: name, Kueue's spec, and whether its controller
// reports it Active.
type AdmissionCheckSpec struct {
	Name           string                                   `json:"name"`
	ControllerName string                                   `json:"controllerName"`
	Parameters     *kueue.AdmissionCheckParametersReference `json:"parameters"`
	Active         bool                                     `json:"active"`
}

// CheckStep is a set-admission-check step: the state a check's controller writes for a
// workload.
type CheckStep struct {
	Workload string `json:"workload"`
	Check    string `json:"check"`
	State    string `json:"state"`
}

// addAdmissionChecks stores every AdmissionCheck with its Active condition and hands it to
// the cache (before the ClusterQueues, which read them).
func (c *cluster) addAdmissionChecks(ctx context.Context, sc *Scenario) error {
	for _, spec := range sc.AdmissionChecks {
		ac := &kueue.AdmissionCheck{
			ObjectMeta: metav1.ObjectMeta{Name: spec.Name},
			Spec:       kueue.AdmissionCheckSpec{ControllerName: spec.ControllerName, Parameters: spec.Parameters},
		}
		status, reason := metav1.ConditionTrue, "Active"
		if !spec.Active {
			status, reason = metav1.ConditionFalse, "Inactive"
		}
		apimeta.SetStatusCondition(&ac.Status.Conditions, metav1.Condition{
			Type: kueue.AdmissionCheckActive, Status: status, Reason: reason,
			Message: "the harness plays " + spec.ControllerName, LastTransitionTime: metav1.NewTime(c.clock.Now()),
		})
		if err := c.client.Create(ctx, ac); err != nil {
			return fmt.Errorf("creating AdmissionCheck %s: %w", spec.Name, err)
		}
		c.cache.AddOrUpdateAdmissionCheck(c.log, ac)
	}
	return nil
}

// inactiveByChecks: the ClusterQueue is inactive only because of its admission checks,
// which a scenario may mean (the others are errors).
func inactiveByChecks(reason string) bool {
	return reason == kueue.ClusterQueueActiveReasonAdmissionCheckNotFound ||
		reason == kueue.ClusterQueueActiveReasonAdmissionCheckInactive ||
		strings.Contains(reason, "AdmissionCheck")
}

func (c *cluster) usesChecks() bool {
	for _, cq := range c.cqs {
		if cq.Spec.AdmissionChecksStrategy != nil {
			return true
		}
	}
	return false
}

// setAdmissionCheck is the check controller's write.
func (c *cluster) setAdmissionCheck(ctx context.Context, st *CheckStep) error {
	wl := &kueue.Workload{}
	if err := c.client.Get(ctx, c.key(st.Workload), wl); err != nil {
		return nil // refused by the webhook, or deleted: no Workload to write to
	}
	old := wl.DeepCopy()
	state := kueue.AdmissionCheckState{Name: kueue.AdmissionCheckReference(st.Check),
		State: kueue.CheckState(st.State), LastTransitionTime: metav1.NewTime(c.clock.Now())}
	i := slices.IndexFunc(wl.Status.AdmissionChecks, func(s kueue.AdmissionCheckState) bool { return s.Name == state.Name })
	if i < 0 {
		wl.Status.AdmissionChecks = append(wl.Status.AdmissionChecks, state)
	} else if cur := &wl.Status.AdmissionChecks[i]; cur.State != state.State || cur.Message != "" {
		// The controller's apply sets state, message ("") and the time; the time moves only
		// with the state (SetAdmissionCheckState), the fields it leaves out stay. Kueue's
		// "Reset to Pending after eviction" message makes the same state a write.
		if cur.State != state.State {
			cur.State, cur.LastTransitionTime = state.State, state.LastTransitionTime
		}
		cur.Message = ""
	} else {
		return c.settle(ctx)
	}
	if err := c.updateStatus(ctx, old, wl); err != nil {
		return fmt.Errorf("set-admission-check %s: %w", st.Workload, err)
	}
	c.clock.Step(time.Second)
	return c.settle(ctx)
}

// updateStatus stores a status the way the workload controller's Status().Update does,
// and records it as a write for the update handlers.
func (c *cluster) updateStatus(ctx context.Context, old, wl *kueue.Workload) error {
	if err := c.client.Status().Update(ctx, wl); err != nil {
		return err
	}
	c.writes.record(old, wl.DeepCopy())
	return nil
}

// reconcileChecks is the workload controller's reconcile for a Workload of a ClusterQueue
// with admission checks; it writes at most one change per call (each write comes back
// as an update, and the controller reconciles again).
func (c *cluster) reconcileChecks(ctx context.Context, name string) error {
	wl := &kueue.Workload{}
	if err := c.client.Get(ctx, c.key(name), wl); err != nil {
		return nil
	}
	cq, ok := c.cqs[c.clusterQueueOf(wl)]
	if !ok {
		return nil
	}
	old := wl.DeepCopy()
	if cq.Spec.AdmissionChecksStrategy != nil {
		needed := workload.AdmissionChecksForWorkload(c.log, wl, cq)
		if synced, changed := c.syncChecks(wl.Status.AdmissionChecks, needed); changed {
			wl.Status.AdmissionChecks = synced
			return c.updateStatus(ctx, old, wl)
		}
	}
	if !workload.IsActive(wl) {
		// A deactivated workload (already evicted) still has its checks synced:
		// Reconcile's inactive branch writes nothing more and goes on to
		// reconcileSyncAdmissionChecks, which drops the checks a workload without
		// admission does not need (those not on every flavor), also after a check
		// controller writes one again.
		return nil
	}
	if cond := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadRequeued); cond != nil &&
		cond.Status == metav1.ConditionFalse && cond.Reason == kueue.WorkloadEvictedByAdmissionCheck &&
		(wl.Status.RequeueState == nil || wl.Status.RequeueState.RequeueAt == nil) {
		// No requeueAfterSeconds from the check: the backoff is over at once, and the
		// Requeued=True write takes the workload out of the inadmissible set.
		workload.SetRequeuedCondition(wl, kueue.WorkloadBackoffFinished, "The workload backoff was finished", true)
		return c.updateStatus(ctx, old, wl)
	}
	if !workload.HasQuotaReservation(wl) {
		ref := kueue.ClusterQueueReference(cq.Name)
		cond := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadQuotaReserved)
		msg := fmt.Sprintf("ClusterQueue %s is inactive", cq.Name)
		lqHeld := c.inStoppedQueue(ctx, wl)
		if lqHeld { // getQueueBlocker checks the LocalQueue first (as blockInactive does)
			msg = fmt.Sprintf("LocalQueue %s is inactive", wl.Spec.QueueName)
		}
		if (lqHeld || !c.cache.ClusterQueueActive(ref)) && (cond == nil || cond.Message != msg) {
			apimeta.SetStatusCondition(&wl.Status.Conditions, metav1.Condition{Type: kueue.WorkloadQuotaReserved,
				Status: metav1.ConditionFalse, Reason: kueue.WorkloadInadmissible, Message: msg,
				LastTransitionTime: metav1.NewTime(c.clock.Now()), ObservedGeneration: wl.Generation})
			return c.updateStatus(ctx, old, wl)
		}
		return nil
	}
	if !workload.IsAdmitted(wl) && workload.SyncAdmittedCondition(wl, c.clock.Now()) {
		return c.updateStatus(ctx, old, wl)
	}
	if isEvicted(wl) || (!workload.HasRetryChecks(wl) && !workload.HasRejectedChecks(wl)) {
		return nil
	}
	if rejected := workload.RejectedChecks(wl); len(rejected) > 0 {
		// Deactivation target, then spec.active=false, then the eviction of an inactive
		// workload (reason Deactivated, the check as its underlying cause).
		wl.Spec.Active = ptr.To(false)
		if err := c.client.Update(ctx, wl); err != nil {
			return fmt.Errorf("deactivating %s: %w", name, err)
		}
		msg := "The workload is deactivated due to " + checksMessage(rejected, kueue.CheckStateRejected)
		return evictWorkload(ctx, c.client, wl, kueue.WorkloadDeactivated, msg,
			kueue.EvictionUnderlyingCause(kueue.WorkloadEvictedByAdmissionCheck), c.clock)
	}
	var retry []kueue.AdmissionCheckState // workload.RetryChecks, which Kueue v0.17 lacks
	for _, s := range wl.Status.AdmissionChecks {
		if s.State == kueue.CheckStateRetry {
			retry = append(retry, s)
		}
	}
	msg := "Evicted due to " + checksMessage(retry, kueue.CheckStateRetry)
	return evictWorkload(ctx, c.client, wl, kueue.WorkloadEvictedByAdmissionCheck, msg, "", c.clock)
}

func isEvicted(wl *kueue.Workload) bool {
	return apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadEvicted)
}

// syncChecks is syncAdmissionCheckConditions: every needed check listed (new ones
// Pending), no other, sorted by name.
func (c *cluster) syncChecks(conds []kueue.AdmissionCheckState, needed sets.Set[kueue.AdmissionCheckReference]) ([]kueue.AdmissionCheckState, bool) {
	out := make([]kueue.AdmissionCheckState, 0, len(needed))
	for _, s := range conds {
		if needed.Has(s.Name) {
			out = append(out, s)
		}
	}
	changed := len(out) != len(conds)
	for _, name := range sets.List(needed) {
		if !slices.ContainsFunc(out, func(s kueue.AdmissionCheckState) bool { return s.Name == name }) {
			out = append(out, kueue.AdmissionCheckState{Name: name, State: kueue.CheckStatePending,
				LastTransitionTime: metav1.NewTime(c.clock.Now())})
			changed = true
		}
	}
	slices.SortFunc(out, func(a, b kueue.AdmissionCheckState) int { return strings.Compare(string(a.Name), string(b.Name)) })
	return out, changed
}

// checksMessage is buildAdmissionChecksMessage.
func checksMessage(checks []kueue.AdmissionCheckState, state kueue.CheckState) string {
	parts := make([]string, 0, len(checks))
	for _, ac := range checks {
		if ac.Message != "" {
			parts = append(parts, fmt.Sprintf("%q (%s)", ac.Name, ac.Message))
		} else {
			parts = append(parts, fmt.Sprintf("%q", ac.Name))
		}
	}
	slices.Sort(parts)
	noun := "AdmissionCheck"
	if len(checks) > 1 {
		noun = "AdmissionChecks"
	}
	return fmt.Sprintf("%s in %s state: %s", noun, state, strings.Join(parts, "; "))
}

// nothingToPop: no active ClusterQueue has a workload in its heap (Kueue's queue manager
// pops none from an inactive one: Manager.heads).
func (c *cluster) nothingToPop() bool {
	for cq, queued := range c.queues.Dump() {
		if len(queued) > 0 && c.cache.ClusterQueueActive(cq) {
			return false
		}
	}
	return true
}
