package main

import (
	"context"
	"fmt"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/workload"
)

// waitForPodsReady.blockAdmission (docs/dev/kueue-v0.19.2-rules-v2.md §11.6). Kueue's
// scheduler, in the middle of a cycle, writes "waiting for all admitted workloads to be in
// PodsReady condition" on an entry that fits and then waits on the cache's condition
// variable (pkg/cache/scheduler/cache.go WaitForPodsReady) until a cache update wakes it and
// the cache's own check (PodsReadyForAllAdmittedWorkloads) passes. The sim lets Kueue's code
// decide and only makes the timing deterministic:
//
//   - the scheduler logs "Blocking admission ..." before each wait (under the cache's lock):
//     the driver, awaiting the cycle, then knows it stopped, and acts as Kueue's controllers
//     do while it waits (status writes, the job reconciler's PodsReady, steps);
//   - a cache update by the driver may wake the waiter at any time; if the cache's check
//     passes, it logs "Finished waiting ..." and the hook parks it there, before it admits
//     anything, until the driver lets it go on at its next sync point (settle);
//   - at that point, if the cache's check passes and the waiter is not parked yet, the driver
//     wakes it the way any later cache update would (the cache's own Broadcast, through
//     CleanUpOnContext on a finished context) and waits until it parks.
//
// The PodsReady condition is the job reconciler's (pkg/controller/jobframework/
// reconciler.go generatePodsReadyCondition): KWOK makes an admitted Job's pods Ready within a
// second, so the sim writes PodsReady=True at once when a workload is admitted, except while
// a pods-not-ready step holds its pods; pods-ready writes it again. Only with blockAdmission
// (the one place where Kueue's scheduler reads the condition).
const (
	// pkg/cache/scheduler/cache.go WaitForPodsReady, V(3), before each wait.
	msgBlocking = "Blocking admission as not all workloads are in the PodsReady condition"
	// pkg/scheduler/scheduler.go waitForPodsReadyIfNeeded, V(5), once the wait returned.
	msgFinishedWaiting = "Finished waiting for all admitted workloads to be in the PodsReady condition"
	blockingVerbosity  = 3
	finishedVerbosity  = 5

	// generatePodsReadyCondition's messages.
	podsReadyMsg = "All pods reached readiness and the workload is running"
	recoveryMsg  = "At least one pod has failed, waiting for recovery"
	startMsg     = "Not all pods are ready or succeeded"
)

// podsReadyGate is the cycle hook's part for blockAdmission.
type podsReadyGate struct {
	on        bool          // the cache tracks PodsReady (blockAdmission)
	expecting bool          // the driver awaits a cycle: a Blocking line means it stopped
	blocked   chan struct{} // the scheduler stopped in WaitForPodsReady during the awaited cycle
	parked    chan struct{} // the scheduler's wait returned; it waits for resume
	resume    chan struct{}
}

func newPodsReadyGate(on bool) podsReadyGate {
	return podsReadyGate{on: on, blocked: make(chan struct{}, 1), parked: make(chan struct{}, 1),
		resume: make(chan struct{})}
}

// blocking is called from the scheduler's goroutine under the cache's lock: it must not wait.
func (h *cycleHook) blocking() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.gate.expecting {
		h.gate.expecting = false
		h.gate.blocked <- struct{}{}
	}
}

// finishedWaiting parks the scheduler once its wait returned, before it admits the entry.
func (h *cycleHook) finishedWaiting() {
	h.gate.parked <- struct{}{}
	select {
	case <-h.gate.resume:
	case <-h.done:
	}
}

// awaitCycle waits until the scheduler reaches the start of the next cycle (false) or stops
// in WaitForPodsReady (true). The caller set gate.expecting and let the scheduler go.
func (h *cycleHook) awaitCycle(timeout time.Duration) (bool, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-h.boundary:
		h.mu.Lock()
		h.gate.expecting = false
		h.mu.Unlock()
		return false, nil
	case <-h.gate.blocked:
		return true, nil
	case <-timer.C:
		return false, fmt.Errorf("the scheduling cycle did not end within %s", timeout)
	}
}

// expectCycle arms the gate before the driver lets the scheduler run.
func (h *cycleHook) expectCycle() {
	h.mu.Lock()
	h.gate.expecting = true
	h.mu.Unlock()
}

// wakeIfPodsReady is the driver's sync point while the scheduler waits for PodsReady: it
// lets the scheduler go on if its wait returned, or if the cache's check passes (waking it
// as a cache update would), and runs the rest of the cycle. It reports whether the scheduler
// went on.
func (c *cluster) wakeIfPodsReady(ctx context.Context) (bool, error) {
	select {
	case <-c.hook.gate.parked:
	default:
		if !c.cache.PodsReadyForAllAdmittedWorkloads(c.log) {
			return false, nil
		}
		done, cancel := context.WithCancel(ctx)
		cancel()
		c.cache.CleanUpOnContext(done) // the cache's Broadcast, on a finished context
		timer := time.NewTimer(c.timeout)
		defer timer.Stop()
		select {
		case <-c.hook.gate.parked:
		case <-timer.C:
			return false, fmt.Errorf("the scheduler did not stop waiting for PodsReady within %s", c.timeout)
		}
	}
	c.hook.expectCycle()
	select {
	case c.hook.gate.resume <- struct{}{}:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	blocked, err := c.hook.awaitCycle(c.timeout)
	c.waitingPodsReady = blocked
	return true, err
}

// podsReadyTracked: blockAdmission is on (cmd/kueue/main.go blockForPodsReady).
func podsReadyTracked(sc *Scenario) bool {
	if _, on := podsReadyConfig(sc); !on {
		return false
	}
	w := sc.KueueConfig.WaitForPodsReady
	return w != nil && w.BlockAdmission != nil && *w.BlockAdmission
}

// jobPodsStarted is the job reconciler once an admitted Job's pods are Ready: PodsReady=True
// on a workload just admitted (a status write), unless a pods-not-ready step holds them;
// PodsReady=False WaitForStart for a `podsReady: false` workload, whose pods never start.
func (c *cluster) jobPodsStarted(ctx context.Context, old, new *kueue.Workload) error {
	if !c.hook.gate.on {
		return nil
	}
	if !workload.IsAdmitted(new) && apimeta.IsStatusConditionTrue(new.Status.Conditions, kueue.WorkloadPodsReady) {
		// generatePodsReadyCondition: a workload not admitted (evicted, requeued) is False,
		// WaitForStart, so one that reserves quota again counts as not ready in the cache.
		if err := c.writePodsReady(ctx, new.Name, metav1.ConditionFalse, kueue.WorkloadWaitForStart, startMsg); err != nil {
			return err
		}
	}
	if !workload.HasQuotaReservation(new) {
		delete(c.podsHeld, new.Name) // evicted: its next pods start Ready
		return nil
	}
	if workload.IsAdmitted(old) || !workload.IsAdmitted(new) || c.podsHeld[new.Name] {
		return nil
	}
	// podsReady: false, or pods kube-scheduler cannot bind: not ready since admission
	if c.neverReady.Has(new.Name) || !c.podsCanBind(new) {
		c.podsHeld[new.Name] = true
		return c.writePodsReady(ctx, new.Name, metav1.ConditionFalse, kueue.WorkloadWaitForStart, startMsg)
	}
	return c.writePodsReady(ctx, new.Name, metav1.ConditionTrue, kueue.WorkloadStarted, podsReadyMsg)
}

// holdPodsNotReady is the job reconciler when the pods of an admitted workload stop being
// Ready (pods-not-ready, blockAdmission only): PodsReady=False WaitForRecovery.
func (c *cluster) holdPodsNotReady(ctx context.Context, name string) error {
	if !c.hook.gate.on || !c.isAdmitted(ctx, name) {
		return nil
	}
	c.podsHeld[name] = true
	return c.writePodsReady(ctx, name, metav1.ConditionFalse, kueue.WorkloadWaitForRecovery, recoveryMsg)
}

// releasePods is the job reconciler when they are Ready again (pods-ready): PodsReady=True
// Recovered; then Kueue runs until it comes to rest (the write wakes a waiting scheduler).
func (c *cluster) releasePods(ctx context.Context, name string) error {
	if !c.hook.gate.on {
		return nil
	}
	held := c.podsHeld[name]
	delete(c.podsHeld, name)
	if held && c.isAdmitted(ctx, name) {
		reason := kueue.WorkloadRecovered
		if c.neverReady.Has(name) { // its pods were never Ready: this is their start
			reason = kueue.WorkloadStarted
		}
		if err := c.writePodsReady(ctx, name, metav1.ConditionTrue, reason, podsReadyMsg); err != nil {
			return err
		}
	}
	return c.settle(ctx)
}

func (c *cluster) isAdmitted(ctx context.Context, name string) bool {
	wl := &kueue.Workload{}
	return c.client.Get(ctx, c.key(name), wl) == nil && workload.IsAdmitted(wl)
}

func (c *cluster) writePodsReady(ctx context.Context, name string, status metav1.ConditionStatus, reason, msg string) error {
	wl := &kueue.Workload{}
	if err := c.client.Get(ctx, c.key(name), wl); err != nil {
		return nil
	}
	old := wl.DeepCopy()
	cond := workload.CreatePodsReadyCondition(status, reason, msg, c.clock)
	cond.ObservedGeneration = wl.Generation
	if !apimeta.SetStatusCondition(&wl.Status.Conditions, cond) {
		return nil
	}
	if err := c.updateStatus(ctx, old, wl); err != nil {
		return fmt.Errorf("%s: PodsReady: %w", name, err)
	}
	return nil
}
