package main

import (
	"context"
	"fmt"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/workload"
)

// What Kueue's workload controller does for a ClusterQueue the cache reports inactive (a
// stopPolicy other than None): pkg/controller/core/workload_controller.go
// reconcileOnClusterQueueActiveState evicts the workloads it admitted when the policy is
// HoldAndDrain, and getQueueBlocker writes "ClusterQueue NAME is inactive" into each
// pending one. The scheduler never pops them (queue manager heads() skips an inactive
// ClusterQueue).

const inactiveReason = "Inadmissible" // kueue.WorkloadInadmissible, the legacy condition

// meantInactive: the scenario makes Kueue keep the ClusterQueue inactive (a stopPolicy
// other than None, or a flavor no ResourceFlavor is named after: FlavorNotFound), so its
// inactivity is part of the scenario rather than a setup error.
func (c *cluster) meantInactive(cq *kueue.ClusterQueue) bool {
	if ptr.Deref(cq.Spec.StopPolicy, kueue.None) != kueue.None {
		return true
	}
	for _, rg := range cq.Spec.ResourceGroups {
		for _, f := range rg.Flavors {
			if _, ok := c.flavors[string(f.Name)]; !ok {
				return true
			}
		}
	}
	return false
}

// drainThenSettle: after a stop-policy change of a LocalQueue or a ClusterQueue, what a
// HoldAndDrain queue evicts, then Kueue at rest again.
func (c *cluster) drainThenSettle(ctx context.Context) error {
	if err := c.drainStopped(ctx); err != nil {
		return err
	}
	return c.settle(ctx)
}

// drainStopped evicts every workload admitted through a HoldAndDrain LocalQueue (reason
// LocalQueueStopped, lqstop.go) or to a HoldAndDrain ClusterQueue (reason
// ClusterQueueStopped, "The ClusterQueue is stopped"); deliver then stops its Job.
func (c *cluster) drainStopped(ctx context.Context) error {
	list := &kueue.WorkloadList{}
	if err := c.client.List(ctx, list); err != nil { // every namespace's
		return err
	}
	for i := range list.Items {
		wl := &list.Items[i]
		if wl.Status.Admission == nil {
			continue
		}
		if apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadEvicted) {
			continue // already evicted
		}
		// reconcileOnLocalQueueActiveState runs before reconcileOnClusterQueueActiveState.
		if lq := c.localQueueOf(ctx, wl); lq != nil && workload.IsAdmitted(wl) &&
			ptr.Deref(lq.Spec.StopPolicy, kueue.None) == kueue.HoldAndDrain {
			if err := evictWorkload(ctx, c.client, wl, kueue.WorkloadEvictedByLocalQueueStopped,
				"The LocalQueue is stopped", "", c.clock); err != nil {
				return fmt.Errorf("evicting %s from stopped LocalQueue %s: %w", wl.Name, lq.Name, err)
			}
			continue
		}
		cq := c.cqs[string(wl.Status.Admission.ClusterQueue)]
		if cq == nil || ptr.Deref(cq.Spec.StopPolicy, kueue.None) != kueue.HoldAndDrain {
			continue
		}
		// Kueue's own eviction: it also resets the admission checks to Pending.
		err := evictWorkload(ctx, c.client, wl, kueue.WorkloadEvictedByClusterQueueStopped,
			"The ClusterQueue is stopped", "", c.clock)
		if err != nil {
			return fmt.Errorf("evicting %s from stopped ClusterQueue %s: %w", wl.Name, cq.Name, err)
		}
	}
	return nil
}

// blockInactive writes "ClusterQueue NAME is inactive" into every workload without quota
// that waits in an inactive ClusterQueue and does not say so yet; true when it wrote one.
func (c *cluster) blockInactive(ctx context.Context) (bool, error) {
	if c.everyQueueActive(ctx) {
		return false, nil // no Workload to mark: each one's ClusterQueue is active
	}
	list := &kueue.WorkloadList{}
	if err := c.client.List(ctx, list); err != nil { // every namespace's
		return false, err
	}
	wrote := false
	for i := range list.Items {
		wl := &list.Items[i]
		cq := c.clusterQueueOf(wl)
		lqHeld := c.inStoppedQueue(ctx, wl)
		if lqHeld && workload.HasQuotaReservation(wl) && !workload.IsAdmitted(wl) {
			if err := c.unreserveStopped(ctx, wl); err != nil {
				return false, err
			}
			wrote = true
			continue
		}
		if workload.HasQuotaReservation(wl) || (!lqHeld && c.cache.ClusterQueueActive(kueue.ClusterQueueReference(cq))) {
			continue
		}
		msg := fmt.Sprintf("ClusterQueue %s is inactive", cq)
		if lqHeld { // getQueueBlocker checks the LocalQueue first
			msg = fmt.Sprintf("LocalQueue %s is inactive", wl.Spec.QueueName)
		}
		if cond := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadQuotaReserved); cond != nil && cond.Message == msg {
			continue
		}
		err := patchAdmissionStatus(ctx, c.client, wl, c.clock, func(wl *kueue.Workload) (bool, error) {
			return workload.UnsetQuotaReservationWithCondition(wl, inactiveReason, msg, c.clock.Now()), nil
		})
		if err != nil {
			return false, fmt.Errorf("marking %s inactive: %w", wl.Name, err)
		}
		wrote = true
	}
	return wrote, nil
}

// everyQueueActive: every LocalQueue a Workload was created in is not stopped and leads to
// an active ClusterQueue, so blockInactive has nothing to mark.
func (c *cluster) everyQueueActive(ctx context.Context) bool {
	for ref := range c.queuesUsed {
		cq, ok := c.lqCQ[ref]
		if !ok || !c.cache.ClusterQueueActive(kueue.ClusterQueueReference(cq)) {
			return false
		}
		ns, name, _ := strings.Cut(ref, "/")
		lq := &kueue.LocalQueue{}
		if err := c.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, lq); err != nil || lqStopped(lq) {
			return false
		}
	}
	return true
}
