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

// A LocalQueue's stopPolicy (harness/kueue/local_queue_stop.py). The LocalQueue is a real
// object in the fake client with its spec; what Kueue's controllers do with it is emulated
// with Kueue's own calls: pkg/controller/core/localqueue_controller.go Create/Update (the
// queue manager holds a LocalQueue only while its policy is None: DeleteLocalQueue and
// AddLocalQueue), workload_controller.go reconcileOnLocalQueueActiveState (HoldAndDrain
// evicts admitted workloads with LocalQueueStopped; a reservation without admission is
// taken away), getQueueBlocker ("LocalQueue NAME is inactive", see blockInactive) and
// Reconcile's LocalQueueRestarted requeue once the policy is None again.

// StopPolicyStep is a set-stop-policy step.
type StopPolicyStep struct {
	ClusterQueue string `json:"clusterQueue"` // set instead of LocalQueue: cqstop.go
	LocalQueue   string `json:"localQueue"`
	Namespace    string `json:"namespace"`
	StopPolicy   string `json:"stopPolicy"`
}

func lqStopped(lq *kueue.LocalQueue) bool {
	return ptr.Deref(lq.Spec.StopPolicy, kueue.None) != kueue.None
}

// localQueueOf reads the Workload's LocalQueue (nil when there is none).
func (c *cluster) localQueueOf(ctx context.Context, wl *kueue.Workload) *kueue.LocalQueue {
	lq := &kueue.LocalQueue{}
	key := client.ObjectKey{Namespace: wl.Namespace, Name: string(wl.Spec.QueueName)}
	if err := c.client.Get(ctx, key, lq); err != nil {
		return nil
	}
	return lq
}

// inStoppedQueue: the Workload's LocalQueue has a stopPolicy other than None.
func (c *cluster) inStoppedQueue(ctx context.Context, wl *kueue.Workload) bool {
	lq := c.localQueueOf(ctx, wl)
	return lq != nil && lqStopped(lq)
}

// unreserveStopped takes a reservation without admission away (waiting for admission
// checks), as reconcileOnLocalQueueActiveState does under any stopPolicy.
func (c *cluster) unreserveStopped(ctx context.Context, wl *kueue.Workload) error {
	msg := fmt.Sprintf("LocalQueue %s is stopped", wl.Spec.QueueName)
	err := patchAdmissionStatus(ctx, c.client, wl, c.clock, func(wl *kueue.Workload) (bool, error) {
		return workload.UnsetQuotaReservationWithCondition(wl, inactiveReason, msg, c.clock.Now()), nil
	})
	if err != nil {
		return fmt.Errorf("taking the reservation of %s away: %w", wl.Name, err)
	}
	return nil
}

// setStopPolicy patches the LocalQueue's spec.stopPolicy and runs what Kueue's controllers
// do with the change, then lets Kueue come to rest.
func (c *cluster) setStopPolicy(ctx context.Context, st *StopPolicyStep) error {
	lq := &kueue.LocalQueue{}
	key := client.ObjectKey{Namespace: namespaceOr(st.Namespace), Name: st.LocalQueue}
	if err := c.client.Get(ctx, key, lq); err != nil {
		return fmt.Errorf("set-stop-policy: LocalQueue %s: %w", key, err)
	}
	was := lqStopped(lq)
	lq.Spec.StopPolicy = ptr.To(kueue.StopPolicy(st.StopPolicy))
	if err := c.client.Update(ctx, lq); err != nil {
		return fmt.Errorf("set-stop-policy: LocalQueue %s: %w", key, err)
	}
	now := lqStopped(lq)
	switch {
	case now && !was:
		c.queues.DeleteLocalQueue(c.log, lq)
	case !now && was:
		if err := c.queues.AddLocalQueue(ctx, lq); err != nil {
			return fmt.Errorf("set-stop-policy: adding LocalQueue %s: %w", key, err)
		}
		if err := c.restartDrained(ctx, lq); err != nil {
			return err
		}
	}
	return c.drainThenSettle(ctx)
}

// restartDrained: Requeued True, LocalQueueRestarted, on the LocalQueue's workloads it
// drained (Requeued False, LocalQueueStopped): their update queues them again.
func (c *cluster) restartDrained(ctx context.Context, lq *kueue.LocalQueue) error {
	list := &kueue.WorkloadList{}
	if err := c.client.List(ctx, list, client.InNamespace(lq.Namespace)); err != nil {
		return err
	}
	for i := range list.Items {
		wl := &list.Items[i]
		cond := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadRequeued)
		if string(wl.Spec.QueueName) != lq.Name || cond == nil || cond.Status != metav1.ConditionFalse ||
			cond.Reason != kueue.WorkloadEvictedByLocalQueueStopped {
			continue
		}
		old := wl.DeepCopy()
		workload.SetRequeuedCondition(wl, kueue.WorkloadLocalQueueRestarted,
			"The LocalQueue was restarted after being stopped", true)
		if err := c.updateStatus(ctx, old, wl); err != nil {
			return fmt.Errorf("restarting %s: %w", wl.Name, err)
		}
	}
	return nil
}
