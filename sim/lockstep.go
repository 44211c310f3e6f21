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
	msgCycleStarts   = "Scheduling cycle starts"         // schedule(), before Heads()
	msgAttempting    = "Attempting to schedule workload" // processEntry(), each entry
	msgAssumed       = "Workload assumed in the cache"   // assumeWorkload(), before the status write
	msgRequeued      = "Workload re-queued"              // requeueAndUpdate()
	msgProcessedAll  = "Workload processing done"        // schedule(), after requeueing
	msgCycleComplete = "Scheduling cycle complete"       // schedule(), deferred
	hookVerbosity    = 2
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
//     orders preemption candidates by it) no matter how goroutines interleave.
type cycleHook struct {
	clock *clocktesting.FakeClock
	done  <-chan struct{}

	mu       sync.Mutex
	written  *sync.Cond
	assumed  int // admissions assumed in the cache whose status write has not returned
	unticked int // admissions written since the clock last moved

	boundary chan struct{} // the scheduler reached the start of a cycle
	release  chan struct{} // the driver lets it run the cycle
}

func newCycleHook(clock *clocktesting.FakeClock, done <-chan struct{}) *cycleHook {
	h := &cycleHook{clock: clock, done: done,
		boundary: make(chan struct{}), release: make(chan struct{})}
	h.written = sync.NewCond(&h.mu)
	return h
}

func (h *cycleHook) observe(msg string) {
	switch msg {
	case msgAssumed:
		h.mu.Lock()
		h.assumed++
		h.mu.Unlock()
	case msgAttempting, msgRequeued, msgProcessedAll, msgCycleComplete:
		h.tick()
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

// admissionWritten is called by the fake API server once an admission's status write
// returned (stored or refused).
func (h *cycleHook) admissionWritten() {
	h.mu.Lock()
	h.assumed--
	h.unticked++
	h.written.Broadcast()
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

// runCycle lets the waiting scheduler run one cycle and waits until the next begins.
func (h *cycleHook) runCycle(ctx context.Context, timeout time.Duration) error {
	select {
	case h.release <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	return h.awaitBoundary(timeout)
}

// hookSink is the scheduler's log sink: it feeds the hook its verbosity-2 lines and passes
// everything the user asked for (-v) to the real sink.
type hookSink struct {
	hook  *cycleHook
	inner logr.LogSink // nil: discard
}

func hookedLogger(hook *cycleHook, user logr.Logger) logr.Logger {
	return logr.New(&hookSink{hook: hook, inner: user.GetSink()})
}

func (s *hookSink) Init(info logr.RuntimeInfo) {
	if s.inner != nil {
		s.inner.Init(info)
	}
}

func (s *hookSink) Enabled(level int) bool {
	return level <= hookVerbosity || s.userEnabled(level)
}

func (s *hookSink) userEnabled(level int) bool {
	return s.inner != nil && s.inner.Enabled(level)
}

func (s *hookSink) Info(level int, msg string, kv ...any) {
	if s.userEnabled(level) {
		s.inner.Info(level, msg, kv...)
	}
	if level == hookVerbosity {
		s.hook.observe(msg)
	}
}

func (s *hookSink) Error(err error, msg string, kv ...any) {
	if s.inner != nil {
		s.inner.Error(err, msg, kv...)
	}
}

func (s *hookSink) WithValues(kv ...any) logr.LogSink {
	out := &hookSink{hook: s.hook}
	if s.inner != nil {
		out.inner = s.inner.WithValues(kv...)
	}
	return out
}

func (s *hookSink) WithName(name string) logr.LogSink {
	out := &hookSink{hook: s.hook}
	if s.inner != nil {
		out.inner = s.inner.WithName(name)
	}
	return out
}
