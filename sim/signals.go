package main

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// settled tells the driver that the scheduler is done with a workload for now: it
// reserved quota, it was put back as inadmissible, or the scheduling cycle panicked.
type settled struct {
	workload string
	admitted bool
	message  string // event note: the inadmissible message when pending
	panicked string // non-empty when Kueue panicked
	parked   bool   // put aside by the queue manager without a scheduling cycle
}

// recorder is the scheduler's events.EventRecorder. Kueue records "QuotaReserved" after
// the admission patch succeeds and a Warning (reason Pending, or another
// unadmitted-workload reason) after it writes QuotaReserved=False, so these events mark
// the end of a workload's trip through the scheduler without polling.
type recorder struct {
	mu    sync.Mutex
	queue []settled
	ready chan struct{} // holds a token while queue is non-empty
}

func newRecorder() *recorder { return &recorder{ready: make(chan struct{}, 1)} }

func (r *recorder) Eventf(regarding, _ runtime.Object, eventtype, reason, _, note string, args ...any) {
	wl, ok := regarding.(*kueue.Workload)
	if !ok {
		return
	}
	switch {
	case reason == "QuotaReserved":
		r.send(settled{workload: wl.Name, admitted: true})
	case eventtype == corev1.EventTypeWarning:
		r.send(settled{workload: wl.Name, message: fmt.Sprintf(note, args...)})
	}
}

// send queues s without ever blocking Kueue (events may come faster than they are read).
func (r *recorder) send(s settled) {
	r.mu.Lock()
	r.queue = append(r.queue, s)
	r.mu.Unlock()
	select {
	case r.ready <- struct{}{}:
	default:
	}
}

// next returns the oldest unread notice, or false when deadline fires first.
func (r *recorder) next(deadline <-chan time.Time) (settled, bool) {
	for {
		r.mu.Lock()
		if len(r.queue) > 0 {
			s := r.queue[0]
			r.queue = r.queue[1:]
			r.mu.Unlock()
			return s, true
		}
		r.mu.Unlock()
		select {
		case <-r.ready:
		case <-deadline:
			return settled{}, false
		}
	}
}

// current is the recorder of the scenario being run, for the panic handler below.
var current atomic.Pointer[recorder]

// installPanicHandler makes a panic inside Kueue's scheduling loop end the scenario
// instead of the process. The loop runs each cycle under apimachinery's HandleCrash, which
// re-panics only while ReallyCrash is set.
func installPanicHandler() {
	utilruntime.ReallyCrash = false
	utilruntime.PanicHandlers = []func(context.Context, any){
		func(_ context.Context, r any) {
			if rec := current.Load(); rec != nil {
				rec.send(settled{panicked: fmt.Sprintf("%v at %s", r, kueueFrame(debug.Stack()))})
			}
		},
	}
}

// kueueFrame picks the innermost Kueue function from a stack trace, to say where the
// panic happened in one line.
func kueueFrame(stack []byte) string {
	lines := strings.Split(string(stack), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "sigs.k8s.io/kueue/") && i+1 < len(lines) {
			fn := l
			if j := strings.LastIndex(fn, "("); j > 0 {
				fn = fn[:j]
			}
			loc := strings.TrimSpace(lines[i+1])
			if j := strings.LastIndex(loc, " +0x"); j > 0 {
				loc = loc[:j]
			}
			if k := strings.Index(loc, "sigs.k8s.io/kueue@"); k >= 0 {
				loc = loc[k:]
			}
			return fn + " (" + loc + ")"
		}
	}
	return "unknown location"
}
