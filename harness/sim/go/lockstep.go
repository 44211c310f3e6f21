package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	clocktesting "k8s.io/utils/clock/testing"
)

// Lines Kueue v0.19.2's scheduler logs at verbosity 2 on its own goroutine
// (pkg/scheduler/scheduler.go). The sim steps the scheduler by them: a cycle begins only
// when the driver says so, and the fake clock moves between two admissions.
const (
	msgCycleStarts   = "Scheduling cycle starts"            // schedule(), before Heads()
	msgObtainedHeads = "Obtained heads"                     // schedule(), after Heads()
	msgAttempting    = "Attempting to schedule workload"    // processEntry(), each entry
	msgAssumed       = "Workload assumed in the cache"      // assumeWorkload(), before the status write
	msgRequeued      = "Workload re-queued"                 // requeueAndUpdate()
	msgSecondPass    = "Workload re-queued for second pass" // requeueAndUpdate(), instead
	msgProcessedAll  = "Workload processing done"           // schedule(), after requeueing
	msgCycleComplete = "Scheduling cycle complete"          // schedule(), deferred
	// admit()'s goroutine ends with one of these three lines, once its status write returned.
	msgAdmitWritten = "Workload successfully admitted and assigned flavors"
	msgAdmitGone    = "Workload not admitted because it was deleted"
	msgAdmitFailed  = "Could not admit Workload and assign flavors in apiserver" // an Error line
	hookVerbosity   = 2
	// The queue manager (pkg/cache/queue/manager.go: queueSecondPass) logs this at
	// verbosity 3 when a second-pass backoff timer put a workload in the second-pass queue.
	msgSecondPassQueued = "Workload queued for second pass of scheduling"
	secondPassVerbosity = 3
)

// cycleHook runs the scheduler in lockstep with the driver, from the scheduler's own log
// lines (scheduler.New takes the concrete queue manager, so there is no other seam):
//
//   - at "Scheduling cycle starts" the scheduler waits until the driver releases it, so
//     the driver can act as Kueue's controllers do between two cycles (deliver status
//     writes, release preempted workloads, requeue) with nothing running concurrently;
//   - an admission's status write runs in a goroutine of its own (scheduler.admit); at
//     the scheduler's next line the hook waits for that write, then moves the fake clock
//     one second per admission, so every admission gets its own reservation second (Kueue
//     orders preemption candidates by it) no matter how goroutines interleave;
//   - a refused write's requeue (admit's goroutine: requeueAndUpdate) waits until the next
//     cycle has taken its heads (holdRefused, landRefused): on a real cluster the API
//     server's answer takes far longer than the scheduler takes to start that cycle, so
//     the refused workload sits it out and the next one of its ClusterQueue is tried.
type cycleHook struct {
	clock *clocktesting.FakeClock
	done  <-chan struct{}

	mu       sync.Mutex
	written  *sync.Cond
	assumed  int // admissions assumed in the cache whose status write has not returned
	unticked int // admissions written since the clock last moved
	// secondPass holds the workloads the queue manager put in its second-pass queue since
	// the last cycle took them (Heads takes them all); the driver must not start a cycle
	// with nothing to pop, or Heads blocks.
	secondPass map[string]bool

	// Refused admissions whose requeue waits for the next cycle's heads (holdRefused), and
	// those released whose requeue has not been logged yet.
	inFlight, landing int
	land              chan struct{} // closed to release the waiting requeues

	boundary chan struct{} // the scheduler reached the start of a cycle
	release  chan struct{} // the driver lets it run the cycle
	gate     podsReadyGate // blockAdmission's wait (blockadmission.go)
}

func newCycleHook(clock *clocktesting.FakeClock, done <-chan struct{}, podsReady bool) *cycleHook {
	h := &cycleHook{clock: clock, done: done, secondPass: map[string]bool{},
		boundary: make(chan struct{}), release: make(chan struct{}), gate: newPodsReadyGate(podsReady),
		land: make(chan struct{})}
	h.written = sync.NewCond(&h.mu)
	return h
}

func (h *cycleHook) observe(msg string) {
	switch msg {
	case msgAssumed:
		h.mu.Lock()
		h.assumed++
		h.mu.Unlock()
	case msgAttempting, msgProcessedAll, msgCycleComplete:
		h.tick()
	case msgRequeued:
		h.tick()
		h.landed()
	case msgSecondPass:
		h.landed()
	case msgObtainedHeads:
		h.landRefused()
	case msgAdmitWritten, msgAdmitGone:
		h.admissionWritten()
	case msgCycleStarts:
		h.tick()
		select {
		case h.boundary <- struct{}{}:
		case <-h.done:
			return
		}
		select {
		case <-h.release:
		case <-h.done:
		}
	}
}

// admissionWritten is called once an admission's status write returned (stored or
// refused): admit() logs it from its own goroutine. A second pass's re-admission of a
// workload that already holds quota is an admission too.
func (h *cycleHook) admissionWritten() {
	h.mu.Lock()
	h.assumed--
	h.unticked++
	h.written.Broadcast()
	h.mu.Unlock()
}

// holdRefused runs on admit()'s goroutine once its status write was refused: its requeue
// waits until landRefused (or the scenario ends).
func (h *cycleHook) holdRefused() {
	h.mu.Lock()
	h.inFlight++
	land := h.land
	h.mu.Unlock()
	select {
	case <-land:
	case <-h.done:
	}
}

// landRefused lets the refused admissions' requeues run and waits until each is logged; it
// runs once a cycle has its heads, or from the driver when there is nothing else to pop
// (Heads would wait for them). It reports whether there were any.
func (h *cycleHook) landRefused() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.inFlight == 0 {
		return false
	}
	h.landing += h.inFlight
	h.inFlight = 0
	close(h.land)
	h.land = make(chan struct{})
	for h.landing > 0 {
		h.written.Wait()
	}
	return true
}

// landed counts down a released requeue. Only they log a requeue while landRefused waits:
// the scheduler is blocked in it, or at a cycle's start.
func (h *cycleHook) landed() {
	h.mu.Lock()
	if h.landing > 0 {
		h.landing--
		h.written.Broadcast()
	}
	h.mu.Unlock()
}

// tick waits for the admissions of this cycle to be written, then moves the clock past them.
func (h *cycleHook) tick() {
	h.mu.Lock()
	for h.assumed > 0 {
		h.written.Wait()
	}
	n := h.unticked
	h.unticked = 0
	h.mu.Unlock()
	if n > 0 {
		h.clock.Step(time.Duration(n) * time.Second)
	}
}

// queuedSecondPass records a workload the queue manager put in its second-pass queue.
func (h *cycleHook) queuedSecondPass(kv []any) {
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i] == "workload" {
			h.mu.Lock()
			h.secondPass[fmt.Sprint(kv[i+1])] = true
			h.mu.Unlock()
		}
	}
}

// dropSecondPass forgets a workload the queue manager took out of its second-pass queue.
func (h *cycleHook) dropSecondPass(key string) {
	h.mu.Lock()
	delete(h.secondPass, key)
	h.mu.Unlock()
}

// secondPassQueued says whether the next cycle has a second-pass workload to pop.
func (h *cycleHook) secondPassQueued() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.secondPass) > 0
}

// awaitBoundary waits until the scheduler is at the start of a cycle.
func (h *cycleHook) awaitBoundary(timeout time.Duration) error {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-h.boundary:
		return nil
	case <-timer.C:
		return fmt.Errorf("the scheduling cycle did not end within %s", timeout)
	}
}

// runCycle lets the waiting scheduler run one cycle and waits until the next begins, or
// until it stops to wait for PodsReady (blockAdmission), which it reports.
func (h *cycleHook) runCycle(ctx context.Context, timeout time.Duration) (bool, error) {
	h.mu.Lock()
	clear(h.secondPass) // this cycle's Heads takes them all
	h.gate.expecting = true
	h.mu.Unlock()
	select {
	case h.release <- struct{}{}:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	return h.awaitCycle(timeout)
}

// hookSink is the scheduler's log sink: it feeds the hook its verbosity-2 lines (lockstep)
// and the queue manager's second-pass line, and passes everything the user asked for (-v)
// to the real sink. The controllers the driver stands for log through one without
// lockstep: only the scheduler's own lines step the cycle.
type hookSink struct {
	hook     *cycleHook
	inner    logr.LogSink // nil: discard
	lockstep bool
}

func hookedLogger(hook *cycleHook, user logr.Logger) logr.Logger {
	return logr.New(&hookSink{hook: hook, inner: user.GetSink(), lockstep: true})
}

// controllerLogger is the logger of the controllers the driver runs: it reports second-pass
// queueing to the hook and nothing else.
func controllerLogger(hook *cycleHook, user logr.Logger) logr.Logger {
	return logr.New(&hookSink{hook: hook, inner: user.GetSink()})
}

func (s *hookSink) Init(info logr.RuntimeInfo) {
	if s.inner != nil {
		s.inner.Init(info)
	}
}

func (s *hookSink) Enabled(level int) bool {
	return level <= secondPassVerbosity || (s.hook.gate.on && level == finishedVerbosity) ||
		s.userEnabled(level)
}

func (s *hookSink) userEnabled(level int) bool {
	return s.inner != nil && s.inner.Enabled(level)
}

func (s *hookSink) Info(level int, msg string, kv ...any) {
	if s.userEnabled(level) {
		s.inner.Info(level, msg, kv...)
	}
	switch {
	case level == hookVerbosity && s.lockstep:
		s.hook.observe(msg)
	case level == secondPassVerbosity && msg == msgSecondPassQueued:
		s.hook.queuedSecondPass(kv)
	case level == blockingVerbosity && s.lockstep && msg == msgBlocking:
		s.hook.blocking()
	case level == finishedVerbosity && s.lockstep && msg == msgFinishedWaiting:
		s.hook.finishedWaiting()
	}
}

func (s *hookSink) Error(err error, msg string, kv ...any) {
	if s.inner != nil {
		s.inner.Error(err, msg, kv...)
	}
	if s.lockstep && msg == msgAdmitFailed {
		s.hook.admissionWritten()
		s.hook.holdRefused()
	}
}

func (s *hookSink) WithValues(kv ...any) logr.LogSink {
	out := &hookSink{hook: s.hook, lockstep: s.lockstep}
	if s.inner != nil {
		out.inner = s.inner.WithValues(kv...)
	}
	return out
}

func (s *hookSink) WithName(name string) logr.LogSink {
	out := &hookSink{hook: s.hook, lockstep: s.lockstep}
	if s.inner != nil {
		out.inner = s.inner.WithName(name)
	}
	return out
}
