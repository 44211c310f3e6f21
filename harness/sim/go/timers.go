package main

import (
	"slices"
	"sync"
	"time"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

// timerClock is the queue manager's clock (qcache.WithClock): the scenario's fake clock,
// except that AfterFunc only records the function. Kueue's second-pass backoff
// (pkg/cache/queue/manager.go: QueueSecondPassIfNeeded, 1 s doubling to 30 s) is such a
// timer; the driver fires the earliest one itself when Kueue has nothing else to do,
// moving the fake clock to its time, so backoff is stepped, never slept, and a timer never
// runs while a scheduling cycle does.
type timerClock struct {
	*clocktesting.FakeClock

	mu      sync.Mutex
	pending []*simTimer
	seq     int
}

type simTimer struct {
	owner   *timerClock
	at      time.Time
	seq     int // creation order breaks ties between timers due at the same time
	f       func()
	stopped bool
}

var _ clock.WithDelayedExecution = (*timerClock)(nil)

func newTimerClock(c *clocktesting.FakeClock) *timerClock { return &timerClock{FakeClock: c} }

func (c *timerClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &simTimer{owner: c, at: c.Now().Add(d), seq: c.seq, f: f}
	c.pending = append(c.pending, t)
	return t
}

// fireNext runs the earliest pending timer, after moving the clock to its time if that is
// later; it reports whether there was one.
func (c *timerClock) fireNext() bool {
	c.mu.Lock()
	c.pending = slices.DeleteFunc(c.pending, func(t *simTimer) bool { return t.stopped })
	if len(c.pending) == 0 {
		c.mu.Unlock()
		return false
	}
	next := slices.MinFunc(c.pending, func(a, b *simTimer) int {
		if d := a.at.Compare(b.at); d != 0 {
			return d
		}
		return a.seq - b.seq
	})
	c.pending = slices.DeleteFunc(c.pending, func(t *simTimer) bool { return t == next })
	c.mu.Unlock()
	if wait := next.at.Sub(c.Now()); wait > 0 {
		c.Step(wait)
	}
	next.f()
	return true
}

func (t *simTimer) C() <-chan time.Time { return nil }

func (t *simTimer) Stop() bool {
	t.owner.mu.Lock()
	defer t.owner.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

func (t *simTimer) Reset(d time.Duration) bool {
	was := t.Stop()
	t.owner.mu.Lock()
	defer t.owner.mu.Unlock()
	t.owner.seq++
	t.at, t.seq, t.stopped = t.owner.Now().Add(d), t.owner.seq, false
	if !slices.Contains(t.owner.pending, t) {
		t.owner.pending = append(t.owner.pending, t)
	}
	return was
}
