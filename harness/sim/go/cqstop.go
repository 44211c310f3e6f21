package main

import (
	"context"
	"fmt"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/workload"
)

// A ClusterQueue's stopPolicy changed by a step (set-stop-policy with clusterQueue,
// harness/fit/cq_stop.py). What Kueue's controllers do with the patch is run with Kueue's
// own calls: pkg/controller/core/clusterqueue_controller.go Update hands the new object to
// the cache (Hold, HoldAndDrain: inactive, reason Stopped) and to the queue manager
// (UpdateClusterQueue with specUpdated: its cohort tree's inadmissible workloads are
// requeued); workload_controller.go reconcileOnClusterQueueActiveState takes a reservation
// waiting for admission checks away ("ClusterQueue NAME is stopped") and evicts admitted
// workloads under HoldAndDrain (drainStopped, stopped.go); Reconcile sets Requeued True,
// ClusterQueueRestarted, on the drained ones once the policy is None again.

// setClusterQueueStopPolicy patches the ClusterQueue's spec.stopPolicy and runs what
// Kueue's controllers do with the change, then lets Kueue come to rest.
func (c *cluster) setClusterQueueStopPolicy(ctx context.Context, st *StopPolicyStep) error {
	cq := &kueue.ClusterQueue{}
	if err := c.client.Get(ctx, client.ObjectKey{Name: st.ClusterQueue}, cq); err != nil {
		return fmt.Errorf("set-stop-policy: ClusterQueue %s: %w", st.ClusterQueue, err)
	}
	cq.Spec.StopPolicy = ptr.To(kueue.StopPolicy(st.StopPolicy))
	if err := c.client.Update(ctx, cq); err != nil {
		return fmt.Errorf("set-stop-policy: ClusterQueue %s: %w", cq.Name, err)
	}
	c.cqs[cq.Name] = cq
	if err := c.cache.UpdateClusterQueue(c.log, cq); err != nil {
		return fmt.Errorf("set-stop-policy: ClusterQueue %s in the cache: %w", cq.Name, err)
	}
	if err := updateClusterQueueSpec(ctx, c.queues, cq); err != nil {
		return fmt.Errorf("set-stop-policy: ClusterQueue %s in the queue manager: %w", cq.Name, err)
	}
	if err := c.reactToClusterQueueStop(ctx, cq); err != nil {
		return err
	}
	return c.drainThenSettle(ctx)
}

// reactToClusterQueueStop: each workload of the ClusterQueue as the workload controller
// reconciles it after the change (wqh enqueues them all).
func (c *cluster) reactToClusterQueueStop(ctx context.Context, cq *kueue.ClusterQueue) error {
	stopped := ptr.Deref(cq.Spec.StopPolicy, kueue.None) != kueue.None
	list := &kueue.WorkloadList{}
	if err := c.client.List(ctx, list); err != nil { // every namespace's
		return err
	}
	for i := range list.Items {
		wl := &list.Items[i]
		if c.clusterQueueOf(wl) != cq.Name {
			continue
		}
		switch {
		case stopped && workload.HasQuotaReservation(wl) && !workload.IsAdmitted(wl) &&
			!c.inStoppedQueue(ctx, wl): // reconcileOnLocalQueueActiveState goes first
			msg := fmt.Sprintf("ClusterQueue %s is stopped", cq.Name)
			err := patchAdmissionStatus(ctx, c.client, wl, c.clock, func(wl *kueue.Workload) (bool, error) {
				return workload.UnsetQuotaReservationWithCondition(wl, inactiveReason, msg, c.clock.Now()), nil
			})
			if err != nil {
				return fmt.Errorf("taking the reservation of %s away: %w", wl.Name, err)
			}
		case !stopped && requeuedFalseBy(wl, kueue.WorkloadEvictedByClusterQueueStopped):
			err := patchAdmissionStatus(ctx, c.client, wl, c.clock, func(wl *kueue.Workload) (bool, error) {
				return workload.SetRequeuedCondition(wl, kueue.WorkloadClusterQueueRestarted,
					"The ClusterQueue was restarted after being stopped", true), nil
			})
			if err != nil {
				return fmt.Errorf("restarting %s: %w", wl.Name, err)
			}
		}
	}
	return nil
}

// requeuedFalseBy: the job reconciler left Requeued False with this eviction reason.
func requeuedFalseBy(wl *kueue.Workload, reason string) bool {
	cond := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadRequeued)
	return cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == reason
}
