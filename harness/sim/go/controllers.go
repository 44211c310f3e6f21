package main

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/workload"
)

// What Kueue's controllers do with the scheduler's decisions, between two scheduling cycles
// (docs/dev/kueue-v0.19.2-rules-v2.md §6). Only the scheduler runs as Kueue's own loop;
// these are the event handlers it relies on, each calling the same Kueue functions as the
// controller it stands for.

// deliver hands every Workload status write since the last cycle to the workload
// controller's update handler, in write order, as its informer would (and, with the fault
// model on, runs the pods of a new or repaired admission or of a node no longer listed
// as unhealthy, see syncPods); then the job
// reconciler stops every evicted workload that still holds quota (all victims of a
// preemption together), whose writes are delivered in the same round. The inadmissible
// workloads those handlers flushed wait for the requeuer's batch (settle: requeueBatch).
func (c *cluster) deliver(ctx context.Context) error {
	for {
		writes := c.writes.take()
		if len(writes) == 0 {
			break
		}
		var evicted []string
		for _, w := range writes {
			c.workloadUpdated(ctx, w.old, w.new)
			if !workload.IsAdmitted(w.old) && workload.IsAdmitted(w.new) {
				c.startTimeout(ctx, w.new)
			}
			c.noteRepair(w.old, w.new)
			if err := c.jobPodsStarted(ctx, w.old, w.new); err != nil {
				return err
			}
			if !equality.Semantic.DeepEqual(w.old.Status.Admission, w.new.Status.Admission) ||
				!equality.Semantic.DeepEqual(w.old.Status.UnhealthyNodes, w.new.Status.UnhealthyNodes) ||
				workload.IsAdmitted(w.old) != workload.IsAdmitted(w.new) {
				if err := c.syncPods(ctx, w.new); err != nil {
					return err
				}
			}
			if apimeta.IsStatusConditionTrue(w.new.Status.Conditions, kueue.WorkloadEvicted) {
				evicted = append(evicted, w.new.Name)
			}
		}
		for _, name := range evicted {
			if c.stopLater(ctx, name) {
				continue
			}
			if err := c.stopEvicted(ctx, name); err != nil {
				return err
			}
		}
		if err := c.reconcileWritten(ctx, writes); err != nil {
			return err
		}
	}
	return nil
}

// requeueBatch is the queue manager's requeuer firing: it moves the inadmissible workloads
// of every ClusterQueue and cohort flushed since the last batch back to their heaps and
// reports whether it moved any. Kueue batches those flushes (inadmissible_workloads.go
// workqueueRequeuer: AddAfter requeueBatchPeriod, 1 s, from the first request) while the
// scheduler pops what is in the heaps every ~10 ms, so the driver fires it only once the
// heads in the heaps (a StrictFIFO head, a workload requeued at once) have had their
// cycles: freed room goes to them before the parked workloads are back.
func (c *cluster) requeueBatch(ctx context.Context) bool {
	return c.requeuer.ProcessRequeues(ctx) > 0
}

// workloadUpdated is pkg/controller/core/workload_controller.go: Update for the transitions
// a scenario reaches (an active, unfinished Workload without admission checks).
func (c *cluster) workloadUpdated(ctx context.Context, old, new *kueue.Workload) {
	prev, status := workload.Status(old), workload.Status(new)
	wlCopy := new.DeepCopy()
	workload.AdjustResources(ctx, c.client, wlCopy)
	key := workload.Key(new)
	// The queue manager logs second-pass queueing to this logger (see cycleHook.secondPass).
	ctx = ctrl.LoggerInto(ctx, controllerLogger(c.hook, c.log))
	switch {
	case !workload.IsActive(new):
		// Deactivated (a Rejected admission check): out of the queues and the cache.
		c.queues.DeleteWorkload(c.log, key)
		c.queues.QueueAssociatedInadmissibleWorkloadsAfter(ctx, key, func() {
			_ = c.cache.DeleteWorkload(c.log, key)
		})
		return
	case prev == workload.StatusPending && status == workload.StatusPending:
		_ = c.queues.AddOrUpdateWorkload(c.log, wlCopy) // errors are ignored there too
	case prev == workload.StatusPending &&
		(status == workload.StatusQuotaReserved || status == workload.StatusAdmitted):
		c.queues.DeleteWorkload(c.log, key)
		c.cache.AddOrUpdateWorkload(c.log, wlCopy)
	case (prev == workload.StatusQuotaReserved || prev == workload.StatusAdmitted) &&
		status == workload.StatusPending:
		// Preempted workloads carry no requeue backoff: they go back to the queue at once;
		// one in a PodsReady backoff waits for its timer (podsready.go).
		backoff := c.inBackoff(new)
		c.queues.QueueAssociatedInadmissibleWorkloadsAfter(ctx, key, func() {
			_ = c.cache.DeleteWorkload(c.log, key)
			if !backoff {
				_ = c.queues.AddOrUpdateWorkloadWithoutLock(c.log, wlCopy)
			}
			c.queues.DeleteSecondPassWithoutLock(key)
		})
		c.hook.dropSecondPass(string(key))
	default:
		c.cache.AddOrUpdateWorkload(c.log, wlCopy)
	}
	// A workload that needs a second pass (a node of its assignment in unhealthyNodes) is
	// queued for it after a backoff timer (the handler's last step, as in Kueue).
	c.queues.QueueSecondPassIfNeeded(ctx, wlCopy, 0)
}

// stopEvicted is the job reconciler's "handle eviction" step
// (pkg/controller/jobframework/reconciler.go: ReconcileGenericJob) once the Job has
// stopped, which is at once here (no pods run): mark the Workload Requeued and give its
// quota back (QuotaReserved=False with the eviction message, admission cleared).
// stopLater: a workload deactivated past the PodsReady backoffLimitCount already left the
// cache with its `!active` update; the job reconciler clears its reservation once the Job
// stopped, about a second later on a cluster, after the requeuer's batch (1 s) for that
// update: a timer, so the parked workloads it requeues again are evaluated after the
// first batch's (workload_controller.go Update, `!active`).
func (c *cluster) stopLater(ctx context.Context, name string) bool {
	wl := &kueue.Workload{}
	if err := c.client.Get(ctx, c.key(name), wl); err != nil || workload.IsActive(wl) {
		return false
	}
	cond := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadEvicted)
	if cond == nil || cond.Reason != kueue.WorkloadDeactivated+"DueTo"+kueue.WorkloadRequeuingLimitExceeded {
		return false
	}
	c.timers.AfterFunc(time.Second, func() {
		if err := c.stopEvicted(ctx, name); err != nil {
			c.log.Error(err, "kueue-sim: stopping a deactivated workload", "workload", name)
		}
	})
	return true
}

func (c *cluster) stopEvicted(ctx context.Context, name string) error {
	wl := &kueue.Workload{}
	if err := c.client.Get(ctx, c.key(name), wl); err != nil {
		return fmt.Errorf("reading evicted workload %s: %w", name, err)
	}
	evCond := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadEvicted)
	if evCond == nil || evCond.Status != metav1.ConditionTrue || !workload.HasQuotaReservation(wl) {
		return nil
	}
	err := patchAdmissionStatus(ctx, c.client, wl, c.clock, func(wl *kueue.Workload) (bool, error) {
		setRequeued := evCond.Reason == kueue.WorkloadEvictedByPreemption ||
			evCond.Reason == kueue.WorkloadEvictedDueToNodeFailures
		updated := workload.SetRequeuedCondition(wl, evCond.Reason, evCond.Message, setRequeued)
		if workload.UnsetQuotaReservationWithCondition(wl, evictedPendingReason(), evCond.Message, c.clock.Now()) {
			updated = true
		}
		return updated, nil
	})
	if err != nil {
		return fmt.Errorf("releasing evicted workload %s: %w", name, err)
	}
	return c.stopPods(ctx, name)
}

// reconcileWritten runs the workload controller's admission-check reconcile for every
// Workload written this round (checks.go), when a ClusterQueue uses checks.
func (c *cluster) reconcileWritten(ctx context.Context, writes []statusWrite) error {
	if !c.usesChecks() {
		return nil
	}
	done := map[string]bool{}
	for _, w := range writes {
		if done[w.new.Name] {
			continue
		}
		done[w.new.Name] = true
		if err := c.reconcileChecks(ctx, w.new.Name); err != nil {
			return err
		}
	}
	return nil
}
